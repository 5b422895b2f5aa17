//! The one table of wait mechanisms: names, descriptions and capabilities.
//!
//! Every mechanism the tool can measure is a row here; the command line,
//! the documentation and the engine all read this table.

use std::fmt;

/// A way to wait for a deadline: a row of the mechanism table ([`KINDS`]).
///
/// Not an enum: a test waiter (`rtick::testing`, feature `testing`) is a
/// mechanism of its own without a row in the public table, so features only
/// add items. The built-in mechanisms are the associated constants.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mechanism(u16);

#[allow(non_upper_case_globals)]
impl Mechanism {
    /// `clock_nanosleep(TIMER_ABSTIME)` on the chosen clock.
    pub const ClockNanosleep: Mechanism = Mechanism(0);
    /// `clock_nanosleep` with a relative interval.
    pub const ClockNanosleepRel: Mechanism = Mechanism(1);
    /// The `nanosleep` system call with a relative interval.
    pub const Nanosleep: Mechanism = Mechanism(2);
    /// A POSIX timer signalling this thread, waited for with `sigwaitinfo`.
    pub const PosixTimer: Mechanism = Mechanism(3);
    /// `setitimer(ITIMER_REAL)`, SIGALRM waited for with `sigwaitinfo`.
    pub const Itimer: Mechanism = Mechanism(4);
    /// Busy polling of the clock.
    pub const Spin: Mechanism = Mechanism(5);
    /// Absolute sleep until deadline − slack, then spin.
    pub const Hybrid: Mechanism = Mechanism(6);
    /// An absolute periodic timerfd, waited for with read().
    pub const Timerfd: Mechanism = Mechanism(7);
    /// The same timerfd inside epoll_wait, as event loops use it.
    pub const TimerfdEpoll: Mechanism = Mechanism(8);
    /// ppoll with no fds and a nanosecond timeout to the deadline.
    pub const Ppoll: Mechanism = Mechanism(9);
    /// pselect with no fds and a nanosecond timeout to the deadline.
    pub const Pselect: Mechanism = Mechanism(10);
    /// epoll_pwait2 on an empty epoll with a nanosecond timeout to the deadline.
    pub const EpollPwait2: Mechanism = Mechanism(11);
    /// FUTEX_WAIT_BITSET with an absolute timeout.
    pub const Futex: Mechanism = Mechanism(12);
    /// pthread_cond_timedwait on a condition variable using the run's clock.
    pub const Condvar: Mechanism = Mechanism(13);
    /// usleep of the time left to the deadline.
    pub const Usleep: Mechanism = Mechanism(14);
    /// std::thread::sleep of the time left to the deadline.
    pub const StdSleep: Mechanism = Mechanism(15);
    /// A POSIX timer delivered to an asynchronous signal handler.
    pub const PosixTimerHandler: Mechanism = Mechanism(16);
    /// A SCHED_DEADLINE thread that yields until its next period.
    pub const SchedDeadline: Mechanism = Mechanism(17);

    /// A mechanism outside the public table (a test waiter's), numbered from
    /// [`Mechanism::FIRST_UNLISTED`] on so it never meets a built-in one.
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    pub(crate) const fn unlisted(n: u16) -> Mechanism {
        Mechanism(Self::FIRST_UNLISTED + n)
    }
    const FIRST_UNLISTED: u16 = 1000;

    /// Its number, to keep it in an atomic.
    pub(crate) const fn code(self) -> u16 {
        self.0
    }

    /// The mechanism [`Mechanism::code`] gave this number.
    pub(crate) const fn from_code(code: u16) -> Mechanism {
        Mechanism(code)
    }
}

/// A row of the mechanism table.
#[derive(Debug)]
pub struct KindInfo {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Its command-line name.
    pub name: &'static str,
    /// One line saying what it does.
    pub description: &'static str,
    /// The system calls made per wait.
    pub syscalls: &'static [&'static str],
    /// What it needs from the system.
    pub needs: &'static str,
    /// Sleeps a relative interval: measured against the time read before the
    /// sleep, as cyclictest -r does, so its deadlines are not on a grid.
    pub relative: bool,
    /// Burns CPU while waiting.
    pub burns_cpu: bool,
    /// The kernel keeps the periodic grid (interval timers): missed
    /// expirations are merged by the kernel, so overruns always skip.
    pub kernel_grid: bool,
    /// One per process: only one measuring thread.
    pub per_process: bool,
    /// The grid is estimated from observed wake-ups (the kernel keeps it out
    /// of sight), so a wake-up can show as early.
    pub estimated_grid: bool,
    /// Left out of listings (test-only).
    pub hidden: bool,
}

const fn row(
    mechanism: Mechanism,
    name: &'static str,
    description: &'static str,
    syscalls: &'static [&'static str],
    needs: &'static str,
) -> KindInfo {
    KindInfo {
        mechanism,
        name,
        description,
        syscalls,
        needs,
        relative: false,
        burns_cpu: false,
        kernel_grid: false,
        per_process: false,
        estimated_grid: false,
        hidden: false,
    }
}

/// The mechanism table. Add rows at the end only: the C API numbers the
/// mechanisms by their position among the public rows.
pub const KINDS: &[KindInfo] = &[
    row(
        Mechanism::ClockNanosleep,
        "clock_nanosleep",
        "clock_nanosleep(TIMER_ABSTIME) to each deadline: the reference way to wait",
        &["clock_nanosleep"],
        "high-resolution timers for sub-tick precision",
    ),
    KindInfo {
        relative: true,
        ..row(
            Mechanism::ClockNanosleepRel,
            "clock_nanosleep-rel",
            "clock_nanosleep with a relative interval (cyclictest -r): drifts by the loop's own overhead",
            &["clock_nanosleep"],
            "high-resolution timers",
        )
    },
    KindInfo {
        relative: true,
        ..row(
            Mechanism::Nanosleep,
            "nanosleep",
            "the nanosleep system call with a relative interval (cyclictest --system)",
            &["nanosleep"],
            "high-resolution timers",
        )
    },
    KindInfo {
        kernel_grid: true,
        ..row(
            Mechanism::PosixTimer,
            "posix-timer",
            "periodic timer_create timer signalling this thread (SIGEV_THREAD_ID), waited for with sigwaitinfo",
            &["rt_sigtimedwait"],
            "the timer signal blocked in every thread",
        )
    },
    KindInfo {
        kernel_grid: true,
        per_process: true,
        ..row(
            Mechanism::Itimer,
            "itimer",
            "setitimer(ITIMER_REAL) SIGALRM, waited for with sigwaitinfo; one per process",
            &["rt_sigtimedwait"],
            "SIGALRM blocked in every thread; a single measuring thread",
        )
    },
    KindInfo {
        burns_cpu: true,
        ..row(
            Mechanism::Spin,
            "spin",
            "busy polling of the clock (vDSO clock_gettime) until the deadline",
            &[],
            "a CPU of its own; under SCHED_FIFO/RR, RT throttling off (sched_rt_runtime_us = -1)",
        )
    },
    KindInfo {
        burns_cpu: true,
        ..row(
            Mechanism::Hybrid,
            "hybrid",
            "clock_nanosleep(TIMER_ABSTIME) until deadline − slack, then spin to the deadline",
            &["clock_nanosleep"],
            "a slack above the sleep overshoot (--hybrid-slack auto calibrates it)",
        )
    },
    KindInfo {
        kernel_grid: true,
        ..row(
            Mechanism::Timerfd,
            "timerfd",
            "periodic absolute timerfd on the run's clock, waited for with read()",
            &["read"],
            "a clock timerfd supports (monotonic, realtime, boottime)",
        )
    },
    KindInfo {
        kernel_grid: true,
        ..row(
            Mechanism::TimerfdEpoll,
            "timerfd-epoll",
            "the same timerfd inside epoll_wait, then read(), as event loops use it",
            &["epoll_wait", "read"],
            "a clock timerfd supports (monotonic, realtime, boottime)",
        )
    },
    row(
        Mechanism::Ppoll,
        "ppoll",
        "ppoll(NULL, 0) with a nanosecond timeout of deadline − now",
        &["ppoll"],
        "nothing (non-RT threads get poll's own timeout slack)",
    ),
    row(
        Mechanism::Pselect,
        "pselect",
        "pselect(0, …) with a nanosecond timeout of deadline − now",
        &["pselect6"],
        "nothing (non-RT threads get select's own timeout slack)",
    ),
    row(
        Mechanism::EpollPwait2,
        "epoll-pwait2",
        "epoll_pwait2 on an empty epoll with a nanosecond timeout of deadline − now",
        &["epoll_pwait2"],
        "Linux 5.11 or later",
    ),
    row(
        Mechanism::Futex,
        "futex",
        "FUTEX_WAIT_BITSET with an absolute timeout on a word nobody changes",
        &["futex"],
        "CLOCK_MONOTONIC or CLOCK_REALTIME",
    ),
    row(
        Mechanism::Condvar,
        "condvar",
        "pthread_cond_timedwait on a condition variable using the run's clock, never signalled",
        &["futex"],
        "CLOCK_MONOTONIC or CLOCK_REALTIME",
    ),
    row(
        Mechanism::Usleep,
        "usleep",
        "usleep of the time left to the deadline, rounded up to whole µs",
        &["clock_nanosleep"],
        "nothing",
    ),
    row(
        Mechanism::StdSleep,
        "std-sleep",
        "std::thread::sleep of the time left to the deadline: what naive code does",
        &["clock_nanosleep"],
        "nothing",
    ),
    KindInfo {
        kernel_grid: true,
        per_process: true,
        ..row(
            Mechanism::PosixTimerHandler,
            "posix-timer-handler",
            "periodic timer_create timer (SIGEV_SIGNAL) run by an async signal handler; the thread waits in sigsuspend",
            &["rt_sigsuspend"],
            "its signal blocked in every other thread; a single measuring thread",
        )
    },
    KindInfo {
        kernel_grid: true,
        estimated_grid: true,
        ..row(
            Mechanism::SchedDeadline,
            "sched-deadline",
            "a SCHED_DEADLINE thread (runtime 5 % of the period) that sched_yields until its next period",
            &["sched_yield"],
            "root or CAP_SYS_NICE; affinity spanning the root domain (no -a/-S); period ≥ 100 µs",
        )
    },
];

impl Mechanism {
    /// This mechanism's row in the table.
    pub fn info(self) -> &'static KindInfo {
        self.row().expect("every mechanism has a row")
    }

    /// Its row, `None` for a number no mechanism has.
    fn row(self) -> Option<&'static KindInfo> {
        KINDS.iter().chain(unlisted_rows()).find(|k| k.mechanism == self)
    }

    /// Whether the library has a waiter of its own for it (a row of
    /// [`KINDS`]); the others are test waiters, given by a
    /// [`WaiterSource`](super::WaiterSource).
    pub fn built_in(self) -> bool {
        KINDS.iter().any(|k| k.mechanism == self)
    }

    /// Its command-line name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Looks a command-line name up (exact match), test mechanisms included
    /// (feature `testing`).
    pub fn parse(name: &str) -> Option<Mechanism> {
        KINDS.iter().chain(unlisted_rows()).find(|k| k.name == name).map(|k| k.mechanism)
    }

    /// The share of each period this mechanism spins at most (1 for
    /// `spin`; the slack's share for `hybrid`, up to the whole period when
    /// calibrated, since at short intervals it stops sleeping; 0 otherwise).
    pub fn spin_share(self, interval: crate::Nanos, slack: super::HybridSlack) -> f64 {
        match (self, slack) {
            (Mechanism::Spin, _) => 1.0,
            (Mechanism::Hybrid, super::HybridSlack::Fixed(s)) => {
                (s.as_ns() as f64 / interval.as_ns().max(1) as f64).min(1.0)
            }
            (Mechanism::Hybrid, super::HybridSlack::Auto) => 1.0,
            _ => 0.0,
        }
    }

    /// The names users may pass, in table order.
    pub fn public_names() -> Vec<&'static str> {
        KINDS.iter().filter(|k| !k.hidden).map(|k| k.name).collect()
    }
}

/// The test mechanisms (feature `testing`): rows of their own, hidden, out
/// of [`KINDS`]; `rtick::testing` gives their waiters.
#[cfg(any(test, feature = "testing"))]
pub(crate) mod test_rows {
    use super::{row, KindInfo, Mechanism};

    /// The mock mechanism.
    pub(crate) const MOCK: Mechanism = Mechanism::unlisted(0);

    /// Their rows.
    pub(crate) const KINDS: &[KindInfo] = &[KindInfo {
        hidden: true,
        ..row(MOCK, "mock", "simulated waits on a manual clock with scripted latencies (tests only)", &[], "nothing")
    }];
}

/// The rows of the mechanisms outside [`KINDS`]: the test mechanisms'.
#[cfg(any(test, feature = "testing"))]
fn unlisted_rows() -> &'static [KindInfo] {
    test_rows::KINDS
}
#[cfg(not(any(test, feature = "testing")))]
fn unlisted_rows() -> &'static [KindInfo] {
    &[]
}

impl fmt::Debug for Mechanism {
    /// Its name; a number no mechanism has (never panics: Debug is what a
    /// failed assertion or a panic message prints).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.row() {
            Some(k) => f.write_str(k.name),
            None => write!(f, "Mechanism(#{})", self.0),
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_a_mechanism_and_numbers_an_unknown_one() {
        assert_eq!(format!("{:?}", Mechanism::Futex), "futex");
        assert_eq!(format!("{:?}", Mechanism(999)), "Mechanism(#999)");
        assert_eq!(format!("{:?}", Mechanism::unlisted(77)), "Mechanism(#1077)");
    }

    #[test]
    fn every_row_parses_back_and_names_are_unique() {
        for k in KINDS {
            assert_eq!(Mechanism::parse(k.name), Some(k.mechanism));
            assert_eq!(k.mechanism.info().name, k.name);
            assert_eq!(KINDS.iter().filter(|o| o.name == k.name).count(), 1);
        }
        assert!(!Mechanism::public_names().contains(&"mock"));
        assert_eq!(Mechanism::parse("clock-nanosleep"), None);
    }
}

//! Signal-based interval timers: POSIX timers and ITIMER_REAL.
//!
//! Their expiry is delivered as a signal, which the kernel cannot do from the
//! hard interrupt (seed 000): the wake-up goes through signal delivery in
//! thread context, which is why these are slower than `clock_nanosleep`.
//! The kernel keeps their grid; expirations that happen while a signal is
//! still pending are merged (`si_overrun`), so an overrun always skips.

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::signal::{self, SigSet};
use crate::sys::timer::{self, ClaimedItimer, Itimer, Notify, PosixTimer};
use crate::time::{Nanos, Time};

/// An `Unavailable` error unless `signo` is blocked in the calling thread.
pub(super) fn ensure_blocked(signo: libc::c_int, mechanism: &'static str) -> Result<()> {
    if signal::is_blocked(signo) {
        Ok(())
    } else {
        Err(Error::Unavailable {
            mechanism,
            reason: format!(
                "signal {signo} is not blocked in the measuring thread; call rtick::wait::block_timer_signals() \
                 in the main thread before spawning threads"
            ),
        })
    }
}

/// A periodic POSIX timer aimed at the calling thread.
///
/// Thread-bound: its timer signals the thread that built it (SIGEV_THREAD_ID),
/// where the signal is blocked and waited for, so it is `!Send` and must wait
/// in that thread. Every waiter is used in the thread that built it
/// ([`Waiter`] has no `Send` bound), so a `Periodic` is `!Send` whatever its
/// mechanism:
///
/// ```compile_fail
/// fn assert_send<T: Send>() {}
/// assert_send::<rtick::periodic::Periodic>();
/// ```
///
/// (The same check compiles for a `Send` type, and the path names the loop:)
///
/// ```
/// fn assert_send<T: Send>() {}
/// assert_send::<rtick::Nanos>();
/// let _loop: Option<rtick::periodic::Periodic> = None;
/// ```
pub(super) struct PosixTimerWait {
    clock: ClockId,
    timer: PosixTimer,
    set: SigSet,
    interval: Nanos,
}

impl PosixTimerWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        let signo = signal::timer_signal();
        // The signal is aimed at this thread only, so blocking it here suffices.
        signal::block(&[signo]).map_err(|e| Error::sys("pthread_sigmask", e, ""))?;
        ensure_blocked(signo, "posix-timer")?;
        let timer = PosixTimer::create(clock.raw(), Notify::Thread { signo, tid: timer::gettid() })
            .map_err(|e| Error::sys("timer_create(SIGEV_THREAD_ID)", e, "check RLIMIT_SIGPENDING (ulimit -i)"))?;
        Ok(PosixTimerWait { clock, timer, set: SigSet::of(&[signo]), interval: Nanos::ZERO })
    }
}

impl Waiter for PosixTimerWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        self.timer.arm_periodic(first, interval).map_err(|e| Error::sys("timer_settime(TIMER_ABSTIME)", e, ""))
    }

    fn disarm(&mut self) -> Result<()> {
        self.timer.disarm().map_err(|e| Error::sys("timer_settime(0)", e, ""))?;
        signal::drain(&self.set);
        Ok(())
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        let got = signal::wait(&self.set).map_err(|e| Error::sys("sigwaitinfo", e, ""))?;
        let actual = self.clock.now();
        let next = deadline + self.interval * (1 + got.timer_overrun as i64);
        Ok(Wake { planned: deadline, actual, kernel_next: Some(next) })
    }
}

/// ITIMER_REAL: SIGALRM to the process, waited for with `sigwaitinfo`.
///
/// `setitimer` only takes relative times in whole microseconds: the first
/// expiry is set to `first − now`, rounded up to the microsecond, just before
/// arming, so the kernel's grid starts up to a microsecond and one system call
/// later than rtick's, a bias that shows as latency. The period must be a
/// whole number of microseconds (the kernel keeps those exactly). When a
/// wake-up is late, the kernel forwards the timer past the time of the
/// signal's dequeue and drops the expirations in between without counting
/// them; the engine's skip policy follows the same grid.
///
/// There is one ITIMER_REAL per process: a second `ItimerWait` alive at the
/// same time is refused (it would share the timer, and each would take the
/// other's signals), as is the drift measurement of `itimer-real`. SIGALRM
/// goes to the process, not to a thread; like every waiter it is still used
/// only in the thread that built it (the one that waits).
pub(super) struct ItimerWait {
    clock: ClockId,
    set: SigSet,
    timer: ClaimedItimer,
}

impl ItimerWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        ensure_blocked(libc::SIGALRM, "itimer")?;
        let timer = Itimer::Real.claim().map_err(|e| match e.kind() {
            std::io::ErrorKind::ResourceBusy => Error::Unavailable {
                mechanism: "itimer",
                reason: "one per process (ITIMER_REAL), and another itimer loop or drift measurement is using it; \
                         drop it first"
                    .into(),
            },
            _ => Error::sys("setitimer(ITIMER_REAL)", e, ""),
        })?;
        Ok(ItimerWait { clock, set: SigSet::of(&[libc::SIGALRM]), timer })
    }
}

impl Waiter for ItimerWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, first: Time, interval: Nanos) -> Result<()> {
        // Checked here for a clear message: the timer would otherwise keep a
        // different period, or under 1 µs fire once and never again.
        if !timer::itimer_keeps(interval) {
            return Err(Error::Invalid(format!(
                "itimer: setitimer counts whole microseconds, so a period of {} ns cannot be kept; \
                 use a multiple of 1 µs (or another mechanism)",
                interval.as_ns()
            )));
        }
        let rel = first - self.clock.now();
        self.timer.arm(rel, interval).map_err(|e| Error::sys("setitimer(ITIMER_REAL)", e, ""))
    }

    fn disarm(&mut self) -> Result<()> {
        self.timer.disarm().map_err(|e| Error::sys("setitimer(ITIMER_REAL, 0)", e, ""))?;
        signal::drain(&self.set);
        Ok(())
    }

    /// The kernel's grid is the loop's, shifted later by the time `setitimer`
    /// took, so the deadline's own SIGALRM never comes before the deadline.
    /// One that does was left pending by an expiry the loop skipped: the
    /// thread was preempted between taking the previous signal and reading
    /// the clock, long enough for the next expiry to fire, and the overrun
    /// made the grid skip it (ITIMER_REAL reports no overrun count to
    /// reconcile with). It is drained and the wait goes on, so it cannot pass
    /// for an early wake-up — `tests/mechanisms.rs` caught one under load.
    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        loop {
            signal::wait(&self.set).map_err(|e| Error::sys("sigwaitinfo", e, ""))?;
            let actual = self.clock.now();
            if actual >= deadline {
                return Ok(Wake { planned: deadline, actual, kernel_next: None });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::periodic::{Periodic, Start};
    use crate::wait::Mechanism;
    use std::sync::Mutex;
    use std::time::Duration;

    /// The tests that build an `ItimerWait` take turns: the process has one
    /// ITIMER_REAL, and a concurrent test would find it in use.
    static ITIMER_TESTS: Mutex<()> = Mutex::new(());

    /// Runs `f` in a thread of its own with SIGALRM blocked (as
    /// `ItimerWait` requires); `None` if it has not returned within 20 s
    /// (it would otherwise hang the test).
    fn in_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let _turn = ITIMER_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            signal::block(&[libc::SIGALRM]).unwrap();
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(20)).ok()
    }

    /// None of these arms a timer that fires: SIGALRM goes to the process,
    /// and a test thread that has it unblocked would die of it.
    #[test]
    fn one_itimer_per_process_and_again_after_drop() {
        in_thread(|| {
            let first = ItimerWait::new(ClockId::Monotonic).unwrap();
            let Err(e) = ItimerWait::new(ClockId::Monotonic) else { panic!("a second ITIMER_REAL user was built") };
            assert!(matches!(e, Error::Unavailable { mechanism: "itimer", .. }), "{e:?}");
            assert!(e.to_string().contains("one per process (ITIMER_REAL)"), "{e}");
            // The drift measurement of itimer-real shares the timer: refused too.
            let case = crate::drift::DriftCase {
                mechanism: crate::drift::DriftMechanism::ItimerReal,
                period: Nanos::from_ms(1),
                duration: Nanos::from_ms(10),
                work: Nanos::ZERO,
            };
            let Err(e) = crate::drift::run_case(&case, &Default::default()) else {
                panic!("drift ran on an ITIMER_REAL in use")
            };
            assert!(matches!(e, Error::Unavailable { mechanism: "itimer-real", .. }), "{e:?}");
            drop(first);
            ItimerWait::new(ClockId::Monotonic).expect("a new itimer once the first is dropped");
        })
        .expect("timed out");
    }

    /// A period under 1 µs used to set a zero repeat interval: the timer
    /// fired once and the loop waited forever. Periods that are not whole
    /// microseconds are refused too (the kernel cannot keep them).
    #[test]
    fn itimer_periods_must_be_whole_microseconds() {
        let build = |ns| {
            in_thread(move || {
                // Far in the future: an accepted period arms nothing that fires.
                let start = Start::At(ClockId::Monotonic.now() + Nanos::from_secs(3600));
                let built = Periodic::builder().mechanism(Mechanism::Itimer).period(Nanos(ns)).start(start).build();
                built.map(drop)
            })
            .unwrap_or_else(|| panic!("building an itimer loop of {ns} ns hung"))
        };
        for ns in [500, 999, 1_500] {
            let Err(e) = build(ns) else { panic!("an itimer period of {ns} ns was accepted") };
            assert!(matches!(e, Error::Invalid(_)), "{e:?}");
            let msg = e.to_string();
            assert!(msg.contains(&format!("a period of {ns} ns cannot be kept")) && msg.contains("1 µs"), "{msg}");
        }
        for ns in [1_000, 2_000] {
            build(ns).unwrap_or_else(|e| panic!("{ns} ns: {e}"));
        }
    }

    /// The loop of the brief: 500 ns on `itimer` fails at once instead of
    /// waiting forever for a second expiry.
    #[test]
    fn periodic_itimer_at_500ns_is_refused_not_hung() {
        let got = in_thread(|| {
            let mut lp = Periodic::builder().mechanism(Mechanism::Itimer).period(Nanos(500)).build()?;
            for _ in 0..3 {
                lp.wait()?;
            }
            Ok::<_, Error>(())
        });
        let Some(Err(e)) = got else { panic!("a 500 ns itimer loop did not fail: {got:?}") };
        assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    }
}

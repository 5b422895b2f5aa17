//! The `clock_*` calls: reads (vDSO `clock_gettime`, and the same forced
//! through the system call), `clock_getres`, and sleeps on a clock
//! (`clock_nanosleep`).
//!
//! `clock_nanosleep` *returns* its error code instead of setting errno. On
//! EINTR an absolute sleep is repeated with the same deadline and a relative
//! one continues with the remaining time: a signal never shortens a wait.

use std::io;
use std::mem::MaybeUninit;

use super::check_code;
use crate::time::{Nanos, Time};

/// A POSIX clock the kernel has had since Linux 3.10 (CLOCK_TAI is the
/// youngest): the clocks `rtick clocks` surveys, and those a loop runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PosixClock {
    /// CLOCK_MONOTONIC.
    Monotonic,
    /// CLOCK_MONOTONIC_RAW: not slewed by NTP.
    MonotonicRaw,
    /// CLOCK_MONOTONIC_COARSE: the last tick's time, cheap to read.
    MonotonicCoarse,
    /// CLOCK_REALTIME.
    Realtime,
    /// CLOCK_REALTIME_COARSE.
    RealtimeCoarse,
    /// CLOCK_BOOTTIME.
    Boottime,
    /// CLOCK_TAI.
    Tai,
    /// CLOCK_PROCESS_CPUTIME_ID: CPU time of the process.
    ProcessCputime,
    /// CLOCK_THREAD_CPUTIME_ID: CPU time of the calling thread.
    ThreadCputime,
}

impl PosixClock {
    /// Every POSIX clock, in the order `rtick clocks` lists them.
    pub const ALL: [PosixClock; 9] = [
        PosixClock::Monotonic,
        PosixClock::MonotonicRaw,
        PosixClock::MonotonicCoarse,
        PosixClock::Realtime,
        PosixClock::RealtimeCoarse,
        PosixClock::Boottime,
        PosixClock::Tai,
        PosixClock::ProcessCputime,
        PosixClock::ThreadCputime,
    ];

    /// The kernel's clock id.
    #[inline]
    pub fn raw(self) -> libc::clockid_t {
        match self {
            PosixClock::Monotonic => libc::CLOCK_MONOTONIC,
            PosixClock::MonotonicRaw => libc::CLOCK_MONOTONIC_RAW,
            PosixClock::MonotonicCoarse => libc::CLOCK_MONOTONIC_COARSE,
            PosixClock::Realtime => libc::CLOCK_REALTIME,
            PosixClock::RealtimeCoarse => libc::CLOCK_REALTIME_COARSE,
            PosixClock::Boottime => libc::CLOCK_BOOTTIME,
            PosixClock::Tai => libc::CLOCK_TAI,
            PosixClock::ProcessCputime => libc::CLOCK_PROCESS_CPUTIME_ID,
            PosixClock::ThreadCputime => libc::CLOCK_THREAD_CPUTIME_ID,
        }
    }

    /// The name as the kernel spells it (`CLOCK_MONOTONIC_RAW`, …).
    pub fn name(self) -> &'static str {
        match self {
            PosixClock::Monotonic => "CLOCK_MONOTONIC",
            PosixClock::MonotonicRaw => "CLOCK_MONOTONIC_RAW",
            PosixClock::MonotonicCoarse => "CLOCK_MONOTONIC_COARSE",
            PosixClock::Realtime => "CLOCK_REALTIME",
            PosixClock::RealtimeCoarse => "CLOCK_REALTIME_COARSE",
            PosixClock::Boottime => "CLOCK_BOOTTIME",
            PosixClock::Tai => "CLOCK_TAI",
            PosixClock::ProcessCputime => "CLOCK_PROCESS_CPUTIME_ID",
            PosixClock::ThreadCputime => "CLOCK_THREAD_CPUTIME_ID",
        }
    }

    /// Reads the clock (through the vDSO where the kernel serves it there).
    #[inline]
    pub fn now(self) -> Time {
        now(self)
    }
}

/// Reads `clock` through the vDSO (no system call for the usual clocks).
///
/// Typed clocks exist on every kernel rtick runs on, so the read does not
/// fail; should it (a kernel older than 3.10 lacks CLOCK_TAI) it panics
/// naming the clock rather than return a time the kernel never wrote. The
/// check is one predictable branch: the loop's clock read stays as cheap.
#[inline]
pub fn now(clock: PosixClock) -> Time {
    match read(clock.raw()) {
        Ok(t) => t,
        Err(e) => read_failed("clock_gettime", clock, e),
    }
}

/// `clock_gettime` through the system call instead of the vDSO: the cost a
/// read would have if the vDSO could not serve it. Checked as [`now`].
#[inline]
pub fn syscall_now(clock: PosixClock) -> Time {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: raw clock_gettime(clock, &ts); ts is a valid out pointer.
    let ret = unsafe { libc::syscall(libc::SYS_clock_gettime, clock.raw(), &mut ts as *mut libc::timespec) };
    if ret != 0 {
        read_failed("clock_gettime syscall", clock, super::last_error());
    }
    Time::from_timespec(&ts)
}

/// Reads `clock`, reporting a clock the kernel lacks as an error.
pub fn try_now(clock: PosixClock) -> io::Result<Time> {
    read(clock.raw())
}

/// `clock_gettime(clock)`, checked: a time only when the kernel wrote one.
#[inline]
pub(super) fn read(clock: libc::clockid_t) -> io::Result<Time> {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: ts is a valid out pointer for one timespec; any clock id is
    // safe to pass (an unknown one returns EINVAL).
    let ret = unsafe { libc::clock_gettime(clock, ts.as_mut_ptr()) };
    super::check_ret(ret)?;
    // SAFETY: clock_gettime returned 0, so it filled ts.
    Ok(Time::from_timespec(unsafe { &ts.assume_init() }))
}

/// The panic of a typed clock read that failed (out of line: never taken).
#[cold]
#[inline(never)]
pub(super) fn read_failed(call: &str, clock: PosixClock, e: io::Error) -> ! {
    panic!("{call}({}) failed: {e}; this kernel lacks the clock (Linux 3.10 or later has them all)", clock.name())
}

/// The resolution `clock_getres` reports for `clock`.
pub fn resolution(clock: PosixClock) -> io::Result<Nanos> {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: ts is a valid out pointer for one timespec.
    let ret = unsafe { libc::clock_getres(clock.raw(), ts.as_mut_ptr()) };
    super::check_ret(ret)?;
    // SAFETY: clock_getres returned 0, so ts is initialised.
    Ok(Nanos(Time::from_timespec(unsafe { &ts.assume_init() }).as_ns()))
}

/// Sleeps until `deadline` on `clock` (TIMER_ABSTIME), repeating on EINTR.
#[inline]
pub fn sleep_until(clock: libc::clockid_t, deadline: Time) -> io::Result<()> {
    let ts = deadline.to_timespec();
    loop {
        // SAFETY: ts is a valid timespec; remain may be NULL for absolute sleeps.
        let code = unsafe { libc::clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if code != libc::EINTR {
            return check_code(code);
        }
    }
}

/// Sleeps for `span` on `clock` (relative), continuing with the remaining time on EINTR.
#[inline]
pub fn sleep_for(clock: libc::clockid_t, span: Nanos) -> io::Result<()> {
    let mut req = span.to_timespec();
    loop {
        let mut rem = MaybeUninit::<libc::timespec>::uninit();
        // SAFETY: req is a valid timespec and rem a valid out pointer.
        let code = unsafe { libc::clock_nanosleep(clock, 0, &req, rem.as_mut_ptr()) };
        if code != libc::EINTR {
            return check_code(code);
        }
        // SAFETY: on EINTR the kernel wrote the remaining time into rem.
        req = unsafe { rem.assume_init() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MONO: PosixClock = PosixClock::Monotonic;

    #[test]
    fn monotonic_never_goes_back_and_sleep_waits() {
        let a = now(MONO);
        sleep_until(libc::CLOCK_MONOTONIC, a + Nanos::from_us(200)).unwrap();
        let b = now(MONO);
        assert!(b - a >= Nanos::from_us(200));
        sleep_for(libc::CLOCK_MONOTONIC, Nanos::from_us(100)).unwrap();
        assert!(now(MONO) - b >= Nanos::from_us(100));
    }

    #[test]
    fn bad_clock_is_an_error_not_a_garbage_time() {
        let bad = read(-1234).unwrap_err();
        assert_eq!(bad.raw_os_error(), Some(libc::EINVAL));
        assert!(sleep_until(-1234, Time(0)).is_err());
        assert!(sleep_for(-1234, Nanos(1)).is_err());
        assert!(try_now(MONO).unwrap() <= now(MONO));
    }

    /// `clock_getres` against what the kernel's configuration implies, read
    /// independently: hrtimer clocks have 1 ns resolution once a CPU runs
    /// high-resolution timers (`.hres_active` in /proc/timer_list), else one
    /// jiffy; the coarse clocks always one jiffy, `TICK_NSEC` =
    /// (10⁹ + HZ/2) / HZ in the kernel (4 ms at HZ=250, 3 333 333 ns at HZ=300).
    #[test]
    fn resolutions_follow_hres_and_hz() {
        let root = crate::system::SysRoot::default();
        // CONFIG_HZ, else counted from the jiffies in /proc/timer_list.
        let hz = crate::drift::detect_hz(&root).map(i64::from);
        let jiffy = hz.map(|hz| Nanos((1_000_000_000 + hz / 2) / hz));
        let res = |c: PosixClock| resolution(c).unwrap_or_else(|e| panic!("clock_getres({}): {e}", c.name()));
        let hrtimer_clocks = [
            PosixClock::Monotonic,
            PosixClock::MonotonicRaw,
            PosixClock::Realtime,
            PosixClock::Boottime,
            PosixClock::Tai,
        ];
        // hrtimer_resolution is one global: 1 ns as soon as any CPU switched.
        match crate::system::HresActive::read(&root) {
            Some(h) if h.count(Some(true)) > 0 => {
                for c in hrtimer_clocks {
                    assert_eq!(res(c), Nanos(1), "{}", c.name());
                }
            }
            Some(h) if !h.cpus().is_empty() && h.count(Some(false)) == h.cpus().len() => match jiffy {
                Some(j) => {
                    for c in hrtimer_clocks {
                        assert_eq!(res(c), j, "{} without high-resolution timers", c.name());
                    }
                }
                None => super::super::skip::skip(
                    "HZ unknown (no kernel config, /proc/timer_list unreadable: run as root)",
                    false,
                ),
            },
            _ => super::super::skip::skip("/proc/timer_list unreadable or without .hres_active (run as root)", false),
        }
        match jiffy {
            Some(j) => {
                for c in [PosixClock::MonotonicCoarse, PosixClock::RealtimeCoarse] {
                    assert_eq!(res(c), j, "{} at CONFIG_HZ={}", c.name(), hz.unwrap_or_default());
                }
            }
            None => super::super::skip::skip(
                "HZ unknown (no kernel config, /proc/timer_list unreadable: run as root)",
                false,
            ),
        }
    }

    #[test]
    #[should_panic(expected = "clock_gettime(CLOCK_TAI) failed")]
    fn a_typed_read_that_fails_panics_naming_the_clock() {
        read_failed("clock_gettime", PosixClock::Tai, io::Error::from_raw_os_error(libc::EINVAL));
    }
}

//! Clock reads (vDSO `clock_gettime`) and sleeps (`clock_nanosleep`, `nanosleep`).
//!
//! `clock_nanosleep` *returns* its error code instead of setting errno. On
//! EINTR an absolute sleep is repeated with the same deadline and a relative
//! one continues with the remaining time: a signal never shortens a wait.

use std::io;
use std::mem::MaybeUninit;

use super::check_code;
use crate::time::{Nanos, Time};

/// Reads `clock` through the vDSO (no system call for the usual clocks).
#[inline]
pub fn now(clock: libc::clockid_t) -> Time {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: ts is a valid out pointer for one timespec; clock ids reaching
    // here come from `ClockId`, which only holds ids the kernel supports, so
    // the call cannot fail and fully initialises ts.
    let ts = unsafe {
        libc::clock_gettime(clock, ts.as_mut_ptr());
        ts.assume_init()
    };
    Time::from_timespec(&ts)
}

/// Tries to read `clock`, reporting an unsupported clock id instead of assuming success.
#[cfg(test)]
pub fn try_now(clock: libc::clockid_t) -> io::Result<Time> {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: ts is a valid out pointer; on success the kernel filled it.
    let ret = unsafe { libc::clock_gettime(clock, ts.as_mut_ptr()) };
    super::check_ret(ret)?;
    // SAFETY: clock_gettime returned 0, so ts is initialised.
    Ok(Time::from_timespec(unsafe { &ts.assume_init() }))
}

/// The resolution `clock_getres` reports for `clock`.
pub fn resolution(clock: libc::clockid_t) -> io::Result<Nanos> {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: ts is a valid out pointer for one timespec.
    let ret = unsafe { libc::clock_getres(clock, ts.as_mut_ptr()) };
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

    #[test]
    fn monotonic_never_goes_back_and_sleep_waits() {
        let a = now(libc::CLOCK_MONOTONIC);
        sleep_until(libc::CLOCK_MONOTONIC, a + Nanos::from_us(200)).unwrap();
        let b = now(libc::CLOCK_MONOTONIC);
        assert!(b - a >= Nanos::from_us(200));
        sleep_for(libc::CLOCK_MONOTONIC, Nanos::from_us(100)).unwrap();
        assert!(now(libc::CLOCK_MONOTONIC) - b >= Nanos::from_us(100));
    }

    #[test]
    fn bad_clock_is_an_error_not_a_panic() {
        assert!(try_now(-1234).is_err());
        assert!(sleep_until(-1234, Time(0)).is_err());
        assert!(resolution(libc::CLOCK_MONOTONIC).unwrap() > Nanos(0));
    }
}

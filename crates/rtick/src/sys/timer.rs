//! Kernel interval timers: POSIX timers aimed at one thread, and ITIMER_REAL.

use std::io;
use std::mem::MaybeUninit;

use super::check_ret;
use super::claim::{Claim, InUse};
use crate::time::{Nanos, Time};

/// The kernel thread id of the caller.
pub fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// A POSIX timer (`timer_create`) whose signal is sent to one thread
/// (`SIGEV_THREAD_ID`), as cyclictest's default mode does. Deleted on drop.
///
/// Not `Send`: a thread-directed timer keeps signalling the thread that
/// created it, so it stays with that thread (as the waiters holding it do).
#[derive(Debug)]
pub struct PosixTimer {
    id: libc::timer_t,
}

/// Where a POSIX timer's expiry goes.
#[derive(Copy, Clone, Debug)]
pub enum Notify {
    /// Signal directed at one thread (SIGEV_THREAD_ID).
    Thread { signo: libc::c_int, tid: libc::pid_t },
    /// Signal to the process (SIGEV_SIGNAL), handled by whichever thread has it unblocked.
    Process { signo: libc::c_int },
}

impl PosixTimer {
    /// Creates a timer on `clock` that notifies as `notify` says.
    pub fn create(clock: libc::clockid_t, notify: Notify) -> io::Result<PosixTimer> {
        // SAFETY: sigevent is plain data; all-zero is a valid starting value.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        match notify {
            Notify::Thread { signo, tid } => {
                sev.sigev_notify = libc::SIGEV_THREAD_ID;
                sev.sigev_signo = signo;
                sev.sigev_notify_thread_id = tid;
            }
            Notify::Process { signo } => {
                sev.sigev_notify = libc::SIGEV_SIGNAL;
                sev.sigev_signo = signo;
            }
        }
        let mut id = MaybeUninit::<libc::timer_t>::uninit();
        // SAFETY: sev and id are valid pointers for the duration of the call.
        check_ret(unsafe { libc::timer_create(clock, &mut sev, id.as_mut_ptr()) })?;
        // SAFETY: timer_create succeeded and wrote the id.
        let id = unsafe { id.assume_init() };
        Ok(PosixTimer { id })
    }

    /// Arms the timer to expire at `first` (absolute) and every `interval` after.
    pub fn arm_periodic(&self, first: Time, interval: Nanos) -> io::Result<()> {
        let spec = libc::itimerspec { it_interval: interval.to_timespec(), it_value: first.to_timespec() };
        // SAFETY: id is a live timer; spec is valid; old value may be NULL.
        check_ret(unsafe { libc::timer_settime(self.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut()) })?;
        Ok(())
    }
}

impl PosixTimer {
    /// Stops the timer.
    pub fn disarm(&self) -> io::Result<()> {
        self.arm_periodic(Time(0), Nanos::ZERO)
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: id is a live timer owned by self; deleting it also disarms it.
        unsafe { libc::timer_delete(self.id) };
    }
}

/// One of the process's three interval timers (`setitimer`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Itimer {
    /// ITIMER_REAL: wall time, SIGALRM.
    Real,
    /// ITIMER_VIRTUAL: the process's user CPU time, SIGVTALRM.
    Virtual,
    /// ITIMER_PROF: the process's user + system CPU time, SIGPROF.
    Prof,
}

/// One flag per [`Itimer`], in declaration order.
static ITIMERS_IN_USE: [InUse; 3] = [InUse::new(), InUse::new(), InUse::new()];

/// What `setitimer`'s `struct timeval` can express. The kernel converts the
/// microseconds to nanoseconds exactly (no rounding to ticks since the
/// high-resolution itimers of Linux 2.6.16), so a whole number of µs is kept
/// exactly and nothing finer can be asked for.
pub const ITIMER_RESOLUTION: Nanos = Nanos(1_000);

/// Whether an itimer can repeat every `interval` exactly: a whole number of
/// microseconds, at least one (a zero repeat interval would fire once only).
pub fn itimer_keeps(interval: Nanos) -> bool {
    interval >= ITIMER_RESOLUTION && interval.as_ns() % ITIMER_RESOLUTION.as_ns() == 0
}

impl Itimer {
    fn raw(self) -> libc::c_int {
        match self {
            Itimer::Real => libc::ITIMER_REAL,
            Itimer::Virtual => libc::ITIMER_VIRTUAL,
            Itimer::Prof => libc::ITIMER_PROF,
        }
    }

    /// The kernel's name, e.g. `ITIMER_REAL`.
    pub fn name(self) -> &'static str {
        match self {
            Itimer::Real => "ITIMER_REAL",
            Itimer::Virtual => "ITIMER_VIRTUAL",
            Itimer::Prof => "ITIMER_PROF",
        }
    }

    /// Claims the timer for the caller: there is one of each per process, and
    /// two users would silently share it. `ResourceBusy` while another
    /// [`ClaimedItimer`] of the same kind is alive.
    pub fn claim(self) -> io::Result<ClaimedItimer> {
        match ITIMERS_IN_USE[self as usize].claim() {
            Some(claim) => Ok(ClaimedItimer { which: self, _claim: claim }),
            None => Err(io::Error::new(io::ErrorKind::ResourceBusy, format!("{} is already in use", self.name()))),
        }
    }
}

/// An interval timer of the process, held by one owner; disarmed, then
/// released for another owner, on drop.
#[derive(Debug)]
pub struct ClaimedItimer {
    which: Itimer,
    /// Released after `drop` has disarmed the timer.
    _claim: Claim,
}

impl ClaimedItimer {
    /// Arms the timer to fire `first` from now and every `interval` after.
    ///
    /// `first` is rounded *up* to the next microsecond, so the timer never
    /// fires before the time asked for, and a `first` of zero or less fires
    /// after 1 µs (a zero `it_value` would disarm instead). `interval` is zero
    /// (fire once) or a whole number of microseconds ([`itimer_keeps`]);
    /// anything else is `InvalidInput` and arms nothing, since the timer
    /// would keep a different period (or, under 1 µs, fire only once).
    pub fn arm(&self, first: Nanos, interval: Nanos) -> io::Result<()> {
        if interval != Nanos::ZERO && !itimer_keeps(interval) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} repeats in whole microseconds, not every {} ns", self.which.name(), interval.as_ns()),
            ));
        }
        set_itimer(self.which, first_expiry(first), timeval_ceil(interval))
    }

    /// Stops the timer.
    pub fn disarm(&self) -> io::Result<()> {
        set_itimer(self.which, timeval_ceil(Nanos::ZERO), timeval_ceil(Nanos::ZERO))
    }
}

impl Drop for ClaimedItimer {
    fn drop(&mut self) {
        let _ = self.disarm();
    }
}

/// The `it_value` of a first expiry `first` from now: rounded up to the
/// microsecond, so the timer never fires before it, and at least 1 µs, so a
/// time already past fires at once (a zero `it_value` would disarm, a
/// negative one is EINVAL).
fn first_expiry(first: Nanos) -> libc::timeval {
    timeval_ceil(first.max(Nanos(1)))
}

/// A non-negative span as a `timeval`, rounded up to the microsecond.
fn timeval_ceil(span: Nanos) -> libc::timeval {
    let ts = span.to_timespec();
    let usec = (ts.tv_nsec + 999) / 1000;
    // tv_usec must stay below 1 s: 999 999 001 ns and more carry into tv_sec.
    let (sec, usec) = if usec == 1_000_000 { (ts.tv_sec + 1, 0) } else { (ts.tv_sec, usec) };
    libc::timeval { tv_sec: sec, tv_usec: usec as libc::suseconds_t }
}

/// `setitimer(which, {interval, value})`; a zero `value` disarms.
fn set_itimer(which: Itimer, value: libc::timeval, interval: libc::timeval) -> io::Result<()> {
    let val = libc::itimerval { it_interval: interval, it_value: value };
    // SAFETY: val is a valid itimerval; the old value may be NULL. `which` is
    // passed as the kernel's int; libc's type for it differs between targets.
    check_ret(unsafe { libc::setitimer(which.raw() as _, &val, std::ptr::null_mut()) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timevals_round_up_to_the_microsecond() {
        let tv = |ns| {
            let t = timeval_ceil(Nanos(ns));
            (t.tv_sec, t.tv_usec)
        };
        assert_eq!(tv(0), (0, 0));
        assert_eq!(tv(1), (0, 1));
        assert_eq!(tv(1_000), (0, 1));
        assert_eq!(tv(1_001), (0, 2));
        assert_eq!(tv(999_999_001), (1, 0));
        assert_eq!(tv(2_000_000_500), (2, 1));
    }

    #[test]
    fn a_first_expiry_already_due_still_arms() {
        let tv = |ns| {
            let t = first_expiry(Nanos(ns));
            (t.tv_sec, t.tv_usec)
        };
        // Zero would disarm and a negative time is EINVAL: both fire after 1 µs.
        assert_eq!(tv(0), (0, 1));
        assert_eq!(tv(-5_000), (0, 1));
        assert_eq!(tv(500), (0, 1));
        assert_eq!(tv(1_500), (0, 2));
    }

    #[test]
    fn itimer_periods_are_whole_microseconds() {
        for (ns, kept) in [(0, false), (500, false), (999, false), (1_000, true), (1_500, false), (2_000, true)] {
            assert_eq!(itimer_keeps(Nanos(ns)), kept, "{ns} ns");
        }
    }
}

//! Kernel interval timers: POSIX timers aimed at one thread, and ITIMER_REAL.

use std::io;
use std::mem::MaybeUninit;

use super::check_ret;
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

/// The process's ITIMER_REAL, armed periodically; disarmed on drop.
///
/// There is one per process: only one thread can measure with it.
#[derive(Debug)]
pub struct ITimerReal(());

impl ITimerReal {
    /// Arms ITIMER_REAL to fire after `first` and every `interval` after (both relative).
    pub fn arm(first: Nanos, interval: Nanos) -> io::Result<ITimerReal> {
        set_itimer(libc::ITIMER_REAL, first, interval)?;
        Ok(ITimerReal(()))
    }
}

fn timeval(span: Nanos) -> libc::timeval {
    let ts = span.to_timespec();
    libc::timeval { tv_sec: ts.tv_sec, tv_usec: (ts.tv_nsec / 1000) as libc::suseconds_t }
}

/// `setitimer(which, first, interval)`; `first` of zero disarms.
pub fn set_itimer(which: libc::c_int, first: Nanos, interval: Nanos) -> io::Result<()> {
    // A zero it_value disarms; a sub-microsecond first expiry must still arm.
    let first = if first > Nanos::ZERO && first < Nanos(1000) { Nanos(1000) } else { first };
    let val = libc::itimerval { it_interval: timeval(interval), it_value: timeval(first) };
    // SAFETY: val is a valid itimerval; the old value may be NULL. `which` is
    // passed as the kernel's int; libc's type for it differs between targets.
    check_ret(unsafe { libc::setitimer(which as _, &val, std::ptr::null_mut()) })?;
    Ok(())
}

impl Drop for ITimerReal {
    fn drop(&mut self) {
        let _ = set_itimer(libc::ITIMER_REAL, Nanos::ZERO, Nanos::ZERO);
    }
}

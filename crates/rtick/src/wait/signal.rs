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
use crate::sys::timer::{self, ITimerReal, Notify, PosixTimer};
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
/// `setitimer` only takes relative times: the first expiry is set to
/// `first − now` just before arming, so the kernel's grid starts up to one
/// system call later than rtick's (well under a microsecond), a bias that
/// shows as latency. When a wake-up is late, the kernel forwards the timer
/// past the time of the signal's dequeue and drops the expirations in between
/// without counting them; the engine's skip policy follows the same grid.
///
/// SIGALRM goes to the process, not to a thread; like every waiter it is
/// still used only in the thread that built it (the one that waits).
pub(super) struct ItimerWait {
    clock: ClockId,
    set: SigSet,
    timer: Option<ITimerReal>,
}

impl ItimerWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        ensure_blocked(libc::SIGALRM, "itimer")?;
        Ok(ItimerWait { clock, set: SigSet::of(&[libc::SIGALRM]), timer: None })
    }
}

impl Waiter for ItimerWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, first: Time, interval: Nanos) -> Result<()> {
        let rel = first - self.clock.now();
        self.timer = Some(ITimerReal::arm(rel, interval).map_err(|e| Error::sys("setitimer(ITIMER_REAL)", e, ""))?);
        Ok(())
    }

    fn disarm(&mut self) -> Result<()> {
        self.timer = None;
        signal::drain(&self.set);
        Ok(())
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        signal::wait(&self.set).map_err(|e| Error::sys("sigwaitinfo", e, ""))?;
        Ok(Wake { planned: deadline, actual: self.clock.now(), kernel_next: None })
    }
}

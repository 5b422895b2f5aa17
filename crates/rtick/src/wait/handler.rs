//! A POSIX timer delivered to an asynchronous signal handler (SIGEV_SIGNAL):
//! the classic signal path, which seed 000 explains is slow because the
//! kernel delivers the signal in thread context, not from the timer interrupt.
//! The wake-up time is the handler's entry (that is where such programs do
//! their work); the thread waits in `sigsuspend`. The signal goes to the
//! process, so one measuring thread only.

use std::sync::atomic::Ordering;

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::signal::{self, HandlerGuard, SigSet, HANDLER_OVERRUN, HANDLER_RUNS, HANDLER_TIME};
use crate::sys::timer::{Notify, PosixTimer};
use crate::time::{Nanos, Time};

pub(super) struct HandlerTimerWait {
    clock: ClockId,
    signo: libc::c_int,
    timer: PosixTimer,
    _handler: HandlerGuard,
    interval: Nanos,
    seen: u64,
}

impl HandlerTimerWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        let signo = signal::handler_signal();
        super::signal::ensure_blocked(signo, "posix-timer-handler")?;
        let handler =
            signal::install_timer_handler(signo, clock.posix()).map_err(|e| Error::sys("sigaction", e, ""))?;
        let timer = PosixTimer::create(clock.raw(), Notify::Process { signo })
            .map_err(|e| Error::sys("timer_create(SIGEV_SIGNAL)", e, "check RLIMIT_SIGPENDING (ulimit -i)"))?;
        Ok(HandlerTimerWait { clock, signo, timer, _handler: handler, interval: Nanos::ZERO, seen: 0 })
    }
}

impl Waiter for HandlerTimerWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        self.seen = HANDLER_RUNS.load(Ordering::Acquire);
        self.timer.arm_periodic(first, interval).map_err(|e| Error::sys("timer_settime(TIMER_ABSTIME)", e, ""))
    }

    fn disarm(&mut self) -> Result<()> {
        self.timer.disarm().map_err(|e| Error::sys("timer_settime(0)", e, ""))?;
        signal::drain(&SigSet::of(&[self.signo]));
        Ok(())
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        // The signal is blocked outside sigsuspend, so one that arrives between
        // the check and the suspend stays pending and ends the suspend at once.
        while HANDLER_RUNS.load(Ordering::Acquire) == self.seen {
            signal::suspend_unblocking(self.signo);
        }
        self.seen = HANDLER_RUNS.load(Ordering::Acquire);
        let actual = Time(HANDLER_TIME.load(Ordering::Relaxed));
        let overrun = HANDLER_OVERRUN.load(Ordering::Relaxed) as i64;
        Ok(Wake { planned: deadline, actual, kernel_next: Some(deadline + self.interval * (1 + overrun)) })
    }
}

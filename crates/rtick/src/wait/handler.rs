//! A POSIX timer delivered to an asynchronous signal handler (SIGEV_SIGNAL):
//! the classic signal path, which is slow because the
//! kernel delivers the signal in thread context, not from the timer interrupt.
//! The wake-up time is the handler's entry (that is where such programs do
//! their work); the thread waits in `sigsuspend`. The signal goes to the
//! process and a handler can only record into statics: one per process (a
//! second one alive at the same time is refused).

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::signal::{self, HandlerGuard, SigSet};
use crate::sys::timer::{Notify, PosixTimer};
use crate::time::{Nanos, Time};

/// The timer, the installed handler, and what the handler last recorded.
/// `!Send` (it holds a POSIX timer): used in the thread that built it, the
/// one that waits in `sigsuspend`.
pub(super) struct HandlerTimerWait {
    clock: ClockId,
    signo: libc::c_int,
    timer: PosixTimer,
    handler: HandlerGuard,
    interval: Nanos,
    seen: u64,
    /// The thread's mask without the signal, computed when built and when
    /// armed, so that each wait makes one system call (`sigsuspend`), not a
    /// mask query too.
    suspend_mask: SigSet,
}

impl HandlerTimerWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        let signo = signal::handler_signal();
        super::signal::ensure_blocked(signo, "posix-timer-handler")?;
        let handler = signal::install_timer_handler(signo, clock.posix()).map_err(|e| match e.kind() {
            std::io::ErrorKind::ResourceBusy => Error::Unavailable {
                mechanism: "posix-timer-handler",
                reason: "one per process, and another one is in use (its signal handler records into \
                         process-wide state); drop it first"
                    .into(),
            },
            _ => Error::sys("sigaction", e, ""),
        })?;
        let timer = PosixTimer::create(clock.raw(), Notify::Process { signo })
            .map_err(|e| Error::sys("timer_create(SIGEV_SIGNAL)", e, "check RLIMIT_SIGPENDING (ulimit -i)"))?;
        let suspend_mask = SigSet::current_without(signo);
        Ok(HandlerTimerWait { clock, signo, timer, handler, interval: Nanos::ZERO, seen: 0, suspend_mask })
    }
}

impl Waiter for HandlerTimerWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        self.seen = self.handler.runs();
        self.suspend_mask = SigSet::current_without(self.signo);
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
        while self.handler.runs() == self.seen {
            signal::suspend(&self.suspend_mask);
        }
        self.seen = self.handler.runs();
        let actual = self.handler.last_entry();
        let overrun = self.handler.last_overrun() as i64;
        Ok(Wake { planned: deadline, actual, kernel_next: Some(deadline + self.interval * (1 + overrun)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test in the crate that installs the handler: the statics it
    /// guards are process-wide, so a concurrent test would see it in use.
    #[test]
    fn one_per_process_and_again_after_drop() {
        std::thread::spawn(|| {
            signal::block(&[signal::handler_signal()]).unwrap();
            let first = HandlerTimerWait::new(ClockId::Monotonic).unwrap();
            let Err(e) = HandlerTimerWait::new(ClockId::Monotonic) else { panic!("a second handler was installed") };
            assert!(matches!(e, Error::Unavailable { mechanism: "posix-timer-handler", .. }), "{e:?}");
            assert!(e.to_string().contains("one per process, and another one is in use"), "{e}");
            drop(first);

            let mut again = HandlerTimerWait::new(ClockId::Monotonic).unwrap();
            let before = again.handler.runs();
            again.arm(ClockId::Monotonic.now() + Nanos::from_ms(1), Nanos::from_ms(1)).unwrap();
            // The signal goes to the process: whichever thread leaves it
            // unblocked runs the handler (not necessarily this one), so watch
            // the count rather than wait in sigsuspend.
            let start = std::time::Instant::now();
            while again.handler.runs() < before + 3 && start.elapsed() < std::time::Duration::from_secs(10) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            again.disarm().unwrap();
            assert!(
                again.handler.runs() >= before + 3,
                "the reinstalled handler ran {}",
                again.handler.runs() - before
            );
        })
        .join()
        .unwrap();
    }
}

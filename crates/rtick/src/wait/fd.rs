//! timerfd, read directly or through epoll as event loops do.

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::fd::{Epoll, TimerFd};
use crate::time::{Nanos, Time};

/// A periodic absolute timerfd. Each `read` returns the expirations since
/// the last one, so the kernel's grid (and what it skipped) is known exactly.
/// Bound to no thread, but like every waiter used in the thread that built it.
pub(super) struct TimerfdWait {
    clock: ClockId,
    tfd: TimerFd,
    epoll: Option<Epoll>,
    interval: Nanos,
}

impl TimerfdWait {
    pub(super) fn new(clock: ClockId, with_epoll: bool) -> Result<Self> {
        let name = if with_epoll { "timerfd-epoll" } else { "timerfd" };
        let tfd = TimerFd::new(clock.raw()).map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) => Error::Unavailable {
                mechanism: name,
                reason: format!(
                    "timerfd does not support {} (use monotonic, realtime or boottime)",
                    clock.kernel_name()
                ),
            },
            _ => Error::sys("timerfd_create", e, "check the open-file limit (ulimit -n)"),
        })?;
        let epoll = if with_epoll {
            let ep =
                Epoll::new().map_err(|e| Error::sys("epoll_create1", e, "check the open-file limit (ulimit -n)"))?;
            ep.add(std::os::fd::AsFd::as_fd(&tfd)).map_err(|e| Error::sys("epoll_ctl(ADD)", e, ""))?;
            Some(ep)
        } else {
            None
        };
        Ok(TimerfdWait { clock, tfd, epoll, interval: Nanos::ZERO })
    }
}

impl Waiter for TimerfdWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        self.tfd.arm(first, interval).map_err(|e| Error::sys("timerfd_settime(TFD_TIMER_ABSTIME)", e, ""))
    }

    fn disarm(&mut self) -> Result<()> {
        // Disarming also resets the expiration count.
        self.tfd.arm(Time(0), Nanos::ZERO).map_err(|e| Error::sys("timerfd_settime(0)", e, ""))
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        if let Some(ep) = &self.epoll {
            ep.wait().map_err(|e| Error::sys("epoll_wait", e, ""))?;
        }
        let expirations = self.tfd.read().map_err(|e| Error::sys("read(timerfd)", e, ""))?;
        let actual = self.clock.now();
        let next = deadline + self.interval * expirations.max(1) as i64;
        Ok(Wake { planned: deadline, actual, kernel_next: Some(next) })
    }
}

//! Calls that take a relative timeout, aimed at the deadline: each wait
//! sleeps for `deadline − now` (recomputed after a signal), as a program that
//! keeps an absolute schedule uses them. Their precision differs through the
//! kernel paths behind them (poll/select estimate a slack of their own for
//! non-real-time threads; usleep rounds to microseconds).

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::{fd::Epoll, poll, sleep};
use crate::time::{Nanos, Time};

/// Which call waits.
pub(super) enum Call {
    Ppoll,
    Pselect,
    EpollPwait2(Epoll),
    Usleep,
    StdSleep,
}

/// A relative-timeout call aimed at each deadline. Bound to no thread, but
/// like every waiter used in the thread that built it.
pub(super) struct TimeoutWait {
    clock: ClockId,
    call: Call,
}

impl TimeoutWait {
    pub(super) fn new(clock: ClockId, call: Call) -> Result<Self> {
        Ok(TimeoutWait { clock, call })
    }

    /// `epoll-pwait2`, or the reason the kernel cannot do it.
    pub(super) fn epoll_pwait2(clock: ClockId) -> Result<Self> {
        let ep = Epoll::new().map_err(|e| Error::sys("epoll_create1", e, "check the open-file limit (ulimit -n)"))?;
        match ep.pwait2(Nanos::ZERO) {
            Ok(_) => Ok(TimeoutWait { clock, call: Call::EpollPwait2(ep) }),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => Err(Error::Unavailable {
                mechanism: "epoll-pwait2",
                reason: "this kernel has no epoll_pwait2 (Linux 5.11 or later needed)".into(),
            }),
            Err(e) => Err(Error::sys("epoll_pwait2", e, "")),
        }
    }
}

impl Waiter for TimeoutWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        loop {
            let left = deadline - self.clock.now();
            if left <= Nanos::ZERO {
                break;
            }
            let r = match &self.call {
                Call::Ppoll => poll::ppoll(left).map_err(|e| ("ppoll", e)),
                Call::Pselect => poll::pselect(left).map_err(|e| ("pselect", e)),
                Call::EpollPwait2(ep) => ep.pwait2(left).map(|_| ()).map_err(|e| ("epoll_pwait2", e)),
                // usleep takes whole µs: round up so it never returns before the deadline.
                Call::Usleep => {
                    sleep::usleep(((left.as_ns() + 999) / 1000).min(u32::MAX as i64) as u32).map_err(|e| ("usleep", e))
                }
                Call::StdSleep => {
                    std::thread::sleep(left.to_std());
                    Ok(())
                }
            };
            match r {
                Ok(()) => break,
                Err((_, e)) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err((call, e)) => return Err(Error::sys(call, e, "")),
            }
        }
        Ok(Wake { planned: deadline, actual: self.clock.now(), kernel_next: None })
    }
}

//! Waiting on a futex or a condition variable that nobody signals: the
//! timeout is the wake-up.

use std::sync::atomic::AtomicU32;

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::futex::{self, ClockCondvar};
use crate::time::Time;

/// `FUTEX_WAIT_BITSET` with an absolute timeout. Bound to no thread, but
/// like every waiter used in the thread that built it.
pub(super) struct FutexWait {
    clock: ClockId,
    word: AtomicU32,
}

impl FutexWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        match clock {
            ClockId::Monotonic | ClockId::Realtime => Ok(FutexWait { clock, word: AtomicU32::new(0) }),
            _ => Err(Error::Unavailable {
                mechanism: "futex",
                reason: format!("futex timeouts are on CLOCK_MONOTONIC or CLOCK_REALTIME, not {}", clock.kernel_name()),
            }),
        }
    }
}

impl Waiter for FutexWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        // The word never changes: each return is the timeout, a signal or a
        // spurious wake-up; only the deadline having passed ends the wait.
        loop {
            match futex::wait_bitset_until(&self.word, 0, deadline, self.clock == ClockId::Realtime) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(Error::sys("futex(FUTEX_WAIT_BITSET)", e, "")),
            }
            let actual = self.clock.now();
            if actual >= deadline {
                return Ok(Wake { planned: deadline, actual, kernel_next: None });
            }
        }
    }
}

/// `pthread_cond_timedwait` on a condition variable using the run's clock.
/// Bound to no thread, but like every waiter used in the thread that built it.
pub(super) struct CondvarWait {
    clock: ClockId,
    cv: ClockCondvar,
}

impl CondvarWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        if !matches!(clock, ClockId::Monotonic | ClockId::Realtime) {
            return Err(Error::Unavailable {
                mechanism: "condvar",
                reason: format!(
                    "condition variables time out on CLOCK_MONOTONIC or CLOCK_REALTIME, not {}",
                    clock.kernel_name()
                ),
            });
        }
        let cv = ClockCondvar::new(clock.raw()).map_err(|e| Error::sys("pthread_cond_init", e, ""))?;
        Ok(CondvarWait { clock, cv })
    }
}

impl Waiter for CondvarWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        self.cv.wait_until(deadline).map_err(|e| Error::sys("pthread_cond_timedwait", e, ""))?;
        Ok(Wake { planned: deadline, actual: self.clock.now(), kernel_next: None })
    }
}

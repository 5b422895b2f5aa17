//! Sleeping mechanisms: `clock_nanosleep` (absolute and relative) and `nanosleep`.

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::clock;
use crate::time::{Nanos, Time};

/// `clock_nanosleep(TIMER_ABSTIME)` to each deadline.
pub(super) struct AbsoluteSleep {
    clock: ClockId,
}

impl AbsoluteSleep {
    pub(super) fn new(clock: ClockId) -> Self {
        AbsoluteSleep { clock }
    }
}

impl Waiter for AbsoluteSleep {
    fn now(&self) -> Time {
        self.clock.now()
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        clock::sleep_until(self.clock.raw(), deadline)
            .map_err(|e| Error::sys("clock_nanosleep(TIMER_ABSTIME)", e, ""))?;
        Ok(Wake { planned: deadline, actual: self.clock.now(), kernel_next: None })
    }
}

/// A relative sleep of one interval, measured against the time read before it.
pub(super) struct RelativeSleep {
    clock: ClockId,
    interval: Nanos,
    syscall: bool,
}

impl RelativeSleep {
    /// The interval comes with [`Waiter::arm`]; until then it sleeps nothing.
    pub(super) fn clock_nanosleep(clock: ClockId) -> Self {
        RelativeSleep { clock, interval: Nanos::ZERO, syscall: false }
    }
    pub(super) fn nanosleep(clock: ClockId) -> Self {
        RelativeSleep { clock, interval: Nanos::ZERO, syscall: true }
    }
}

impl Waiter for RelativeSleep {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, _first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        Ok(())
    }

    #[inline]
    fn wait(&mut self, _deadline: Time) -> Result<Wake> {
        let before = self.clock.now();
        if self.syscall {
            crate::sys::sleep::sys_nanosleep(self.interval).map_err(|e| Error::sys("nanosleep", e, ""))?;
        } else {
            clock::sleep_for(self.clock.raw(), self.interval).map_err(|e| Error::sys("clock_nanosleep", e, ""))?;
        }
        Ok(Wake { planned: before + self.interval, actual: self.clock.now(), kernel_next: None })
    }
}

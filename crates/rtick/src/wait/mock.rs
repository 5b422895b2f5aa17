//! A mechanism on a manual clock: it "wakes" at deadline + the next scripted
//! latency without waiting. The engine, statistics and output can then be
//! tested with exact numbers.

use super::{Waiter, Wake};
use crate::error::{Error, Result};
use crate::time::{Nanos, Time};

/// What the mock mechanism does (feature `mock`, for tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MockScript {
    /// The latencies to produce, in turn (ns).
    pub latencies: Vec<i64>,
    /// Step its clock by `.1` ns at its `.0`-th wake-up (tests of step detection).
    pub step: Option<(u64, i64)>,
}

pub(super) struct Mock {
    now: Time,
    latencies: Vec<i64>,
    next: usize,
    step: Option<(u64, i64)>,
    stepped: Nanos,
}

impl Mock {
    pub(super) fn new(script: &MockScript) -> Result<Self> {
        let (latencies, step) = (script.latencies.clone(), script.step);
        if latencies.is_empty() {
            return Err(Error::Invalid("the mock mechanism needs at least one latency".into()));
        }
        // Start well away from zero so early wake-ups stay positive times.
        Ok(Mock { now: Time(Nanos::from_secs(1000).as_ns()), latencies, next: 0, step, stepped: Nanos::ZERO })
    }
}

impl Waiter for Mock {
    fn now(&self) -> Time {
        self.now
    }

    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        let lat = Nanos(self.latencies[self.next % self.latencies.len()]);
        // The manual clock never goes back by itself: a wake-up cannot precede the last one.
        self.now = (deadline + lat).max(self.now);
        // A scripted step of the clock itself (as settimeofday makes one), unseen by the reference.
        if let Some((at, by)) = self.step {
            if self.next as u64 == at {
                self.now += Nanos(by);
                self.stepped = self.stepped + Nanos(by);
            }
        }
        self.next += 1;
        Ok(Wake { planned: deadline, actual: self.now, kernel_next: None })
    }

    fn reference_now(&self) -> Time {
        self.now - self.stepped
    }
}

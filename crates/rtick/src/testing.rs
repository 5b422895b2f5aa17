//! Test waiters (feature `testing`): a mechanism on a manual clock that
//! "wakes" at deadline + the next scripted latency without waiting, so that
//! the engine, the statistics and the outputs can be tested with exact
//! numbers. It reaches a run or a loop as a [`WaiterSource`]: give a
//! [`MockScript`] to [`MeasureConfig::waiters`](crate::measure::MeasureConfig::waiters)
//! or [`PeriodicBuilder::waiters`](crate::periodic::PeriodicBuilder::waiters)
//! and measure [`MOCK`].

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::time::{Nanos, Time};
use crate::wait::kind::{test_rows, KindInfo};
use crate::wait::{Mechanism, WaitConfig, Waiter, WaiterSource, Wake};

/// The mock mechanism: built only from a [`MockScript`].
pub const MOCK: Mechanism = test_rows::MOCK;

/// The rows of the test mechanisms (hidden: left out of listings), beside
/// the public table [`crate::wait::KINDS`].
pub const KINDS: &[KindInfo] = test_rows::KINDS;

/// A scripted clock step: the mock's clock jumps by `by` at its `at`-th wake-up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MockStep {
    /// The wake-up (counted from 0) at which the clock steps.
    pub at: u64,
    /// How far it steps (negative: back).
    pub by: Nanos,
}

/// What the mock mechanism does; as a [`WaiterSource`] it builds the waiter
/// of [`MOCK`] and leaves every other mechanism to the library.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MockScript {
    /// The latencies to produce, in turn (ns).
    pub latencies: Vec<i64>,
    /// Step its clock at one wake-up (tests of step detection).
    pub step: Option<MockStep>,
}

impl MockScript {
    /// The script as the waiter source of a run or a loop.
    pub fn source(self) -> Arc<dyn WaiterSource> {
        Arc::new(self)
    }
}

impl WaiterSource for MockScript {
    fn waiter(&self, mechanism: Mechanism, _cfg: &WaitConfig) -> Option<Result<Box<dyn Waiter>>> {
        (mechanism == MOCK).then(|| Mock::new(self).map(|m| Box::new(m) as Box<dyn Waiter>))
    }
}

struct Mock {
    now: Time,
    latencies: Vec<i64>,
    next: usize,
    step: Option<MockStep>,
    stepped: Nanos,
}

impl Mock {
    fn new(script: &MockScript) -> Result<Self> {
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
        if let Some(step) = self.step {
            if self.next as u64 == step.at {
                self.now += step.by;
                self.stepped = self.stepped + step.by;
            }
        }
        self.next += 1;
        Ok(Wake { planned: deadline, actual: self.now, kernel_next: None })
    }

    fn reference_now(&self) -> Time {
        self.now - self.stepped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ClockId;
    use crate::wait::{self, HybridSlack};

    fn config(waiters: Option<Arc<dyn WaiterSource>>) -> WaitConfig {
        WaitConfig { clock: ClockId::Monotonic, hybrid_slack: HybridSlack::Auto, waiters }
    }

    #[test]
    fn the_mock_is_a_hidden_mechanism_built_only_from_its_script() {
        assert_eq!(Mechanism::parse("mock"), Some(MOCK));
        assert!(!MOCK.built_in() && MOCK.info().hidden);
        assert!(!crate::wait::KINDS.iter().any(|k| k.mechanism == MOCK), "not in the public table");
        let Err(Error::Invalid(why)) = wait::build(MOCK, &config(None)) else { panic!("built without a script") };
        assert!(why.contains("mock"), "{why}");
        let script = MockScript { latencies: vec![250], step: None };
        let mut w = wait::build(MOCK, &config(Some(script.source()))).unwrap();
        let deadline = w.now() + Nanos(1_000);
        assert_eq!(w.wait(deadline).unwrap().actual, deadline + Nanos(250));
    }

    #[test]
    fn the_script_leaves_the_other_mechanisms_to_the_library() {
        let script = MockScript { latencies: vec![250], step: None };
        let w = wait::build(Mechanism::Spin, &config(Some(script.source()))).unwrap();
        // The library's spin reads the real clock, not the mock's manual one.
        let before = ClockId::Monotonic.now();
        let now = w.now();
        assert!(before <= now && now <= ClockId::Monotonic.now(), "{now:?} is not CLOCK_MONOTONIC");
        let empty = MockScript::default().source();
        assert!(matches!(wait::build(MOCK, &config(Some(empty))), Err(Error::Invalid(_))));
    }
}

//! The hidden options of the test-only `mock` mechanism (feature `mock`):
//! the CLI's tests drive the whole pipeline with exact numbers through
//! them, the mock waiter (`rtick::testing`) injected as the run's waiter
//! source. Release builds have neither the mechanism nor these options
//! (the arguments are skipped, so always empty, and nothing is injected).

use std::sync::Arc;

use rtick::wait::WaiterSource;
use rtick::Mechanism;

use crate::Usage;

/// `--mock-latencies`, `--mock-step`, `--mock-loaded-latencies`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct MockArgs {
    /// Test-only: step the `mock` mechanism's clock by NS at its N-th wake-up (N:NS).
    #[arg(long, hide = true, value_name = "N:NS", allow_negative_numbers = true)]
    pub mock_step: Option<String>,

    /// Latencies for the test-only `mock` mechanism, in ns, used in turn.
    #[arg(long, hide = true, value_delimiter = ',', allow_negative_numbers = true)]
    pub mock_latencies: Vec<i64>,

    /// Test-only: with --phases, the `mock` mechanism's latencies in the loaded phase (ns).
    #[arg(long, hide = true, value_delimiter = ',', allow_negative_numbers = true, requires = "phases")]
    pub mock_loaded_latencies: Vec<i64>,
}

/// The mock's clock step: at its `at`-th wake-up, by `by_ns` (read only
/// where there is a mock waiter to give it to).
#[derive(Copy, Clone, Debug)]
#[cfg_attr(not(feature = "mock"), allow(dead_code))]
struct Step {
    at: u64,
    by_ns: i64,
}

impl MockArgs {
    /// The run's waiter source, checked against the mechanisms asked for:
    /// the mock waiter when `-m mock` is measured, else none.
    pub fn waiters(&self, mechanisms: &[Mechanism]) -> Result<Option<Arc<dyn WaiterSource>>, Usage> {
        // The only mechanism without a waiter of the library's own here.
        let mock = mechanisms.iter().any(|m| !m.built_in());
        if mock && self.mock_latencies.is_empty() {
            return Err(Usage("-m mock needs --mock-latencies".into()));
        }
        let step = match &self.mock_step {
            None => None,
            Some(v) => Some(
                v.split_once(':')
                    .and_then(|(n, ns)| Some(Step { at: n.parse().ok()?, by_ns: ns.parse().ok()? }))
                    .ok_or_else(|| Usage("--mock-step: expected N:NS".into()))?,
            ),
        };
        Ok(if mock { source(&self.mock_latencies, step) } else { None })
    }

    /// With --phases: the waiter source of the loaded phase, when it has
    /// latencies of its own (the run's source otherwise).
    pub fn loaded_waiters(&self, run: Option<&Arc<dyn WaiterSource>>) -> Option<Arc<dyn WaiterSource>> {
        match (run, self.mock_loaded_latencies.is_empty()) {
            (Some(_), false) => source(&self.mock_loaded_latencies, None),
            _ => None,
        }
    }
}

/// The mock waiter with these latencies and step.
#[cfg(feature = "mock")]
fn source(latencies: &[i64], step: Option<Step>) -> Option<Arc<dyn WaiterSource>> {
    let step = step.map(|s| rtick::testing::MockStep { at: s.at, by: rtick::Nanos(s.by_ns) });
    Some(rtick::testing::MockScript { latencies: latencies.to_vec(), step }.source())
}

/// Without the feature there is no mock waiter to inject.
#[cfg(not(feature = "mock"))]
fn source(_latencies: &[i64], _step: Option<Step>) -> Option<Arc<dyn WaiterSource>> {
    None
}

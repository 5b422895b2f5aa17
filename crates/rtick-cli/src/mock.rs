//! The hidden options of the test-only `mock` mechanism (feature `mock`):
//! the CLI's tests drive the whole pipeline with exact numbers through
//! them. Release builds have neither the mechanism nor these options.

use rtick::wait::MockScript;
use rtick::Mechanism;

use crate::Usage;

/// `--mock-latencies`, `--mock-step`.
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

/// The mock's script, checked against the mechanisms asked for.
pub fn script(a: &MockArgs, mechanisms: &[Mechanism]) -> Result<MockScript, Usage> {
    if mechanisms.contains(&Mechanism::Mock) && a.mock_latencies.is_empty() {
        return Err(Usage("-m mock needs --mock-latencies".into()));
    }
    let step = match &a.mock_step {
        None => None,
        Some(v) => Some(
            v.split_once(':')
                .and_then(|(n, ns)| Some((n.parse().ok()?, ns.parse().ok()?)))
                .ok_or_else(|| Usage("--mock-step: expected N:NS".into()))?,
        ),
    };
    Ok(MockScript { latencies: a.mock_latencies.clone(), step })
}

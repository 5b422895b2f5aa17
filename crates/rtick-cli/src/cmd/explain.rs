//! `rtick measure --explain`: the kernel's side of every wake-up. A tracing
//! session of rtick's own runs on the measured CPUs during the measurement;
//! afterwards each wake-up is split into its kernel phases and the worst
//! ones are explained, with their culprits named.

use std::path::Path;

use anyhow::{Context, Result};
use rtick::explain::{Alternating, ExplainedRun, Spike, SpikeChoice, Tracing};
use rtick::measure::{MeasureConfig, MeasureReport, TraceRow};
use rtick::{ClockId, Nanos};
use serde::{Deserialize, Serialize};

use super::explain_ab::AbJson;
use crate::report::breakdown::Breakdown;

/// `--explain` matches the run's wake-ups to kernel events on
/// CLOCK_MONOTONIC (the trace clock `mono`): the run must use that clock.
pub fn check_clock(clock: ClockId) -> Result<(), crate::Usage> {
    if clock == ClockId::Monotonic {
        return Ok(());
    }
    Err(crate::Usage(format!(
        "--explain needs -c monotonic: the kernel trace is timed on CLOCK_MONOTONIC, and wake-ups on {} cannot be matched to it",
        clock.name()
    )))
}

/// Starts tracing the CPUs the run measures (all it may use when its
/// threads are not pinned), before the measurement; with `ab`, the tracing
/// is to alternate with plain stretches (`--explain-ab`).
pub fn start(
    tracefs: Option<&Path>,
    cfg: &MeasureConfig,
    choice: SpikeChoice,
    ab: Option<Option<Nanos>>,
) -> Result<Tracing> {
    let cpus = cfg.measured_cpus()?;
    let ab = ab.map(|p| Alternating::new(Alternating::period(p, cfg), cfg));
    Tracing::start(tracefs, cpus, choice, ab).context("--explain")
}

/// Stops tracing and explains the run.
pub fn finish(tracing: Tracing, rows: &[TraceRow], report: &MeasureReport) -> Result<ExplainedRun> {
    tracing.finish(rows, &report.results).context("--explain: reading the trace")
}

/// The phase table, then one line per spike (`output::explain`, which
/// `rtick report` prints a saved run through).
pub fn render(run: &ExplainedRun, nsecs: bool) -> String {
    let b = Breakdown::from_explain(&json(run)).expect("measure writes every phase");
    let mut s = crate::output::explain::render(&b, nsecs, run.lost.any().then(|| format!("{:?}", run.lost)).as_deref());
    if let Some(ab) = &run.ab {
        s.push_str(&super::explain_ab::render(ab, nsecs));
    }
    s
}

/// The JSON form (`explain` in the run file): the one conversion from the
/// library's explained run.
pub fn json(run: &ExplainedRun) -> ExplainJson {
    ExplainJson {
        events: run.events as u64,
        lost_events: run.lost.count(),
        missing_events: run.missing.iter().map(|s| s.to_string()).collect(),
        results: run
            .explained
            .iter()
            .map(|e| ExplainedJson {
                mechanism: e.mechanism.name().into(),
                thread: e.thread,
                wakeups: e.wakeups,
                matched: e.matched,
                not_timer_woken: e.not_timer_woken.map(str::to_string),
                unmatched: e.unmatched.iter().map(|(r, n)| (r.to_string(), *n)).collect(),
                phases_ns: e
                    .phases
                    .iter()
                    .map(|(name, [p50, p99, max])| PhaseJson {
                        phase: name.to_string(),
                        p50: p50.as_ns(),
                        p99: p99.as_ns(),
                        max: max.as_ns(),
                    })
                    .collect(),
                spikes: e.spikes.iter().map(SpikeJson::from).collect(),
            })
            .collect(),
        ab: run.ab.as_ref().map(super::explain_ab::json),
    }
}

/// `explain` in the JSON run file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExplainJson {
    /// Kernel events recorded on the measured CPUs.
    pub events: u64,
    /// Events the ring buffer or the reader lost (0 unless the trace is incomplete).
    pub lost_events: u64,
    /// Trace events this kernel lacks.
    pub missing_events: Vec<String>,
    /// One per mechanism and thread.
    pub results: Vec<ExplainedJson>,
    /// With --explain-ab: the traced stretches against the plain ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbJson>,
}

/// One mechanism and thread explained.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExplainedJson {
    pub mechanism: String,
    pub thread: usize,
    pub wakeups: usize,
    pub matched: usize,
    pub not_timer_woken: Option<String>,
    /// Reasons wake-ups could not be split, with counts.
    pub unmatched: Vec<(String, usize)>,
    /// irq_delay, wakeup_path, scheduling, return_to_user.
    pub phases_ns: Vec<PhaseJson>,
    pub spikes: Vec<SpikeJson>,
}

/// One phase's distribution.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseJson {
    pub phase: String,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

/// One spike explained (in `explain.results[].spikes` of a run file, and
/// as `explain` of a spike at `rtick monitor`'s /spikes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpikeJson {
    pub cycle: u64,
    pub cpu: u32,
    pub latency_ns: i64,
    /// (phase, ns) in order.
    pub phases_ns: Vec<(String, i64)>,
    pub cause: String,
    /// Per phase, the top culprits (what ran, ns).
    pub culprits: Vec<Vec<(String, i64)>>,
    /// The terminal line.
    pub line: String,
}

impl From<&Spike> for SpikeJson {
    fn from(s: &Spike) -> Self {
        SpikeJson {
            cycle: s.wake.cycle,
            cpu: s.matched.cpu,
            latency_ns: (s.wake.actual - s.wake.planned).as_ns(),
            phases_ns: s.phases.named().iter().map(|(n, d)| (n.to_string(), d.as_ns())).collect(),
            cause: s.cause.to_string(),
            culprits: s
                .culprits
                .iter()
                .map(|c| c.iter().take(3).map(|(w, d)| (w.to_string(), d.as_ns())).collect())
                .collect(),
            line: s.line(),
        }
    }
}

//! `rtick measure --explain`: the kernel's side of every wake-up. A tracing
//! session of rtick's own runs on the measured CPUs during the measurement;
//! afterwards each wake-up is split into its kernel phases and the worst
//! ones are explained, with their culprits named.

use std::path::Path;

use anyhow::{Context, Result};
use rtick::explain::{Alternating, ExplainedRun, SpikeChoice, Tracing};
use rtick::measure::{MeasureConfig, MeasureReport, TraceRow};
use rtick::{ClockId, Nanos};
use rtick_model::breakdown::Breakdown;
use rtick_model::json::{ExplainJson, ExplainedJson, KernelPhaseJson, SpikeJson};

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
                phases_ns: e.phases.iter().map(|(name, summary)| KernelPhaseJson::of(name, *summary)).collect(),
                spikes: e.spikes.iter().map(SpikeJson::from).collect(),
            })
            .collect(),
        causes: rtick::explain::cause_summary(run.explained.iter().flat_map(|e| e.spikes.iter()))
            .iter()
            .map(Into::into)
            .collect(),
        ab: run.ab.as_ref().map(super::explain_ab::json),
        stacks_unavailable: run.stacks_unavailable.clone(),
        cfs: run.cfs.iter().map(Into::into).collect(),
    }
}

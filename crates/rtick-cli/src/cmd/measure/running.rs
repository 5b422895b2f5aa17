//! `measure`'s run: the threads measuring, the trace written, the live line,
//! `--explain`'s tracing around them; the system settings given back
//! before anything else can fail, on a failed run too.

use std::sync::atomic::AtomicBool;

use anyhow::Result;
use rtick::explain::{ExplainedRun, SpikeChoice, Tracing};
use rtick::measure::{self, MeasureConfig, MeasureReport, TraceRow};
use rtick::session::{Restored, Session};
use rtick::Nanos;

use super::outputs::Outputs;
use crate::cli::MeasureArgs;
use crate::cmd::phases::{Ran, Runs};
use crate::export::trace::{write_with_phases, TraceWriter};
use crate::output::progress::LiveLine;

/// What the run gave, before `--explain` reads it.
struct Measured {
    report: MeasureReport,
    /// Rows written to `--trace`, when it is asked for.
    rows: Option<u64>,
    /// Every wake-up, kept for `--explain`.
    kept: Vec<TraceRow>,
    ran: Ran,
}

/// What the run gave, explained.
pub struct Traced {
    pub report: MeasureReport,
    /// Rows written to `--trace`, when it is asked for.
    pub rows: Option<u64>,
    pub ran: Ran,
    pub explanation: Option<ExplainedRun>,
}

/// Runs the measurement, with `--explain`'s tracing started last (nothing
/// is traced while setting up), gives back `held`, then explains the run
/// and writes the trace with its phases.
pub fn run_traced(
    a: &MeasureArgs,
    (cfg, runs): (&MeasureConfig, &Runs),
    outputs: &Outputs,
    stop: &AtomicBool,
    mut held: Session,
) -> Result<Traced> {
    let measured = a
        .explain
        .map(|over| {
            let choice = SpikeChoice { top: a.explain_top, over: (over > Nanos::ZERO).then_some(over) };
            crate::cmd::explain::start(a.tracefs.as_deref(), cfg, choice, a.explain_ab)
        })
        .transpose()
        .and_then(|mut explaining| {
            // The header's last line, when the buffers follow the cap rather than the CPU count.
            if let Some(b) = explaining.as_ref().map(Tracing::buffers).filter(|b| b.capped() && !a.quiet) {
                println!("  explain       kernel trace buffers {}", b.describe());
            }
            let m = measure_restoring(a, (cfg, runs), outputs, stop, &mut held, explaining.as_mut())?;
            Ok((m, explaining))
        });
    // Restored with the other settings, before anything else can fail, and
    // on a failed run too (a failed restore is said, then the run's error).
    let Restored { idle: not_restored } = held.restore();
    let (Measured { report, rows, kept, ran }, explaining) = match measured {
        Ok(m) => m,
        Err(e) => {
            if let Some(r) = not_restored {
                eprintln!("rtick: restoring cpuidle states: {r}");
            }
            return Err(e);
        }
    };
    if let Some(r) = not_restored {
        return Err(r.into());
    }
    let explanation: Option<ExplainedRun> =
        explaining.map(|e| crate::cmd::explain::finish(e, &kept, &report)).transpose()?;
    let rows = match (&explanation, &outputs.trace) {
        (Some(e), Some(f)) => Some(write_with_phases(f.try_clone()?, &kept, |r| e.phases_of(r))?),
        _ => rows,
    };
    Ok(Traced { report, rows, ran, explanation })
}

/// Runs the measurement (with the trace writer and the live line), then
/// gives back what `held` holds (the idle states aside) before anything else can fail.
fn measure_restoring(
    a: &MeasureArgs,
    (cfg, runs): (&MeasureConfig, &Runs),
    outputs: &Outputs,
    stop: &AtomicBool,
    held: &mut Session,
    mut explaining: Option<&mut Tracing>,
) -> Result<Measured> {
    // --explain needs every wake-up: the rings run, and the writer keeps the rows.
    let keep = explaining.is_some();
    let (mut producers, writer) = match (&outputs.trace, keep) {
        (None, false) => (None, None),
        (file, _) => {
            let (p, c) = measure::trace_rings(cfg.threads.len(), a.trace_buffer as usize);
            // With --explain the trace is written after the run, with the phases.
            let file = file.as_ref().filter(|_| !keep).map(|f| f.try_clone()).transpose()?;
            (Some(p), Some(TraceWriter::spawn(file, c, keep)?))
        }
    };
    let live = LiveLine::new(a.quiet, runs.expected_duration(cfg), a.nsecs);
    let result = runs.run(cfg, stop, producers.as_deref_mut(), |p| {
        live.update(p);
        if let Some(e) = explaining.as_deref_mut() {
            e.on_progress();
        }
    });
    live.finish();
    held.release();
    let (report, ran) = result?;
    drop(producers);
    let (rows, kept) = match writer {
        Some(w) => {
            let (n, kept) = w.finish()?;
            (outputs.trace.is_some().then_some(n), kept)
        }
        None => (None, Vec::new()),
    };
    Ok(Measured { report, rows, kept, ran })
}

//! `rtick measure`: plan, set up, run, report.
//!
//! Order matters: every usage error is found before anything is created or
//! changed; output files exist only under temporary names until complete;
//! system settings (mlock, cpu_dma_latency) are held by guards and restored
//! before results are written, also after Ctrl-C.

mod notes;
mod outputs;
pub(super) mod run_file;
mod running;
pub(super) mod setup;

use std::process::ExitCode;

use anyhow::Result;
use rtick::explain::ExplainedRun;
use rtick::measure::{MeasureConfig, MeasureReport, TraceMark};
use rtick::rt::{IdleLimit, IdleStates};
use rtick::session::{Request, Session};
use rtick::system::{SysRoot, SystemInfo};
use rtick::Nanos;
use rtick_model::json::RunFile;

use self::outputs::Outputs;
use self::run_file::{record_report, run_file};
use self::running::{run_traced, Traced};
use self::setup::{mlock_detail, request, settle, take};
use super::phases::{Ran, Runs};
use super::plan::{plan, Cpus, Plan};
use super::warnings::run_warnings;
use crate::cli::MeasureArgs;
use crate::output::header;
use crate::Usage;

/// What is planned and checked before anything is created or changed.
struct Checked {
    plan: Plan,
    runs: Runs,
    /// The cpuidle states `--deepest-idle-state` limits, read beforehand.
    idle_states: Option<IdleStates>,
}

pub fn run(a: &MeasureArgs) -> Result<ExitCode> {
    let Checked { plan, runs, idle_states } = check(a)?;
    let outputs = Outputs::create(a)?;
    let idle = idle_states.as_ref().zip(a.deepest_idle_state);
    let req = Request { idle, ..request(&plan, a.looping.dma_latency) };
    let mut cfg = plan.cfg;
    let sys = SystemInfo::read();
    let mut warnings = super::cleanup::warnings(a.tracefs.as_deref());
    if a.tracemark {
        cfg.tracemark = Some(std::sync::Arc::new(open_tracemark(a.tracefs.as_deref(), &mut warnings)?));
    }
    settle(&mut cfg, &sys, plan.policy_explicit, &mut warnings)?;

    let stop = crate::stop_flag()?;

    let held = take(&req, &mut warnings)?;
    let mut file = header(a, (&cfg, &runs), &sys, &held, warnings);
    let Traced { report, rows, ran, explanation } = run_traced(a, (&cfg, &runs), &outputs, &stop, held)?;
    let after = results(a, (&cfg, &mut file), &report, ran, explanation.as_ref());
    outputs.write(&file, &cfg, &report)?;
    outputs::plot(a, &file)?;

    notes::print_results(a, &cfg, &file, &report, rows, &after);
    if let Some(e) = &explanation {
        print!("{}", super::explain::render(e, a.nsecs));
    }
    verdict(a, &file, &report)
}

/// The plan, the phases and the idle states, and the output paths checked:
/// every usage error, before anything is created or changed.
fn check(a: &MeasureArgs) -> Result<Checked> {
    let cpus = Cpus::detect()?;
    let plan = plan(a, &cpus)?;
    if a.explain.is_some() {
        super::explain::check_clock(plan.cfg.clock)?;
    }
    let runs = Runs::plan(a, &plan.cfg, &cpus)?;
    // Read (and refused) before anything is created or changed.
    let idle_states = a.deepest_idle_state.map(|_| idle_states(a, &plan.cfg)).transpose()?;
    crate::export::distinct::check(&[
        ("--json", a.json.as_deref()),
        ("--trace", a.trace.as_deref()),
        ("--histogram", a.histogram.as_deref()),
        ("--plot", a.plot.as_deref()),
    ])?;
    if let Some(p) = &a.plot {
        crate::plot::check_path("--plot", p).map_err(Usage)?;
    }
    Ok(Checked { plan, runs, idle_states })
}

/// The run file before the run, and the header printed from it (with
/// --quiet, only its warnings).
fn header(
    a: &MeasureArgs,
    (cfg, runs): (&MeasureConfig, &Runs),
    sys: &SystemInfo,
    held: &Session,
    warnings: Vec<String>,
) -> RunFile {
    let mut file = run_file(cfg, sys, held, warnings);
    file.config.deepest_idle_state = held.idle().map(IdleLimit::deepest);
    file.config.cpuidle = held.idle().map(IdleLimit::describe);
    runs.describe(&mut file, cfg);
    if a.quiet {
        file.warnings.iter().for_each(|w| println!("warning: {w}"));
    } else {
        print!("{}", header::render(&file, &mlock_detail(held.memory(), cfg)));
    }
    file
}

/// Puts the run's results into the run file: the figures, the phases, the
/// explanation, the warnings after the run (also returned, to print) and
/// --fail-if's gates.
fn results(
    a: &MeasureArgs,
    (cfg, file): (&MeasureConfig, &mut RunFile),
    report: &MeasureReport,
    ran: Ran,
    explanation: Option<&ExplainedRun>,
) -> Vec<String> {
    record_report(file, report);
    ran.record(file);
    file.explain = explanation.map(super::explain::json);
    let after = run_warnings(cfg, report);
    file.warnings.extend(after.iter().cloned());
    file.gates = a.fail_if.as_ref().map(|g| {
        g.evaluate(&file.results, &file.config.mechanisms, &file.unavailable, report.interrupted, load_failures(file))
    });
    after
}

/// The run's exit status, its outputs written: an error when nothing could
/// run or the load failed (without --fail-if), else --fail-if's verdict.
fn verdict(a: &MeasureArgs, file: &RunFile, report: &MeasureReport) -> Result<ExitCode> {
    if file.results.is_empty() && !report.interrupted {
        anyhow::bail!(
            "no mechanism could run here ({})",
            file.unavailable.iter().map(|u| u.mechanism.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    // Without --fail-if, a load that failed fails the run, its outputs written
    // (an interrupted run keeps its status: it was stopped on purpose).
    if let (None, false, Some(why)) = (&a.fail_if, report.interrupted, load_failures(file).first()) {
        anyhow::bail!(
            "{why}: the run was not under the load asked for (its outputs are written); fix the load and run again"
        );
    }
    Ok(gate_verdict(a, file))
}

fn load_failures(file: &RunFile) -> Vec<String> {
    file.load.as_ref().map(super::load::failures).unwrap_or_default()
}

/// --fail-if's verdict, printed after everything else: exit 3 unless it passed.
fn gate_verdict(a: &MeasureArgs, file: &RunFile) -> ExitCode {
    let (Some(gates), Some(g)) = (&a.fail_if, &file.gates) else { return ExitCode::SUCCESS };
    print!("{}", gates.render(g, file.results.len(), Nanos(file.elapsed_ns), a.nsecs));
    if g.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_FAIL)
    }
}

/// The cpuidle states of the CPUs the threads may run on (every allowed
/// CPU for an unpinned thread), read under --sysfs-root when given.
fn idle_states(a: &MeasureArgs, cfg: &MeasureConfig) -> Result<IdleStates> {
    let root = a.sysfs_root.as_ref().map_or_else(SysRoot::default, SysRoot::new);
    Ok(IdleStates::read(&root, &cfg.measured_cpus()?)?)
}

/// Opens the kernel trace for --tracemark, with a warning when tracing is off.
fn open_tracemark(tracefs: Option<&std::path::Path>, warnings: &mut Vec<String>) -> Result<TraceMark> {
    let t = TraceMark::open(tracefs)?;
    if t.was_on() == Some(false) {
        warnings.push(format!(
            "tracing is off ({}/tracing_on = 0): the mark will have no trace before it — start one first, e.g. trace-cmd start -e sched_switch -e irq -e timer",
            t.dir().display()
        ));
    }
    Ok(t)
}

//! `rtick measure`: plan, set up, run, report.
//!
//! Order matters: every usage error is found before anything is created or
//! changed; output files exist only under temporary names until complete;
//! system settings (mlock, cpu_dma_latency) are held by guards and restored
//! before results are written, also after Ctrl-C.

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use rtick::explain::SpikeChoice;
use rtick::measure::{self, MeasureConfig, MeasureReport, TraceMark, TraceRow};
use rtick::rt::{self, DmaLatency, IdleLimit, IdleStates, MemoryLock, Policy, DEFAULT_HEAP_PREFAULT};
use rtick::system::{SysRoot, SystemInfo};
use rtick::wait::HybridSlack;
use rtick::Nanos;

use super::explain::{Explaining, Explanation};
use super::phases::{Ran, Runs};
use super::plan::{plan, Cpus};
use super::warnings::{audit_warnings, run_warnings, static_warnings};
use crate::cli::MeasureArgs;
use crate::export::atomic::AtomicFile;
use crate::export::{histogram, trace::write_with_phases, trace::TraceWriter};
use crate::output::{fmt_latency, header, progress::LiveLine, recommend};
use crate::Usage;
use rtick_model::json::{self, BreakJson, ConfigJson, RunFile, SystemJson};

/// Output files, created (as temporaries) before the run.
struct Outputs {
    json: Option<AtomicFile>,
    trace: Option<AtomicFile>,
    histogram: Option<AtomicFile>,
}

impl Outputs {
    fn create(a: &MeasureArgs) -> Result<Outputs, Usage> {
        let make = |opt: &str, p: &Option<std::path::PathBuf>| AtomicFile::create_opt(opt, p.as_deref());
        Ok(Outputs {
            json: make("--json", &a.json)?,
            trace: make("--trace", &a.trace)?,
            histogram: make("--histogram", &a.histogram)?,
        })
    }
}

pub fn run(a: &MeasureArgs) -> Result<ExitCode> {
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
    let outputs = Outputs::create(a)?;
    let mut cfg = plan.cfg;
    let sys = SystemInfo::read();
    let mut warnings = super::cleanup::warnings(a.tracefs.as_deref());
    if a.tracemark {
        cfg.tracemark = Some(std::sync::Arc::new(open_tracemark(a.tracefs.as_deref(), &mut warnings)?));
    }
    settle(&mut cfg, &sys, plan.policy_explicit, &mut warnings)?;

    let stop = crate::stop_flag()?;

    let held = Held::take((plan.mlock, plan.mlock_explicit), &cfg, a.looping.dma_latency, &mut warnings)?;
    let idle = idle_states.zip(a.deepest_idle_state).map(|(s, n)| s.limit(n)).transpose()?;
    let mut file = run_file(&cfg, &sys, &held, warnings);
    file.config.deepest_idle_state = idle.as_ref().map(IdleLimit::deepest);
    file.config.cpuidle = idle.as_ref().map(IdleLimit::describe);
    runs.describe(&mut file, &cfg);
    if a.quiet {
        file.warnings.iter().for_each(|w| println!("warning: {w}"));
    } else {
        print!("{}", header::render(&file, &held.mlock_detail));
    }

    // Started last, just before the run: nothing is traced while setting up.
    let measured = a
        .explain
        .map(|over| {
            let choice = SpikeChoice { top: a.explain_top, over: (over > Nanos::ZERO).then_some(over) };
            Explaining::start(a.tracefs.as_deref(), &cfg, choice, a.explain_ab)
        })
        .transpose()
        .and_then(|mut explaining| {
            // The header's last line, when the buffers follow the cap rather than the CPU count.
            if let Some(b) = explaining.as_ref().map(|e| e.buffers).filter(|b| b.capped() && !a.quiet) {
                println!("  explain       kernel trace buffers {}", b.describe());
            }
            let m = measure_restoring(a, (&cfg, &runs), &outputs, &stop, held, explaining.as_mut())?;
            Ok((m, explaining))
        });
    // Restored with the other settings, before anything else can fail, and
    // on a failed run too (a failed restore is said, then the run's error).
    let restored = idle.map(IdleLimit::restore).transpose();
    let ((report, rows, kept, ran), explaining) = match measured {
        Ok(m) => m,
        Err(e) => {
            if let Err(r) = restored {
                eprintln!("rtick: restoring cpuidle states: {r}");
            }
            return Err(e);
        }
    };
    restored?;
    let explanation: Option<Explanation> = explaining.map(|e| e.finish(&kept, &report)).transpose()?;
    let rows = match (&explanation, &outputs.trace) {
        (Some(e), Some(f)) => Some(write_with_phases(f.try_clone()?, &kept, |r| e.phases_of(r))?),
        _ => rows,
    };
    drop(kept);
    record_report(&mut file, &report);
    ran.record(&mut file);
    file.explain = explanation.as_ref().map(Explanation::json);
    let after = run_warnings(&cfg, &report);
    file.warnings.extend(after.iter().cloned());
    file.gates = a.fail_if.as_ref().map(|g| {
        g.evaluate(&file.results, &file.config.mechanisms, &file.unavailable, report.interrupted, load_failures(&file))
    });
    write_outputs(outputs, &file, &cfg, &report)?;

    if let (Some(p), false) = (&a.plot, file.results.is_empty()) {
        let input =
            rtick_model::read::from_measure(&file.results, file.explain.as_ref()).map_err(anyhow::Error::msg)?;
        let kind = crate::plot::default_kind(std::slice::from_ref(&input));
        crate::plot::draw_atomic(p, std::slice::from_ref(&input), kind)?;
    }
    print_results(a, &cfg, &file, &report, rows, &after);
    if let Some(e) = &explanation {
        print!("{}", e.render(a.nsecs));
    }
    if file.results.is_empty() && !report.interrupted {
        anyhow::bail!(
            "no mechanism could run here ({})",
            file.unavailable.iter().map(|u| u.mechanism.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    // Without --fail-if, a load that failed fails the run, its outputs written
    // (an interrupted run keeps its status: it was stopped on purpose).
    if let (None, false, Some(why)) = (&a.fail_if, report.interrupted, load_failures(&file).first()) {
        anyhow::bail!(
            "{why}: the run was not under the load asked for (its outputs are written); fix the load and run again"
        );
    }
    Ok(gate_verdict(a, &file))
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

/// What `measure` and `monitor` settle before changing anything: the
/// policy (probed, with its fallback), the warnings about this system and
/// configuration, the rest after spinning slices.
pub(super) fn settle(
    cfg: &mut MeasureConfig,
    sys: &SystemInfo,
    policy_explicit: bool,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let findings =
        rtick::audit::run(&rtick::system::SysRoot::default(), &rtick::audit::Options { run_commands: false });
    settle_policy(cfg, policy_explicit, warnings)?;
    warnings.extend(static_warnings(cfg, sys));
    warnings.extend(audit_warnings(cfg, &findings));
    if let Some(rest) = rest_after_spinning(cfg, sys) {
        cfg.rest_after_spinning = Some(rest);
    }
    Ok(())
}

/// The system settings a run holds (locked memory, cpu_dma_latency):
/// dropping it restores them.
pub(super) struct Held {
    mem: Option<MemoryLock>,
    /// Held for its Drop, which releases /dev/cpu_dma_latency.
    _dma: Option<DmaLatency>,
    /// --dma-latency, and the value the system had before.
    dma_asked: Option<i32>,
    dma_system: Option<i32>,
    /// How memory is locked, for the header.
    pub mlock_detail: String,
}

impl Held {
    /// Locks memory (`mlock`: planned, asked for explicitly) and holds
    /// cpu_dma_latency as planned.
    pub(super) fn take(
        mlock: (bool, bool),
        cfg: &MeasureConfig,
        dma_latency: Option<i32>,
        warnings: &mut Vec<String>,
    ) -> Result<Held> {
        let mem = lock_memory(mlock.0, mlock.1, warnings)?;
        let mlock_detail = mlock_detail(mem.as_ref(), cfg);
        let dma_system = DmaLatency::current().map(|l| l.us());
        let dma = dma_latency.map(DmaLatency::hold).transpose()?;
        Ok(Held { mem, _dma: dma, dma_asked: dma_latency, dma_system, mlock_detail })
    }
}

/// The run file before the run: what the header shows and the JSON keeps.
pub(super) fn run_file(cfg: &MeasureConfig, sys: &SystemInfo, held: &Held, warnings: Vec<String>) -> RunFile {
    RunFile {
        rtick_version: env!("CARGO_PKG_VERSION").into(),
        schema_version: json::SCHEMA_VERSION,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        elapsed_ns: 0,
        interrupted: false,
        breaktrace: None,
        system: system_json(sys),
        config: config_json(cfg, held.mem.is_some(), held.dma_asked, held.dma_system),
        warnings,
        results: Vec::new(),
        unavailable: Vec::new(),
        explain: None,
        gates: None,
        load: None,
        phases: Vec::new(),
        phase_ratios: Vec::new(),
    }
}

/// Real-time policy: probe it in a throw-away thread; fall back to
/// SCHED_OTHER only when the policy was not asked for explicitly.
fn settle_policy(cfg: &mut MeasureConfig, explicit: bool, warnings: &mut Vec<String>) -> Result<()> {
    let wanted = cfg.threads[0].clone();
    let Err(e) = rt::probe(&wanted) else { return Ok(()) };
    if !e.is_permission() || explicit {
        return Err(e.into());
    }
    warnings.push(format!(
        "cannot use {} {} ({e}); measuring as SCHED_OTHER, whose wake-ups are far later",
        wanted.policy, wanted.priority
    ));
    for t in &mut cfg.threads {
        t.policy = Policy::Other;
        t.priority = 0;
    }
    Ok(())
}

/// A real-time thread that spins into RT throttling is stopped for the rest
/// of the throttling period: rest that long after its slices so the next
/// mechanism does not inherit the stop.
fn rest_after_spinning(cfg: &MeasureConfig, sys: &SystemInfo) -> Option<(f64, Nanos)> {
    let (true, Some(rt), Some(period)) = (cfg.threads[0].policy.is_realtime(), sys.rt_runtime_us, sys.rt_period_us)
    else {
        return None;
    };
    (sys.rt_throttled() && period > rt).then(|| (rt as f64 / period as f64, Nanos::from_us(period - rt)))
}

/// Locks memory when planned; without it when that fails and was not asked for.
fn lock_memory(wanted: bool, explicit: bool, warnings: &mut Vec<String>) -> Result<Option<MemoryLock>> {
    if !wanted {
        return Ok(None);
    }
    match MemoryLock::lock(DEFAULT_HEAP_PREFAULT) {
        Ok(g) => Ok(Some(g)),
        Err(e) if !explicit => {
            warnings.push(format!("{e}; measuring without locked memory (page faults may show as latency)"));
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

fn mlock_detail(mem: Option<&MemoryLock>, cfg: &MeasureConfig) -> String {
    match mem {
        Some(m) => format!(
            "mlockall(MCL_CURRENT|MCL_FUTURE), {} MiB heap and {} KiB stack per thread prefaulted",
            m.heap_prefaulted() >> 20,
            cfg.stack_prefault >> 10
        ),
        None => "not locked".into(),
    }
}

/// Runs the measurement (with the trace writer and the live line), then
/// restores the system — the `held` guards — before anything else can fail.
fn measure_restoring(
    a: &MeasureArgs,
    (cfg, runs): (&MeasureConfig, &Runs),
    outputs: &Outputs,
    stop: &std::sync::atomic::AtomicBool,
    held: Held,
    mut explaining: Option<&mut Explaining>,
) -> Result<(MeasureReport, Option<u64>, Vec<TraceRow>, Ran)> {
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
    drop(held);
    let (report, ran) = result?;
    drop(producers);
    let (rows, kept) = match writer {
        Some(w) => {
            let (n, kept) = w.finish()?;
            (outputs.trace.is_some().then_some(n), kept)
        }
        None => (None, Vec::new()),
    };
    Ok((report, rows, kept, ran))
}

/// Puts what the run measured into the run file.
fn record_report(file: &mut RunFile, report: &MeasureReport) {
    file.results = json::results(report);
    file.unavailable = report
        .unavailable
        .iter()
        .map(|u| json::UnavailableJson { mechanism: u.mechanism.name().into(), reason: u.reason.clone() })
        .collect();
    file.elapsed_ns = report.elapsed.as_ns();
    file.interrupted = report.interrupted;
    file.breaktrace = report.breaktrace.map(|b| BreakJson {
        mechanism: b.mechanism.name().into(),
        thread: b.thread,
        cycle: b.cycle,
        latency_ns: b.latency.as_ns(),
        marked: b.marked,
    });
}

/// Writes the JSON and histogram files and commits every output file.
fn write_outputs(outputs: Outputs, file: &RunFile, cfg: &MeasureConfig, report: &MeasureReport) -> Result<()> {
    if let Some(f) = &outputs.json {
        f.write_json(file)?;
    }
    if let Some(f) = &outputs.histogram {
        use std::io::Write;
        for &m in &cfg.mechanisms {
            let threads: Vec<_> = report.results.iter().filter(|r| r.mechanism == m).collect();
            f.file().write_all(histogram::render(&threads, m.name()).as_bytes()).context("writing the histogram")?;
        }
    }
    for f in [outputs.json, outputs.trace, outputs.histogram].into_iter().flatten() {
        f.commit()?;
    }
    Ok(())
}

/// The table, what is unavailable, the notes, the warnings after the run,
/// and with --compare the recommendation.
fn print_results(
    a: &MeasureArgs,
    cfg: &MeasureConfig,
    file: &RunFile,
    report: &MeasureReport,
    rows: Option<u64>,
    after: &[String],
) {
    println!();
    if !file.results.is_empty() {
        print!("{}", crate::output::phases::render(&file.results, a.nsecs));
    }
    if let Some(l) = &file.load {
        print!("{}", header::load_summary(l));
    }
    for u in &file.unavailable {
        println!("unavailable: {}: {}", u.mechanism, u.reason);
    }
    print_notes(cfg, report, rows, a.nsecs);
    for w in after {
        println!("warning: {w}");
    }
    if cfg.interleave.is_some() && !file.results.is_empty() {
        println!();
        for line in recommend::recommend(&crate::output::phases::last_phase(&file.results), a.nsecs) {
            println!("{line}");
        }
    }
}

fn print_notes(cfg: &MeasureConfig, report: &MeasureReport, rows: Option<u64>, nsecs: bool) {
    let rel: Vec<&str> = cfg.mechanisms.iter().filter(|m| m.info().relative).map(|m| m.name()).collect();
    if !rel.is_empty() {
        println!(
            "note: {} sleep relative intervals: latency is against the time read before the sleep (cyclictest -r)",
            rel.join(", ")
        );
    }
    for r in report.results.iter().filter(|r| r.slack.is_some()) {
        let slack = r.slack.unwrap_or_default();
        match r.calibration {
            Some(c) if c.spins_whole_period => println!(
                "note: hybrid T{} spins the whole period, CPU as spin (auto: the sleep overshoot, p50 {}, p99 {} over {} calibration sleeps, does not fit in ¾ of the interval; a fixed --hybrid-slack overrides)",
                r.thread, c.overshoot_p50, c.overshoot_p99, c.samples
            ),
            Some(c) => println!(
                "note: hybrid T{} slack settled at {} (auto: started at {} from a sleep overshoot p50 {}, p99 {} over {} calibration sleeps, then followed the overshoot's p99)",
                r.thread, slack, c.slack, c.overshoot_p50, c.overshoot_p99, c.samples
            ),
            None => println!("note: hybrid T{} slack {slack} (fixed)", r.thread),
        }
    }
    if let Some(rows) = rows {
        println!("note: trace: {rows} rows written");
    }
    if let Some(b) = report.breaktrace {
        println!(
            "breaktrace: {} T{} cycle {}: latency {} {} exceeded the threshold; run stopped",
            b.mechanism,
            b.thread,
            b.cycle,
            fmt_latency(b.latency.as_ns(), nsecs),
            crate::output::unit(nsecs)
        );
        if let Some(t) = &cfg.tracemark {
            let dir = t.dir().display();
            if b.marked {
                println!("breaktrace: marked in {dir}/trace_marker and tracing stopped; read {dir}/trace (or trace-cmd extract), then echo 1 > {dir}/tracing_on");
            } else {
                println!("breaktrace: writing the mark to {dir} failed; the trace was not stopped");
            }
        }
    }
    if report.interrupted {
        println!("interrupted after {}: results so far", report.elapsed);
    }
}

fn system_json(s: &SystemInfo) -> SystemJson {
    SystemJson {
        kernel: s.kernel_release.clone(),
        kernel_version: s.kernel_version.clone(),
        clocksource: s.clocksource.clone(),
        hres_active: s.hres_active(),
        preempt: s.preempt.to_string(),
        cpus: s.cpus,
        hypervisor: s.hypervisor().map(|h| h.to_string()),
        sched_rt_runtime_us: s.rt_runtime_us,
    }
}

fn config_json(cfg: &MeasureConfig, mlock: bool, dma: Option<i32>, dma_system: Option<i32>) -> ConfigJson {
    let t0 = &cfg.threads[0];
    ConfigJson {
        mechanisms: cfg.mechanisms.iter().map(|m| m.name().to_string()).collect(),
        interval_ns: cfg.interval.as_ns(),
        loops: cfg.loops,
        duration_ns: cfg.duration.map(|d| d.as_ns()),
        threads: cfg.threads.len(),
        affinity: cfg.threads.iter().map(|t| t.cpus.clone()).collect(),
        policy: t0.policy.kernel_name().into(),
        priority: t0.priority,
        clock: cfg.clock.name().into(),
        mlock,
        dma_latency_us: dma,
        dma_latency_system_us: dma_system,
        timer_slack_ns: t0.timer_slack.map_or(0, |s| s.as_ns()),
        overrun: cfg.overrun.name().into(),
        hybrid_slack: match cfg.hybrid_slack {
            HybridSlack::Auto => "auto".into(),
            HybridSlack::Fixed(n) => n.as_ns().to_string(),
        },
        breaktrace_ns: cfg.breaktrace.map(|b| b.as_ns()),
        tracemark: cfg.tracemark.as_ref().map(|t| t.dir().display().to_string()),
        interleave_ns: cfg.interleave.map(|s| s.as_ns()),
        warm_up_ns: (cfg.warm_up > Nanos::ZERO).then_some(cfg.warm_up.as_ns()),
        deepest_idle_state: None,
        cpuidle: None,
    }
}

//! `rtick attach`: the lateness of a running program's timed waits. Glue:
//! the target resolved, the library's attach run (each wait, as it ends, to
//! --trace and to --plot's series), its figures rendered, written to
//! --json and --plot, and --fail-if's verdict.

mod series;
mod trace;

use std::fmt::Write;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use rtick::attach::{attach, AttachOptions, Attached, Observer, Polled, Spec, Target, Wake};
use rtick::system::{format_cpu_list, SystemInfo};
use rtick_model::json::AttachFile;

use crate::cli::AttachArgs;
use crate::export::atomic::AtomicFile;
use crate::plot::PlotFile;
use crate::Usage;

/// Runs `rtick attach`.
pub fn run(a: &AttachArgs) -> Result<ExitCode> {
    let target = resolve(spec((a.pid, "PID"), a.tid.as_deref(), a.comm.as_deref())?)?;
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    let trace_out = AtomicFile::create_opt("--trace", a.trace.as_deref())?;
    let plot = PlotFile::create_opt("--plot", a.plot.as_deref())?;
    let mut trace = trace_out.as_ref().map(|f| f.try_clone().and_then(trace::TraceCsv::new)).transpose()?;
    let stop = crate::stop_flag()?;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let opts =
        AttachOptions { tracefs: a.tracefs.clone(), duration: a.duration, explain_top: a.explain_top, spike: None };
    // Each wait, as it ends, a --trace row and into the bounded series
    // --plot draws and the JSON file holds (its figures, not its waits).
    let wanted = plot.is_some() || json.is_some();
    let series = wanted.then(|| series::Plotted::new(rtick::ClockId::Monotonic.now()));
    let mut watch = Watch { trace: trace.as_mut(), series };
    let attached = attach(&target, &opts, &stop, &mut watch).context("attach")?;
    let series = watch.series;
    let system = super::measure::run_file::system_json(&SystemInfo::read());
    let mut file = AttachFile::of(&attached, &target, a.duration, system, started_at);
    if let Some(s) = &series {
        s.fill(&mut file);
    }
    file.gates = a.fail_if.as_ref().map(|g| g.evaluate_attach(&file));
    let mut out = String::new();
    if !a.quiet {
        out += &header(&attached, &target, &file);
    }
    out += &crate::output::attach::render(&file);
    print!("{out}");
    if let (Some(t), Some(out)) = (trace, trace_out) {
        t.finish()?;
        out.commit()?;
    }
    if let Some(j) = json {
        j.write_json(&file)?;
        j.commit()?;
    }
    if let Some(p) = plot {
        p.write_picture(&crate::plot::attach::AttachPlot::of(&file))?;
    }
    // --fail-if's verdict, after everything else: exit 3 unless it passed.
    let (Some(gates), Some(g)) = (&a.fail_if, &file.gates) else { return Ok(ExitCode::SUCCESS) };
    print!("{}", gates.render_attach(g, &file));
    Ok(if g.passed { ExitCode::SUCCESS } else { ExitCode::from(crate::EXIT_FAIL) })
}

/// The run's observer: each wait to --trace and to the series, whose
/// threads go as the run retires them.
struct Watch<'a> {
    trace: Option<&'a mut trace::TraceCsv>,
    series: Option<series::Plotted>,
}

impl Observer for Watch<'_> {
    fn wait(&mut self, tid: i32, w: &Wake) {
        if let Some(t) = self.trace.as_mut() {
            t.add(tid, w);
        }
        if let Some(s) = self.series.as_mut() {
            s.add(tid, w);
        }
    }

    fn poll(&mut self, p: &Polled<'_>) {
        if let Some(s) = self.series.as_mut() {
            s.retire(p);
        }
    }
}

/// The target as given: exactly one of a pid (and the name it goes by:
/// `PID`, `--attach`), --tid, --comm (clap sees to it).
pub fn spec((pid, named): (Option<i32>, &str), tid: Option<&[i32]>, comm: Option<&str>) -> Result<Spec, Usage> {
    let positive = |p: i32, what: &str| match p > 0 {
        true => Ok(p),
        false => Err(Usage(format!("{what} {p} is not a process id: give a positive number (ps -eLo pid,tid,comm)"))),
    };
    Ok(match (pid, tid, comm) {
        (Some(p), _, _) => Spec::Pid(positive(p, named)?),
        (_, Some(t), _) => Spec::Tids(t.iter().map(|&t| positive(t, "--tid")).collect::<Result<_, _>>()?),
        (_, _, Some(c)) if !c.is_empty() => Spec::Comm(c.to_string()),
        _ => return Err(Usage("--comm needs a name: the one /proc/PID/comm shows (ps -eo pid,comm)".into())),
    })
}

/// The target of `spec`, checked against /proc (no such process, a
/// kernel thread, rtick itself: usage errors).
pub fn resolve(spec: Spec) -> Result<Target> {
    Ok(Target::resolve(&spec).map_err(|e| Usage(e.to_string()))?)
}

/// What was attached to, for how long, and its threads' settings.
fn header(a: &Attached, target: &Target, file: &AttachFile) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "rtick {} attach: pid {} ({}) | {} | traced {} on CPUs {}",
        file.rtick_version,
        target.pid,
        target.comm,
        rtick::text::count(a.threads.len() as u64, "thread"),
        a.elapsed,
        format_cpu_list(&a.cpus)
    );
    let event = std::mem::size_of::<rtick::ktrace::Event>();
    let reader = match &a.reader_cpus {
        Some(c) => format!("rtick reads it on CPU {}", format_cpu_list(c)),
        None => "rtick reads it on the target's CPUs (it may run on no other)".into(),
    };
    let _ = writeln!(
        o,
        "  trace         read 10 times a second, its last {} kept (at most {} MiB); {reader}",
        rtick::attach::run::KEEP,
        (a.window_events * event * a.cpus.len()) >> 20
    );
    o += &crate::output::header::system_lines(&file.system, "CLOCK_MONOTONIC");
    for t in a.threads.iter().map(|t| &t.thread) {
        let slack = t.timer_slack_ns.map_or("unknown".into(), |s| format!("{s} ns"));
        let _ = writeln!(
            o,
            "  thread {:<7} {:<16} {}; affinity {}; timer slack {slack}",
            t.tid,
            t.comm,
            t.policy_text(),
            format_cpu_list(&t.affinity)
        );
    }
    o.push('\n');
    o
}

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
use rtick::attach::{attach, AttachOptions, Attached, End, Spec, Target, ThreadSummary, Wake};
use rtick::system::{format_cpu_list, SystemInfo};
use rtick_model::gates::Gates;
use rtick_model::json::{lateness_rows, AttachFile, AttachSpikeJson, GatesJson, UnavailableJson};

use crate::cli::AttachArgs;
use crate::export::atomic::AtomicFile;
use crate::plot::PlotFile;
use crate::Usage;

/// Runs `rtick attach`.
pub fn run(a: &AttachArgs) -> Result<ExitCode> {
    let target = Target::resolve(&spec(a)?).map_err(|e| Usage(e.to_string()))?;
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    let trace_out = AtomicFile::create_opt("--trace", a.trace.as_deref())?;
    let plot = PlotFile::create_opt("--plot", a.plot.as_deref())?;
    let mut trace = trace_out.as_ref().map(|f| f.try_clone().and_then(trace::TraceCsv::new)).transpose()?;
    let stop = crate::stop_flag()?;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let opts = AttachOptions { tracefs: a.tracefs.clone(), duration: a.duration, explain_top: a.explain_top };
    // Each wait, as it ends, a --trace row and into --plot's bounded
    // series: the JSON file holds figures only.
    let mut series = plot.as_ref().map(|_| series::Plotted::new(rtick::ClockId::Monotonic.now()));
    let mut on_wait = |tid: i32, w: &Wake| {
        if let Some(t) = trace.as_mut() {
            t.add(tid, w);
        }
        if let Some(s) = series.as_mut() {
            s.add(tid, w);
        }
    };
    let attached = attach(&target, &opts, &stop, &mut on_wait).context("attach")?;
    let system = super::measure::run_file::system_json(&SystemInfo::read());
    let mut file = AttachFile::of(&attached, &target, system, started_at);
    file.gates = a.fail_if.as_ref().map(|g| gates(g, &attached, a.duration.is_some()));
    let mut out = String::new();
    if !a.quiet {
        out += &header(&attached, &target, &file);
    }
    out += &render(&attached);
    print!("{out}");
    if let (Some(t), Some(out)) = (trace, trace_out) {
        t.finish()?;
        out.commit()?;
    }
    if let Some(j) = json {
        j.write_json(&file)?;
        j.commit()?;
    }
    if let (Some(p), Some(s)) = (plot, series) {
        p.write_picture(&s.picture(&attached, &target))?;
    }
    // --fail-if's verdict, after everything else: exit 3 unless it passed.
    let (Some(gates), Some(g)) = (&a.fail_if, &file.gates) else { return Ok(ExitCode::SUCCESS) };
    print!("{}", gates.render(g, file.threads.len(), attached.elapsed, false));
    Ok(if g.passed { ExitCode::SUCCESS } else { ExitCode::from(crate::EXIT_FAIL) })
}

/// --fail-if's conditions checked against each thread's lateness; without
/// a timed wait there is no figure to check, which fails. A run stopped by
/// Ctrl-C before its `-D` is partial; without `-D`, Ctrl-C is its end.
fn gates(g: &Gates, a: &Attached, timed: bool) -> GatesJson {
    let rows = lateness_rows(a);
    let none = "timed waits".to_string();
    let (asked, unavailable) = match rows.is_empty() {
        true => {
            let why = "no timed wait of the target ended in the run".to_string();
            (vec![none.clone()], vec![UnavailableJson { mechanism: none, reason: why }])
        }
        false => (Vec::new(), Vec::new()),
    };
    g.evaluate(&rows, &asked, &unavailable, timed && a.end == End::Interrupted, Vec::new())
}

/// The target as given: exactly one of PID, --tid, --comm (clap sees to it).
fn spec(a: &AttachArgs) -> Result<Spec, Usage> {
    let positive = |p: i32, what: &str| match p > 0 {
        true => Ok(p),
        false => Err(Usage(format!("{what} {p} is not a process id: give a positive number (ps -eLo pid,tid,comm)"))),
    };
    Ok(match (&a.pid, &a.tid, &a.comm) {
        (Some(p), _, _) => Spec::Pid(positive(*p, "PID")?),
        (_, Some(t), _) => Spec::Tids(t.iter().map(|&t| positive(t, "--tid")).collect::<Result<_, _>>()?),
        (_, _, Some(c)) if !c.is_empty() => Spec::Comm(c.clone()),
        _ => return Err(Usage("--comm needs a name: the one /proc/PID/comm shows (ps -eo pid,comm)".into())),
    })
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

/// The table per thread, the phases and event-driven wake-ups, the findings and notes.
pub fn render(a: &Attached) -> String {
    let dash = || "-".to_string();
    let mut rows =
        vec![["thread", "timed waits", "p50", "p90", "p99", "max", "slack p50", "event-driven", "unmatched"]
            .map(String::from)
            .to_vec()];
    for s in &a.threads {
        let mut r = vec![format!("{} {}", s.thread.tid, s.thread.comm), s.timed.to_string()];
        match s.lateness {
            Some(l) => r.extend(l.iter().map(|n| n.to_string())),
            None => r.extend((0..4).map(|_| dash())),
        }
        r.push(s.slack_p50.map_or_else(dash, |n| n.to_string()));
        r.extend([s.event_driven.to_string(), s.unmatched.to_string()]);
        rows.push(r);
    }
    let mut o = String::from("lateness of timed waits (back in user space − time asked for):\n");
    o += &crate::output::columns::layout(&rows, true);
    for s in &a.threads {
        o += &details(s);
        o += &cycle(s, a);
    }
    o += &worst(a);
    if a.threads.iter().all(|s| s.timed == 0 && s.event_driven == 0) {
        o += &no_waits(&a.threads);
    }
    for f in rtick::attach::findings(&a.threads) {
        let _ = writeln!(o, "\nfinding: {f}");
    }
    if a.lost.any() {
        let _ = writeln!(o, "\nwarning: the kernel lost trace events ({:?}): waits around them are missing", a.lost);
    }
    for n in &a.notes {
        let _ = writeln!(o, "\nnote: {n}");
    }
    match a.end {
        End::TargetExited => o += "\nnote: the target exited; the figures cover its run until then\n",
        End::Interrupted => o += "\nnote: interrupted; the figures cover the run until then\n",
        End::Duration => {}
    }
    o
}

/// Why no wait ended: the threads still waiting when tracing stopped (a
/// wait longer than the run), or that none was armed.
fn no_waits(threads: &[ThreadSummary]) -> String {
    let mut o = String::from("\nno timed wait of the target ended in the run");
    let waiting: Vec<String> = threads
        .iter()
        .filter(|s| s.in_progress || s.blocked_in.is_some())
        .map(|s| match &s.blocked_in {
            Some(f) => format!("{} {} (blocked in {f})", s.thread.tid, s.thread.comm),
            None => format!("{} {} (on its timer)", s.thread.tid, s.thread.comm),
        })
        .collect();
    if waiting.is_empty() {
        o += ": no thread of it armed a timer, or was woken by one it armed, while traced (a timer armed before the attach began is known from its next re-arm)\n";
    } else {
        let _ = writeln!(o, "; still waiting when tracing stopped: {}", waiting.join(", "));
    }
    o
}

/// A thread's phases and its event-driven wake-ups, a line each.
fn details(s: &ThreadSummary) -> String {
    let mut o = String::new();
    let name = format!("{} {}", s.thread.tid, s.thread.comm);
    if let Some(phases) = &s.phases {
        let p: Vec<String> = phases
            .iter()
            .zip(rtick::explain::Phases::DISPLAY_NAMES)
            .map(|((_, [p50, p99, max]), n)| format!("{n} {p50} / {p99} / {max}"))
            .collect();
        let _ = writeln!(o, "  {name}: phases p50 / p99 / max: {}", p.join("; "));
    }
    if let Some([p50, max]) = s.event_scheduling {
        let mut by: Vec<String> = s.wakers.iter().take(3).map(|(w, n)| format!("{w} ×{n}")).collect();
        if s.other_wakers > 0 {
            by.push(format!("others ×{}", s.other_wakers));
        }
        let _ = writeln!(
            o,
            "  {name}: {} woken before their timer (data, a futex, a signal): scheduling p50 {p50}, max {max}; woken by {}",
            s.event_driven,
            by.join(", ")
        );
    }
    o
}

/// A thread's cycle, a line, and its largest overruns with their cause, a line each.
fn cycle(s: &ThreadSummary, a: &Attached) -> String {
    let c = &s.cycle;
    let (Some([j50, j99, jmax]), Some([c50, c99, cmax]), Some([mmin, m1, m50])) = (c.jitter, c.compute, c.margin)
    else {
        return String::new();
    };
    let period = match c.period {
        Some(p) => format!("period {p} ({} skipped)", c.skipped),
        None => "no fixed period".into(),
    };
    let mut o = format!(
        "  {} {}: cycle: {period}; jitter p50 / p99 / max {j50} / {j99} / {jmax}; compute p50 / p99 / max {c50} / {c99} / {cmax}; margin min / p1 / p50 {mmin} / {m1} / {m50}; {}\n",
        s.thread.tid,
        s.thread.comm,
        rtick::text::count(c.overruns, "overrun")
    );
    for ov in a.overruns.get(&s.thread.tid).into_iter().flatten() {
        let at = AttachSpikeJson::label(ov.wait.requested, a.started);
        let _ = writeln!(o, "    overran by {} ({at}): {}", ov.wait.overrun(), ov.cause.text());
    }
    o
}

/// Each thread's worst timed waits, explained: a line each, as
/// `measure --explain` prints a spike (the time asked for instead of a cycle).
fn worst(a: &Attached) -> String {
    let mut o = String::new();
    for s in &a.threads {
        let Some(waits) = a.worst.get(&s.thread.tid).filter(|w| !w.is_empty()) else { continue };
        let worst = rtick::text::count(waits.len() as u64, "worst timed wait");
        let _ = writeln!(o, "\n{} {}: its {worst} explained:", s.thread.tid, s.thread.comm);
        for w in waits {
            let j = AttachSpikeJson::of(w, a.started);
            let _ = writeln!(o, "  {}", j.line);
            if !j.stack.is_empty() {
                let _ = writeln!(
                    o,
                    "    stack: {}",
                    rtick::ktrace::stack::summary(&j.stack, crate::output::explain::STACK_FRAMES)
                );
            }
        }
    }
    o
}

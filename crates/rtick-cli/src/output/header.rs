//! The header printed before a run: the system and settings the numbers
//! depend on, and every warning that bears on them.

use std::fmt::Write;

use rtick_model::json::{ConfigJson, LoadCommandJson, LoadJson, LoadPhaseJson, RunFile, SystemJson};

/// Renders the header from the same data that goes into the JSON file.
pub fn render(run: &RunFile, mlock_detail: &str) -> String {
    render_as(run, mlock_detail, "measure", None)
}

/// The header of `command`; `bound`, when given, replaces the per-mechanism
/// bound of the first line (`rtick monitor`'s own: until Ctrl-C, or -D).
pub fn render_as(run: &RunFile, mlock_detail: &str, command: &str, bound: Option<&str>) -> String {
    let (s, c) = (&run.system, &run.config);
    let mut o = String::new();
    let w = &mut o;
    let interval = rtick::Nanos(c.interval_ns);
    let bound = match bound {
        Some(b) => b.to_string(),
        None => format!("{} per mechanism", per_mechanism(c.duration_ns, c.loops, &run.phases)),
    };
    let order = match c.interleave_ns {
        Some(s) => format!(" | interleaved in {} slices", rtick::Nanos(s)),
        None => String::new(),
    };
    let _ = writeln!(
        w,
        "rtick {} {command}: {} | interval {interval} | {bound}{order} | {}",
        run.rtick_version,
        c.mechanisms.join(", "),
        rtick::text::count(c.threads as u64, "thread")
    );
    w.push_str(&system_lines(s, &c.clock));
    let pin: Vec<String> = c
        .affinity
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.is_empty())
        .map(|(i, a)| format!("T{i}→{}", a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")))
        .collect();
    let prio = if c.priority > 0 { format!(" {}", c.priority) } else { String::new() };
    // The kernel gives real-time threads no timer slack, whatever PR_SET_TIMERSLACK says.
    let slack = if rtick::rt::Policy::parse(&c.policy).is_some_and(|p| p.is_realtime()) {
        "timer slack: none (real-time threads have no slack)".to_string()
    } else {
        format!("timer slack {} ns on measuring threads", c.timer_slack_ns)
    };
    let _ = writeln!(
        w,
        "  scheduling    {}{prio}; affinity {}; {slack}",
        c.policy,
        if pin.is_empty() { "not pinned".to_string() } else { pin.join(" ") },
    );
    let _ = writeln!(w, "  memory        {mlock_detail}");
    let _ = writeln!(w, "  cpu_dma_lat.  {}", dma_latency(c));
    let _ = writeln!(w, "  overruns      {} after a wake-up later than the following deadline", c.overrun);
    if let Some(b) = c.breaktrace_ns {
        let mark = match &c.tracemark {
            Some(dir) => format!("; then mark the kernel trace and stop tracing ({dir})"),
            None => String::new(),
        };
        let _ = writeln!(w, "  breaktrace    stop at a latency over {}{mark}", rtick::Nanos(b));
    }
    if let Some(ns) = c.warm_up_ns {
        let _ = writeln!(
            w,
            "  warm-up       {} per mechanism and thread before its measurement, discarded (in no figure, trace row or --explain)",
            rtick::Nanos(ns)
        );
    }
    if let Some(idle) = &c.cpuidle {
        let _ = writeln!(w, "  cpuidle       {idle} (restored at exit)");
    }
    load_and_phases(w, run);
    for warning in &run.warnings {
        let _ = writeln!(w, "warning: {warning}");
    }
    o
}

/// Whether high-resolution timers are active, as `/proc/timer_list` said.
/// The kernel and clock lines of a header (measure's, attach's).
pub fn system_lines(s: &SystemJson, clock: &str) -> String {
    format!(
        "  kernel        {} {} — preemption: {}\n  clock         {clock} (clocksource {}), {}\n",
        s.kernel,
        s.kernel_version,
        s.preempt,
        s.clocksource.as_deref().unwrap_or("unknown"),
        hres(s.hres_active)
    )
}

fn hres(hres_active: Option<bool>) -> String {
    match hres_active {
        Some(true) => "high-resolution timers active".to_string(),
        Some(false) => "high-resolution timers NOT active on every CPU".to_string(),
        None => "high-resolution timers: unknown (/proc/timer_list unreadable)".to_string(),
    }
}

/// `cpu_dma_latency`: held for the run, or the system's, left as is.
fn dma_latency(c: &ConfigJson) -> String {
    match (c.dma_latency_us, c.dma_latency_system_us) {
        (Some(us), _) => format!("held at {us} µs for the run (released at exit)"),
        (None, Some(v)) if rtick::rt::DmaLatencyLimit::from(v).is_unconstrained() => {
            format!("{v} µs: no constraint, deep C-states allowed (left as is; --dma-latency 0 to hold CPUs awake)")
        }
        (None, Some(v)) => format!("{v} µs (left as is)"),
        (None, None) => "unreadable (left as is)".into(),
    }
}

/// The `load` and `phases` lines: what runs beside the measurement, where, and when.
fn load_and_phases(w: &mut String, run: &RunFile) {
    if let Some(l) = &run.load {
        let _ = writeln!(w, "  load          {}", load_line(l));
        // Before the run a kind's detail is its sizing (its buffers, a default cut to fit).
        for k in l.kinds.iter().filter(|k| !k.detail.is_empty()) {
            let _ = writeln!(w, "  {:<14}{}", format!("load {}", k.kind), k.detail);
        }
    }
    if !run.phases.is_empty() {
        let _ = writeln!(w, "  phases        {} per mechanism; the load starts between them", phase_list(&run.phases));
    }
}

/// How long each mechanism is measured: the phases', when there are phases.
fn per_mechanism(duration_ns: Option<i64>, loops: Option<u64>, phases: &[LoadPhaseJson]) -> String {
    if !phases.is_empty() {
        return phase_list(phases);
    }
    match (duration_ns, loops) {
        (Some(d), Some(l)) => format!("{} or {}", rtick::Nanos(d), rtick::text::count(l, "loop")),
        (Some(d), None) => format!("{}", rtick::Nanos(d)),
        (None, Some(l)) => rtick::text::count(l, "loop"),
        (None, None) => "until Ctrl-C".into(),
    }
}

/// `idle 1.000 s, then loaded 1.000 s`.
fn phase_list(phases: &[LoadPhaseJson]) -> String {
    let phases: Vec<String> = phases
        .iter()
        .map(|p| match (p.duration_ns, p.loops) {
            (Some(d), _) => format!("{} {}", p.name, rtick::Nanos(d)),
            (None, Some(l)) => format!("{} {}", p.name, rtick::text::count(l, "loop")),
            (None, None) => format!("{} until Ctrl-C", p.name),
        })
        .collect();
    phases.join(", then ")
}

/// What loads run, and where: `cpu:2 (SCHED_OTHER) on CPUs 0-1, the measured CPUs included`.
pub fn load_line(l: &LoadJson) -> String {
    let kinds: Vec<String> = l.kinds.iter().map(|k| format!("{}:{}", k.kind, k.workers)).collect();
    let mut what = Vec::new();
    if !kinds.is_empty() {
        what.push(format!("{} (SCHED_OTHER)", kinds.join(" ")));
    }
    if let Some(c) = &l.command {
        what.push(format!("command sh -c '{}' (own process group)", c.command));
    }
    let shared = if l.shares_measured_cpus { "the measured CPUs included" } else { "apart from the measured CPUs" };
    let cpus = rtick::text::noun(l.cpus.len() as u64, "CPU");
    format!("{} on {cpus} {}, {shared}", what.join(" + "), rtick::system::format_cpu_list(&l.cpus))
}

/// After the run: what each load achieved, how busy the CPUs were, how the command ended.
pub fn load_summary(l: &LoadJson) -> String {
    let mut o = String::new();
    let w = &mut o;
    if l.ran_ns == 0 && l.command.as_ref().is_none_or(|c| c.pid.is_none()) {
        let _ = writeln!(w, "load: not started (the run stopped before)");
        return o;
    }
    for k in &l.kinds {
        let cpu = if l.ran_ns > 0 { 100.0 * k.cpu_time_ns as f64 / l.ran_ns as f64 } else { 0.0 };
        let _ = writeln!(
            w,
            "load: {} {}: {} {}/s, CPU {cpu:.0}% ({})",
            k.kind,
            rtick::text::count(k.workers as u64, "worker"),
            si(k.rate_per_s),
            k.unit,
            k.detail
        );
        if let Some(e) = &k.error {
            let _ = writeln!(w, "warning: load {} stopped early: {e}", k.kind);
        } else if k.work == 0 {
            let _ = writeln!(w, "warning: load {} did no work", k.kind);
        }
    }
    if let Some(c) = &l.command {
        let _ = writeln!(w, "load: command: {}", command_end(c));
        if let Some(t) = c.exited_early_after_ns {
            let _ = writeln!(
                w,
                "warning: the load command exited by itself after {}: the load stopped then",
                rtick::Nanos(t)
            );
        }
    }
    if !l.cpu_busy.is_empty() {
        let busy: Vec<String> = l.cpu_busy.iter().map(|b| format!("CPU {} {:.0}%", b.cpu, b.busy_percent)).collect();
        let _ = writeln!(w, "load: busy while it ran: {}", busy.join(", "));
    }
    o
}

/// How the command ended, in words.
fn command_end(c: &LoadCommandJson) -> String {
    let how = match (c.exit_code, c.exit_signal) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("ended by {}", rtick_load::signal_name(sig)),
        (None, None) if c.pid.is_none() => "did not start".into(),
        (None, None) => "exit unknown".into(),
    };
    let sent = match c.stopped_with.as_slice() {
        [] => String::new(),
        [one] => format!(", after rtick sent {one} to its group"),
        [.., last] => format!(", after rtick sent {} (it outlived SIGTERM by the grace period)", last),
    };
    format!("sh -c '{}': {how}{sent}", c.command)
}

/// A rate with an SI prefix: 1.23 G, 456 k.
fn si(v: f64) -> String {
    let (div, prefix) = match v {
        v if v >= 1e9 => (1e9, " G"),
        v if v >= 1e6 => (1e6, " M"),
        v if v >= 1e3 => (1e3, " k"),
        _ => (1.0, " "),
    };
    format!("{:.3}{prefix}", v / div).replace(".000 ", " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, secs: i64) -> LoadPhaseJson {
        let duration_ns = Some(rtick::Nanos::from_secs(secs).as_ns());
        LoadPhaseJson {
            name: name.into(),
            duration_ns,
            loops: None,
            elapsed_ns: 0,
            interrupted: false,
            cpu_busy: vec![],
        }
    }

    #[test]
    fn with_phases_each_mechanism_is_measured_for_the_phases() {
        let two = Some(rtick::Nanos::from_secs(2).as_ns());
        assert_eq!(per_mechanism(two, None, &[]), "2.000 s");
        assert_eq!(
            per_mechanism(two, None, &[phase("idle", 1), phase("loaded", 1)]),
            "idle 1.000 s, then loaded 1.000 s"
        );
        assert_eq!(per_mechanism(None, Some(5), &[]), "5 loops");
    }
}

//! The header printed before a run: the system and settings the numbers
//! depend on, and every warning that bears on them.

use std::fmt::Write;

use crate::export::json::RunFile;

/// Renders the header from the same data that goes into the JSON file.
pub fn render(run: &RunFile, mlock_detail: &str) -> String {
    let (s, c) = (&run.system, &run.config);
    let mut o = String::new();
    let w = &mut o;
    let interval = rtick::Nanos(c.interval_ns);
    let bound = match (c.duration_ns, c.loops) {
        (Some(d), Some(l)) => format!("{} or {l} loops", rtick::Nanos(d)),
        (Some(d), None) => format!("{}", rtick::Nanos(d)),
        (None, Some(l)) => format!("{l} loops"),
        (None, None) => "until Ctrl-C".into(),
    };
    let order = match c.interleave_ns {
        Some(s) => format!(" | interleaved in {} slices", rtick::Nanos(s)),
        None => String::new(),
    };
    let _ = writeln!(
        w,
        "rtick {} measure: {} | interval {interval} | {bound} per mechanism{order} | {} thread{}",
        run.rtick_version,
        c.mechanisms.join(", "),
        c.threads,
        if c.threads == 1 { "" } else { "s" }
    );
    let _ = writeln!(w, "  kernel        {} {} — preemption: {}", s.kernel, s.kernel_version, s.preempt);
    let hres = match s.hres_active {
        Some(true) => "high-resolution timers active".to_string(),
        Some(false) => "high-resolution timers NOT active on every CPU".to_string(),
        None => "high-resolution timers: unknown (/proc/timer_list unreadable)".to_string(),
    };
    let _ = writeln!(
        w,
        "  clock         {} (clocksource {}), {hres}",
        c.clock,
        s.clocksource.as_deref().unwrap_or("unknown")
    );
    let pin: Vec<String> = c
        .affinity
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.is_empty())
        .map(|(i, a)| format!("T{i}→{}", a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")))
        .collect();
    let prio = if c.priority > 0 { format!(" {}", c.priority) } else { String::new() };
    let _ = writeln!(
        w,
        "  scheduling    {}{prio}; affinity {}; timer slack {} ns on measuring threads{}",
        c.policy,
        if pin.is_empty() { "not pinned".to_string() } else { pin.join(" ") },
        c.timer_slack_ns,
        if c.policy == "SCHED_FIFO" || c.policy == "SCHED_RR" { " (RT threads have none)" } else { "" }
    );
    let _ = writeln!(w, "  memory        {mlock_detail}");
    let dma = match (c.dma_latency_us, c.dma_latency_system_us) {
        (Some(us), _) => format!("held at {us} µs for the run (released at exit)"),
        (None, Some(v)) if rtick::rt::DmaLatencyLimit::from(v).is_unconstrained() => {
            format!("{v} µs: no constraint, deep C-states allowed (left as is; --dma-latency 0 to hold CPUs awake)")
        }
        (None, Some(v)) => format!("{v} µs (left as is)"),
        (None, None) => "unreadable (left as is)".into(),
    };
    let _ = writeln!(w, "  cpu_dma_lat.  {dma}");
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
    for warning in &run.warnings {
        let _ = writeln!(w, "warning: {warning}");
    }
    o
}

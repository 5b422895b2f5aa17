//! What `rtick attach` prints at its end, and `rtick report` of its
//! --json file: the table per thread, each thread's phases, event-driven
//! wake-ups and cycle, its worst waits explained, the findings and notes.
//! Rendered from the file's model ([`AttachFile`]), so both read the same.

use std::fmt::Write;

use rtick::explain::Phases;
use rtick::Nanos;
use rtick_model::json::{AttachFile, AttachedThreadJson};

/// The summary of the attach run `f`.
pub fn render(f: &AttachFile) -> String {
    let ns = |n: i64| Nanos(n).to_string();
    let dash = || "-".to_string();
    let mut rows =
        vec![["thread", "timed waits", "p50", "p90", "p99", "max", "slack p50", "event-driven", "unmatched"]
            .map(String::from)
            .to_vec()];
    for t in &f.threads {
        let mut r = vec![name(t), t.timed_waits.to_string()];
        match t.lateness_ns {
            Some(l) => r.extend(l.iter().map(|&n| ns(n))),
            None => r.extend((0..4).map(|_| dash())),
        }
        r.push(t.slack_p50_ns.map_or_else(dash, ns));
        r.extend([t.event_driven.to_string(), t.unmatched.to_string()]);
        rows.push(r);
    }
    let mut o = String::from("lateness of timed waits (back in user space − time asked for):\n");
    o += &super::columns::layout(&rows, true);
    for t in &f.threads {
        o += &details(t);
        o += &cycle(t, f.started());
    }
    o += &worst(f);
    if f.threads.iter().all(|t| t.timed_waits == 0 && t.event_driven == 0) {
        o += &no_waits(&f.threads);
    }
    for finding in &f.findings {
        let _ = writeln!(o, "\nfinding: {finding}");
    }
    let lost = match (f.lost_events, f.lost_gaps) {
        (0, 0) => None,
        (n, 0) => Some(format!("{n} trace events")),
        (0, g) => Some(format!("trace events in {} of unknown size", rtick::text::count(g, "gap"))),
        (n, g) => Some(format!("{n} trace events, and more in {} of unknown size", rtick::text::count(g, "gap"))),
    };
    if let Some(lost) = lost {
        let _ = writeln!(o, "\nwarning: the kernel lost {lost}: waits around them are missing");
    }
    for n in &f.notes {
        let _ = writeln!(o, "\nnote: {n}");
    }
    for n in f.cfs.iter().filter_map(crate::output::explain::cfs_note) {
        o += "\n";
        o += &n;
    }
    match f.ended_by.as_str() {
        "target_exited" => o += "\nnote: the target exited; the figures cover its run until then\n",
        "interrupted" => o += "\nnote: interrupted; the figures cover the run until then\n",
        _ => {}
    }
    o
}

/// A thread as the lines name it.
fn name(t: &AttachedThreadJson) -> String {
    t.label()
}

/// Why no wait ended: the threads still waiting when tracing stopped (a
/// wait longer than the run), or that none was armed.
fn no_waits(threads: &[AttachedThreadJson]) -> String {
    let mut o = String::from("\nno timed wait of the target ended in the run");
    let waiting: Vec<String> = threads
        .iter()
        .filter(|t| t.in_progress || t.blocked_in.is_some())
        .map(|t| match &t.blocked_in {
            Some(f) => format!("{} (blocked in {f})", name(t)),
            None => format!("{} (on its timer)", name(t)),
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
fn details(t: &AttachedThreadJson) -> String {
    let mut o = String::new();
    if !t.phases_ns.is_empty() {
        let p: Vec<String> = t
            .phases_ns
            .iter()
            .map(|p| {
                let n = Phases::NAMES
                    .iter()
                    .position(|n| *n == p.phase)
                    .map_or(p.phase.as_str(), |i| Phases::DISPLAY_NAMES[i]);
                format!("{n} {} / {} / {}", Nanos(p.p50), Nanos(p.p99), Nanos(p.max))
            })
            .collect();
        let _ = writeln!(o, "  {}: phases p50 / p99 / max: {}", name(t), p.join("; "));
    }
    if let Some([p50, max]) = t.event_scheduling_ns {
        // The file lists the first wakers seen, then the rest as "others".
        let (others, named): (Vec<_>, Vec<_>) = t.wakers.iter().partition(|(w, _)| w == "others");
        let by: Vec<String> = named.iter().take(3).chain(&others).map(|(w, n)| format!("{w} ×{n}")).collect();
        let _ = writeln!(
            o,
            "  {}: {} woken before their timer (data, a futex, a signal): scheduling p50 {}, max {}; woken by {}",
            name(t),
            t.event_driven,
            Nanos(p50),
            Nanos(max),
            by.join(", ")
        );
    }
    o
}

/// A thread's cycle, a line, and its largest overruns with their cause, a
/// line each (`started`: when tracing began, if known).
fn cycle(t: &AttachedThreadJson, started: Option<rtick::Time>) -> String {
    let c = &t.cycle;
    let (Some([j50, j99, jmax]), Some([c50, c99, cmax]), Some([mmin, m1, m50])) =
        (c.jitter_ns, c.compute_ns, c.margin_ns)
    else {
        return String::new();
    };
    let period = match c.period_ns {
        Some(p) => format!("period {} ({} skipped)", Nanos(p), c.skipped),
        None => "no fixed period".into(),
    };
    let [j50, j99, jmax, c50, c99, cmax, mmin, m1, m50] = [j50, j99, jmax, c50, c99, cmax, mmin, m1, m50].map(Nanos);
    let mut o = format!(
        "  {}: cycle: {period}; jitter p50 / p99 / max {j50} / {j99} / {jmax}; compute p50 / p99 / max {c50} / {c99} / {cmax}; margin min / p1 / p50 {mmin} / {m1} / {m50}; {}\n",
        name(t),
        rtick::text::count(c.overruns, "overrun")
    );
    for ov in &c.worst_overruns {
        let at = rtick_model::json::AttachSpikeJson::label(rtick::Time(ov.requested_ns), started);
        let _ = writeln!(o, "    overran by {} ({at}): {}", Nanos(ov.overrun_ns), ov.cause);
    }
    o
}

/// Each thread's worst timed waits, explained: a line each, as
/// `measure --explain` prints a spike (the time asked for instead of a cycle).
fn worst(f: &AttachFile) -> String {
    let mut o = String::new();
    for t in f.threads.iter().filter(|t| !t.spikes.is_empty()) {
        let worst = rtick::text::count(t.spikes.len() as u64, "worst timed wait");
        let _ = writeln!(o, "\n{}: its {worst} explained:", name(t));
        for s in &t.spikes {
            let _ = writeln!(o, "  {}", s.line);
            if !s.stack.is_empty() {
                let frames = rtick::ktrace::stack::summary(&s.stack, crate::output::explain::STACK_FRAMES);
                let _ = writeln!(o, "    stack: {frames}");
            } else if let Some(why) = &s.stack_missing {
                let _ = writeln!(o, "    stack: {why}");
            }
        }
    }
    if !f.causes.is_empty() {
        o += &crate::output::explain::causes(&f.causes, false, "waits");
    }
    if let (Some(ns), Some(times)) = (f.stacks_armed_ns.filter(|&n| n > 0), f.stacks_armed_times) {
        let _ = writeln!(
            o,
            "kernel stacks taken for {} of the {} traced, {}: from a spell's first late wait to {} after its last",
            Nanos(ns),
            Nanos(f.elapsed_ns),
            rtick::text::count(times, "spell"),
            rtick::attach::stacks::QUIET
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(tid: i32, comm: &str) -> AttachedThreadJson {
        let cycle = serde_json::json!({"waits": 0, "skipped": 0, "overruns": 0, "worst_overruns": []});
        serde_json::from_value(serde_json::json!({
            "tid": tid, "comm": comm, "rt_priority": 0, "nice": 0, "affinity": [0], "timed_waits": 0,
            "phases_ns": [], "event_driven": 0, "wakers": [], "unmatched": 0, "cycle": cycle
        }))
        .unwrap()
    }

    /// The exited threads' pooled row has no tid: its comm names it.
    #[test]
    fn the_exited_threads_row_is_named_without_a_tid() {
        assert_eq!(name(&thread(0, "3 exited threads")), "3 exited threads");
        assert_eq!(name(&thread(42, "app")), "42 app");
        let mut t = thread(0, "1 exited thread");
        t.blocked_in = Some("hrtimer_nanosleep".into());
        assert_eq!(
            no_waits(&[t]),
            "\nno timed wait of the target ended in the run; still waiting when tracing stopped: 1 exited thread (blocked in hrtimer_nanosleep)\n"
        );
    }

    /// A file written before tracing's start was recorded: its overruns
    /// named by their CLOCK_MONOTONIC time, not as hours since 0.
    #[test]
    fn a_file_without_its_start_names_overruns_by_their_clock_time() {
        let f: AttachFile = serde_json::from_str(OLDER).unwrap();
        assert_eq!(f.started_ns, 0);
        let o = render(&f);
        assert!(o.contains("overran by 478.6 µs (requested at 23519.360033 s (CLOCK_MONOTONIC))"), "{o}");
        assert!(!o.contains("requested +23519"), "{o}");
    }

    /// Losses of unknown size warn as counted ones do.
    #[test]
    fn losses_of_unknown_size_are_warned_of() {
        let warning = |lost: u64, gaps: u64| {
            let mut v: serde_json::Value = serde_json::from_str(OLDER).unwrap();
            v["lost_events"] = lost.into();
            v["lost_gaps"] = gaps.into();
            let o = render(&serde_json::from_value(v).unwrap());
            o.lines().find(|l| l.starts_with("warning:")).map(str::to_string)
        };
        assert_eq!(warning(0, 0), None);
        let gaps = "warning: the kernel lost trace events in 2 gaps of unknown size: waits around them are missing";
        assert_eq!(warning(0, 2).as_deref(), Some(gaps));
        let both =
            "warning: the kernel lost 7 trace events, and more in 1 gap of unknown size: waits around them are missing";
        assert_eq!(warning(7, 1).as_deref(), Some(both));
    }

    /// An attach file of an older rtick: no `started_ns`, `results`, `over_time`.
    const OLDER: &str = include_str!("../../tests/fixtures/report/attach-older.json");
}

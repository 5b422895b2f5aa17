//! Where the latency went, on the terminal: the table of each phase's
//! p50 / p99 / max per mechanism, then one line per spike. `measure
//! --explain` and `rtick report` both print through here, from the same
//! model (`rtick_model::breakdown`), so a saved run reads back exactly as it was
//! shown.

use rtick::explain::Phases;
use rtick::Nanos;

use super::{fmt_latency, unit};
use rtick_model::breakdown::{Breakdown, Spike};
use rtick_model::json::{CauseJson, CfsJson};

/// Frames of a spike's stack on the terminal (the JSON has them all).
pub const STACK_FRAMES: usize = 5;

/// The table, the spike lines and the note on the kernel events.
/// `lost_detail`: measure's itemised losses, which the JSON does not keep.
pub fn render(b: &Breakdown, nsecs: bool, lost_detail: Option<&str>) -> String {
    let mut s = format!(
        "\nwhere the latency went (kernel phases, {}): p50 / p99 / max of each phase over the wake-ups matched to their kernel events\n",
        unit(nsecs)
    );
    let [a, b2, c, d] = Phases::DISPLAY_NAMES;
    s.push_str(&format!("{:<20} {:>2} {:>9}  {a:<24} {b2:<24} {c:<24} {d:<24}\n", "mechanism", "T", "matched"));
    for e in &b.series {
        let name = &e.mechanism;
        let Some(summary) = e.summary.filter(|_| e.not_timer_woken.is_none()) else {
            let why = e.not_timer_woken.as_deref().unwrap_or("no wake-up was matched to its kernel events");
            s.push_str(&format!("{name:<20} {:>2}  no phases: {why}\n", e.thread));
            continue;
        };
        let cells = summary.map(|v| v.map(|x| fmt_latency(x, nsecs)).join(" / "));
        s.push_str(&format!(
            "{name:<20} {:>2} {:>9}  {:<24} {:<24} {:<24} {:<24}\n",
            e.thread,
            format!("{}/{}", e.matched, e.wakeups),
            cells[0],
            cells[1],
            cells[2],
            cells[3]
        ));
        for (reason, n) in &e.unmatched {
            s.push_str(&format!("  {} not split: {reason}\n", rtick::text::count(*n as u64, "wake-up")));
        }
    }
    for e in b.series.iter().filter(|e| !e.spikes.is_empty()) {
        if b.explain.is_some() {
            s.push_str(&format!("spikes of {} T{}:\n", e.mechanism, e.thread));
        } else {
            s.push_str(&format!(
                "worst wake-ups of {} T{} (a trace has the phases, not the culprits):\n",
                e.mechanism, e.thread
            ));
        }
        for sp in &e.spikes {
            s.push_str(&format!("  {}\n", sp.line.clone().unwrap_or_else(|| phases_line(sp))));
            if !sp.stack.is_empty() {
                s.push_str(&format!("    stack: {}\n", rtick::ktrace::stack::summary(&sp.stack, STACK_FRAMES)));
            }
        }
    }
    if let Some(e) = b.explain.as_ref().filter(|e| !e.causes.is_empty()) {
        s.push_str(&causes(&e.causes, nsecs, "spikes"));
    }
    if let Some(e) = &b.explain {
        s.push_str(&format!(
            "note: explain: {} kernel events on the measured CPUs, {}",
            e.events,
            match (e.lost_events, lost_detail) {
                (0, None) => "none lost".to_string(),
                (n, None) => format!("{n} LOST (the phases near them may be wrong)"),
                (n, Some(d)) => format!("{n} LOST (the phases near them may be wrong): {d}"),
            }
        ));
        if let Some(why) = &e.stacks_unavailable {
            s.push_str(&format!("; no kernel stacks: {why}"));
        }
        if !e.missing_events.is_empty() {
            s.push_str(&format!(
                "; this kernel lacks {} (the phase boundaries or the culprits they mark are unavailable)",
                e.missing_events.join(", ")
            ));
        }
        s.push('\n');
        e.cfs.iter().filter_map(cfs_note).for_each(|n| s.push_str(&n));
    }
    s
}

/// A cgroup's CFS quota and its throttling over the run, if it has a
/// quota or was throttled.
pub fn cfs_note(c: &CfsJson) -> Option<String> {
    let quota = match (c.quota_us, c.period_us) {
        (Some(q), Some(p)) => format!("a CPU quota of {} every {}", Nanos::from_us(q), Nanos::from_us(p)),
        _ if c.nr_throttled > 0 => "no quota of its own".to_string(),
        _ => return None,
    };
    let mut s = format!(
        "note: CFS bandwidth: cgroup {} has {quota}; over the run it was throttled in {} of {}, {} in all",
        c.cgroup,
        c.nr_throttled,
        rtick::text::count(c.nr_periods, "period"),
        Nanos(c.throttled_ns)
    );
    if c.nr_throttled > 0 {
        s.push_str(&format!(
            ": its SCHED_OTHER threads wait for the next period when it runs out; raise or remove the quota ({}), or run the latency-critical threads with a real-time policy",
            c.quota_file
        ));
    }
    s.push('\n');
    Some(s)
}

/// The causes of all the spikes listed (`what`: "spikes", attach's "waits"):
/// count, total and worst latency.
pub fn causes(causes: &[CauseJson], nsecs: bool, what: &str) -> String {
    let mut s = format!("causes of the {what} above ({what}, total, worst latency, {}):\n", unit(nsecs));
    for c in causes {
        let (total, worst) = (fmt_latency(c.total_ns, nsecs), fmt_latency(c.worst_ns, nsecs));
        s.push_str(&format!("  {:>5} {total:>10} {worst:>10}  {}\n", c.count, c.cause));
    }
    s
}

/// A spike of a trace: its phases in the words of measure's spike lines.
fn phases_line(sp: &Spike) -> String {
    let parts: Vec<String> =
        Phases::DISPLAY_NAMES.iter().zip(sp.phases_ns).map(|(l, v)| format!("{l} {}", Nanos(v))).collect();
    format!("cycle {}  {} = {}", sp.cycle, Nanos(sp.latency_ns), parts.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick_model::breakdown::Breakdown;

    #[test]
    fn a_trace_renders_its_table_and_worst_wake_ups() {
        let b = Breakdown::from_wakeups([
            ("timerfd", 0, 7, 18_000, Some([12_000, 1_000, 3_000, 2_000])),
            ("spin", 0, 0, 5, None),
        ]);
        let out = render(&b, false, None);
        assert!(out.contains("timerfd               0       1/1  12.0 / 12.0 / 12.0"), "{out}");
        assert!(out.contains("spin                  0  no phases: no wake-up was matched"), "{out}");
        assert!(
            out.contains(
                "  cycle 7  18.0 µs = IRQ delay 12.0 µs | wake-up path 1.0 µs | scheduling 3.0 µs | return to user 2.0 µs"
            ),
            "{out}"
        );
        assert!(!out.contains("note: explain"), "a trace counts no kernel events");
    }
}

//! The figures of one attached thread, and what they mean.

use super::cycle::CycleSummary;
use super::stats::ThreadStats;
use super::target::ThreadInfo;
use super::waits::Waker;
use crate::explain::Phases;
use crate::stats::LatencyStats;
use crate::time::Nanos;

/// Slack at or above this, on a thread of a normal policy, is a finding.
const SLACK_FINDING: Nanos = Nanos::from_us(1);

/// A margin at p1 below this share of the period is a finding.
const MARGIN_SHARE: f64 = 0.10;

/// One thread's waits in figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSummary {
    /// The thread.
    pub thread: ThreadInfo,
    /// Timed waits seen.
    pub timed: u64,
    /// Their lateness: p50, p90, p99, max (`None`: no timed wait).
    pub lateness: Option<[Nanos; 4]>,
    /// Their timer slack, p50.
    pub slack_p50: Option<Nanos>,
    /// p50 of the slack taken (the time the kernel waited on purpose).
    pub slack_taken_p50: Option<Nanos>,
    /// Each phase's p50, p99 and max, in [`Phases::NAMES`] order.
    pub phases: Option<[(&'static str, [Nanos; 3]); 4]>,
    /// Event-driven wake-ups seen.
    pub event_driven: u64,
    /// Their scheduling latency (waking → running): p50 and max.
    pub event_scheduling: Option<[Nanos; 2]>,
    /// Who woke them, most often first (the first
    /// [`WAKERS`](super::stats::WAKERS) wakers seen).
    pub wakers: Vec<(Waker, u64)>,
    /// Wake-ups by other wakers, counted together.
    pub other_wakers: u64,
    /// Waits that ended without a wake-up rtick could follow.
    pub unmatched: u64,
    /// Still in a timed wait when the trace stopped.
    pub in_progress: bool,
    /// The kernel function it was blocked in when the trace stopped.
    pub blocked_in: Option<String>,
    /// Its cycle: period, jitter, compute, margin, overruns.
    pub cycle: CycleSummary,
}

/// The values at quantiles `qs` (nearest rank, to the histogram's
/// precision, held within the exact extremes); `None` when empty.
fn at<const N: usize>(s: &LatencyStats, qs: [f64; N]) -> Option<[Nanos; N]> {
    let sum = s.summary();
    (s.count() > 0).then(|| qs.map(|q| Nanos(s.histogram().value_at_quantile(q).clamp(sum.min, sum.max))))
}

impl ThreadSummary {
    /// The figures of `stats`, the waits of `thread` (not in a wait, not blocked).
    pub fn of(thread: ThreadInfo, stats: &ThreadStats) -> ThreadSummary {
        let mut wakers: Vec<(Waker, u64)> = stats.wakers.iter().map(|(w, n)| (w.clone(), *n)).collect();
        wakers.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.to_string().cmp(&b.0.to_string())));
        let phases = (stats.lateness.count() > 0).then(|| {
            std::array::from_fn(|k| {
                (Phases::NAMES[k], at(&stats.phases[k], [0.5, 0.99, 1.0]).unwrap_or([Nanos::ZERO; 3]))
            })
        });
        ThreadSummary {
            thread,
            timed: stats.lateness.count(),
            lateness: at(&stats.lateness, [0.5, 0.9, 0.99, 1.0]),
            slack_p50: at(&stats.slack, [0.5]).map(|[p]| p),
            slack_taken_p50: at(&stats.slack_taken, [0.5]).map(|[p]| p),
            phases,
            event_driven: stats.event_scheduling.count(),
            event_scheduling: at(&stats.event_scheduling, [0.5, 1.0]),
            wakers,
            other_wakers: stats.other_wakers,
            unmatched: stats.unmatched,
            in_progress: false,
            blocked_in: None,
            cycle: stats.cycle.summary(),
        }
    }

    /// The finding of its timer slack, if it has one: one line, with the fix.
    pub fn slack_finding(&self) -> Option<String> {
        let slack = self.finding_slack()?;
        Some(slack_finding(&[self], slack))
    }

    /// Its timer slack, p50, when it is a finding.
    fn finding_slack(&self) -> Option<Nanos> {
        self.slack_p50.filter(|s| *s >= SLACK_FINDING)
    }
}

/// Threads named in a finding of several, at most; the others counted.
const NAMED: usize = 5;

/// The finding of `threads`' timer slack, `slack` each, all of one policy:
/// one line, with the fix.
fn slack_finding(threads: &[&ThreadSummary], slack: Nanos) -> String {
    let t = &threads[0].thread;
    let (who, has, it, runs, that) = match threads {
        [_] if t.tid == 0 => (t.comm.clone(), "have", "their", "they run", "those threads, or run them"),
        [_] => (format!("thread {} ({})", t.tid, t.comm), "has", "its", "it runs", "that thread, or run it"),
        _ => {
            let mut named: Vec<String> = threads.iter().take(NAMED).map(|s| s.thread.label()).collect();
            if threads.len() > NAMED {
                named.push(format!("and {} more", threads.len() - NAMED));
            }
            let who = format!("{} threads ({})", threads.len(), named.join(", "));
            (who, "have", "their", "they run", "each of those threads, or run them")
        }
    };
    let why = if t.has_slack_policy() { format!("{runs} {}, ", t.policy_text()) } else { String::new() };
    format!(
        "{who} {has} {slack} of timer slack: {why}so the kernel may fire each of {it} timers up to {slack} after the time asked for, on purpose (to batch wake-ups). Fix: prctl(PR_SET_TIMERSLACK, 1) in {that} SCHED_FIFO/SCHED_RR (real-time threads get no slack)"
    )
}

impl ThreadSummary {
    /// The finding of its margin, if its p1 is below 10 % of its period:
    /// one cycle in a hundred or more came within that of its deadline.
    pub fn margin_finding(&self) -> Option<String> {
        let c = &self.cycle;
        let (period, [_, p1, _]) = (c.period?, c.margin?);
        if p1.as_ns() as f64 >= MARGIN_SHARE * period.as_ns() as f64 {
            return None;
        }
        let t = &self.thread;
        let what = if p1 < Nanos::ZERO {
            "one cycle in a hundred or more asked for its next deadline after it had passed".to_string()
        } else {
            let share = 100.0 * p1.as_ns() as f64 / period.as_ns() as f64;
            format!("{share:.1} % of its {period} period: one cycle in a hundred or more goes to sleep that close to its next deadline")
        };
        Some(format!(
            "thread {} ({}) has {p1} of margin at p1: {what} ({}). Fix: its overruns' causes and worst waits show whether its work per cycle (compute) or late wake-ups take the time: shorten the one, or remove what delays the other, or lengthen its period",
            t.tid,
            t.comm,
            crate::text::count(c.overruns, "overrun")
        ))
    }
}

/// The findings of a run: the threads' slack, one finding per policy and
/// slack (hundreds of alike threads make one line), then each thread's margin.
pub fn findings(threads: &[ThreadSummary]) -> Vec<String> {
    let mut groups: Vec<(String, Nanos, Vec<&ThreadSummary>)> = Vec::new();
    for t in threads {
        let Some(slack) = t.finding_slack() else { continue };
        let policy = t.thread.policy_text();
        match groups.iter_mut().find(|g| g.0 == policy && g.1 == slack) {
            Some(g) => g.2.push(t),
            None => groups.push((policy, slack, vec![t])),
        }
    }
    let slack = groups.iter().map(|(_, slack, ts)| slack_finding(ts, *slack));
    slack.chain(threads.iter().filter_map(|t| t.margin_finding())).collect()
}

#[cfg(test)]
mod tests {
    use super::super::waits::{EventWake, Wake};
    use super::*;
    use crate::rt::Policy;
    use crate::time::Time;

    fn info(policy: Policy) -> ThreadInfo {
        ThreadInfo {
            tid: 7,
            tgid: 7,
            comm: "app".into(),
            policy: Some(policy),
            rt_priority: 0,
            nice: 0,
            affinity: vec![0],
            timer_slack_ns: Some(50_000),
        }
    }

    fn timed(late: i64, slack: i64) -> Wake {
        Wake::Timed(super::super::testing::timed(0, slack, [late, 0, 0, 0]))
    }

    fn stats(waits: &[Wake]) -> ThreadStats {
        let mut s = ThreadStats::new();
        waits.iter().for_each(|w| s.add(w));
        s
    }

    #[test]
    fn figures_use_the_nearest_rank_percentiles_and_wakers_are_counted() {
        let wake = |by: Waker, s| Wake::Event(EventWake { woken: Time(0), scheduling: Nanos(s), waker: by });
        let mut w: Vec<Wake> = (1..=100).map(|v| timed(v, 50_000)).collect();
        w.extend([wake(Waker::Irq, 5), wake(Waker::Task(3, "w".into()), 9), wake(Waker::Irq, 7)]);
        let s = ThreadSummary::of(info(Policy::Other), &stats(&w));
        assert_eq!(s.lateness, Some([Nanos(50), Nanos(90), Nanos(99), Nanos(100)]));
        assert_eq!((s.timed, s.event_driven, s.slack_p50), (100, 3, Some(Nanos(50_000))));
        assert_eq!(s.event_scheduling, Some([Nanos(7), Nanos(9)]));
        assert_eq!(s.wakers[0], (Waker::Irq, 2));
        assert_eq!(s.phases.unwrap()[0], ("irq_delay", [Nanos(50), Nanos(99), Nanos(100)]));
        let f = s.slack_finding().unwrap();
        assert!(f.contains("SCHED_OTHER") && f.contains("PR_SET_TIMERSLACK"), "{f}");
    }

    #[test]
    fn large_values_keep_their_precision_and_their_exact_maximum() {
        let w: Vec<Wake> = (1..=1000).map(|v| timed(v * 1_003, 0)).collect();
        let [p50, _, p99, max] = ThreadSummary::of(info(Policy::Fifo), &stats(&w)).lateness.unwrap();
        assert!((p50.as_ns() - 501_500).abs() <= 501, "{p50:?} within 0.1 %");
        assert!((p99.as_ns() - 992_970).abs() <= 993, "{p99:?}");
        assert_eq!(max, Nanos(1_003_000));
    }

    /// A 1 ms cycle that sleeps 50 µs before its deadline has 5 % of
    /// margin: a finding; 200 µs (20 %) is none.
    #[test]
    fn a_margin_under_a_tenth_of_the_period_at_p1_is_a_finding() {
        let margin = |m: i64| {
            let waits: Vec<Wake> = (1..=200)
                .map(|k| {
                    let mut w = super::super::testing::timed(k * 1_000_000, 0, [10, 0, 0, 0]);
                    w.blocked = Time(k * 1_000_000 - m);
                    w.armed = w.blocked;
                    Wake::Timed(w)
                })
                .collect();
            ThreadSummary::of(info(Policy::Fifo), &stats(&waits))
        };
        let s = margin(50_000);
        assert_eq!((s.cycle.period, s.cycle.margin.map(|m| m[0])), (Some(Nanos(1_000_000)), Some(Nanos(50_000))));
        let f = s.margin_finding().expect("5 % of margin");
        assert!(
            f.starts_with(
                "thread 7 (app) has 50.0 µs of margin at p1: 5.0 % of its 1.00 ms period: one cycle in a hundred"
            ),
            "{f}"
        );
        assert_eq!(findings(&[s]).len(), 1);
        assert_eq!(margin(200_000).margin_finding(), None);
    }

    /// Threads of one policy and slack make one finding, naming a few.
    #[test]
    fn alike_threads_make_one_slack_finding() {
        let with = |tid: i32, policy: Policy, slack: i64| ThreadSummary {
            thread: ThreadInfo { tid, ..info(policy) },
            ..ThreadSummary::of(info(policy), &stats(&[timed(5, slack)]))
        };
        let mut threads: Vec<ThreadSummary> = (1..=8).map(|t| with(t, Policy::Other, 50_000)).collect();
        threads.push(with(20, Policy::Other, 100_000));
        threads.push(with(30, Policy::Batch, 50_000));
        let f = findings(&threads);
        assert_eq!(f.len(), 3, "{f:#?}");
        assert!(
            f[0].starts_with("8 threads (1 app, 2 app, 3 app, 4 app, 5 app, and 3 more) have 50.0 µs of timer slack: they run SCHED_OTHER nice 0, so the kernel may fire each of their timers"),
            "{}",
            f[0]
        );
        assert!(f[0]
            .ends_with("in each of those threads, or run them SCHED_FIFO/SCHED_RR (real-time threads get no slack)"));
        assert!(f[1].starts_with("thread 20 (app) has 100.0 µs of timer slack: it runs SCHED_OTHER"), "{}", f[1]);
        assert!(f[2].starts_with("thread 30 (app) has 50.0 µs of timer slack: it runs SCHED_BATCH"), "{}", f[2]);
        // The exited threads' pooled row is named by its comm, no tid 0.
        let pooled = ThreadSummary {
            thread: ThreadInfo { tid: 0, comm: "145 exited threads".into(), ..info(Policy::Other) },
            ..with(40, Policy::Other, 50_000)
        };
        let f = findings(std::slice::from_ref(&pooled));
        assert!(f[0].starts_with("145 exited threads have 50.0 µs of timer slack: they run SCHED_OTHER"), "{}", f[0]);
        let f = findings(&[pooled, with(41, Policy::Other, 50_000)]);
        assert!(f[0].starts_with("2 threads (145 exited threads, 41 app) have"), "{}", f[0]);
    }

    #[test]
    fn no_slack_and_no_waits_make_no_finding() {
        assert_eq!(ThreadSummary::of(info(Policy::Fifo), &stats(&[timed(5, 0)])).slack_finding(), None);
        let none = ThreadSummary::of(info(Policy::Other), &ThreadStats::new());
        assert_eq!((none.lateness, none.slack_p50, none.phases, none.slack_finding()), (None, None, None, None));
        assert_eq!((none.cycle.period, none.margin_finding()), (None, None));
    }
}

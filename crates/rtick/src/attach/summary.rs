//! The figures of one attached thread, and what they mean.

use std::collections::HashMap;

use super::target::ThreadInfo;
use super::waits::{ThreadWaits, Waker};
use crate::explain::{phase_summary, Phases};
use crate::stats::percentile::of_sorted;
use crate::time::Nanos;

/// Slack at or above this, on a thread of a normal policy, is a finding.
const SLACK_FINDING: Nanos = Nanos::from_us(1);

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
    /// Each phase's p50, p99 and max, in [`Phases::NAMES`] order.
    pub phases: Option<[(&'static str, [Nanos; 3]); 4]>,
    /// Event-driven wake-ups seen.
    pub event_driven: u64,
    /// Their scheduling latency (waking → running): p50 and max.
    pub event_scheduling: Option<[Nanos; 2]>,
    /// Who woke them, most often first.
    pub wakers: Vec<(Waker, u64)>,
    /// Waits that ended without a wake-up rtick could follow.
    pub unmatched: u64,
    /// Still in a timed wait when the trace stopped.
    pub in_progress: bool,
    /// The kernel function it was blocked in when the trace stopped.
    pub blocked_in: Option<String>,
}

impl ThreadSummary {
    /// The figures of `waits`, the waits of `thread`.
    pub fn of(thread: ThreadInfo, waits: &ThreadWaits) -> ThreadSummary {
        let mut late: Vec<Nanos> = waits.timed.iter().map(|w| w.lateness).collect();
        late.sort_unstable();
        let mut slack: Vec<Nanos> = waits.timed.iter().map(|w| w.slack).collect();
        slack.sort_unstable();
        let mut sched: Vec<Nanos> = waits.event_driven.iter().map(|w| w.scheduling).collect();
        sched.sort_unstable();
        let q = |v: &[Nanos], q: f64| of_sorted(v, q);
        let phases: Vec<Phases> = waits.timed.iter().map(|w| w.phases).collect();
        let mut wakers: HashMap<&Waker, u64> = HashMap::new();
        for w in &waits.event_driven {
            *wakers.entry(&w.waker).or_default() += 1;
        }
        let mut wakers: Vec<(Waker, u64)> = wakers.into_iter().map(|(w, n)| (w.clone(), n)).collect();
        wakers.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.to_string().cmp(&b.0.to_string())));
        ThreadSummary {
            thread,
            timed: late.len() as u64,
            lateness: (|| Some([q(&late, 0.5)?, q(&late, 0.9)?, q(&late, 0.99)?, q(&late, 1.0)?]))(),
            slack_p50: q(&slack, 0.5),
            phases: (!phases.is_empty()).then(|| phase_summary(&phases)),
            event_driven: sched.len() as u64,
            event_scheduling: (|| Some([q(&sched, 0.5)?, q(&sched, 1.0)?]))(),
            wakers,
            unmatched: waits.unmatched,
            in_progress: waits.in_progress,
            blocked_in: None,
        }
    }

    /// The finding of its timer slack, if it has one: one line, with the fix.
    pub fn slack_finding(&self) -> Option<String> {
        let slack = self.slack_p50.filter(|s| *s >= SLACK_FINDING)?;
        let t = &self.thread;
        let why = if t.has_slack_policy() { format!("it runs {}, ", t.policy_text()) } else { String::new() };
        Some(format!(
            "thread {} ({}) has {slack} of timer slack: {why}so the kernel may fire each of its timers up to {slack} after the time asked for, on purpose (to batch wake-ups). Fix: prctl(PR_SET_TIMERSLACK, 1) in that thread, or run it SCHED_FIFO/SCHED_RR (real-time threads get no slack)",
            t.tid, t.comm
        ))
    }
}

/// The findings of a run: each thread's slack finding.
pub fn findings(threads: &[ThreadSummary]) -> Vec<String> {
    threads.iter().filter_map(ThreadSummary::slack_finding).collect()
}

#[cfg(test)]
mod tests {
    use super::super::waits::{EventWake, TimedWait};
    use super::*;
    use crate::explain::Matched;
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

    fn timed(late: i64, slack: i64) -> TimedWait {
        let p =
            Phases { irq_delay: Nanos(late), wakeup_path: Nanos(0), scheduling: Nanos(0), return_to_user: Nanos(0) };
        let m =
            Matched { cpu: 0, hrtimer: 0, expired: Time(late), waking: Time(late), switched_in: Time(late), prio: 120 };
        TimedWait {
            requested: Time(0),
            slack: Nanos(slack),
            lateness: Nanos(late),
            phases: p,
            matched: m,
            exit: Time(late),
            armed: Time(0),
            callback: 0,
            blocked: Time(0),
        }
    }

    #[test]
    fn figures_use_the_nearest_rank_percentiles_and_wakers_are_counted() {
        let wake = |by: Waker, s| EventWake { woken: Time(0), scheduling: Nanos(s), waker: by };
        let w = ThreadWaits {
            timed: (1..=100).map(|v| timed(v, 50_000)).collect(),
            event_driven: vec![wake(Waker::Irq, 5), wake(Waker::Task(3, "w".into()), 9), wake(Waker::Irq, 7)],
            unmatched: 0,
            in_progress: false,
        };
        let s = ThreadSummary::of(info(Policy::Other), &w);
        assert_eq!(s.lateness, Some([Nanos(50), Nanos(90), Nanos(99), Nanos(100)]));
        assert_eq!((s.timed, s.event_driven, s.slack_p50), (100, 3, Some(Nanos(50_000))));
        assert_eq!(s.event_scheduling, Some([Nanos(7), Nanos(9)]));
        assert_eq!(s.wakers[0], (Waker::Irq, 2));
        assert_eq!(s.phases.unwrap()[0], ("irq_delay", [Nanos(50), Nanos(99), Nanos(100)]));
        let f = s.slack_finding().unwrap();
        assert!(f.contains("SCHED_OTHER") && f.contains("PR_SET_TIMERSLACK"), "{f}");
    }

    #[test]
    fn no_slack_and_no_waits_make_no_finding() {
        let w = ThreadWaits { timed: vec![timed(5, 0)], ..Default::default() };
        assert_eq!(ThreadSummary::of(info(Policy::Fifo), &w).slack_finding(), None);
        let none = ThreadSummary::of(info(Policy::Other), &ThreadWaits::default());
        assert_eq!((none.lateness, none.slack_p50, none.phases, none.slack_finding()), (None, None, None, None));
    }
}

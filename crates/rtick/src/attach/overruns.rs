//! A thread's worst overruns, each with its cause: a wait armed after the
//! time it asked for ([`TimedWait::overrun`]) means the cycle before it
//! took longer than the interval it had. Either the thread computed longer
//! than that interval by itself, or it began late: the wait before it was
//! late, and that wait's explanation (a spike, as `measure --explain`
//! gives) is the overrun's cause. A thread keeps at most `n`, the largest
//! first, one a stall (the catch-ups that follow overrun too, less each
//! time, for the same cause); the rest are only counted
//! ([`Cycle`](super::cycle::Cycle)).

use std::sync::Arc;

use super::waits::TimedWait;
use crate::cfs::{CfsRun, FAIR_PRIO};
use crate::explain::{self, Cgroups, Culprit, OffCpu, Spike, Task, Unexplained};
use crate::time::{Nanos, Time};

/// Why a cycle overran.
#[derive(Clone, Debug)]
pub enum OverrunCause {
    /// From back in user space after the wait before to arming this one
    /// took `compute`, more than the `interval` between the two requests.
    Compute {
        /// Exit of the wait before → this wait armed.
        compute: Nanos,
        /// This wait's request − the one before's.
        interval: Nanos,
        /// Where that time went, when the thread's switches then are held.
        split: Option<ComputeSplit>,
    },
    /// A wait before ended `late` after its request, which with the
    /// cycle's work left too little of the interval: its explanation. The
    /// wait just before, or, when that one was itself a catch-up that
    /// overran, the late wait the catch-ups began with, `back` waits before.
    LateWake {
        /// That wait's lateness.
        late: Nanos,
        /// How many waits before this one it was (1: the one just before).
        back: u64,
        /// Its breakdown and cause (or why it has none).
        explained: Box<Result<Spike, Unexplained>>,
    },
    /// No timed wait of the thread before it was seen.
    Unknown,
}

impl OverrunCause {
    /// Whether overran wait `w`, `before` it the thread's previous timed
    /// wait, overran by computing: otherwise the wait before was late
    /// (`None` when it is, and its explanation is to be found).
    pub fn of(w: &TimedWait, before: Option<&TimedWait>) -> Option<OverrunCause> {
        let Some(b) = before else { return Some(OverrunCause::Unknown) };
        let interval = w.requested - b.requested;
        let compute = w.armed - b.exit;
        (compute >= interval).then_some(OverrunCause::Compute { compute, interval, split: None })
    }

    /// What kind of cause, a token: `compute` (the thread ran longer than
    /// the interval by itself, or where its time went is not known),
    /// `preempted`, `cfs_throttled`, `rt_throttled` or `blocked` (without
    /// that time off the CPU it would not have overrun: the larger of
    /// preempted and blocked), `late_wake`, `unknown`.
    pub fn kind(&self) -> &'static str {
        match self {
            OverrunCause::Compute { split: Some(s), interval, .. } if s.off.ran < *interval => s.kind(),
            OverrunCause::Compute { .. } => "compute",
            OverrunCause::LateWake { .. } => "late_wake",
            OverrunCause::Unknown => "unknown",
        }
    }

    /// One line: "compute 1.2 ms > interval 1 ms", or the late wait's.
    pub fn text(&self) -> String {
        match self {
            OverrunCause::Compute { compute, interval, split: None } => {
                format!("compute {compute} > interval {interval}")
            }
            OverrunCause::Compute { compute, interval, split: Some(s) } => {
                format!("compute {compute} > interval {interval}: {}", s.text())
            }
            OverrunCause::LateWake { explained, back, .. } if explained.is_ok() => {
                let s = explained.as_ref().as_ref().expect("matched Ok");
                format!("{} was late: {}", Self::which(*back), s.line_as("").trim_start())
            }
            OverrunCause::LateWake { late, back, explained } => {
                let u = explained.as_ref().as_ref().expect_err("the Ok case is above");
                format!("{} was {late} late (not explained: {})", Self::which(*back), u.reason())
            }
            OverrunCause::Unknown => "no wait of the thread before it was traced".into(),
        }
    }
}

impl OverrunCause {
    /// "the wait before", "the wait 3 before".
    fn which(back: u64) -> String {
        match back {
            1 => "the wait before".into(),
            n => format!("the wait {n} before (the catch-ups since overran too)"),
        }
    }

    /// The cause of the next overrun of a chain of catch-ups: this one's,
    /// a wait further back.
    pub fn further(&self) -> OverrunCause {
        match self {
            OverrunCause::LateWake { late, back, explained } => {
                OverrunCause::LateWake { late: *late, back: back + 1, explained: explained.clone() }
            }
            other => other.clone(),
        }
    }
}

/// Where an overrun cycle's compute phase went ([`OffCpu`]), and who is
/// to blame for the time it was kept off its CPU, runnable.
#[derive(Clone, Debug)]
pub struct ComputeSplit {
    /// Ran, preempted, blocked, and what held its CPU longest.
    pub off: OffCpu,
    /// That holder's cgroup (a task's, read while it lives).
    pub cgroup: Option<Arc<str>>,
    /// The thread's cgroup, when its CFS quota ran out while it was kept
    /// off its CPU ([`CfsRun::blamed`], as a spike's).
    pub cfs: Option<Arc<str>>,
}

/// Below this, a part of the compute phase is not worth a word.
const SMALL: Nanos = Nanos::from_us(1);

impl ComputeSplit {
    /// Splits the compute phase `off` of a thread, `[from, to]`: the
    /// holder's cgroup from `cgroups`, CFS throttling from the thread's `cfs` samples.
    pub fn new(off: OffCpu, from: Time, to: Time, cgroups: &Cgroups, cfs: Option<&CfsRun>) -> ComputeSplit {
        let cgroup = off.by.as_ref().and_then(|(t, _)| cgroups.of(t));
        let held = off.preempted + off.waking;
        let runnable_most = held >= SMALL && held >= off.blocked;
        let prio = off.prio.unwrap_or(FAIR_PRIO);
        let cfs = cfs.filter(|_| runnable_most).and_then(|r| r.blamed(prio, from, to, held));
        ComputeSplit { off, cgroup, cfs }
    }

    /// A real-time thread kept runnable off its CPU while the idle task or
    /// a task of lower priority held it: only RT throttling lets those run
    /// before it ([`explain::rt_throttled`], a spike's rule).
    fn rt_throttled(&self) -> bool {
        let Some(prio) = self.off.prio else { return false };
        let below = |t: &Task| t.is_idle() || t.prio > prio;
        self.off.by.as_ref().is_some_and(|(t, d)| below(t) && explain::rt_throttled(prio, *d))
    }

    /// The task to blame for the time it was runnable, when one is: of
    /// higher priority (or a fair thread's competitor), not the idle task,
    /// not under CFS or RT throttling.
    pub fn preemptor(&self) -> Option<&Task> {
        let prio = self.off.prio.unwrap_or(FAIR_PRIO);
        let by = self.off.by.as_ref().map(|(t, _)| t).filter(|t| !t.is_idle() && (prio >= FAIR_PRIO || t.prio < prio));
        by.filter(|_| self.off.preempted + self.off.waking >= SMALL && self.cfs.is_none() && !self.rt_throttled())
    }

    /// The time off the CPU's kind (see [`OverrunCause::kind`]).
    fn kind(&self) -> &'static str {
        let o = &self.off;
        match () {
            _ if o.blocked > o.preempted + o.waking => "blocked",
            _ if self.cfs.is_some() => "cfs_throttled",
            _ if self.rt_throttled() => "rt_throttled",
            _ if self.preemptor().is_some() => "preempted",
            // Runnable after a short sleep, the CPU idle or lower: its own wake-up.
            _ => "blocked",
        }
    }

    /// "ran 609.8 µs, preempted 2.96 ms; its CPU held by hog:4242 (prio 19)".
    pub fn text(&self) -> String {
        let o = &self.off;
        let mut s = format!("ran {}", o.ran);
        for (what, d) in [("preempted", o.preempted), ("blocked", o.blocked), ("waking", o.waking)] {
            if d >= SMALL {
                s.push_str(&format!(", {what} {d}"));
            }
        }
        match (&self.cfs, self.preemptor()) {
            (Some(cg), _) => s.push_str(&format!("; CFS throttled in {cg}")),
            (None, _) if self.rt_throttled() => {
                s.push_str("; RT throttled (runnable while idle or a lower priority held its CPU: sched_rt_runtime_us)")
            }
            (None, Some(t)) => {
                s.push_str(&format!("; its CPU held by {}", Culprit::Task(t.clone())));
                if let Some(cg) = &self.cgroup {
                    s.push_str(&format!(" in {cg}"));
                }
            }
            (None, None) if o.blocked >= SMALL => s.push_str("; asleep in its own work: I/O, a lock, a page fault"),
            (None, None) => {}
        }
        s
    }
}

/// One overrun and its cause.
#[derive(Clone, Debug)]
pub struct Overrun {
    /// The wait armed after its request.
    pub wait: TimedWait,
    /// Why.
    pub cause: OverrunCause,
}

/// A thread's `n` largest overruns so far, the largest first.
#[derive(Clone, Debug)]
pub struct Overruns {
    n: usize,
    list: Vec<Overrun>,
}

impl Overruns {
    /// Keeps the largest `n`.
    pub fn new(n: usize) -> Overruns {
        Overruns { n, list: Vec::with_capacity(n.min(16)) }
    }

    /// Whether `w` overran and by more than the least kept of a full list.
    pub fn ranks(&self, w: &TimedWait) -> bool {
        w.overrun() > Nanos::ZERO
            && self.n > 0
            && (self.list.len() < self.n || self.list.last().is_some_and(|o| w.overrun() > o.wait.overrun()))
    }

    /// Adds `o`, which [`Overruns::ranks`].
    pub fn add(&mut self, o: Overrun) {
        if !self.ranks(&o.wait) {
            return;
        }
        let at = self.list.partition_point(|k| k.wait.overrun() >= o.wait.overrun());
        self.list.insert(at, o);
        self.list.truncate(self.n);
    }

    /// Takes them, the largest first.
    pub fn into_list(self) -> Vec<Overrun> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    /// A wait asked for at `requested`, armed at `armed`, its exit at `exit` (ns).
    fn wait(requested: i64, armed: i64, exit: i64) -> TimedWait {
        let mut w = super::super::testing::timed(requested, 0, [exit - requested, 0, 0, 0]);
        w.armed = Time(armed);
        w
    }

    #[test]
    fn an_overrun_is_compute_when_the_work_alone_outlasted_the_interval() {
        let before = wait(1_000_000, 0, 1_000_100);
        // Armed 1.2004 ms after the exit before, for 1 ms after the request before.
        let w = wait(2_000_000, 2_200_500, 2_200_600);
        let c = OverrunCause::of(&w, Some(&before)).expect("compute");
        assert_eq!(c.text(), "compute 1.20 ms > interval 1.00 ms");
        // Late wake: exit before at 1.9 ms, 0.2 ms of work, armed at 2.1 ms.
        let late = wait(1_000_000, 0, 1_900_000);
        assert!(OverrunCause::of(&wait(2_000_000, 2_100_000, 2_100_100), Some(&late)).is_none());
        assert_eq!(OverrunCause::of(&w, None).unwrap().text(), "no wait of the thread before it was traced");
        let e =
            OverrunCause::LateWake { late: Nanos(900_000), back: 1, explained: Box::new(Err(Unexplained::NotHeld)) };
        assert!(e.text().starts_with("the wait before was 900.0 µs late (not explained: "), "{}", e.text());
        let further = e.further().further();
        assert!(further.text().starts_with("the wait 3 before (the catch-ups since overran too) was 900.0 µs late"));
    }

    #[test]
    fn the_largest_overruns_are_kept_and_waits_in_time_are_not() {
        let mut o = Overruns::new(2);
        assert!(!o.ranks(&wait(1_000, 500, 1_100)), "armed before its request");
        for by in [300, 100, 500, 200] {
            let w = wait(1_000, 1_000 + by, 2_000);
            if o.ranks(&w) {
                o.add(Overrun { wait: w, cause: OverrunCause::Unknown });
            }
        }
        let kept: Vec<i64> = o.into_list().iter().map(|k| k.wait.overrun().as_ns()).collect();
        assert_eq!(kept, [500, 300]);
    }

    /// The kinds of time off the CPU: preempted by a task, CFS throttled
    /// (a SCHED_OTHER thread, its cgroup throttled for half that time or
    /// more around it), RT throttled (a real-time thread whose CPU idled
    /// while it was runnable), blocked; and its own work when it ran
    /// longer than the interval.
    #[test]
    fn a_compute_phase_is_named_by_where_its_time_went() {
        use crate::cfs::{CpuStat, ThrottleSample, Throttling};
        let none = tempfile::tempdir().unwrap();
        let cgroups = Cgroups::new(crate::system::SysRoot::new(none.path()));
        let task = |pid, prio| Task { comm: if pid == 0 { "swapper/1".into() } else { "hog".into() }, pid, prio };
        // [ran, preempted, blocked, waking] µs; the holder held all the runnable time.
        let split = |[ran, preempted, blocked, waking]: [i64; 4], by: Option<Task>, prio, cfs: Option<&CfsRun>| {
            let us = |v: i64| Nanos::from_us(v);
            let held = us(preempted + waking);
            let off = OffCpu {
                ran: us(ran),
                preempted: us(preempted),
                blocked: us(blocked),
                waking: us(waking),
                by: by.map(|t| (t, held)),
                prio: Some(prio),
            };
            ComputeSplit::new(off, Time(0), Time(0) + us(ran + preempted + blocked + waking), &cgroups, cfs)
        };
        let cause = |s: ComputeSplit| {
            let compute = s.off.ran + s.off.preempted + s.off.blocked + s.off.waking;
            OverrunCause::Compute { compute, interval: Nanos(1_000_000), split: Some(s) }
        };
        let throttled = CfsRun {
            throttling: vec![Throttling {
                path: "/box".into(),
                quota: None,
                quota_file: String::new(),
                delta: CpuStat::default(),
            }],
            samples: [(-1, 0), (10_000_000, 3_000_000)]
                .map(|(at, ns)| ThrottleSample { at: Time(at), cgroup: 0, throttled: Nanos(ns) })
                .to_vec(),
        };
        let text = |c: &OverrunCause| c.text().split_once(": ").map(|(_, t)| t.to_string()).unwrap();
        let preempted = cause(split([600, 3_000, 0, 0], Some(task(9, 19)), 49, None));
        assert_eq!(preempted.kind(), "preempted");
        assert_eq!(text(&preempted), "ran 600.0 µs, preempted 3.00 ms; its CPU held by hog:9 (prio 19)");
        let cfs = cause(split([600, 3_000, 0, 0], Some(task(0, 120)), 120, Some(&throttled)));
        assert_eq!(cfs.kind(), "cfs_throttled");
        assert_eq!(text(&cfs), "ran 600.0 µs, preempted 3.00 ms; CFS throttled in /box");
        // Woken into a throttled cgroup: the time waking is CFS's too.
        let woken = cause(split([600, 0, 100, 2_900], Some(task(0, 120)), 120, Some(&throttled)));
        assert_eq!(woken.kind(), "cfs_throttled");
        // The same samples do not make a real-time thread's idle CPU CFS's
        // doing; nor is a lower priority that ran instead a preemptor.
        let rt = cause(split([600, 3_000, 0, 0], Some(task(0, 49)), 49, Some(&throttled)));
        assert_eq!(rt.kind(), "rt_throttled");
        let below = cause(split([600, 3_000, 0, 0], Some(task(9, 120)), 49, None));
        assert_eq!(below.kind(), "rt_throttled");
        assert!(text(&below)
            .ends_with("; RT throttled (runnable while idle or a lower priority held its CPU: sched_rt_runtime_us)"));
        // A short sleep and its wake-up from idle (80 µs): the thread's own, not throttling.
        let wake = cause(split([900, 0, 50, 80], Some(task(0, 49)), 49, None));
        assert_eq!(
            (wake.kind(), text(&wake).as_str()),
            (
                "blocked",
                "ran 900.0 µs, blocked 50.0 µs, waking 80.0 µs; asleep in its own work: I/O, a lock, a page fault"
            )
        );
        let blocked = cause(split([300, 0, 2_000, 0], None, 120, None));
        assert_eq!(blocked.kind(), "blocked");
        // It ran longer than the interval by itself: its work, whatever else.
        let own = cause(split([1_200, 500, 0, 0], Some(task(9, 19)), 49, None));
        assert_eq!(own.kind(), "compute");
    }
}

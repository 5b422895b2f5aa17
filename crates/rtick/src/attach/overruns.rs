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
use crate::explain::{Cgroups, Culprit, OffCpu, Spike, Task, Unexplained};
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
        let held = off.preempted;
        let cfs = cfs.filter(|_| held >= SMALL).and_then(|r| r.blamed(off.prio.unwrap_or(FAIR_PRIO), from, to, held));
        ComputeSplit { off, cgroup, cfs }
    }

    /// A real-time thread kept off its CPU by the idle task or a task of
    /// lower priority: only RT throttling lets those run before it (as
    /// `noise` and a spike's explanation read it).
    fn rt_throttled(&self) -> bool {
        let Some(prio) = self.off.prio.filter(|&p| p < FAIR_PRIO) else { return false };
        self.off.by.as_ref().is_some_and(|(t, _)| t.is_idle() || t.prio > prio)
    }

    /// The task to blame for the time it was preempted, when one is:
    /// not the idle task, not under CFS or RT throttling.
    pub fn preemptor(&self) -> Option<&Task> {
        let by = self.off.by.as_ref().map(|(t, _)| t).filter(|t| !t.is_idle());
        by.filter(|_| self.off.preempted >= SMALL && self.cfs.is_none() && !self.rt_throttled())
    }

    /// The time off the CPU's kind (see [`OverrunCause::kind`]).
    fn kind(&self) -> &'static str {
        match () {
            _ if self.off.blocked > self.off.preempted => "blocked",
            _ if self.cfs.is_some() => "cfs_throttled",
            _ if self.rt_throttled() => "rt_throttled",
            _ => "preempted",
        }
    }

    /// "ran 0.6 ms, preempted 3.5 ms by hog:4242 (prio 19)", "ran 1.3 ms".
    pub fn text(&self) -> String {
        let o = &self.off;
        let mut s = format!("ran {}", o.ran);
        if o.preempted >= SMALL {
            let p = o.preempted;
            match (&self.cfs, self.preemptor()) {
                (Some(cg), _) => s.push_str(&format!(", CFS throttled {p} in {cg}")),
                (None, _) if self.rt_throttled() => s.push_str(&format!(
                    ", RT throttled {p} (runnable while a lower priority held its CPU: sched_rt_runtime_us)"
                )),
                (None, Some(t)) => {
                    s.push_str(&format!(", preempted {p} by {}", Culprit::Task(t.clone())));
                    if let Some(cg) = &self.cgroup {
                        s.push_str(&format!(" in {cg}"));
                    }
                }
                (None, None) => s.push_str(&format!(", runnable off the CPU {p}")),
            }
        }
        if o.blocked >= SMALL {
            s.push_str(&format!(", blocked {} (asleep in its own work: I/O, a lock, a page fault)", o.blocked));
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
        let split = |ran, preempted, blocked, by: Option<Task>, prio, cfs: Option<&CfsRun>| {
            let off = OffCpu {
                ran: Nanos(ran),
                preempted: Nanos(preempted),
                blocked: Nanos(blocked),
                by: by.map(|t| (t, Nanos(preempted))),
                prio: Some(prio),
            };
            ComputeSplit::new(off, Time(0), Time(ran + preempted + blocked), &cgroups, cfs)
        };
        let cause = |s: ComputeSplit| {
            let compute = s.off.ran + s.off.preempted + s.off.blocked;
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
        let preempted = cause(split(600_000, 3_000_000, 0, Some(task(9, 19)), 49, None));
        assert_eq!(preempted.kind(), "preempted");
        assert!(
            preempted.text().ends_with(": ran 600.0 µs, preempted 3.00 ms by hog:9 (prio 19)"),
            "{}",
            preempted.text()
        );
        let cfs = cause(split(600_000, 3_000_000, 0, Some(task(0, 120)), 120, Some(&throttled)));
        assert_eq!(cfs.kind(), "cfs_throttled");
        assert!(cfs.text().ends_with(": ran 600.0 µs, CFS throttled 3.00 ms in /box"), "{}", cfs.text());
        // The same samples do not make a real-time thread's idle CPU CFS's
        // doing; nor is a lower priority that ran instead a preemptor.
        let rt = cause(split(600_000, 3_000_000, 0, Some(task(0, 49)), 49, Some(&throttled)));
        assert_eq!(rt.kind(), "rt_throttled");
        let below = cause(split(600_000, 3_000_000, 0, Some(task(9, 120)), 49, None));
        assert_eq!(below.kind(), "rt_throttled");
        assert!(below.text().contains(", RT throttled 3.00 ms (runnable while"), "{}", below.text());
        let blocked = cause(split(300_000, 0, 2_000_000, None, 120, None));
        assert_eq!(blocked.kind(), "blocked");
        assert!(blocked.text().contains("blocked 2.00 ms (asleep in its own work"), "{}", blocked.text());
        // It ran longer than the interval by itself: its work, whatever else.
        let own = cause(split(1_200_000, 500_000, 0, Some(task(9, 19)), 49, None));
        assert_eq!(own.kind(), "compute");
    }
}

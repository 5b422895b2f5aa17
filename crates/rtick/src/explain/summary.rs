//! Across all spikes: each cause (its kind and what it blames) with how
//! many spikes it explains, their total and their worst latency, so that a
//! run of thousands of spikes says in a few lines what to fix; and the
//! bounded names a metric's labels may carry.

use std::collections::{HashMap, HashSet};

use super::{Cause, Culprit, Spike};
use crate::ktrace::kallsyms::describe;
use crate::time::Nanos;

impl Spike {
    /// The cause as the summary groups it: its kind and culprit, without
    /// the numbers of this one spike ("preempted by hog:4242", "kworker
    /// vmstat_update", "idle exit C6", "host"), a culprit task's cgroup
    /// after it ("preempted by hog:4242 in /kubepods/…": one task, one
    /// cgroup, so no cause is split by it).
    pub fn cause_key(&self) -> String {
        if let Some(f) = self.work {
            return format!("kworker {}", describe(f));
        }
        let task = |what: &str, t: &super::Task| match &self.cgroup {
            Some(c) => format!("{what} {}:{} in {c}", t.comm, t.pid),
            None => format!("{what} {}:{}", t.comm, t.pid),
        };
        match &self.cause {
            Cause::IdleExit { steal: Some(s), .. } if *s > Nanos::ZERO => "host".into(),
            Cause::HostWhile { .. } | Cause::HostIdle(_) | Cause::HostIdleAnyState(_) | Cause::HostInUser(_) => {
                "host".into()
            }
            Cause::IdleExit { state: Some(c), .. } => format!("idle exit {}", c.name),
            Cause::IdleExit { .. } => "idle exit".into(),
            Cause::IrqsOffIn(t) => task("interrupts off in", t),
            Cause::PreemptedBy(t) => task("preempted by", t),
            Cause::WaitedFor(t) => task("held up by", t),
            Cause::InterruptWork(c) => c.to_string(),
            Cause::Throttled => "RT throttling".into(),
            Cause::CfsThrottled => format!("CFS throttled in {}", self.cgroup.as_deref().unwrap_or("its cgroup")),
            Cause::KernelPath(p) => p.to_string(),
        }
    }

    /// What the cause blames as a metric's labels may name it: its kind
    /// (`task`, `kworker`, `irq`, `softirq`, `ipi`, `nmi`, `hrtimer`, or
    /// `none`) and a name without a pid (a task's comm, a work function,
    /// a handler, a vector), so that the values stay few.
    pub fn culprit_label(&self) -> (&'static str, String) {
        if let Some(f) = self.work {
            return ("kworker", describe(f));
        }
        match self.cause.culprit() {
            Some(Culprit::Task(t)) => ("task", t.comm),
            Some(Culprit::Irq { name, .. }) => ("irq", name),
            Some(Culprit::Softirq(n)) => ("softirq", n.to_string()),
            Some(Culprit::Ipi(i, Some(s))) if s.work != 0 => ("ipi", format!("{i} ({})", describe(s.work))),
            Some(Culprit::Ipi(i, _)) => ("ipi", i.to_string()),
            Some(Culprit::Nmi) => ("nmi", "nmi".into()),
            Some(Culprit::Hrtimer { function, .. }) => ("hrtimer", describe(function)),
            Some(Culprit::Idle) | None => ("none", String::new()),
        }
    }
}

/// One cause across the spikes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CauseTotal {
    /// [`Spike::cause_key`].
    pub cause: String,
    /// [`Cause::token`].
    pub kind: &'static str,
    /// Spikes it explains.
    pub count: u64,
    /// Their latencies, added.
    pub total: Nanos,
    /// The worst of them.
    pub worst: Nanos,
}

/// Each cause of `spikes`, most spikes first (then the larger total).
pub fn cause_summary<'a>(spikes: impl IntoIterator<Item = &'a Spike>) -> Vec<CauseTotal> {
    let mut by: HashMap<String, CauseTotal> = HashMap::new();
    for s in spikes {
        let late = s.wake.actual - s.wake.planned;
        let key = s.cause_key();
        let t = by.entry(key.clone()).or_insert(CauseTotal {
            cause: key,
            kind: s.cause.token(),
            count: 0,
            total: Nanos::ZERO,
            worst: Nanos::ZERO,
        });
        t.count += 1;
        t.total = t.total + late;
        t.worst = t.worst.max(late);
    }
    let mut out: Vec<CauseTotal> = by.into_values().collect();
    out.sort_by(|a, b| (b.count, b.total, &a.cause).cmp(&(a.count, a.total, &b.cause)));
    out
}

/// Names for a metric's label, bounded: the first `max` distinct names
/// keep their own value, any later one is `other` (a counter's labels
/// cannot be renamed once counted, so "the most frequent" cannot be kept).
#[derive(Clone, Debug)]
pub struct BoundedNames {
    max: usize,
    kept: HashSet<String>,
}

impl BoundedNames {
    /// Keeps at most `max` names.
    pub fn new(max: usize) -> BoundedNames {
        BoundedNames { max, kept: HashSet::new() }
    }

    /// Whether `label` is a name kept (not `other`).
    pub fn is_kept(&self, label: &str) -> bool {
        self.kept.contains(label)
    }

    /// `name` as the label says it.
    pub fn label(&mut self, name: String) -> String {
        if self.kept.contains(&name) {
            return name;
        }
        if self.kept.len() < self.max {
            self.kept.insert(name.clone());
            return name;
        }
        "other".into()
    }
}

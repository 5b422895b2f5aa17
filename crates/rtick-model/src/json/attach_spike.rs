//! A thread's worst timed waits in `rtick attach --json`, each explained
//! as `measure --explain` explains a spike.

use rtick::attach::WorstWait;
use rtick::explain::Culprit;
use serde::{Deserialize, Serialize};

/// One of a thread's worst timed waits, explained as `measure --explain`
/// explains a spike.
#[derive(Debug, Serialize, Deserialize)]
pub struct AttachSpikeJson {
    /// The time asked for (CLOCK_MONOTONIC ns).
    pub requested_ns: i64,
    pub lateness_ns: i64,
    pub slack_ns: i64,
    /// The slack the kernel took (min(expired, expires) − requested, ≥ 0).
    pub slack_taken_ns: i64,
    /// The CPU it was switched in on.
    pub cpu: u32,
    /// irq_delay (from requested + slack taken), wakeup_path, scheduling,
    /// return_to_user: with slack_taken_ns they add up to lateness_ns.
    pub phases_ns: [i64; 4],
    /// The largest phase (its name in phases_ns's order); null when not explained.
    pub largest_phase: Option<String>,
    /// The verdict, one sentence; null when not explained.
    pub cause: Option<String>,
    /// The kind of verdict: host, idle_exit, irqs_off, preempted, held_up,
    /// interrupt, rt_throttled, kernel_path.
    pub cause_kind: Option<String>,
    /// The task or interrupt work the verdict blames, when it names one.
    pub culprit: Option<CulpritJson>,
    /// The cgroup of the task blamed (its container or unit), unless the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Per phase, the top culprits (what ran, ns).
    pub culprits: Vec<Vec<(String, i64)>>,
    /// Why it has no explanation (its events left the window, or were lost).
    pub unexplained: Option<String>,
    /// The kernel stack where the wake-up was due, as a spike of `measure
    /// --explain` has it; empty when none was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// Why `stack` is empty, when rtick knows: the stack trigger was not
    /// set at its expiry (it is set from the first late wait on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_missing: Option<String>,
    /// The terminal line.
    pub line: String,
}

/// What a spike is blamed on: a task, an IRQ handler, a softirq or another hrtimer.
#[derive(Debug, Serialize, Deserialize)]
pub struct CulpritJson {
    /// "task", "irq", "softirq", "ipi", "nmi" or "hrtimer".
    pub kind: String,
    /// The task's comm, the IRQ handler's or softirq's name, the hrtimer's callback.
    pub name: String,
    /// A task's pid (thread id); an IRQ's number.
    pub pid: Option<i32>,
    /// A task's kernel priority (0–99 real-time, lower is more urgent).
    pub prio: Option<i32>,
}

impl CulpritJson {
    pub(super) fn of(c: &Culprit) -> CulpritJson {
        let (kind, pid, prio) = match c {
            Culprit::Task(t) => ("task", Some(t.pid), Some(t.prio)),
            Culprit::Irq { irq, .. } => ("irq", Some(*irq), None),
            Culprit::Softirq(_) => ("softirq", None, None),
            Culprit::Hrtimer { .. } => ("hrtimer", None, None),
            Culprit::Ipi(..) => ("ipi", None, None),
            Culprit::Nmi => ("nmi", None, None),
            Culprit::Idle => ("idle", None, None),
        };
        let name = match c {
            Culprit::Task(t) => t.comm.clone(),
            Culprit::Irq { name, .. } => name.clone(),
            Culprit::Softirq(n) => n.to_string(),
            other => other.to_string(),
        };
        CulpritJson { kind: kind.into(), name, pid, prio }
    }
}

impl AttachSpikeJson {
    /// The worst wait `w`; `started` (CLOCK_MONOTONIC) is when tracing began.
    pub fn of(w: &WorstWait, started: rtick::Time) -> AttachSpikeJson {
        let t = &w.wait;
        let label = AttachSpikeJson::label(t.requested, Some(started));
        let (spike, why) = match &w.explained {
            Ok(s) => (Some(s), None),
            Err(u) => (None, Some(u.reason().to_string())),
        };
        AttachSpikeJson {
            requested_ns: t.requested.0,
            lateness_ns: t.lateness.as_ns(),
            slack_ns: t.slack.as_ns(),
            slack_taken_ns: t.slack_taken.as_ns(),
            cpu: t.matched.cpu,
            phases_ns: t.phases.named().map(|(_, v)| v.as_ns()),
            largest_phase: spike.map(|s| s.largest_phase().to_string()),
            cause: spike.map(|s| s.cause.to_string()),
            cause_kind: spike.map(|s| s.cause.token().to_string()),
            culprit: spike.and_then(|s| s.cause.culprit()).map(|c| CulpritJson::of(&c)),
            cgroup: spike.and_then(|s| s.cgroup.as_deref()).map(str::to_string),
            culprits: spike.map_or_else(Vec::new, |s| {
                s.culprits.iter().map(|c| c.iter().take(3).map(|(w, d)| (w.to_string(), d.as_ns())).collect()).collect()
            }),
            stack: spike.and_then(|s| s.stack.as_deref()).map(rtick::ktrace::stack::named).unwrap_or_default(),
            stack_missing: w.stack_missing.map(str::to_string),
            line: match (spike, &why) {
                (Some(s), _) => s.line_as(&label),
                (None, why) => format!("{label}  {}: not explained: {}", t.lateness, why.as_deref().unwrap_or("")),
            },
            unexplained: why,
        }
    }
}

impl AttachSpikeJson {
    /// A wait named by the time it asked for, since tracing began
    /// (`requested +1.234567 s`), or on CLOCK_MONOTONIC when when tracing
    /// began is not known (`started`: None).
    pub fn label(requested: rtick::Time, started: Option<rtick::Time>) -> String {
        match started {
            Some(s) => format!("requested +{:.6} s", (requested - s).as_ns() as f64 / 1e9),
            None => format!("requested at {:.6} s (CLOCK_MONOTONIC)", requested.0 as f64 / 1e9),
        }
    }
}

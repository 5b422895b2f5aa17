//! The `explain` member of the run file (`measure --explain`): the kernel
//! phases of the wake-ups and the spikes explained.

use rtick::explain::Spike;
use serde::{Deserialize, Serialize};

use super::AbJson;

/// `explain` in the JSON run file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExplainJson {
    /// Kernel events recorded on the measured CPUs.
    pub events: u64,
    /// Events the ring buffer or the reader lost (0 unless the trace is incomplete).
    pub lost_events: u64,
    /// Trace events this kernel lacks.
    pub missing_events: Vec<String>,
    /// One per mechanism and thread.
    pub results: Vec<ExplainedJson>,
    /// Each cause across all the spikes listed, most spikes first (absent
    /// without spikes, and in files of rtick versions before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<CauseJson>,
    /// With --explain-ab: the traced stretches against the plain ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbJson>,
    /// Why the spikes have no kernel stack (`kernel.kptr_restrict`, a
    /// trigger refused), when they have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks_unavailable: Option<String>,
    /// The CFS bandwidth control of the measuring threads' cgroup and of its
    /// ancestors with a quota, with their throttling over the run (absent
    /// without bandwidth control).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cfs: Vec<CfsJson>,
}

/// One cgroup's CFS throttling over the run (`explain.cfs`), from its
/// `cpu.stat` (v1 `throttled_time`, v2 `throttled_usec`, both in ns here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CfsJson {
    /// The cgroup's path in its hierarchy.
    pub cgroup: String,
    /// Its quota per period, µs (absent: unlimited).
    pub quota_us: Option<i64>,
    /// Its enforcement period, µs (absent: unlimited).
    pub period_us: Option<i64>,
    /// The file its quota is set in.
    pub quota_file: String,
    /// Enforcement periods over the run.
    pub nr_periods: u64,
    /// Of them, those it was throttled in.
    pub nr_throttled: u64,
    /// Time its run queues were throttled over the run, added over its CPUs.
    pub throttled_ns: i64,
}

impl From<&rtick::cfs::Throttling> for CfsJson {
    fn from(t: &rtick::cfs::Throttling) -> Self {
        CfsJson {
            cgroup: t.path.to_string(),
            quota_us: t.quota.map(|q| q.runtime.as_ns() / 1000),
            period_us: t.quota.map(|q| q.period.as_ns() / 1000),
            quota_file: t.quota_file.clone(),
            nr_periods: t.delta.nr_periods,
            nr_throttled: t.delta.nr_throttled,
            throttled_ns: t.delta.throttled.as_ns(),
        }
    }
}

/// One cause across the spikes (`explain.causes`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CauseJson {
    /// Its kind and culprit: "preempted by hog:4242", "kworker vmstat_update", "idle exit", "host".
    pub cause: String,
    /// Its kind, as a spike's cause kind (`host`, `idle_exit`, `preempted` …).
    pub kind: String,
    /// Spikes it explains.
    pub count: u64,
    /// Their latencies, added.
    pub total_ns: i64,
    /// The worst of them.
    pub worst_ns: i64,
}

impl From<&rtick::explain::CauseTotal> for CauseJson {
    fn from(c: &rtick::explain::CauseTotal) -> Self {
        CauseJson {
            cause: c.cause.clone(),
            kind: c.kind.to_string(),
            count: c.count,
            total_ns: c.total.as_ns(),
            worst_ns: c.worst.as_ns(),
        }
    }
}

/// One mechanism and thread explained.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExplainedJson {
    pub mechanism: String,
    pub thread: usize,
    pub wakeups: usize,
    pub matched: usize,
    pub not_timer_woken: Option<String>,
    /// Reasons wake-ups could not be split, with counts.
    pub unmatched: Vec<(String, usize)>,
    /// irq_delay, wakeup_path, scheduling, return_to_user.
    pub phases_ns: Vec<KernelPhaseJson>,
    pub spikes: Vec<SpikeJson>,
}

/// One kernel phase's distribution (irq_delay, wakeup_path, scheduling, return_to_user).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelPhaseJson {
    pub phase: String,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

impl KernelPhaseJson {
    /// A phase's summary as the library gives it: its name and p50, p99, max.
    pub fn of(phase: &str, [p50, p99, max]: [rtick::Nanos; 3]) -> KernelPhaseJson {
        KernelPhaseJson { phase: phase.to_string(), p50: p50.as_ns(), p99: p99.as_ns(), max: max.as_ns() }
    }
}

/// One spike explained (in `explain.results[].spikes` of a run file, and
/// as `explain` of a spike at `rtick monitor`'s /spikes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpikeJson {
    pub cycle: u64,
    pub cpu: u32,
    pub latency_ns: i64,
    /// (phase, ns) in order.
    pub phases_ns: Vec<(String, i64)>,
    pub cause: String,
    /// The work function its culprit ran (a kworker's work item), named from /proc/kallsyms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// The cgroup of the task blamed (its container or unit), unless the
    /// root; with CFS throttling, the cgroup throttled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Per phase, the top culprits (what ran, ns).
    pub culprits: Vec<Vec<(String, i64)>>,
    /// The kernel stack where the wake-up was due, innermost first: the
    /// timer interrupt's frames, then those of the context it came in
    /// (none: it came in user space), named from /proc/kallsyms. Empty
    /// when none was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// The terminal line.
    pub line: String,
}

impl From<&Spike> for SpikeJson {
    fn from(s: &Spike) -> Self {
        SpikeJson {
            cycle: s.wake.cycle,
            cpu: s.matched.cpu,
            latency_ns: (s.wake.actual - s.wake.planned).as_ns(),
            phases_ns: s.phases.named().iter().map(|(n, d)| (n.to_string(), d.as_ns())).collect(),
            cause: s.cause.to_string(),
            work: s.work.map(rtick::ktrace::kallsyms::describe),
            cgroup: s.cgroup.as_deref().map(str::to_string),
            culprits: s
                .culprits
                .iter()
                .map(|c| c.iter().take(3).map(|(w, d)| (w.to_string(), d.as_ns())).collect())
                .collect(),
            stack: s.stack.as_deref().map(rtick::ktrace::stack::named).unwrap_or_default(),
            line: s.line(),
        }
    }
}

//! The JSON file of `rtick attach --json`: its own schema (docs/json.md,
//! "rtick attach"), built from the library's [`Attached`] by [`AttachFile::of`].

use rtick::attach::{Attached, End, Target, ThreadSummary};
use serde::{Deserialize, Serialize};

use super::{KernelPhaseJson, SystemJson, SCHEMA_VERSION};

/// The whole file.
#[derive(Debug, Serialize, Deserialize)]
pub struct AttachFile {
    pub rtick_version: String,
    pub schema_version: u32,
    /// "attach".
    pub command: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub elapsed_ns: i64,
    /// "duration", "interrupted" (Ctrl-C or SIGTERM) or "target_exited".
    pub ended_by: String,
    pub system: SystemJson,
    pub target: TargetJson,
    /// The CPUs traced: those the target's threads may run on.
    pub cpus: Vec<usize>,
    /// Kernel events recorded on them.
    pub events: u64,
    /// Events the ring buffer or the reader lost (0 unless the trace is incomplete).
    pub lost_events: u64,
    /// Trace events this kernel lacks.
    pub missing_events: Vec<String>,
    /// One per thread seen, in tid order.
    pub threads: Vec<AttachedThreadJson>,
    /// One line each, with its fix.
    pub findings: Vec<String>,
}

/// What was attached to.
#[derive(Debug, Serialize, Deserialize)]
pub struct TargetJson {
    pub pid: i32,
    pub comm: String,
    /// All its threads (false: only the --tid list).
    pub whole_process: bool,
}

/// One thread, its settings and its waits.
#[derive(Debug, Serialize, Deserialize)]
pub struct AttachedThreadJson {
    pub tid: i32,
    pub comm: String,
    /// SCHED_FIFO …; null for a policy rtick has no name for.
    pub policy: Option<String>,
    pub rt_priority: i32,
    pub nice: i32,
    pub affinity: Vec<usize>,
    pub timer_slack_ns: Option<u64>,
    pub timed_waits: u64,
    /// p50, p90, p99, max of the timed waits' lateness; null without any.
    pub lateness_ns: Option<[i64; 4]>,
    pub slack_p50_ns: Option<i64>,
    /// irq_delay, wakeup_path, scheduling, return_to_user (empty without timed waits).
    pub phases_ns: Vec<KernelPhaseJson>,
    pub event_driven: u64,
    /// p50 and max of their scheduling latency (waking → running).
    pub event_scheduling_ns: Option<[i64; 2]>,
    /// (waker, count), most frequent first: "irq", "softirq", or "comm/pid".
    pub wakers: Vec<(String, u64)>,
    /// Waits that returned without a recorded wake-up.
    pub unmatched: u64,
    /// Every timed wait, in time order.
    pub wake_ups: Vec<WakeUpJson>,
}

/// One timed wait.
#[derive(Debug, Serialize, Deserialize)]
pub struct WakeUpJson {
    /// The time asked for (CLOCK_MONOTONIC ns).
    pub requested_ns: i64,
    pub lateness_ns: i64,
    pub slack_ns: i64,
    /// irq_delay, wakeup_path, scheduling, return_to_user: they add up to lateness_ns.
    pub phases_ns: [i64; 4],
}

impl AttachFile {
    /// The file of the attach `a` to `target`.
    pub fn of(a: &Attached, target: &Target, system: SystemJson, started_at: String) -> AttachFile {
        AttachFile {
            rtick_version: env!("CARGO_PKG_VERSION").into(),
            schema_version: SCHEMA_VERSION,
            command: "attach".into(),
            started_at,
            elapsed_ns: a.elapsed.as_ns(),
            ended_by: match a.end {
                End::Duration => "duration",
                End::Interrupted => "interrupted",
                End::TargetExited => "target_exited",
            }
            .into(),
            system,
            target: TargetJson { pid: target.pid, comm: target.comm.clone(), whole_process: target.whole_process },
            cpus: a.cpus.clone(),
            events: a.events as u64,
            lost_events: a.lost.count(),
            missing_events: a.missing.iter().map(|m| m.to_string()).collect(),
            threads: a.threads.iter().map(|t| thread(t, a)).collect(),
            findings: rtick::attach::findings(&a.threads),
        }
    }
}

fn thread(s: &ThreadSummary, a: &Attached) -> AttachedThreadJson {
    let t = &s.thread;
    let ns = |v: &[rtick::Nanos]| v.iter().map(|n| n.as_ns()).collect::<Vec<_>>();
    let phases = s.phases.iter().flatten();
    AttachedThreadJson {
        tid: t.tid,
        comm: t.comm.clone(),
        policy: t.policy.map(|p| p.kernel_name().into()),
        rt_priority: t.rt_priority,
        nice: t.nice,
        affinity: t.affinity.clone(),
        timer_slack_ns: t.timer_slack_ns,
        timed_waits: s.timed,
        lateness_ns: s.lateness.map(|l| ns(&l).try_into().expect("four")),
        slack_p50_ns: s.slack_p50.map(|n| n.as_ns()),
        phases_ns: phases.map(|(name, summary)| KernelPhaseJson::of(name, *summary)).collect(),
        event_driven: s.event_driven,
        event_scheduling_ns: s.event_scheduling.map(|l| [l[0].as_ns(), l[1].as_ns()]),
        wakers: s.wakers.iter().map(|(w, n)| (w.to_string(), *n)).collect(),
        unmatched: s.unmatched,
        wake_ups: a.waits.get(&t.tid).map_or_else(Vec::new, |w| {
            w.timed
                .iter()
                .map(|w| WakeUpJson {
                    requested_ns: w.requested.0,
                    lateness_ns: w.lateness.as_ns(),
                    slack_ns: w.slack.as_ns(),
                    phases_ns: w.phases.named().map(|(_, v)| v.as_ns()),
                })
                .collect()
        }),
    }
}

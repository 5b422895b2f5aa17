//! The JSON file of `rtick noise --json`: its own schema (docs/json.md,
//! "rtick noise"), built from the library's [`NoiseRun`] by [`NoiseFile::of`].

use rtick::noise::spin::LoopClock;
use rtick::noise::{CpuNoise, End, NoiseRun, Plan, SentBy, Source, Tally};
use serde::{Deserialize, Serialize};

use super::{SystemJson, SCHEMA_VERSION};

/// The whole file.
#[derive(Debug, Serialize, Deserialize)]
pub struct NoiseFile {
    pub rtick_version: String,
    pub schema_version: u32,
    /// "noise".
    pub command: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// When the run began (CLOCK_MONOTONIC ns): a gap's start_ns less this
    /// is its time since the start (0 in files written before it was recorded).
    #[serde(default)]
    pub started_ns: i64,
    /// "duration", "interrupted" (Ctrl-C or SIGTERM) or "target_exited" (the thread of --attach).
    pub ended_by: String,
    pub system: SystemJson,
    /// A step of the loop longer than this is a gap.
    pub threshold_ns: i64,
    /// The spinners' policy: "SCHED_OTHER" or "SCHED_FIFO".
    pub policy: String,
    /// Their priority (0 for SCHED_OTHER).
    pub priority: i32,
    /// Whether gaps were attributed from trace events (false: --no-attribution).
    pub attribution: bool,
    /// Trace events this kernel lacks.
    pub missing_events: Vec<String>,
    /// What limited the run, a sentence each.
    pub notes: Vec<String>,
    /// One per measured CPU, in order.
    pub cpus: Vec<NoiseCpuJson>,
    /// With --attach: the thread followed (null: rtick's spinners).
    #[serde(default)]
    pub attached: Option<NoiseAttachedJson>,
    /// The clock the spinners' loop read (null with --attach: no loop of rtick's).
    #[serde(default)]
    pub loop_clock: Option<LoopClockJson>,
    /// With --fail-if: its conditions checked against every CPU, and the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<NoiseGatesJson>,
}

/// The clock of the spinning loop.
#[derive(Debug, Serialize, Deserialize)]
pub struct LoopClockJson {
    /// "tsc" (rdtsc, calibrated against CLOCK_MONOTONIC) or "vdso" (CLOCK_MONOTONIC through the vDSO).
    pub clock: String,
    /// As the header says it: the TSC's rate and error, or why not the TSC.
    pub description: String,
}

impl LoopClockJson {
    /// This process's loop clock.
    pub fn get() -> LoopClockJson {
        let c = LoopClock::get();
        let clock = match c {
            LoopClock::Tsc(_) => "tsc",
            LoopClock::Vdso(_) => "vdso",
        };
        LoopClockJson { clock: clock.into(), description: c.describe() }
    }
}

/// The thread `--attach` followed.
#[derive(Debug, Serialize, Deserialize)]
pub struct NoiseAttachedJson {
    pub tid: i32,
    /// Its process.
    pub pid: i32,
    pub comm: String,
    /// "SCHED_FIFO 80", "SCHED_OTHER nice 0".
    pub policy: String,
    /// The CPUs it may run on: those traced.
    pub cpus: Vec<usize>,
}

/// One CPU.
#[derive(Debug, Serialize, Deserialize)]
pub struct NoiseCpuJson {
    pub cpu: usize,
    /// The spinner's thread id.
    pub tid: i32,
    pub runtime_ns: i64,
    /// The sum of the gaps.
    pub noise_ns: i64,
    /// (runtime − noise) ÷ runtime, percent.
    pub available_percent: f64,
    pub gaps: u64,
    pub max_gap_ns: i64,
    pub gap_p50_ns: i64,
    pub gap_p99_ns: i64,
    pub iterations: u64,
    /// The loop's shortest and median step.
    pub resolution_min_ns: i64,
    pub resolution_median_ns: i64,
    /// Most time first; they add up to noise_ns less the unattributed gaps.
    pub sources: Vec<NoiseSourceJson>,
    /// Kernel work between gaps (it delayed the spinner by less than the threshold).
    pub below_threshold: NoiseSourceJson,
    /// Gaps left unattributed (memory bounds).
    pub unattributed_gaps: u64,
    /// Pieces of kernel work from the trace dropped past the memory bound
    /// (gaps around them may be attributed short); apart from the gaps
    /// left unattributed.
    #[serde(default)]
    pub dropped_instances: u64,
    pub lost_events: u64,
    /// The host's steal time of this CPU over the run (/proc/stat, 10 ms ticks); null when unread.
    pub steal_ns: Option<i64>,
    /// The largest gaps, longest first, with their sources.
    pub largest_gaps: Vec<NoiseGapJson>,
    /// Whether the CPU is nohz_full (its tick may stop).
    #[serde(default)]
    pub nohz_full: bool,
    /// On nohz_full CPUs: whether the tick stopped, and what kept it (null elsewhere).
    #[serde(default)]
    pub tick: Option<NoiseTickJson>,
}

/// The tick of a nohz_full CPU (`timer:tick_stop`).
#[derive(Debug, Serialize, Deserialize)]
pub struct NoiseTickJson {
    /// Times it stopped.
    pub stopped: u64,
    /// Times it could not.
    pub kept: u64,
    /// What kept it: `[kernel name (POSIX_TIMER, PERF_EVENTS, SCHED, CLOCK_UNSTABLE, RCU, RCU_EXP), count]`, most first.
    pub reasons: Vec<(String, u64)>,
}

/// One source, or one tally.
#[derive(Debug, Serialize, Deserialize)]
pub struct NoiseSourceJson {
    /// irq, vector, softirq, nmi, thread, rt_throttling, cfs_throttling, hardware_or_host, around_events; "" for a tally.
    pub kind: String,
    /// As printed: "irq 11 virtio0", "thread kworker/1:1 (pid 55, prio 120)" …
    pub name: String,
    pub count: u64,
    pub total_ns: i64,
    pub max_ns: i64,
    /// The time of what nested in them, counted apart (the interrupts inside
    /// a thread's run): total_ns + nested_ns is the time they held the CPU.
    pub nested_ns: i64,
    /// A thread's cgroup (its container or unit), unless the root or unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// A thread's kernel stack when its longest run gave the CPU back to
    /// the spinner, innermost first, named from /proc/kallsyms as a spike's
    /// `stack` is. Empty when none was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// An IPI source's most frequent sender, when the trace named its senders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_sender: Option<NoiseSenderJson>,
}

/// Who sent the most of an IPI source's IPIs.
#[derive(Debug, Serialize, Deserialize)]
pub struct NoiseSenderJson {
    /// As printed: "(flush_tlb_func) from CPU 0 task mprotect:4242".
    pub name: String,
    /// The sender's CPU.
    pub cpu: usize,
    /// Its task's thread id (0: idle, or an interrupt on an idle CPU).
    pub pid: i32,
    /// Its task's name (null: gone before it was read).
    pub comm: Option<String>,
    /// The function a call-function IPI ran (`csd:csd_queue_cpu`); null for a reschedule.
    pub function: Option<String>,
    /// The source's IPIs it sent.
    pub count: u64,
    /// The source's IPIs whose sender was named, all senders together.
    pub named: u64,
}

/// One gap and its sources.
#[derive(Debug, Serialize, Deserialize)]
pub struct NoiseGapJson {
    /// CLOCK_MONOTONIC.
    pub start_ns: i64,
    pub length_ns: i64,
    /// (source as printed, its time in the gap), most first.
    pub sources: Vec<(String, i64)>,
}

impl NoiseFile {
    /// The file of the run `r` of `plan`, begun at `started` (CLOCK_MONOTONIC).
    pub fn of(
        r: &NoiseRun,
        plan: &Plan,
        system: SystemJson,
        (started_at, started): (String, rtick::Time),
    ) -> NoiseFile {
        NoiseFile {
            rtick_version: env!("CARGO_PKG_VERSION").into(),
            schema_version: SCHEMA_VERSION,
            command: "noise".into(),
            started_at,
            started_ns: started.0,
            ended_by: match r.end {
                End::Duration => "duration",
                End::Interrupted => "interrupted",
                End::Exited => "target_exited",
            }
            .into(),
            system,
            threshold_ns: r.threshold.as_ns(),
            policy: plan.policy.kernel_name().into(),
            priority: plan.priority,
            attribution: r.attribution,
            missing_events: r.missing.iter().map(|m| m.to_string()).collect(),
            notes: r.notes.clone(),
            cpus: r.cpus.iter().map(cpu).collect(),
            attached: r.attached.as_ref().map(|t| NoiseAttachedJson {
                tid: t.tid,
                pid: t.tgid,
                comm: t.comm.clone(),
                policy: t.policy_text(),
                cpus: plan.cpus.clone(),
            }),
            loop_clock: r.attached.is_none().then(LoopClockJson::get),
            gates: None,
        }
    }
}

fn source(kind: &str, name: String, t: &Tally) -> NoiseSourceJson {
    NoiseSourceJson {
        kind: kind.into(),
        name,
        count: t.count,
        total_ns: t.total.as_ns(),
        max_ns: t.max.as_ns(),
        nested_ns: t.nested.as_ns(),
        cgroup: None,
        top_sender: None,
        stack: Vec::new(),
    }
}

fn top_sender(by: &SentBy) -> Option<NoiseSenderJson> {
    let (s, count) = by.top()?;
    Some(NoiseSenderJson {
        name: s.describe(),
        cpu: s.cpu,
        pid: s.pid,
        comm: s.comm.map(|c| c.to_string()),
        function: (s.work != 0).then(|| rtick::ktrace::kallsyms::describe(s.work)),
        count,
        named: by.named(),
    })
}

fn cpu(c: &CpuNoise) -> NoiseCpuJson {
    let named = |(s, t): &(Source, Tally)| NoiseSourceJson {
        cgroup: c.cgroups.get(s).map(|p| p.to_string()),
        top_sender: c.senders.get(s).and_then(top_sender),
        stack: c.stacks.get(s).map(|f| rtick::ktrace::stack::named(f)).unwrap_or_default(),
        ..source(s.kind(), s.to_string(), t)
    };
    NoiseCpuJson {
        cpu: c.cpu,
        tid: c.tid,
        runtime_ns: c.runtime.as_ns(),
        noise_ns: c.noise.as_ns(),
        available_percent: c.available_percent(),
        gaps: c.gaps,
        max_gap_ns: c.max_gap.as_ns(),
        gap_p50_ns: c.gap_p50_p99.0.as_ns(),
        gap_p99_ns: c.gap_p50_p99.1.as_ns(),
        iterations: c.iterations,
        resolution_min_ns: c.resolution.0.as_ns(),
        resolution_median_ns: c.resolution.1.as_ns(),
        sources: c.sources.iter().map(named).collect(),
        below_threshold: source("", "below the threshold".into(), &c.below_threshold),
        unattributed_gaps: c.unattributed,
        dropped_instances: c.dropped_instances,
        lost_events: c.lost_events,
        steal_ns: c.steal.map(|s| s.as_ns()),
        largest_gaps: c
            .worst
            .iter()
            .map(|w| NoiseGapJson {
                start_ns: w.gap.start.as_ns(),
                length_ns: w.gap.len().as_ns(),
                sources: w.sources.iter().map(|(s, d)| (s.to_string(), d.as_ns())).collect(),
            })
            .collect(),
        nohz_full: c.nohz_full,
        tick: c.nohz_full.then(|| NoiseTickJson {
            stopped: c.tick.stopped,
            kept: c.tick.kept,
            reasons: c.tick.reasons.iter().map(|r| (r.0.clone(), r.2)).collect(),
        }),
    }
}

/// The `gates` object of a noise run file: the verdict as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseGatesJson {
    /// Each condition as given.
    pub conditions: Vec<String>,
    pub violations: Vec<NoiseViolationJson>,
    /// Conditions on sources a run without attribution cannot check: they fail.
    pub unchecked: Vec<String>,
    /// The run was stopped early (Ctrl-C, SIGTERM): it does not pass.
    pub interrupted: bool,
    pub passed: bool,
}

/// One condition that held on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseViolationJson {
    pub condition: String,
    pub cpu: usize,
    /// What was compared: "max", "noise", "longest local_timer" …
    pub what: String,
    pub value: f64,
    pub op: String,
    pub limit: f64,
    /// "ns", "%" or "count".
    pub unit: String,
}

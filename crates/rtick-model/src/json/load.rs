//! The `load`, `phases` and `phase_ratios` members of the run file: what ran
//! beside the measurement, and the load phases of a --phases run.

use serde::{Deserialize, Serialize};

/// The `load` object: the loads that ran beside the measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadJson {
    /// The CPUs the load threads were confined to (--load-cpus; default every allowed CPU).
    pub cpus: Vec<usize>,
    /// Whether they include a CPU a measuring thread ran on (always, for unpinned threads).
    pub shares_measured_cpus: bool,
    /// The built-in loads (--load), in the order given.
    pub kinds: Vec<LoadKindJson>,
    /// The command (--load-cmd); null without.
    pub command: Option<LoadCommandJson>,
    /// How long the built-in loads ran (ns); 0 when they never started (a run stopped before).
    pub ran_ns: i64,
    /// Per CPU: the share of its time busy while the loads ran (/proc/stat).
    pub cpu_busy: Vec<CpuBusyJson>,
}

/// One built-in load kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadKindJson {
    /// `cpu`, `memory`, `io`, `net`, `sched` or `timers`.
    pub kind: String,
    pub workers: usize,
    /// Threads in all (a net or sched worker has two).
    pub threads: usize,
    /// What `work` counts: iterations, bytes copied, bytes written and synced, bytes received, messages, wake-ups.
    pub unit: String,
    /// Units of work done while the load ran.
    pub work: u64,
    /// `work` per second the loads ran, from all ready to the stop (`ran_ns`
    /// also spans getting ready and the command's end): 0 is a load that did nothing.
    pub rate_per_s: f64,
    /// CPU time of its threads (getrusage RUSAGE_THREAD), ns.
    pub cpu_time_ns: i64,
    /// How it works here (buffer size and cache, file directory, message size …).
    pub detail: String,
    /// The first error of a worker, which then stopped; null: none.
    pub error: Option<String>,
}

/// The --load-cmd command and how it ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadCommandJson {
    /// As given; run with `sh -c` in a process group of its own.
    pub command: String,
    /// The process id of `sh` (the group's id); null when it did not start.
    pub pid: Option<u32>,
    /// The cgroup it ran in, ended with it; null: none could be made (no writable cgroup v2 hierarchy), it ran in its process group only.
    #[serde(default)]
    pub cgroup: Option<String>,
    /// How long it was up to the stop (ns).
    pub ran_ns: i64,
    /// It exited by itself this long after its start (ns), before the end of the run: the load stopped then. Null: it ran to the end.
    pub exited_early_after_ns: Option<i64>,
    /// What rtick sent its group at the end: [], ["SIGTERM"], or ["SIGTERM", "SIGKILL"] when it outlived the grace period.
    pub stopped_with: Vec<String>,
    /// Its exit code, when it exited; null when ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended it; null when it exited.
    pub exit_signal: Option<i32>,
}

/// A CPU's busy share over a stretch of time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuBusyJson {
    pub cpu: usize,
    /// 100 − idle (with I/O wait) in percent, from /proc/stat (10 ms ticks).
    pub busy_percent: f64,
    /// The I/O wait within the idle share, in percent: an `io` load's
    /// waiting shows here, not in `busy_percent`.
    #[serde(default)]
    pub iowait_percent: f64,
}

/// One phase of a --phases run (the load phases: `idle`, `loaded`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadPhaseJson {
    /// `idle` or `loaded`.
    pub name: String,
    /// Per mechanism (null: bounded by --loops only).
    pub duration_ns: Option<i64>,
    pub loops: Option<u64>,
    /// Wall time the phase took; 0 when it did not run (stopped before).
    pub elapsed_ns: i64,
    /// Stopped by Ctrl-C or SIGTERM (or a breaktrace) during this phase.
    pub interrupted: bool,
    /// Per CPU: its busy share during the phase.
    pub cpu_busy: Vec<CpuBusyJson>,
}

/// loaded ÷ idle of one mechanism on one thread; null where idle is 0 or a side is missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRatioJson {
    pub mechanism: String,
    pub thread: usize,
    #[serde(rename = "50")]
    pub p50: Option<f64>,
    #[serde(rename = "90")]
    pub p90: Option<f64>,
    #[serde(rename = "99")]
    pub p99: Option<f64>,
    #[serde(rename = "99.9")]
    pub p99_9: Option<f64>,
    #[serde(rename = "99.99")]
    pub p99_99: Option<f64>,
    pub max: Option<f64>,
}

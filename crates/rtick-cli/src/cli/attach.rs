//! The options of `rtick attach`.

use std::path::PathBuf;

use clap::{ArgGroup, Args};
use rtick::Nanos;

use crate::units;

/// Options of `rtick attach`: the target is a PID, --tid or --comm.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["pid", "tid", "comm"])))]
pub struct AttachArgs {
    /// The process to attach to: all its threads, including those it creates later.
    #[arg(value_name = "PID")]
    pub pid: Option<i32>,

    /// Only these threads (comma-separated thread ids).
    #[arg(long, value_name = "TID[,TID…]", value_delimiter = ',')]
    pub tid: Option<Vec<i32>>,

    /// The one process of this name (/proc/PID/comm); several of that name are an error listing their pids.
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,

    /// Trace this long [plain number: s; or 500ms, 2m …]. Default: until Ctrl-C or the target exits (memory stays flat: the trace is read as it runs).
    #[arg(short = 'D', long, value_name = "TIME", allow_hyphen_values = true, value_parser = units::duration)]
    pub duration: Option<Nanos>,

    /// Explain each thread's N worst timed waits (their culprits, as measure --explain names a spike's, and the kernel stack where each was due: taken only while waits run late, from a new worst once N are kept to 10 s after the last); 0: none.
    #[arg(long, value_name = "N", default_value = "5", allow_hyphen_values = true)]
    pub explain_top: usize,

    /// Write every wait as CSV, a row as it ends: tid,kind,requested_ns,exit_ns,lateness_ns,slack_ns,slack_taken_ns, the four phases (…_ns; slack taken + phases = lateness), woken_ns,waker, armed_ns,blocked_ns,overrun_ns (kind timed or event).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Fail (exit 3) when a condition holds for any thread's lateness, e.g. 'p99>500us,max>2ms': the figures of measure --fail-if (p50 p90 p99 p99.9 p99.99 p99.999 max min mean stddev; plain numbers µs; overruns: its cycle's waits armed after their own request; margin: the least time its cycle left before a deadline, e.g. 'margin<100us'; missed and cpu have no value here). Checked after the outputs are written; a run stopped by Ctrl-C before its -D does not pass.
    #[arg(long, value_name = "EXPR", value_parser = rtick_model::gates::parse)]
    pub fail_if: Option<rtick_model::gates::Gates>,

    /// Write the results as JSON (schema: docs/json.md, "rtick attach"); `-` for standard output.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Draw each thread's lateness over time (phases stacked, worst waits marked) and its phases' p50/p99/max (.png or .svg).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    /// The tracefs directory to trace in [default: where tracefs is mounted, else /sys/kernel/tracing].
    #[arg(long, value_name = "DIR", env = "RTICK_TRACEFS")]
    pub tracefs: Option<PathBuf>,

    /// Print only the per-thread table and the findings, not the header.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `rtick monitor`'s other program: a PID, --tid or --comm, at most one,
/// none with the measuring loop's options or --noise.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("attach_target").multiple(false).args(["attach", "tid", "comm"]).conflicts_with_all(MONITOR_LOOP)))]
pub struct MonitorTarget {
    /// Instead of the measuring loop, follow this running program's threads (all of them, later ones too), as rtick attach does, continuously: each thread's timed waits (lateness histogram, counts, overruns, slack) and event-driven wake-ups at /metrics, labelled thread="TID COMM"; with --spike its late waits explained at /spikes, always (--explain is the loop's) (docs/monitor.md). Ends with Ctrl-C, SIGTERM, -D or the program's exit.
    #[arg(long, value_name = "PID")]
    pub attach: Option<i32>,

    /// As --attach, only these threads (comma-separated thread ids).
    #[arg(long, value_name = "TID[,TID…]", value_delimiter = ',')]
    pub tid: Option<Vec<i32>>,

    /// As --attach, the one process of this name (/proc/PID/comm).
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
}

/// The options of `rtick monitor` that shape its own loop (or --noise's
/// spinners): they make no sense with another program's threads; and
/// --explain, which --attach does whenever --spike is given.
const MONITOR_LOOP: [&str; 16] = [
    "mechanisms",
    "interval",
    "threads",
    "affinity",
    "smp",
    "priority",
    "policy",
    "clock",
    "mlock",
    "no_mlock",
    "dma_latency",
    "timer_slack",
    "overrun",
    "hybrid_slack",
    "noise",
    "explain",
];

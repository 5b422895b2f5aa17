//! The options of `rtick noise`.

use std::path::PathBuf;

use clap::Args;
use rtick::Nanos;

use crate::units;

/// Options of `rtick noise`.
#[derive(Debug, Args)]
pub struct NoiseArgs {
    /// The CPUs to measure, a spinner on each (e.g. 1-3) [default: every allowed CPU but CPU 0, when there are two or more].
    #[arg(short, long, value_name = "CPUSET")]
    pub affinity: Option<String>,

    /// Measure this long [plain number: s; or 500ms, 2m …]. Default: until Ctrl-C.
    #[arg(short = 'D', long, value_name = "TIME", allow_hyphen_values = true, value_parser = units::duration)]
    pub duration: Option<Nanos>,

    /// A step of the spinning loop longer than this is a gap: noise [plain number: µs; or 500ns …].
    #[arg(long, value_name = "TIME", default_value = "1", allow_hyphen_values = true, value_parser = units::micros)]
    pub threshold: Nanos,

    /// Spin as SCHED_FIFO at this priority (1-99) [default: SCHED_OTHER].
    #[arg(short, long, value_name = "PRIO", allow_hyphen_values = true)]
    pub priority: Option<i32>,

    /// Write the results as JSON (schema: docs/json.md, "rtick noise"); `-` for standard output.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Print only the tables, not the header.
    #[arg(short, long)]
    pub quiet: bool,

    /// The tracefs directory to trace in [default: where tracefs is mounted, else /sys/kernel/tracing].
    #[arg(long, value_name = "DIR", env = "RTICK_TRACEFS")]
    pub tracefs: Option<PathBuf>,

    /// Count the gaps only: no tracing, no sources (and no tracing's own cost).
    #[arg(long)]
    pub no_attribution: bool,

    /// Follow this thread of an application (its thread id) instead of spinning: its noise from the trace events of the CPUs it may run on.
    #[arg(long, value_name = "TID", conflicts_with_all = ["affinity", "priority", "no_attribution"])]
    pub attach: Option<i32>,
}

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

    // Outputs: --trace, --histogram, --plot, --fail-if.
    /// Write a row per gap as CSV, as the run goes: cpu, start_ns (CLOCK_MONOTONIC), duration_ns, main_source, sources (`name=ns;name=ns`, most first; empty with --no-attribution).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Write every step of the spinning loop as a histogram in oslat's format: per CPU, counts in 1 µs buckets, the last including the longer steps.
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// The number of --histogram buckets (oslat's -b) [4-1024].
    #[arg(long, value_name = "N", default_value = "32", requires = "histogram", value_parser = clap::value_parser!(u16).range(4..=1024))]
    pub histogram_buckets: u16,

    /// Draw the gaps (.png or .svg): per CPU, each gap over time coloured by the source that took most of it, and each source's share of the noise.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    /// Fail (exit 3) when a condition holds for any CPU, e.g. 'max>20us,noise>0.1%,source:local_timer>50us'. Figures: max p50 p99 (times; plain numbers µs), noise (a time, or % of the runtime), available (%), gaps (a count), source:NAME (every source whose name begins with NAME, case and spaces aside: against a time its longest, against a % its share of the runtime); operators > >= < <= == !=. An interrupted run does not pass.
    #[arg(long, value_name = "EXPR", value_parser = rtick_model::noise_gates::parse)]
    pub fail_if: Option<rtick_model::noise_gates::NoiseGates>,

    /// Follow this thread of an application (its thread id) instead of spinning: its noise from the trace events of the CPUs it may run on (--trace, --plot and --fail-if take its gaps; --histogram, of the spinning loop's steps, does not go with it).
    #[arg(long, value_name = "TID", conflicts_with_all = ["affinity", "priority", "no_attribution"])]
    pub attach: Option<i32>,
}

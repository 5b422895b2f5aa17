//! The command line (clap).

use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use rtick::clock_survey::CostSpec;
use rtick::rt::Policy;
use rtick::wait::HybridSlack;
use rtick::{ClockId, Nanos, OverrunPolicy};

use crate::units;

mod attach;
mod maintenance;
mod noise;
pub use attach::{AttachArgs, MonitorTarget};
pub use maintenance::{AssetsArgs, CleanupArgs};
pub use noise::NoiseArgs;

/// Precise periodic timing on Linux: measure the wake-up latency of every
/// timer mechanism, side by side.
#[derive(Debug, Parser)]
#[command(
    name = "rtick",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_help = "Output files appear only when complete. `-` as an output file is standard output; the report for people then goes to standard error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure timer wake-up latency (like cyclictest, for more mechanisms).
    Measure(Box<MeasureArgs>),
    /// Is this machine ready for precise timing? Findings with evidence and the exact fix.
    Audit(AuditArgs),
    /// What reading each clock costs, its resolution, and the TSC's consistency across CPUs.
    Clocks(ClocksArgs),
    /// Systematic error of periodic timers: ticks counted against elapsed time.
    Drift(DriftArgs),
    /// Tables, comparisons and plots of saved runs: rtick --json/--trace, cyclictest --json and -h histograms.
    Report(ReportArgs),
    /// List the wait mechanisms rtick can measure.
    Mechanisms,
    /// How late an unmodified running program's timed waits return: its threads' lateness in kernel phases, timer slack, event-driven wake-ups.
    Attach(AttachArgs),
    /// OS noise for busy-polling threads: a spinner per CPU, its gaps, and each gap's sources (IRQs, softirqs, threads, RT throttling, the host).
    Noise(NoiseArgs),
    /// Measure continuously and serve the figures to Prometheus (/metrics) and the latest spikes (/spikes).
    Monitor(Box<MonitorArgs>),
    /// Remove what rtick processes killed with SIGKILL left: tracefs instances still tracing, cgroups with their --load-cmd still running, temporary output files.
    Cleanup(CleanupArgs),
    /// Write the man pages and shell completions into DIR (for packaging: scripts/package).
    #[command(hide = true)]
    GenerateAssets(AssetsArgs),
}

/// Options of `rtick report`. The kind of each file is detected from its content.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// rtick measure --json, --trace or --histogram files, cyclictest --json files or -h histograms; or rtick attach or noise --json files (of one kind at a time).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Print the distribution in buckets of this width (a table: bucket, count, rate) [plain number: µs].
    #[arg(long, value_name = "WIDTH", allow_hyphen_values = true, value_parser = units::micros)]
    pub buckets: Option<Nanos>,

    /// Write the results as JSON, in the schema of rtick measure --json.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Draw a plot (.png or .svg).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    /// With --plot: what to draw [default: what the inputs support best].
    #[arg(long, value_name = "KIND", value_enum, requires = "plot")]
    pub plot_kind: Option<crate::plot::PlotKind>,

    /// Write the HdrHistogram interval log format.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,

    /// cyclictest histograms have ns buckets (it was run with -N).
    #[arg(long)]
    pub hist_ns: bool,

    /// Show latencies in nanoseconds.
    #[arg(short = 'N', long)]
    pub nsecs: bool,

    /// Compare each mechanism and thread with this run (rtick measure --json) and exit 3 when a metric grew by more than --max-regress; needs exactly one FILE.
    #[arg(long, value_name = "OLD.json")]
    pub baseline: Option<PathBuf>,

    /// With --baseline: the growth allowed before failing [default: 10%].
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true, value_parser = rtick_model::baseline::percent)]
    pub max_regress: Option<f64>,

    /// With --baseline: the percentiles compared, comma-separated [default: p99,p99.9].
    #[arg(long, value_name = "METRIC[,METRIC…]", value_delimiter = ',', value_parser = rtick_model::baseline::metric)]
    pub metrics: Option<Vec<usize>>,

    /// rtick attach or noise files: check them against these conditions as the command's own --fail-if does (its figures: rtick attach --help, rtick noise --help) and exit 3 when one holds for any thread or CPU, or a run was cut short.
    #[arg(long, value_name = "EXPR")]
    pub fail_if: Option<String>,
}

/// A clap value parser for a count in `min..=max`: a value beyond is clap's
/// one-line error naming the option and the range, as the help states it.
fn count(min: usize, max: usize) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    units::whole_within(min as u64, max as u64)
}

/// Options of `rtick clocks`.
#[derive(Debug, Args)]
pub struct ClocksArgs {
    /// Write the figures as JSON (schema in docs/json.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Batches timed per clock (the median and p99 are over batches) [2 to 1000000; batches × reads at most 100000000].
    #[arg(long, value_name = "N", default_value = "200", value_parser = count(2, CostSpec::MAX_BATCHES))]
    pub batches: usize,

    /// Reads per batch [1 to 1000000].
    #[arg(long, value_name = "N", default_value = "1000", value_parser = count(1, CostSpec::MAX_READS))]
    pub reads: usize,

    /// Timestamp exchanges per CPU pair in the cross-CPU test [1 to 10000000].
    #[arg(long, value_name = "N", default_value = "20000", value_parser = count(1, rtick::clock_survey::MAX_ROUNDS))]
    pub rounds: usize,
}

/// Options of `rtick drift`. Plain numbers are µs for periods and seconds for the duration.
#[derive(Debug, Args)]
pub struct DriftArgs {
    /// Periodic mechanisms, comma-separated: itimer-real, itimer-virtual, itimer-prof, timerfd, posix-timer, relative-loop, absolute-loop [default: all].
    #[arg(short = 'm', long = "mechanism", value_name = "NAME[,NAME…]", value_delimiter = ',')]
    pub mechanisms: Option<Vec<String>>,

    /// Periods, comma-separated, each from 10 µs to the duration [default: 10000,9998,1000,100 µs].
    #[arg(long = "period", value_name = "TIME[,TIME…]", value_delimiter = ',', allow_hyphen_values = true, value_parser = units::micros)]
    pub periods: Option<Vec<Nanos>>,

    /// Counting time per case [plain number: s].
    #[arg(short = 'D', long, value_name = "TIME", default_value = "1", allow_hyphen_values = true, value_parser = units::duration)]
    pub duration: Nanos,

    /// Simulated work per cycle of relative-loop and absolute-loop [plain number: µs].
    #[arg(long, value_name = "TIME", default_value = "50", allow_hyphen_values = true, value_parser = units::micros)]
    pub work: Nanos,

    /// Write the results as JSON: {rtick_version, hz, results: [...]}.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Options of `rtick audit`. Exit status: 0 when nothing fails, 3 when a finding fails.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Write the findings as JSON: {rtick_version, verdict, findings: [{id, area, status, title, evidence, impact, remedy}]}.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Read every file under DIR instead of / (DIR/proc, DIR/sys, …); commands are not run.
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,

    /// Show evidence, impact and remedy of every finding, not only warnings and failures.
    #[arg(short, long)]
    pub verbose: bool,
}

/// Options of `rtick measure`. Plain numbers are microseconds (seconds for
/// --duration), as in cyclictest; units are accepted: 500us, 1ms, 20kHz, 10s, 2m.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// The measuring loop: mechanisms, interval, threads and CPUs, policy, memory, timers.
    #[command(flatten)]
    pub looping: LoopArgs,

    /// Compare mechanisms fairly: interleave them in slices (A B C … A B C …), rank them, and recommend one.
    #[arg(long)]
    pub compare: bool,

    /// Slice length of --compare [plain number: s].
    #[arg(long, value_name = "TIME", default_value = "1", requires = "compare", allow_hyphen_values = true, value_parser = units::duration)]
    pub slice: Nanos,

    /// Stop after this many wake-ups per thread (and mechanism).
    #[arg(short, long, value_name = "N", allow_hyphen_values = true, value_parser = units::loops)]
    pub loops: Option<u64>,

    /// Run each mechanism this long [plain number: s; or 500ms, 2m …]. Default 10 s (3 s with --compare) unless --loops is given.
    #[arg(short = 'D', long, value_name = "TIME", allow_hyphen_values = true, value_parser = units::duration)]
    pub duration: Option<Nanos>,

    /// Stop when a latency exceeds this [plain number: µs]; reports the cycle and value.
    #[arg(short, long, value_name = "US", allow_hyphen_values = true, value_parser = units::micros)]
    pub breaktrace: Option<Nanos>,

    /// With -b: write a line into the kernel trace (trace_marker) at the break and stop tracing (tracing_on = 0), as cyclictest --tracemark does, so the trace ends at the spike.
    #[arg(long, requires = "breaktrace")]
    pub tracemark: bool,

    /// Why was it late: trace the measured CPUs (an instance of rtick's own in tracefs) and split every wake-up's latency into kernel phases — IRQ delay, wake-up path, scheduling, return to user — naming what ran in each and where in the kernel the CPU was when the wake-up was due (its stack); explain the worst wake-ups of each mechanism, and with US every one later than US. Needs tracefs, and root (its files are root's, mode 0640: or CAP_DAC_OVERRIDE).
    #[arg(long, value_name = "US", num_args = 0..=1, default_missing_value = "0", value_parser = units::explain_threshold)]
    pub explain: Option<Nanos>,

    /// With --explain: how many of each mechanism's worst wake-ups to explain.
    #[arg(long, value_name = "N", default_value = "5", requires = "explain")]
    pub explain_top: usize,

    /// The tracefs directory --tracemark writes to, or an instance in it (…/instances/NAME) [default: where tracefs is mounted, else /sys/kernel/tracing].
    #[arg(long, value_name = "DIR", env = "RTICK_TRACEFS")]
    pub tracefs: Option<PathBuf>,

    /// No live progress line; print only the summary at the end.
    #[arg(short, long)]
    pub quiet: bool,

    /// Show latencies in nanoseconds (and histogram buckets of 1 ns).
    #[arg(short = 'N', long)]
    pub nsecs: bool,

    /// Write results as JSON (schema in docs/json.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write every wake-up as CSV: thread,mechanism,cycle,planned_ns,actual_ns,latency_ns.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Write a histogram in cyclictest's format (µs buckets; ns with -N).
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// Range of the --histogram buckets [plain number: µs].
    #[arg(long, value_name = "TIME", default_value = "1000", requires = "histogram", allow_hyphen_values = true, value_parser = units::micros)]
    pub histogram_max: Nanos,

    /// Trace ring capacity per thread, in rows [1 to 67108864].
    #[arg(long, value_name = "ROWS", default_value = "262144", value_parser = units::whole_within::<u64>(1, 1 << 26))]
    pub trace_buffer: u64,

    /// After the run, draw a plot (.png or .svg) as `rtick report --plot` does.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    /// Load the machine during the run with built-in loads, comma-separated, each KIND[:WORKERS]: cpu (busy loops), memory (copies over twice the last-level cache), io (writes and fdatasync to a temporary file in $TMPDIR or /var/tmp), net (loopback TCP streams), sched (pairs of threads passing messages: context switches), timers (threads sleeping 100 µs). Default workers: one per load CPU. SCHED_OTHER, started just before the measurement and stopped with it.
    #[arg(long, value_name = "KIND[:N][,KIND…]")]
    pub load: Option<String>,

    /// The CPUs the loads run on (each worker on one, in turn) [default: every allowed CPU, the measured ones included].
    #[arg(long, value_name = "CPUSET")]
    pub load_cpus: Option<String>,

    /// Run this command as a load (sh -c, its own process group, output to /dev/null, errors to stderr); at the end its group gets SIGTERM, and SIGKILL 2 s later if still there. Its exit is reported.
    #[arg(long, value_name = "CMD")]
    pub load_cmd: Option<String>,

    /// Measure first without the load, then with it, in one run: idle,loaded, each with an optional duration per mechanism (idle=60s,loaded=5m) [default: -D/-l each]. One table per phase, and the ratios loaded ÷ idle.
    #[arg(long, value_name = "idle[=TIME],loaded[=TIME]", conflicts_with_all = ["explain", "histogram"])]
    pub phases: Option<String>,

    /// The test-only `mock` mechanism's options (feature `mock`; without
    /// it they do not exist and stay empty).
    #[cfg_attr(feature = "mock", command(flatten))]
    #[cfg_attr(not(feature = "mock"), arg(skip))]
    pub mock: crate::mock::MockArgs,

    /// Fail (exit 3) when a condition holds for any mechanism and thread, e.g. 'p99.9>50us,max>200us,overruns>0'. Figures: p50 p90 p99 p99.9 p99.99 p99.999 max min mean stddev (times; plain numbers µs), overruns missed (counts), cpu (%); operators > >= < <= == !=. Checked after the outputs are written; an interrupted run does not pass.
    #[arg(long, value_name = "EXPR", value_parser = rtick_model::gates::parse_measure)]
    pub fail_if: Option<rtick_model::gates::Gates>,

    /// Disable the cpuidle states deeper than state N on the measured CPUs for the run (their `disable` files; restored at exit, also after Ctrl-C or SIGTERM).
    #[arg(long, value_name = "N")]
    pub deepest_idle_state: Option<usize>,

    /// Test-only: read and write /sys under DIR (a fake tree) for --deepest-idle-state,
    /// and read the cache size the memory load follows there.
    /// Only in test builds (feature `mock`), like the `--mock-*` options: a
    /// release binary never writes `disable` files outside /sys (always `None` there).
    #[cfg_attr(feature = "mock", arg(long, hide = true, value_name = "DIR"))]
    #[cfg_attr(not(feature = "mock"), arg(skip))]
    pub sysfs_root: Option<PathBuf>,

    /// Discard each mechanism's first TIME of wake-ups on every thread, before its duration or loops [plain number: s].
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = units::duration)]
    pub warm_up: Option<Nanos>,

    /// With --explain: measure what tracing adds, inside this run. The tracing is switched off and on every PERIOD [plain number: s; at least 200 ms; default 1 s, with --compare half a slice at most], and the wake-ups of the traced and the plain stretches are compared (p50, p99 and their ratios); only the traced ones are explained.
    #[arg(long, value_name = "PERIOD", num_args = 0..=1, requires = "explain", allow_negative_numbers = true, value_parser = units::ab_period)]
    pub explain_ab: Option<Option<Nanos>>,
}

/// The measuring loop's options, shared by `rtick measure` and `rtick
/// monitor` (one definition: the same names, defaults and checks).
#[derive(Debug, Args)]
pub struct LoopArgs {
    /// Wait mechanism(s), comma-separated, or `all` (see `rtick mechanisms`) [default: clock_nanosleep; measure --compare: all].
    #[arg(short = 'm', long = "mechanism", value_name = "NAME[,NAME…]", value_delimiter = ',')]
    pub mechanisms: Option<Vec<String>>,

    /// Period between wake-ups [plain number: µs; or 1ms, 20kHz …].
    #[arg(short, long, value_name = "INTERVAL", default_value = "1000", allow_hyphen_values = true, value_parser = units::interval)]
    pub interval: Nanos,

    /// Measuring threads; without N, one per allowed CPU.
    #[arg(short, long, value_name = "N", num_args = 0..=1)]
    pub threads: Option<Option<usize>>,

    /// Pin threads to CPUs round-robin (e.g. 0-3,6); without a set, thread N to CPU N.
    #[arg(short, long, value_name = "CPUSET", num_args = 0..=1)]
    pub affinity: Option<Option<String>>,

    /// One thread per CPU, each pinned to its CPU (like cyclictest -S); not with -t or -a, which it sets.
    #[arg(short = 'S', long, conflicts_with_all = ["threads", "affinity"])]
    pub smp: bool,

    /// Real-time priority 1–99 (implies --policy fifo) [default: fifo 90].
    #[arg(short, long, value_name = "PRIO", allow_negative_numbers = true)]
    pub priority: Option<i32>,

    /// Scheduling policy [default: fifo, falling back to other without privilege].
    #[arg(long, value_name = "POLICY", value_parser = Named::new(Policy::ALL.map(Policy::name), Policy::parse))]
    pub policy: Option<Policy>,

    /// Clock of the deadlines.
    #[arg(short, long, value_name = "CLOCK", default_value = "monotonic", value_parser = Named::new(ClockId::ALL.map(ClockId::name), ClockId::parse))]
    pub clock: ClockId,

    /// Lock memory with mlockall and prefault it (the default).
    #[arg(long, conflicts_with = "no_mlock")]
    pub mlock: bool,

    /// Do not lock memory.
    #[arg(long)]
    pub no_mlock: bool,

    /// Hold /dev/cpu_dma_latency at this many µs during the run (0 keeps CPUs out of deep C-states). Default: leave the system as it is.
    #[arg(long, value_name = "US", allow_hyphen_values = true, value_parser = units::dma_latency)]
    pub dma_latency: Option<i32>,

    /// Timer slack of the measuring threads [plain number: ns].
    #[arg(long, value_name = "NS", default_value = "1", allow_hyphen_values = true, value_parser = units::timer_slack)]
    pub timer_slack: Nanos,

    /// After an overrun: skip to the next future deadline, or catch up on every missed one.
    #[arg(long, value_name = "POLICY", default_value = "skip", value_parser = Named::new(OVERRUN_POLICIES.map(OverrunPolicy::name), OverrunPolicy::parse))]
    pub overrun: OverrunPolicy,

    /// hybrid's spin slack: auto (calibrated) or a time [plain number: µs].
    #[arg(long, value_name = "auto|TIME", default_value = "auto", allow_hyphen_values = true, value_parser = units::hybrid_slack)]
    pub hybrid_slack: HybridSlack,
}

/// Options of `rtick monitor`: the loop of `rtick measure`, run until
/// stopped, its figures served over HTTP.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The measuring loop: mechanisms, interval, threads and CPUs, policy, memory, timers.
    #[command(flatten)]
    pub looping: LoopArgs,

    /// Address of the HTTP endpoint (/metrics, /spikes): IP:PORT, or NAME:PORT with the name resolved (its first IPv4 address); loopback only unless told otherwise.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9464", value_parser = units::listen)]
    pub listen: std::net::SocketAddr,

    /// Keep a log of the latest wake-ups later than this, served as JSON at /spikes [plain number: µs].
    #[arg(long, value_name = "US", allow_hyphen_values = true, value_parser = units::micros)]
    pub spike: Option<Nanos>,

    /// Why was it late, for every spike: trace the measured CPUs all the time (an instance of rtick's own in tracefs, the last seconds of events kept) and split each spike's latency into kernel phases — IRQ delay, wake-up path, scheduling, return to user — naming what ran in each and the kernel stack where the wake-up was due, at /spikes and in rtick_spikes_total's phase and cause labels. Tracing adds to every wake-up's latency. Needs tracefs, and root (its files are root's, mode 0640: or CAP_DAC_OVERRIDE).
    #[arg(long, requires = "spike")]
    pub explain: bool,

    /// The tracefs directory --explain traces in [default: where tracefs is mounted, else /sys/kernel/tracing].
    #[arg(long, value_name = "DIR", env = "RTICK_TRACEFS")]
    pub tracefs: Option<std::path::PathBuf>,

    /// Stop after this long [plain number: s] (default: run until Ctrl-C or SIGTERM).
    #[arg(short = 'D', long, value_name = "TIME", allow_hyphen_values = true, value_parser = units::duration)]
    pub duration: Option<Nanos>,

    /// Print only warnings, not the header.
    #[arg(short, long)]
    pub quiet: bool,

    /// Instead of the measuring loop, run rtick noise's spinners on these CPUs (e.g. 1-3), continuously: per CPU and source, noise seconds and counts, and a gap histogram at /metrics (docs/monitor.md). -p makes them SCHED_FIFO.
    #[arg(long, value_name = "CPUSET", conflicts_with_all = ["mechanisms", "interval", "threads", "affinity", "smp", "policy", "clock", "mlock", "no_mlock", "dma_latency", "timer_slack", "overrun", "hybrid_slack", "spike", "explain"])]
    pub noise: Option<String>,

    /// Another program's threads instead of the loop: --attach PID, --tid, --comm.
    #[command(flatten)]
    pub target: attach::MonitorTarget,
}

/// The overrun policies `rtick measure` offers (`fail` is for applications:
/// a measurement records overruns rather than stopping at one).
const OVERRUN_POLICIES: [OverrunPolicy; 2] = [OverrunPolicy::Skip, OverrunPolicy::CatchUp];

/// A clap value parser for a name the library parses (`ClockId::parse`, …):
/// the value is typed at the edge, `--help` lists the names, and a bad value
/// is clap's one-line error naming the option and listing them.
#[derive(Clone, Debug)]
pub struct Named<T> {
    names: Vec<&'static str>,
    parse: fn(&str) -> Option<T>,
}

impl<T> Named<T> {
    pub fn new(names: impl IntoIterator<Item = &'static str>, parse: fn(&str) -> Option<T>) -> Self {
        Named { names: names.into_iter().collect(), parse }
    }
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Named<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        // clap's own errors for a parse function: one line, option named
        // (its possible-values error puts the list on a second line).
        let (parse, names) = (self.parse, self.names.join(", "));
        let by_name = move |s: &str| parse(s).ok_or_else(|| format!("one of: {names}"));
        by_name.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(|n| PossibleValue::new(*n))))
    }
}

//! The JSON results file. These structs *are* the schema (docs/json.md);
//! `schema_version` changes when a field changes meaning or goes away.

mod ab;
mod attach;
mod attach_spike;
mod explain;
mod gates;
mod load;
mod noise;

use serde::{Deserialize, Serialize};

pub use ab::{AbJson, AbResultJson, LatenciesJson, NotTracedJson, SwitchJson};
pub use attach::{
    AttachFile, AttachSpikeJson, AttachedThreadJson, BucketJson, CulpritJson, CycleJson, OverTimeJson, OverrunJson,
    TargetJson,
};
pub use explain::{CauseJson, CfsJson, ExplainJson, ExplainedJson, KernelPhaseJson, SpikeJson};
pub use gates::{ConditionJson, GatesJson, ViolationJson};
pub use load::{CpuBusyJson, LoadCommandJson, LoadJson, LoadKindJson, LoadPhaseJson, PhaseRatioJson};
pub use noise::{
    LoopClockJson, NoiseCpuJson, NoiseFile, NoiseGapJson, NoiseGatesJson, NoiseSenderJson, NoiseSourceJson,
    NoiseTickJson, NoiseViolationJson,
};

use rtick::measure::{MeasureReport, ThreadResult};
use rtick::stats::{Summary, PERCENTILE_LABELS};

/// Current schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunFile {
    pub rtick_version: String,
    pub schema_version: u32,
    pub command: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub elapsed_ns: i64,
    /// Stopped early by Ctrl-C or SIGTERM.
    pub interrupted: bool,
    pub breaktrace: Option<BreakJson>,
    pub system: SystemJson,
    pub config: ConfigJson,
    pub warnings: Vec<String>,
    pub results: Vec<ResultJson>,
    /// Mechanisms that could not run on this system, and why.
    #[serde(default)]
    pub unavailable: Vec<UnavailableJson>,
    /// With --explain: the kernel phases of the wake-ups and the spikes explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<ExplainJson>,
    /// With --fail-if: the conditions, the violations, and the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<GatesJson>,
    /// With --load or --load-cmd: what ran beside the measurement and what it achieved; null without.
    #[serde(default)]
    pub load: Option<LoadJson>,
    /// With --phases: each phase in run order (empty without).
    #[serde(default)]
    pub phases: Vec<LoadPhaseJson>,
    /// With --phases: loaded ÷ idle per percentile, per mechanism and thread (empty without).
    #[serde(default)]
    pub phase_ratios: Vec<PhaseRatioJson>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnavailableJson {
    pub mechanism: String,
    pub reason: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BreakJson {
    pub mechanism: String,
    pub thread: usize,
    pub cycle: u64,
    pub latency_ns: i64,
    /// Whether the kernel trace was marked and stopped (--tracemark).
    #[serde(default)]
    pub marked: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SystemJson {
    /// `uname -r`.
    pub kernel: String,
    /// `uname -v`.
    pub kernel_version: String,
    pub clocksource: Option<String>,
    /// High-resolution timers active on every CPU (null: /proc/timer_list unreadable).
    pub hres_active: Option<bool>,
    pub preempt: String,
    pub cpus: usize,
    pub hypervisor: Option<String>,
    pub sched_rt_runtime_us: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ConfigJson {
    pub mechanisms: Vec<String>,
    pub interval_ns: i64,
    pub loops: Option<u64>,
    pub duration_ns: Option<i64>,
    pub threads: usize,
    /// Per thread: the CPUs it was pinned to (empty: not pinned).
    pub affinity: Vec<Vec<usize>>,
    /// `SCHED_FIFO` … as actually used (after any fallback).
    pub policy: String,
    pub priority: i32,
    pub clock: String,
    pub mlock: bool,
    /// The value rtick held /dev/cpu_dma_latency at (null: left alone).
    pub dma_latency_us: Option<i32>,
    /// The system's value before the run (null: unreadable).
    pub dma_latency_system_us: Option<i32>,
    pub timer_slack_ns: i64,
    pub overrun: String,
    /// `auto` or a number of ns.
    pub hybrid_slack: String,
    pub breaktrace_ns: Option<i64>,
    /// The tracefs directory marked at the break (--tracemark); null: none.
    #[serde(default)]
    pub tracemark: Option<String>,
    /// Slice length when mechanisms were interleaved (--compare); null: one after the other.
    pub interleave_ns: Option<i64>,
    /// --warm-up: each mechanism's first this-many ns per thread were discarded (null: none).
    #[serde(default)]
    pub warm_up_ns: Option<i64>,
    /// --deepest-idle-state: the deepest cpuidle state left enabled on the measured CPUs (null: left alone).
    #[serde(default)]
    pub deepest_idle_state: Option<usize>,
    /// What --deepest-idle-state disabled, as the header says it.
    #[serde(default)]
    pub cpuidle: Option<String>,
}

/// Percentiles by label; the keys are the percentile numbers as strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentilesJson {
    #[serde(rename = "50")]
    pub p50: i64,
    #[serde(rename = "90")]
    pub p90: i64,
    #[serde(rename = "99")]
    pub p99: i64,
    #[serde(rename = "99.9")]
    pub p99_9: i64,
    #[serde(rename = "99.99")]
    pub p99_99: i64,
    #[serde(rename = "99.999")]
    pub p99_999: i64,
}

impl PercentilesJson {
    /// The values in the order of [`PERCENTILE_LABELS`].
    pub fn values(&self) -> [i64; 6] {
        [self.p50, self.p90, self.p99, self.p99_9, self.p99_99, self.p99_999]
    }

    /// The value at index `i` of [`PERCENTILE_LABELS`]; `None` past the end.
    pub fn get(&self, i: usize) -> Option<i64> {
        self.values().get(i).copied()
    }

    /// The value at a label of [`PERCENTILE_LABELS`] ("99.9").
    pub fn at(&self, label: &str) -> Option<i64> {
        PERCENTILE_LABELS.iter().position(|l| *l == label).and_then(|i| self.get(i))
    }
}

impl From<&Summary> for PercentilesJson {
    fn from(s: &Summary) -> Self {
        let p = s.percentiles;
        PercentilesJson { p50: p[0], p90: p[1], p99: p[2], p99_9: p[3], p99_99: p[4], p99_999: p[5] }
    }
}

/// One mechanism on one thread. Fields an imported run cannot know (CPU time
/// or overruns of a cyclictest run, percentiles of one without a histogram)
/// are null.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultJson {
    /// `rtick report` only: the file the row comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub mechanism: String,
    pub thread: usize,
    /// Kernel thread id of the measuring thread.
    #[serde(default)]
    pub tid: Option<i32>,
    /// The CPU the thread was on at the end.
    pub cpu: Option<usize>,
    pub count: u64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub mean_ns: f64,
    #[serde(default)]
    pub stddev_ns: Option<f64>,
    pub percentiles_ns: Option<PercentilesJson>,
    /// Wake-ups later than the following deadline.
    #[serde(default)]
    pub overruns: Option<u64>,
    /// Deadlines skipped after overruns (policy skip, and kernel interval timers).
    #[serde(default)]
    pub missed_periods: Option<u64>,
    /// Wake-ups before their planned time (negative latency).
    #[serde(default)]
    pub early_wakeups: Option<u64>,
    /// Thread CPU time (getrusage RUSAGE_THREAD) as a percentage of wall time.
    #[serde(default)]
    pub cpu_percent: Option<f64>,
    #[serde(default)]
    pub trace_rows_dropped: u64,
    /// hybrid only: the slack used.
    #[serde(default)]
    pub hybrid_slack_ns: Option<i64>,
    /// Period deviation actual_k − actual_{k−1} − interval.
    #[serde(default)]
    pub period_min_ns: Option<i64>,
    #[serde(default)]
    pub period_max_ns: Option<i64>,
    #[serde(default)]
    pub period_percentiles_ns: Option<PercentilesJson>,
    /// Steps of CLOCK_REALTIME/TAI during the run: those wake-ups were not
    /// recorded and the grid restarted after each.
    #[serde(default)]
    pub clock_steps: u64,
    /// The steps added up (ns).
    #[serde(default)]
    pub clock_stepped_ns: i64,
    /// The latency distribution: [value_ns, count] pairs, ascending, each
    /// value the upper edge of an HdrHistogram bucket (3 significant digits).
    #[serde(default)]
    pub histogram_ns: Vec<(i64, u64)>,
    /// With --phases: the phase the row was measured in (`idle`, `loaded`); null without.
    #[serde(default)]
    pub phase: Option<String>,
    /// Wake-ups of the --warm-up, discarded before the figures above.
    #[serde(default)]
    pub warm_up_discarded: u64,
    /// `rtick attach`: the least time the thread's cycle left between going
    /// to sleep and the deadline it asked for (its cycle's minimum margin;
    /// negative: it overran); null elsewhere (a measured loop has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_min_ns: Option<i64>,
}

impl ResultJson {
    /// A row of `count` latencies of `mechanism` on `thread` with only
    /// these figures known: every other one null (unknown), zero or empty,
    /// for the caller to fill in what its source has.
    pub fn with_figures(
        mechanism: String,
        thread: usize,
        count: u64,
        min_ns: i64,
        max_ns: i64,
        mean_ns: f64,
    ) -> ResultJson {
        ResultJson {
            source: None,
            mechanism,
            thread,
            tid: None,
            cpu: None,
            count,
            min_ns,
            max_ns,
            mean_ns,
            stddev_ns: None,
            percentiles_ns: None,
            overruns: None,
            missed_periods: None,
            early_wakeups: None,
            cpu_percent: None,
            trace_rows_dropped: 0,
            hybrid_slack_ns: None,
            period_min_ns: None,
            period_max_ns: None,
            period_percentiles_ns: None,
            clock_steps: 0,
            clock_stepped_ns: 0,
            histogram_ns: Vec::new(),
            phase: None,
            warm_up_discarded: 0,
            margin_min_ns: None,
        }
    }

    pub fn from_result(r: &ThreadResult) -> ResultJson {
        let s = r.latency.summary();
        let p = r.period.summary();
        let has_period = r.period.count() > 0;
        ResultJson {
            source: None,
            mechanism: r.mechanism.name().to_string(),
            thread: r.thread,
            tid: Some(r.tid),
            cpu: r.cpu,
            count: s.count,
            min_ns: s.min,
            max_ns: s.max,
            mean_ns: s.mean,
            stddev_ns: Some(s.stddev),
            percentiles_ns: Some((&s).into()),
            overruns: Some(r.overruns),
            missed_periods: Some(r.missed),
            early_wakeups: Some(s.negative),
            cpu_percent: Some(r.cpu_percent()),
            trace_rows_dropped: r.trace_dropped,
            hybrid_slack_ns: r.slack.map(|n| n.as_ns()),
            period_min_ns: has_period.then_some(p.min),
            period_max_ns: has_period.then_some(p.max),
            period_percentiles_ns: has_period.then(|| (&p).into()),
            histogram_ns: r.latency.histogram().buckets(),
            clock_steps: r.clock_steps,
            clock_stepped_ns: r.clock_stepped.as_ns(),
            phase: None,
            warm_up_discarded: r.warm_up_discarded,
            margin_min_ns: None,
        }
    }

    /// p99 for sorting (unknown last).
    pub fn p99(&self) -> i64 {
        self.percentiles_ns.as_ref().map_or(i64::MAX, |p| p.p99)
    }
}

/// Results of a report, in run order.
pub fn results(report: &MeasureReport) -> Vec<ResultJson> {
    report.results.iter().map(ResultJson::from_result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_index_and_label_follow_the_labels() {
        let p = PercentilesJson { p50: 1, p90: 2, p99: 3, p99_9: 4, p99_99: 5, p99_999: 6 };
        let json = serde_json::to_value(&p).unwrap();
        for (i, (label, v)) in PERCENTILE_LABELS.into_iter().zip(p.values()).enumerate() {
            assert_eq!(json[label], v, "{label}");
            assert_eq!(p.get(i), Some(v));
            assert_eq!(p.at(label), Some(v));
        }
        assert_eq!(p.get(PERCENTILE_LABELS.len()), None);
        assert_eq!(p.at("95"), None);
    }
}

//! `rtick monitor --noise CPUSET`: the spinners of `rtick noise`, run until
//! stopped, their figures served to Prometheus at `/metrics` instead of the
//! measuring loop's.
//!
//! The [`NoiseCollector`] is the run's [`Observer`], as `rtick noise`'s
//! --trace and --plot are: each gap fills the histogram as it is
//! attributed, and ten times a second each CPU's sources so far add to the
//! counters what they grew by.
//! Labels are bounded: `cpu` by the CPUs measured; `source` by the kinds of
//! source — IRQ lines (as many as the machine has), the fixed vectors and
//! softirqs, NMI, RT throttling, hardware or host, around events — with every
//! thread counted under `threads` (and the idle task under `idle`): thread
//! names and ids come and go, and would make a series each.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use anyhow::{Context, Result};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use rtick::noise::{GapRecord, Live, NoiseOptions, Observer, Source, DEFAULT_THRESHOLD};

use super::metrics::Exporter;
use super::{http, off_cpus, serving};
use crate::cli::MonitorArgs;
use crate::cmd::plan::{cpu_list, Cpus};
use crate::Usage;

/// Upper bounds of the gap histogram's buckets, seconds: 1, 2, 5 per decade
/// from 1 µs (the default threshold) to 100 ms (past RT throttling's 50 ms).
pub const GAP_BUCKETS: [f64; 16] =
    [1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1];

/// The labels of a CPU's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CpuLabels {
    pub cpu: String,
}

/// The labels of a source's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabels {
    pub cpu: String,
    /// `irq`, `vector`, `softirq`, `nmi`, `thread`, `rt_throttling`, `cfs_throttling`, `hardware_or_host`, `around_events`.
    pub kind: String,
    /// As `rtick noise` names it, threads together (`threads`, `idle`).
    pub source: String,
}

/// A source's label: IRQs, vectors and softirqs by name, as `rtick noise`
/// prints them; every thread together (`threads`, the idle task `idle`);
/// the others by their kind (`nmi`, `rt_throttling`, `cfs_throttling`, `hardware_or_host`,
/// `around_events`).
pub fn source_label(s: &Source) -> String {
    match s {
        Source::Irq { .. } | Source::Vector(_) | Source::Softirq(_) => s.to_string(),
        Source::Thread { pid: 0, .. } => "idle".into(),
        Source::Thread { .. } | Source::OtherThreads => "threads".into(),
        s => s.kind().into(),
    }
}

type FloatCounter = Counter<f64, AtomicU64>;

/// Fills the noise metrics as the run goes.
pub struct NoiseCollector {
    exporter: Arc<Exporter>,
    gap: Family<CpuLabels, Histogram>,
    spun: Family<CpuLabels, FloatCounter>,
    seconds: Family<SourceLabels, FloatCounter>,
    events: Family<SourceLabels, Counter>,
    /// Per series, the time and count last added (the sources' tallies are totals).
    copied: HashMap<SourceLabels, (i64, u64)>,
    spun_copied: HashMap<usize, i64>,
}

impl NoiseCollector {
    /// Registers every metric, and a gap histogram for each of `cpus`.
    pub fn new(cpus: &[usize], policy: &str) -> NoiseCollector {
        let mut registry = Registry::default();
        let gap = Family::<CpuLabels, Histogram>::new_with_constructor(|| Histogram::new(GAP_BUCKETS));
        registry.register_with_unit(
            "rtick_noise_gap",
            "Gaps of the spinners: time they did not get",
            Unit::Seconds,
            gap.clone(),
        );
        let spun = Family::<CpuLabels, FloatCounter>::default();
        registry.register_with_unit(
            "rtick_noise_spun",
            "Time the spinners spun (gaps included)",
            Unit::Seconds,
            spun.clone(),
        );
        let seconds = Family::<SourceLabels, FloatCounter>::default();
        registry.register_with_unit(
            "rtick_noise",
            "Time taken from the spinners in gaps, per source (nested work counted once, as its own)",
            Unit::Seconds,
            seconds.clone(),
        );
        let events = Family::<SourceLabels, Counter>::default();
        registry.register("rtick_noise_events", "Occurrences of each source inside gaps", events.clone());
        let info = vec![("version", env!("CARGO_PKG_VERSION").to_string()), ("policy", policy.to_string())];
        registry.register("rtick_noise_build", "rtick's version and the spinners' policy", Info::new(info));
        for &c in cpus {
            drop(gap.get_or_create(&CpuLabels { cpu: c.to_string() }));
            drop(spun.get_or_create(&CpuLabels { cpu: c.to_string() }));
        }
        NoiseCollector {
            exporter: Arc::new(Exporter { registry, spikes: None }),
            gap,
            spun,
            seconds,
            events,
            copied: HashMap::new(),
            spun_copied: HashMap::new(),
        }
    }

    pub fn exporter(&self) -> Arc<Exporter> {
        Arc::clone(&self.exporter)
    }
}

impl Observer for NoiseCollector {
    /// A gap, into its CPU's histogram.
    fn gap(&mut self, cpu: usize, g: &GapRecord) {
        self.gap.get_or_create(&CpuLabels { cpu: cpu.to_string() }).observe(g.gap.len().as_secs_f64());
    }

    /// One CPU after a round: what its spinner spun and its sources grew by.
    fn round(&mut self, l: &Live) {
        let cpu = l.cpu.to_string();
        let was = self.spun_copied.insert(l.cpu, l.runtime.as_ns()).unwrap_or(0);
        self.spun.get_or_create(&CpuLabels { cpu: cpu.clone() }).inc_by(ns_to_s(l.runtime.as_ns() - was));
        let mut now: HashMap<SourceLabels, (i64, u64)> = HashMap::new();
        for (s, t) in l.sources {
            let labels = SourceLabels { cpu: cpu.clone(), kind: s.kind().into(), source: source_label(s) };
            let e = now.entry(labels).or_default();
            *e = (e.0 + t.total.as_ns(), e.1 + t.count);
        }
        for (labels, (ns, count)) in now {
            let (was_ns, was_count) = self.copied.insert(labels.clone(), (ns, count)).unwrap_or((0, 0));
            self.seconds.get_or_create(&labels).inc_by(ns_to_s(ns - was_ns));
            self.events.get_or_create(&labels).inc_by(count.saturating_sub(was_count));
        }
    }
}

fn ns_to_s(ns: i64) -> f64 {
    ns.max(0) as f64 / 1e9
}

/// Runs `rtick monitor --noise`.
pub fn run(a: &MonitorArgs, set: &str) -> Result<()> {
    let opts = NoiseOptions {
        cpus: Some(cpu_list("--noise", set, &Cpus::detect()?)?),
        duration: a.duration,
        threshold: DEFAULT_THRESHOLD,
        priority: a.looping.priority,
        tracefs: a.tracefs.clone(),
        attribution: true,
        // Its metrics have no place for a stack: no trigger to pay for.
        stacks: false,
    };
    let plan = opts.plan().map_err(|e| Usage(e.to_string()))?;
    let listener = http::bind(a.listen)?;
    let listening = listener.local_addr().unwrap_or(a.listen);
    let policy = match plan.priority {
        0 => plan.policy.kernel_name().to_string(),
        p => format!("{} {p}", plan.policy.kernel_name()),
    };
    let mut collector = NoiseCollector::new(&plan.cpus, &policy);
    // The endpoint's thread, started next, inherits this: off the spinners.
    let _beside = off_cpus(&plan.cpus)?;
    http::serve(listener, collector.exporter())?;
    let stop = crate::stop_flag()?;
    if !a.quiet {
        let cpus = rtick::system::format_cpu_list(&plan.cpus);
        println!(
            "rtick {} monitor --noise: CPUs {cpus}, {policy} spinners, gaps over {} ns attributed from trace events",
            env!("CARGO_PKG_VERSION"),
            opts.threshold.as_ns()
        );
        println!("  serving       {}", serving(listening, "/metrics"));
        let bound = a.duration.map_or("until Ctrl-C".to_string(), |d| format!("for {d}"));
        println!("  running       {bound}");
    }
    rtick::noise::run_observed(&plan, &opts, &stop, &mut collector).context("monitor --noise")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use rtick::noise::{Gap, Tally};
    use rtick::{Nanos, Time};

    fn text(c: &NoiseCollector) -> String {
        let mut s = String::new();
        encode(&mut s, &c.exporter.registry).unwrap();
        s
    }

    #[test]
    fn sources_become_bounded_series_whose_counters_grow_by_what_they_grew() {
        let mut c = NoiseCollector::new(&[1], "SCHED_FIFO 50");
        let thread = |pid| Source::Thread { comm: rtick::ktrace::Comm::new(b"kworker"), pid, prio: 120 };
        let tally =
            |count, us| Tally { count, total: Nanos::from_us(us), max: Nanos::from_us(us), nested: Nanos::ZERO };
        let mut sources =
            HashMap::from([(thread(10), tally(1, 100)), (thread(11), tally(2, 300)), (Source::Nmi, tally(1, 5))]);
        for us in [3, 150] {
            let gap = Gap { start: Time(1_000_000), end: Time(1_000_000) + Nanos::from_us(us) };
            c.gap(1, &GapRecord { gap, sources: Vec::new() });
        }
        c.round(&Live { cpu: 1, runtime: Nanos::from_ms(100), sources: &sources });
        sources.insert(thread(12), tally(1, 600));
        c.round(&Live { cpu: 1, runtime: Nanos::from_ms(200), sources: &sources });
        let t = text(&c);
        let threads = "cpu=\"1\",kind=\"thread\",source=\"threads\"";
        assert!(t.contains(&format!("rtick_noise_seconds_total{{{threads}}} 0.001")), "{t}");
        assert!(t.contains(&format!("rtick_noise_events_total{{{threads}}} 4")), "{t}");
        assert!(t.contains("rtick_noise_events_total{cpu=\"1\",kind=\"nmi\",source=\"nmi\"} 1"), "{t}");
        assert!(t.contains("rtick_noise_gap_seconds_count{cpu=\"1\"} 2"), "{t}");
        assert!(t.contains("rtick_noise_gap_seconds_bucket{le=\"0.000005\",cpu=\"1\"} 1"), "{t}");
        assert!(t.contains("rtick_noise_spun_seconds_total{cpu=\"1\"} 0.2"), "{t}");
        assert!(!t.contains("kworker"), "no thread name is a label: {t}");
    }
}

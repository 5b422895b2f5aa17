//! The metrics `rtick monitor` exports, and the collector that fills them.
//!
//! Names follow Prometheus's conventions (base unit seconds, `_total`
//! counters, `rtick_` prefix); the deployment files (alert rules, dashboard)
//! depend on them: do not rename. Every series has the labels `mechanism`,
//! `cpu` (the pinned CPU, `any` when not pinned) and `thread` (the measuring
//! thread's index, as measure's T0, T1 …), because unpinned threads, or more
//! threads than CPUs, share a `cpu` label.
//!
//! The collector runs on the non-real-time thread that watches the run
//! (measure's progress callback), ten times a second: it drains the
//! measuring threads' trace rings into the histogram, the window maxima and
//! the spike log, and copies their counters (wake-ups, overruns, missed
//! periods, dropped rows) from the progress atomics. The measuring threads
//! themselves only push rows and store atomics: no lock, no allocation.
//!
//! With `--explain` the collector also reads the kernel trace of the
//! measured CPUs after each drain of the rings ([`rtick::explain::Live`]):
//! every event of the wake-ups just drained is in it then, and each spike
//! is explained from the last seconds of events before it is logged.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use rtick::explain::{BoundedNames, Drained, Live, Spike, SpikeWatcher, WINDOW_SECS};
use rtick::measure::{MeasureConfig, Progress, TraceConsumer};
use rtick::system::SystemInfo;
use rtick::{ClockId, Nanos};

use super::spikes::{cpu_label, LoggedSpike, SpikeLog, CAPACITY};

pub mod latency;

/// The labels of every series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SeriesLabels {
    pub mechanism: String,
    pub cpu: String,
    pub thread: String,
}

/// The labels of `rtick_spikes_total`: the series', and what the spike
/// was blamed on (with `--explain`; `unknown` and `untraced` without).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SpikeLabels {
    pub mechanism: String,
    pub cpu: String,
    pub thread: String,
    /// The spike's largest phase (`irq_delay`, `wakeup_path`, `scheduling`,
    /// `return_to_user`), or `unknown`.
    pub phase: String,
    /// The kind of its cause (`Cause::token`), or why it has none.
    pub cause: String,
    /// What the cause blames (`Spike::culprit_label`): `task`, `kworker`,
    /// `irq`, `softirq`, `ipi`, `nmi`, `hrtimer`, or `none`.
    pub culprit_kind: String,
    /// Its name without a pid (a comm, a work function, a handler), one of
    /// the first [`CULPRIT_NAMES`] seen, else `other`; empty for `none`.
    pub culprit: String,
}

/// How many culprit names `rtick_spikes_total` keeps as label values: the
/// first seen; any further one is `other`, so the series stay bounded.
pub const CULPRIT_NAMES: usize = 16;

pub type Float = Gauge<f64, AtomicU64>;

/// What the HTTP workers read: the registry and the spike log.
pub struct Exporter {
    pub registry: Registry,
    pub spikes: Option<Mutex<SpikeLog>>,
}

/// One (thread, mechanism) pair's metrics, and what the collector last
/// copied from its counters.
struct Series {
    labels: SeriesLabels,
    mechanism: rtick::Mechanism,
    cpu: Option<usize>,
    latency: Histogram,
    wakeups: Counter,
    overruns: Counter,
    missed: Counter,
    dropped: Counter,
    max: Float,
    /// The counts at the last copy (of this run).
    copied: Counts,
}

/// A series' counts in one run, as the loop reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub wakeups: u64,
    pub overruns: u64,
    pub missed: u64,
    pub dropped: u64,
}

/// A thread's final counts of one mechanism, after a run.
#[derive(Clone, Copy, Debug)]
pub struct Final {
    pub thread: usize,
    pub mechanism: rtick::Mechanism,
    pub tid: i32,
    pub counts: Counts,
}

impl Series {
    /// Adds to the counters what `now` (this run's counts) has more than
    /// the last copy.
    fn copy(&mut self, now: Counts) {
        let was = std::mem::replace(&mut self.copied, now);
        for (counter, now, was) in [
            (&self.wakeups, now.wakeups, was.wakeups),
            (&self.overruns, now.overruns, was.overruns),
            (&self.missed, now.missed, was.missed),
            (&self.dropped, now.dropped, was.dropped),
        ] {
            counter.inc_by(now.saturating_sub(was));
        }
    }
}

/// The metric families, registered: a series takes its metrics from them
/// (the measuring loop's, and `--attach`'s threads').
pub struct Families {
    pub latency: Family<SeriesLabels, Histogram>,
    pub wakeups: Family<SeriesLabels, Counter>,
    pub overruns: Family<SeriesLabels, Counter>,
    pub missed: Family<SeriesLabels, Counter>,
    pub dropped: Family<SeriesLabels, Counter>,
    pub max: Family<SeriesLabels, Float>,
    pub spikes_total: Family<SpikeLabels, Counter>,
    pub trace_lost: Counter,
}

impl Families {
    /// Registers every metric: `rtick_interval` with an `interval`,
    /// `rtick_system` with the labels `system`, `rtick_spikes` with
    /// `--spike` (`spikes`), `rtick_trace_events_lost` when tracing.
    pub fn register(
        registry: &mut Registry,
        interval: Option<Nanos>,
        system: Vec<(&'static str, String)>,
        spikes: bool,
        tracing: bool,
    ) -> Self {
        let latency = Family::<SeriesLabels, Histogram>::new_with_constructor(latency::histogram);
        registry.register_with_unit(
            "rtick_wakeup_latency",
            "Wake-up latency: actual wake-up time minus its deadline",
            Unit::Seconds,
            latency.clone(),
        );
        let counter = |registry: &mut Registry, name: &str, help: &str| {
            let f = Family::<SeriesLabels, Counter>::default();
            registry.register(name, help, f.clone());
            f
        };
        let wakeups = counter(registry, "rtick_wakeups", "Wake-ups measured");
        let overruns = counter(registry, "rtick_overruns", "Wake-ups later than the following deadline");
        let missed = counter(registry, "rtick_missed_periods", "Deadlines skipped after overruns");
        let dropped = counter(
            registry,
            "rtick_samples_dropped",
            "Wake-ups the collector did not see (trace ring full): missing from the histogram and the maximum, counted in rtick_wakeups_total",
        );
        let max = Family::<SeriesLabels, Float>::default();
        registry.register_with_unit(
            "rtick_wakeup_latency_max",
            format!(
                "Largest wake-up latency over the last {WINDOW_SECS} s (sliding by 1 s; NaN when there was no wake-up)"
            ),
            Unit::Seconds,
            max.clone(),
        );
        if let Some(i) = interval {
            let interval = Float::default();
            interval.set(i.as_secs_f64());
            registry.register_with_unit("rtick_interval", "The period between wake-ups", Unit::Seconds, interval);
        }
        registry.register("rtick_build", "rtick's version", Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]));
        registry.register("rtick_system", "What the figures depend on", Info::new(system));
        let spikes_total = Family::<SpikeLabels, Counter>::default();
        if spikes {
            registry.register(
                "rtick_spikes",
                "Wake-ups later than --spike; with --explain by their largest phase and the kind of their cause (without: phase=\"unknown\", cause=\"untraced\")",
                spikes_total.clone(),
            );
        }
        let trace_lost = Counter::default();
        if tracing {
            registry.register(
                "rtick_trace_events_lost",
                "Kernel trace events lost while explaining spikes (a trace buffer overflowed), and one for each loss of unknown size: spikes around them are not explained",
                trace_lost.clone(),
            );
        }
        Families { latency, wakeups, overruns, missed, dropped, max, spikes_total, trace_lost }
    }

    /// One series per (thread, mechanism) pair, thread by thread.
    fn series(&self, cfg: &MeasureConfig) -> Vec<Series> {
        let mut series = Vec::new();
        for (t, setup) in cfg.threads.iter().enumerate() {
            let cpu = match setup.cpus.as_slice() {
                [c] => Some(*c),
                _ => None,
            };
            for m in &cfg.mechanisms {
                let labels =
                    SeriesLabels { mechanism: m.name().to_string(), cpu: cpu_label(cpu), thread: t.to_string() };
                series.push(Series {
                    labels: labels.clone(),
                    mechanism: *m,
                    cpu,
                    latency: self.latency.get_or_create(&labels).clone(),
                    wakeups: self.wakeups.get_or_create(&labels).clone(),
                    overruns: self.overruns.get_or_create(&labels).clone(),
                    missed: self.missed.get_or_create(&labels).clone(),
                    dropped: self.dropped.get_or_create(&labels).clone(),
                    max: self.max.get_or_create(&labels).clone(),
                    copied: Counts::default(),
                });
            }
        }
        series
    }
}

/// Fills the metrics from a run; lives on the watching thread.
pub struct Collector {
    exporter: Arc<Exporter>,
    series: Vec<Series>,
    mechanisms: Vec<rtick::Mechanism>,
    clock: ClockId,
    /// The rings, the windows and the spikes, explained with `--explain`.
    watcher: SpikeWatcher,
    spikes_total: Family<SpikeLabels, Counter>,
    /// The culprit names counted so far (bounded).
    culprit_names: BoundedNames,
    trace_lost: Counter,
}

impl Collector {
    /// Registers every metric and creates every series, before the run.
    pub fn new(
        cfg: &MeasureConfig,
        sys: &SystemInfo,
        spike: Option<Nanos>,
        live: Option<Live>,
        consumers: Vec<TraceConsumer>,
    ) -> Self {
        let mut registry = Registry::default();
        let t0 = &cfg.threads[0];
        let system = system_labels(sys, t0.policy.kernel_name(), t0.priority, live.is_some());
        let families = Families::register(&mut registry, Some(cfg.interval), system, spike.is_some(), live.is_some());
        let series = families.series(cfg);
        let spikes = spike.map(|s| Mutex::new(SpikeLog::new(s)));
        Collector {
            exporter: Arc::new(Exporter { registry, spikes }),
            series,
            mechanisms: cfg.mechanisms.clone(),
            clock: cfg.clock,
            watcher: SpikeWatcher::new(cfg, consumers, spike, CAPACITY, live),
            spikes_total: families.spikes_total,
            culprit_names: BoundedNames::new(CULPRIT_NAMES),
            trace_lost: families.trace_lost,
        }
    }

    pub fn exporter(&self) -> Arc<Exporter> {
        Arc::clone(&self.exporter)
    }

    /// A new run starts: its threads count from zero again, and are new threads.
    pub fn new_run(&mut self) {
        self.series.iter_mut().for_each(|s| s.copied = Counts::default());
        self.watcher.new_run();
    }

    /// Copies the counters, drains the rings, updates the maxima.
    pub fn collect(&mut self, p: &Progress<'_>) {
        let n = self.mechanisms.len();
        for (t, snap) in p.threads.iter().enumerate() {
            let counts =
                Counts { wakeups: snap.count, overruns: snap.overruns, missed: snap.missed, dropped: snap.dropped };
            self.series[t * n + snap.mechanism].copy(counts);
            if snap.tid != 0 {
                self.watcher.set_tid(t, snap.tid);
            }
        }
        self.update();
    }

    /// After a run: its final counts, each (thread, mechanism)'s — the
    /// progress callback last saw them up to 100 ms before the end, and only
    /// the mechanism each thread was then measuring — so that nothing is
    /// lost when [`Self::new_run`] starts counting from zero again.
    pub fn finish(&mut self, finals: impl IntoIterator<Item = Final>) {
        let n = self.mechanisms.len();
        for f in finals {
            if let Some(m) = self.mechanisms.iter().position(|&m| m == f.mechanism) {
                self.series[f.thread * n + m].copy(f.counts);
            }
            self.watcher.set_tid(f.thread, f.tid);
        }
        self.update();
    }

    /// Drains the rings and sets the window maxima.
    fn update(&mut self) {
        self.drain();
        for (i, s) in self.series.iter().enumerate() {
            s.max.set(self.watcher.window_max(i).map_or(f64::NAN, Nanos::as_secs_f64));
        }
    }

    /// Every row waiting in the rings into the histograms (the watcher
    /// keeps the window maxima); then the spikes, explained, into the log.
    fn drain(&mut self) {
        // One reading of the clocks per drain: a spike's wall and monotonic
        // times are its wake-up on the run's clock moved by their offsets.
        let (clock_now, mono_now, wall_now) = (self.clock.now(), ClockId::Monotonic.now(), SystemTime::now());
        let series = &self.series;
        let found = self.watcher.drain(|i, latency| series[i].latency.observe(latency.as_secs_f64()));
        let Drained { crowded, spikes: found, lost, trace_failed } = found;
        if let Some(e) = trace_failed {
            eprintln!("warning: --explain: reading the kernel trace failed ({e}): spikes are no longer explained");
        }
        self.trace_lost.inc_by(lost);
        let Some(log) = self.exporter.spikes.as_ref() else { return };
        if found.is_empty() && crowded.is_empty() {
            return;
        }
        // The phase and cause a spike is counted with when more came at once
        // than the log keeps: not explained (`too_many`), or not traced at all.
        let crowded_as = ("unknown", if self.watcher.explaining() { "too_many" } else { "untraced" });
        for &i in &crowded {
            count_spike(&self.spikes_total, &self.series[i].labels, crowded_as, ("none", String::new()));
        }
        let mut spikes = Vec::with_capacity(found.len());
        for w in found {
            let (s, row) = (&self.series[w.series], w.row);
            let explained = w.explained.as_ref().map(|e| e.as_ref().map_err(|why| why.token()));
            let (blamed, culprit) = blame(explained, &mut self.culprit_names);
            count_spike(&self.spikes_total, &s.labels, blamed, culprit);
            let latency = row.actual - row.planned;
            let ago = clock_now - row.actual;
            spikes.push(LoggedSpike {
                wall: wall_now - ago.max(Nanos::ZERO).to_std(),
                monotonic_ns: (mono_now - ago).as_ns(),
                mechanism: s.mechanism.name(),
                cpu: s.cpu,
                thread: row.thread,
                cycle: row.cycle,
                latency_ns: latency.as_ns(),
                explain: w.explained.map(|e| e.map(|b| Box::new((&b).into())).map_err(|why| why.reason())),
                attached: None,
            });
        }
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        log.not_offered(crowded.len() as u64);
        spikes.into_iter().for_each(|s| log.offer(s));
    }
}

/// What a spike is blamed on, as `rtick_spikes_total` labels it: (its
/// largest phase, its cause's token) and its culprit (kind, name among the
/// bounded `names`). `explained`: `None` untraced, else its breakdown or
/// the token of why it has none.
pub fn blame(
    explained: Option<Result<&Spike, &'static str>>,
    names: &mut BoundedNames,
) -> ((&'static str, &'static str), (&'static str, String)) {
    let (blamed, (kind, name)) = match explained {
        None => (("unknown", "untraced"), ("none", String::new())),
        Some(Ok(b)) => ((b.largest_phase(), b.cause.token()), b.culprit_label()),
        Some(Err(why)) => (("unknown", why), ("none", String::new())),
    };
    (blamed, (kind, if name.is_empty() { name } else { names.label(name) }))
}

/// Counts a spike of the series labelled `l`, blamed on (phase, cause)
/// and its culprit (kind, name).
pub fn count_spike(
    family: &Family<SpikeLabels, Counter>,
    l: &SeriesLabels,
    (phase, cause): (&str, &str),
    (kind, culprit): (&str, String),
) {
    let labels = SpikeLabels {
        mechanism: l.mechanism.clone(),
        cpu: l.cpu.clone(),
        thread: l.thread.clone(),
        phase: phase.into(),
        cause: cause.into(),
        culprit_kind: kind.into(),
        culprit,
    };
    family.get_or_create(&labels).inc();
}

/// The info metric's labels: kernel, preemption model, clocksource, the
/// (first) thread's `policy` (kernel name) and `priority` (after any
/// fallback), virtualization. Values are tokens, so that a query can match
/// them (`preempt="rt"`).
pub fn system_labels(sys: &SystemInfo, policy: &str, priority: i32, tracing: bool) -> Vec<(&'static str, String)> {
    vec![
        ("kernel", sys.kernel_release.clone()),
        ("preempt", sys.preempt.model.map_or("unknown", rtick::system::Preempt::name).to_string()),
        ("preempt_dynamic", sys.preempt.dynamic.to_string()),
        ("clocksource", sys.clocksource.clone().unwrap_or_else(|| "unknown".into())),
        ("policy", policy.to_string()),
        ("priority", priority.to_string()),
        ("virtualization", sys.virtualization.token()),
        // --explain traces the measured CPUs all the time, which adds to
        // every latency: figures of traced and untraced machines differ.
        ("tracing", if tracing { "on" } else { "off" }.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::measure::{Progress, ThreadSnapshot};
    use rtick::Mechanism;

    fn wakeups(c: &Collector, mechanism: &str) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &c.exporter.registry).unwrap();
        let prefix = format!("rtick_wakeups_total{{mechanism=\"{mechanism}\",cpu=\"any\",thread=\"0\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or("none").to_string()
    }

    /// Two runs of two interleaved mechanisms: the callback last saw each
    /// thread's current mechanism only, before the end; the final counts
    /// bring what it missed, and the next run counts from zero again.
    #[test]
    fn a_runs_final_counts_reach_the_counters() {
        let cfg = MeasureConfig { mechanisms: vec![Mechanism::ClockNanosleep, Mechanism::Spin], ..Default::default() };
        let (_, consumers) = rtick::measure::trace_rings(1, 16);
        let mut c = Collector::new(&cfg, &SystemInfo::read(), None, None, consumers);
        for _ in 0..2 {
            c.new_run();
            let snap = ThreadSnapshot { mechanism: 1, count: 70, ..Default::default() };
            let p = Progress {
                mechanism: Mechanism::Spin,
                mechanism_index: 1,
                mechanisms: 2,
                elapsed: Nanos::from_secs(1),
                threads: &[snap],
            };
            c.collect(&p);
            let last = |mechanism, wakeups, overruns, missed| Final {
                thread: 0,
                mechanism,
                tid: 10,
                counts: Counts { wakeups, overruns, missed, dropped: 0 },
            };
            c.finish([last(Mechanism::ClockNanosleep, 100, 1, 2), last(Mechanism::Spin, 90, 0, 0)]);
        }
        assert_eq!(wakeups(&c, "clock_nanosleep"), "200");
        assert_eq!(wakeups(&c, "spin"), "180");
    }
}

#[cfg(test)]
mod spike_tests {
    use super::*;
    use rtick::measure::{Progress, ThreadSnapshot, TraceRow};
    use rtick::Mechanism;
    use rtick::Time;

    fn spikes_total(c: &Collector) -> Vec<(String, u64)> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &c.exporter.registry).unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("rtick_spikes_total{"))
            .map(|l| {
                let (labels, n) = l.rsplit_once(' ').unwrap();
                (labels.to_string(), n.parse().unwrap())
            })
            .collect()
    }

    /// Two threads, each with more spikes in one drain than the log keeps,
    /// interleaved in time: the log keeps the latest of both, oldest first,
    /// and every spike is counted once (untraced, without --explain).
    #[test]
    fn a_crowded_drain_keeps_the_latest_spikes_of_all_threads() {
        let two = rtick::rt::ThreadSetup::default();
        let cfg = MeasureConfig {
            mechanisms: vec![Mechanism::ClockNanosleep],
            threads: vec![two.clone(), two],
            ..Default::default()
        };
        let (mut producers, consumers) = rtick::measure::trace_rings(2, 4096);
        let mut c = Collector::new(&cfg, &SystemInfo::read(), Some(Nanos::from_us(10)), None, consumers);
        c.new_run();
        // Thread 0 wakes at even µs, thread 1 at odd ones, 20 µs late.
        for k in 0..1000u64 {
            for (t, p) in producers.iter_mut().enumerate() {
                let at = Time((2 * k + t as u64) as i64 * 1000);
                let row = TraceRow {
                    thread: t as u32,
                    mechanism: Mechanism::ClockNanosleep,
                    cycle: k,
                    planned: at,
                    actual: at + Nanos::from_us(20),
                };
                p.push(row).unwrap();
            }
        }
        let snaps = [ThreadSnapshot::default(); 2];
        let p = Progress {
            mechanism: Mechanism::ClockNanosleep,
            mechanism_index: 0,
            mechanisms: 1,
            elapsed: Nanos::from_secs(1),
            threads: &snaps,
        };
        c.collect(&p);
        let v: serde_json::Value =
            serde_json::from_str(&c.exporter.spikes.as_ref().unwrap().lock().unwrap().json()).unwrap();
        assert_eq!(v["seen"], 2000);
        let spikes = v["spikes"].as_array().unwrap();
        assert_eq!(spikes.len(), CAPACITY);
        let order: Vec<(u64, u64)> =
            spikes.iter().map(|s| (s["cycle"].as_u64().unwrap(), s["thread"].as_u64().unwrap())).collect();
        // The last 128 cycles of each thread, in time order: 872/0, 872/1, 873/0 …
        let want: Vec<(u64, u64)> = (872..1000).flat_map(|k| [(k, 0), (k, 1)]).collect();
        assert_eq!(order, want);
        let counted = spikes_total(&c);
        assert_eq!(counted.len(), 2, "{counted:?}");
        for (labels, n) in counted {
            assert!(labels.contains(r#"phase="unknown",cause="untraced",culprit_kind="none",culprit="""#), "{labels}");
            assert_eq!(n, 1000, "{labels}");
        }
    }
}

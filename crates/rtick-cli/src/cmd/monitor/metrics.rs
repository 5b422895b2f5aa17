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

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use rtick::measure::{MeasureConfig, Progress, TraceConsumer};
use rtick::system::SystemInfo;
use rtick::{ClockId, Nanos};

use super::spikes::{Spike, SpikeLog};
use super::window::{WindowMax, WINDOW_SECS};

/// Upper bounds of the latency histogram's buckets, in seconds: 1, 2, 5 per
/// decade from 1 µs to 10 ms (early wake-ups, negative, fall in the first).
pub const BUCKETS: [f64; 13] = [1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2];

/// The labels of every series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SeriesLabels {
    pub mechanism: String,
    pub cpu: String,
    pub thread: String,
}

type Float = Gauge<f64, AtomicU64>;

/// What the HTTP workers read: the registry and the spike log.
pub struct Exporter {
    pub registry: Registry,
    pub spikes: Option<Mutex<SpikeLog>>,
}

/// One (thread, mechanism) pair's metrics, and what the collector last
/// copied from its counters.
struct Series {
    mechanism: &'static str,
    cpu: Option<usize>,
    latency: Histogram,
    wakeups: Counter,
    overruns: Counter,
    missed: Counter,
    dropped: Counter,
    max: Float,
    window: WindowMax,
    /// count, overruns, missed, dropped at the last copy (of this run).
    copied: [u64; 4],
}

impl Series {
    /// Adds to the counters what `now` (count, overruns, missed, dropped of
    /// this run) has more than the last copy.
    fn copy(&mut self, now: [u64; 4]) {
        for ((counter, was), now) in
            [&self.wakeups, &self.overruns, &self.missed, &self.dropped].into_iter().zip(&mut self.copied).zip(now)
        {
            counter.inc_by(now.saturating_sub(*was));
            *was = now;
        }
    }
}

/// Fills the metrics from a run; lives on the watching thread.
pub struct Collector {
    exporter: Arc<Exporter>,
    series: Vec<Series>,
    mechanisms: Vec<rtick::Mechanism>,
    consumers: Vec<TraceConsumer>,
    clock: ClockId,
    started: Instant,
}

impl Collector {
    /// Registers every metric and creates every series, before the run.
    pub fn new(cfg: &MeasureConfig, sys: &SystemInfo, spike: Option<Nanos>, consumers: Vec<TraceConsumer>) -> Self {
        let mut registry = Registry::default();
        let latency = Family::<SeriesLabels, Histogram>::new_with_constructor(|| Histogram::new(BUCKETS));
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
        let wakeups = counter(&mut registry, "rtick_wakeups", "Wake-ups measured");
        let overruns = counter(&mut registry, "rtick_overruns", "Wake-ups later than the following deadline");
        let missed = counter(&mut registry, "rtick_missed_periods", "Deadlines skipped after overruns");
        let dropped = counter(
            &mut registry,
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
        let interval = Float::default();
        interval.set(cfg.interval.as_secs_f64());
        registry.register_with_unit("rtick_interval", "The period between wake-ups", Unit::Seconds, interval);
        registry.register("rtick_build", "rtick's version", Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]));
        registry.register("rtick_system", "What the figures depend on", Info::new(system_labels(cfg, sys)));

        let mut series = Vec::new();
        for (t, setup) in cfg.threads.iter().enumerate() {
            let cpu = match setup.cpus.as_slice() {
                [c] => Some(*c),
                _ => None,
            };
            for m in &cfg.mechanisms {
                let labels = SeriesLabels {
                    mechanism: m.name().to_string(),
                    cpu: cpu.map_or("any".to_string(), |c| c.to_string()),
                    thread: t.to_string(),
                };
                series.push(Series {
                    mechanism: m.name(),
                    cpu,
                    latency: latency.get_or_create(&labels).clone(),
                    wakeups: wakeups.get_or_create(&labels).clone(),
                    overruns: overruns.get_or_create(&labels).clone(),
                    missed: missed.get_or_create(&labels).clone(),
                    dropped: dropped.get_or_create(&labels).clone(),
                    max: max.get_or_create(&labels).clone(),
                    window: WindowMax::default(),
                    copied: [0; 4],
                });
            }
        }
        let spikes = spike.map(|s| Mutex::new(SpikeLog::new(s)));
        Collector {
            exporter: Arc::new(Exporter { registry, spikes }),
            series,
            mechanisms: cfg.mechanisms.clone(),
            consumers,
            clock: cfg.clock,
            started: Instant::now(),
        }
    }

    pub fn exporter(&self) -> Arc<Exporter> {
        Arc::clone(&self.exporter)
    }

    /// A new run starts: its threads count from zero again.
    pub fn new_run(&mut self) {
        self.series.iter_mut().for_each(|s| s.copied = [0; 4]);
    }

    /// Copies the counters, drains the rings, updates the maxima.
    pub fn collect(&mut self, p: &Progress<'_>) {
        let n = self.mechanisms.len();
        for (t, snap) in p.threads.iter().enumerate() {
            self.series[t * n + snap.mechanism].copy([snap.count, snap.overruns, snap.missed, snap.dropped]);
        }
        self.update();
    }

    /// After a run: its final counts, each (thread, mechanism)'s — the
    /// progress callback last saw them up to 100 ms before the end, and only
    /// the mechanism each thread was then measuring — so that nothing is
    /// lost when [`Self::new_run`] starts counting from zero again.
    pub fn finish(&mut self, finals: impl IntoIterator<Item = (usize, rtick::Mechanism, [u64; 4])>) {
        let n = self.mechanisms.len();
        for (t, mechanism, counts) in finals {
            if let Some(m) = self.mechanisms.iter().position(|&m| m == mechanism) {
                self.series[t * n + m].copy(counts);
            }
        }
        self.update();
    }

    /// Drains the rings and sets the window maxima.
    fn update(&mut self) {
        let sec = self.started.elapsed().as_secs();
        self.drain(sec);
        for s in &self.series {
            s.max.set(s.window.max(sec).map_or(f64::NAN, |ns| Nanos(ns).as_secs_f64()));
        }
    }

    /// Every row waiting in the rings: histogram, window maximum, spike log.
    fn drain(&mut self, sec: u64) {
        let n = self.mechanisms.len();
        // One reading of the clocks per drain: a spike's wall and monotonic
        // times are its wake-up on the run's clock moved by their offsets.
        let (clock_now, mono_now, wall_now) = (self.clock.now(), ClockId::Monotonic.now(), SystemTime::now());
        let mut spikes = self.exporter.spikes.as_ref().map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
        for (t, ring) in self.consumers.iter_mut().enumerate() {
            while let Ok(row) = ring.pop() {
                let Some(m) = self.mechanisms.iter().position(|&m| m == row.mechanism) else { continue };
                let s = &mut self.series[t * n + m];
                let latency = row.actual - row.planned;
                s.latency.observe(latency.as_secs_f64());
                s.window.record(sec, latency.as_ns());
                if let Some(log) = spikes.as_deref_mut() {
                    if latency > log.threshold() {
                        let ago = clock_now - row.actual;
                        log.offer(Spike {
                            wall: wall_now - ago.max(Nanos::ZERO).to_std(),
                            monotonic_ns: (mono_now - ago).as_ns(),
                            mechanism: s.mechanism,
                            cpu: s.cpu,
                            thread: row.thread,
                            cycle: row.cycle,
                            latency_ns: latency.as_ns(),
                        });
                    }
                }
            }
        }
    }
}

/// The info metric's labels: kernel, preemption model, clocksource, policy
/// and priority (after any fallback), virtualization. Values are tokens, so
/// that a query can match them (`preempt="rt"`).
fn system_labels(cfg: &MeasureConfig, sys: &SystemInfo) -> Vec<(&'static str, String)> {
    let t0 = &cfg.threads[0];
    vec![
        ("kernel", sys.kernel_release.clone()),
        ("preempt", sys.preempt.model.map_or("unknown", rtick::system::Preempt::name).to_string()),
        ("preempt_dynamic", sys.preempt.dynamic.to_string()),
        ("clocksource", sys.clocksource.clone().unwrap_or_else(|| "unknown".into())),
        ("policy", t0.policy.kernel_name().to_string()),
        ("priority", t0.priority.to_string()),
        ("virtualization", sys.virtualization.token()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::measure::{Progress, ThreadSnapshot};
    use rtick::Mechanism::{ClockNanosleep, Spin};

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
        let cfg = MeasureConfig { mechanisms: vec![ClockNanosleep, Spin], ..Default::default() };
        let (_, consumers) = rtick::measure::trace_rings(1, 16);
        let mut c = Collector::new(&cfg, &SystemInfo::read(), None, consumers);
        for _ in 0..2 {
            c.new_run();
            let snap = ThreadSnapshot { mechanism: 1, count: 70, ..Default::default() };
            let p = Progress {
                mechanism: Spin,
                mechanism_index: 1,
                mechanisms: 2,
                elapsed: Nanos::from_secs(1),
                threads: &[snap],
            };
            c.collect(&p);
            c.finish([(0, ClockNanosleep, [100, 1, 2, 0]), (0, Spin, [90, 0, 0, 0])]);
        }
        assert_eq!(wakeups(&c, "clock_nanosleep"), "200");
        assert_eq!(wakeups(&c, "spin"), "180");
    }
}

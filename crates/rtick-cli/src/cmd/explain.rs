//! `rtick measure --explain`: the kernel's side of every wake-up. A tracing
//! session of rtick's own runs on the measured CPUs during the measurement;
//! afterwards each wake-up is split into its kernel phases and the worst
//! ones are explained, with their culprits named.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use rtick::explain::{explain_run_where, CpuTrace, Explained, SpikeChoice, StealSample};
use rtick::ktrace::{LostEvents, Options, Session};
use rtick::measure::{MeasureConfig, MeasureReport, TraceRow};
use rtick::{ClockId, Nanos};

use rtick_model::json::{ExplainJson, ExplainedJson, KernelPhaseJson, SpikeJson};

use super::explain_ab::{AbReport, Alternating};
use rtick_model::breakdown::Breakdown;

/// The kernel's trace buffers of `--explain` (measure's and monitor's), in
/// all: 64 MiB, each traced CPU's at most ktrace's default of 8 MiB.
const BUFFERS_KB: usize = 64 << 10;
/// The least buffer of a CPU (the reader drains it when a quarter full):
/// below it, even a quiet CPU's events would be lost between drains.
const MIN_BUFFER_KB: usize = 64;

/// Each traced CPU's kernel buffer: ktrace's default, or on a machine of
/// many traced CPUs an even share of [`BUFFERS_KB`] (at least
/// [`MIN_BUFFER_KB`]), so that the buffers follow the cap, not the CPU count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceBuffers {
    /// A CPU's buffer, KiB: a multiple of 4 (whole pages).
    pub kb: usize,
    /// The CPUs traced.
    pub cpus: usize,
}

impl TraceBuffers {
    pub fn for_cpus(cpus: usize) -> TraceBuffers {
        let cpus = cpus.max(1);
        let kb = (BUFFERS_KB / cpus / 4 * 4).clamp(MIN_BUFFER_KB, rtick::ktrace::DEFAULT_BUFFER_KB);
        TraceBuffers { kb, cpus }
    }

    /// Cut below the default to fit the cap.
    pub fn capped(&self) -> bool {
        self.kb < rtick::ktrace::DEFAULT_BUFFER_KB
    }

    /// `8 MiB a CPU`, or `168 KiB a CPU (8 MiB a CPU capped to fit 64 MiB for 384 CPUs)`.
    pub fn describe(&self) -> String {
        let kib = |kb: usize| if kb % 1024 == 0 { format!("{} MiB", kb >> 10) } else { format!("{kb} KiB") };
        let mut s = format!("{} a CPU", kib(self.kb));
        if self.capped() {
            s += &format!(
                " ({} a CPU capped to fit {} for {} CPUs)",
                kib(rtick::ktrace::DEFAULT_BUFFER_KB),
                kib(BUFFERS_KB),
                self.cpus
            );
        }
        s
    }
}

/// `--explain` matches the run's wake-ups to kernel events on
/// CLOCK_MONOTONIC (the trace clock `mono`): the run must use that clock.
pub fn check_clock(clock: ClockId) -> Result<(), crate::Usage> {
    if clock == ClockId::Monotonic {
        return Ok(());
    }
    Err(crate::Usage(format!(
        "--explain needs -c monotonic: the kernel trace is timed on CLOCK_MONOTONIC, and wake-ups on {} cannot be matched to it",
        clock.name()
    )))
}

/// A tracing session for the run, and the steal time sampled beside it.
pub struct Explaining {
    session: Session,
    cpus: Vec<usize>,
    steal: Vec<StealSample>,
    last_sample: Option<Instant>,
    choice: SpikeChoice,
    ab: Option<Alternating>,
    /// The kernel buffers traced into.
    pub buffers: TraceBuffers,
}

impl Explaining {
    /// Starts tracing the CPUs the run measures (all it may use when its
    /// threads are not pinned), before the measurement; with `ab`, the
    /// tracing is to alternate with plain stretches (`--explain-ab`).
    pub fn start(
        tracefs: Option<&Path>,
        cfg: &MeasureConfig,
        choice: SpikeChoice,
        ab: Option<Option<Nanos>>,
    ) -> Result<Explaining> {
        let cpus = cfg.measured_cpus()?;
        let root = rtick::ktrace::root(tracefs);
        let buffers = TraceBuffers::for_cpus(cpus.len());
        let opts = Options { buffer_kb: buffers.kb, ..Options::default() };
        let session = Session::start(&root, &cpus, &opts).context("--explain")?;
        let ab = ab.map(|p| Alternating::new(super::explain_ab::period(p, cfg), cfg));
        let mut e = Explaining { session, cpus, steal: Vec::new(), last_sample: None, choice, ab, buffers };
        e.sample_steal();
        Ok(e)
    }

    /// From the caller's progress callback (never a measuring thread):
    /// samples steal time and, with `--explain-ab`, switches the tracing.
    pub fn on_progress(&mut self) {
        self.sample_steal();
        if let Some(ab) = self.ab.as_mut() {
            ab.tick(&mut self.session);
        }
    }

    /// Samples the measured CPUs' steal time (from the caller's progress
    /// callback, ten times a second: never from a measuring thread).
    pub fn sample_steal(&mut self) {
        if self.last_sample.is_some_and(|t| t.elapsed().as_millis() < 100) {
            return;
        }
        self.last_sample = Some(Instant::now());
        self.steal.extend(StealSample::sample(&self.cpus));
    }

    /// Stops tracing (the instance is removed) and explains the run.
    pub fn finish(mut self, rows: &[TraceRow], report: &MeasureReport) -> Result<Explanation> {
        self.last_sample = None;
        self.sample_steal();
        let missing: Vec<String> = self.session.missing_events().iter().map(|s| s.to_string()).collect();
        let capture = self.session.stop().context("--explain: reading the trace")?;
        let cpus: Vec<CpuTrace<'_>> = capture.per_cpu.iter().map(CpuTrace::from).collect();
        // With the A/B only the traced stretches can be explained.
        let ab = self.ab.as_ref();
        let traced = |r: &TraceRow| ab.is_none_or(|ab| ab.traced(r));
        let explained = explain_run_where(&cpus, rows, &report.results, &self.steal, self.choice, traced);
        let ab = self.ab.map(|ab| ab.finish(rows, &report.results, self.choice));
        let events = cpus.iter().map(|c| c.events.len()).sum();
        Ok(Explanation { explained, lost: capture.lost, missing, events, ab })
    }
}

/// What `--explain` found.
pub struct Explanation {
    explained: Vec<Explained>,
    lost: LostEvents,
    missing: Vec<String>,
    events: usize,
    ab: Option<AbReport>,
}

impl Explanation {
    /// The phases of the wake-up of trace row `r`, if it was matched.
    pub fn phases_of(&self, r: &TraceRow) -> Option<rtick::explain::Phases> {
        self.explained
            .iter()
            .find(|e| e.mechanism == r.mechanism && e.thread == r.thread as usize)
            .and_then(|e| e.by_cycle.get(&r.cycle).copied())
    }

    /// The phase table, then one line per spike (`output::explain`, which
    /// `rtick report` prints a saved run through).
    pub fn render(&self, nsecs: bool) -> String {
        let b = Breakdown::from_explain(&self.json()).expect("measure writes every phase");
        let mut s =
            crate::output::explain::render(&b, nsecs, self.lost.any().then(|| format!("{:?}", self.lost)).as_deref());
        if let Some(ab) = &self.ab {
            s.push_str(&ab.render(nsecs));
        }
        s
    }

    /// The JSON form (`explain` in the run file).
    pub fn json(&self) -> ExplainJson {
        ExplainJson {
            events: self.events as u64,
            lost_events: self.lost.count(),
            missing_events: self.missing.clone(),
            results: self
                .explained
                .iter()
                .map(|e| ExplainedJson {
                    mechanism: e.mechanism.name().into(),
                    thread: e.thread,
                    wakeups: e.wakeups,
                    matched: e.matched,
                    not_timer_woken: e.not_timer_woken.map(str::to_string),
                    unmatched: e.unmatched.iter().map(|(r, n)| (r.to_string(), *n)).collect(),
                    phases_ns: e
                        .phases
                        .iter()
                        .map(|(name, [p50, p99, max])| KernelPhaseJson {
                            phase: name.to_string(),
                            p50: p50.as_ns(),
                            p99: p99.as_ns(),
                            max: max.as_ns(),
                        })
                        .collect(),
                    spikes: e.spikes.iter().map(SpikeJson::from).collect(),
                })
                .collect(),
            ab: self.ab.as_ref().map(AbReport::json),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TraceBuffers;

    /// Many traced CPUs (an unpinned thread on a 384-CPU machine) share the
    /// 64 MiB instead of taking 8 MiB each, and the header says so.
    #[test]
    fn trace_buffers_follow_the_cap_not_the_cpu_count() {
        for cpus in [0, 1, 2, 8, 9, 64, 384, 1024] {
            let b = TraceBuffers::for_cpus(cpus);
            assert!(b.kb * b.cpus <= 64 << 10 && b.kb % 4 == 0 && b.kb >= 64, "{cpus} CPUs: {b:?}");
        }
        assert_eq!(TraceBuffers::for_cpus(8).describe(), "8 MiB a CPU");
        let big = TraceBuffers::for_cpus(384);
        assert_eq!(big.kb, 168);
        assert_eq!(big.describe(), "168 KiB a CPU (8 MiB a CPU capped to fit 64 MiB for 384 CPUs)");
    }
}

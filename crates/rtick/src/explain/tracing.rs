//! The lifecycle of explaining a run (`measure --explain`), in the manner
//! of rtla's timerlat auto-analysis (init, collect, analyse, destroy) but
//! returning data: [`Tracing::start`] before the measurement, then
//! [`Tracing::on_progress`] from the caller's progress callback while it
//! runs, then [`Tracing::finish`] with the run's rows → an [`ExplainedRun`].

use std::path::Path;
use std::time::Instant;

use super::alternate::{AbOutcome, Alternating};
use super::input::CpuTrace;
use super::run::{explain_run_where, Explained, SpikeChoice};
use super::{Cgroups, Phases, StealSample};
use crate::cfs::{CfsRun, CfsWatch, Throttling};
use crate::error::Result;
use crate::ktrace::{self, LostEvents, Options, Session, Tracepoint, DEFAULT_BUFFER_KB};
use crate::measure::{ThreadResult, TraceRow};

/// The kernel's trace buffers of an explained run (measure's and
/// monitor's), in all: 64 MiB, each traced CPU's at most ktrace's default of 8 MiB.
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
    /// The buffers for tracing `cpus` CPUs.
    pub fn for_cpus(cpus: usize) -> TraceBuffers {
        let cpus = cpus.max(1);
        let kb = (BUFFERS_KB / cpus / 4 * 4).clamp(MIN_BUFFER_KB, DEFAULT_BUFFER_KB);
        TraceBuffers { kb, cpus }
    }

    /// Cut below the default to fit the cap.
    pub fn capped(&self) -> bool {
        self.kb < DEFAULT_BUFFER_KB
    }

    /// `8 MiB a CPU`, or `168 KiB a CPU (8 MiB a CPU capped to fit 64 MiB for 384 CPUs)`.
    pub fn describe(&self) -> String {
        let kib = |kb: usize| if kb % 1024 == 0 { format!("{} MiB", kb >> 10) } else { format!("{kb} KiB") };
        let mut s = format!("{} a CPU", kib(self.kb));
        if self.capped() {
            s += &format!(
                " ({} a CPU capped to fit {} for {} CPUs)",
                kib(DEFAULT_BUFFER_KB),
                kib(BUFFERS_KB),
                self.cpus
            );
        }
        s
    }
}

/// A tracing session for a run, and the steal time sampled beside it.
#[derive(Debug)]
pub struct Tracing {
    session: Session,
    cpus: Vec<usize>,
    steal: Vec<StealSample>,
    last_sample: Option<Instant>,
    choice: SpikeChoice,
    ab: Option<Alternating>,
    buffers: TraceBuffers,
    cfs: Option<CfsWatch>,
}

impl Tracing {
    /// Starts tracing `cpus` (those the run measures: all it may use when
    /// its threads are not pinned) in the tracefs at `tracefs` (the mounted
    /// one when none), before the measurement; with `ab`, the tracing
    /// alternates with plain stretches.
    pub fn start(
        tracefs: Option<&Path>,
        cpus: Vec<usize>,
        choice: SpikeChoice,
        ab: Option<Alternating>,
    ) -> Result<Tracing> {
        let root = ktrace::root(tracefs);
        let buffers = TraceBuffers::for_cpus(cpus.len());
        let opts = Options { buffer_kb: buffers.kb, events: &Tracepoint::EXPLAIN, ..Options::default() };
        let session = Session::start(&root, &cpus, &opts)?;
        // The measuring threads are in this process's cgroup.
        let sys = crate::system::SysRoot::default();
        let cfs = crate::cgroup::cpu_cgroup(&sys).and_then(|cg| CfsWatch::start(sys, &cg));
        let mut t = Tracing { session, cpus, steal: Vec::new(), last_sample: None, choice, ab, buffers, cfs };
        t.sample_steal();
        Ok(t)
    }

    /// The kernel buffers traced into.
    pub fn buffers(&self) -> TraceBuffers {
        self.buffers
    }

    /// From the caller's progress callback (never a measuring thread):
    /// samples steal time and, with an A/B, switches the tracing.
    pub fn on_progress(&mut self) {
        self.sample_steal();
        if let Some(ab) = self.ab.as_mut() {
            ab.tick(&mut self.session);
        }
    }

    /// Samples the measured CPUs' steal time and the CFS throttling of
    /// the threads' cgroups (ten times a second at most).
    fn sample_steal(&mut self) {
        if self.last_sample.is_some_and(|t| t.elapsed().as_millis() < 100) {
            return;
        }
        self.last_sample = Some(Instant::now());
        self.steal.extend(StealSample::sample(&self.cpus));
        if let Some(c) = self.cfs.as_mut() {
            c.sample();
        }
    }

    /// Stops tracing (the instance is removed) and explains the run from
    /// every wake-up's row and its per-thread results.
    pub fn finish(mut self, rows: &[TraceRow], results: &[ThreadResult]) -> Result<ExplainedRun> {
        self.last_sample = None;
        self.sample_steal();
        let missing = self.session.missing_events().to_vec();
        let capture = self.session.stop()?;
        let cpus: Vec<CpuTrace<'_>> = capture.per_cpu.iter().map(CpuTrace::from).collect();
        // With the A/B only the traced stretches can be explained.
        let ab = self.ab.as_ref();
        let traced = |r: &TraceRow| ab.is_none_or(|ab| ab.traced(r));
        let mut explained = explain_run_where(&cpus, rows, results, &self.steal, self.choice, traced);
        let cfs = self.cfs.map(CfsWatch::finish).unwrap_or_default();
        // Right after the run, while most culprits still live.
        explained.iter_mut().flat_map(|e| e.spikes.iter_mut()).for_each(|s| {
            s.find_cgroup(Cgroups::system());
            s.find_cfs_throttling(&cfs);
        });
        let ab = self.ab.map(|ab| ab.finish(rows, results, self.choice));
        let events = cpus.iter().map(|c| c.events.len()).sum();
        let stacks_unavailable = capture.stacks_unavailable;
        let CfsRun { throttling: cfs, .. } = cfs;
        Ok(ExplainedRun { explained, lost: capture.lost, missing, events, ab, stacks_unavailable, cfs })
    }
}

/// A run explained: what [`Tracing::finish`] found.
#[derive(Debug)]
pub struct ExplainedRun {
    /// One per mechanism and thread, in the run's order.
    pub explained: Vec<Explained>,
    /// Events the ring buffer or the reader lost.
    pub lost: LostEvents,
    /// Trace events this kernel lacks.
    pub missing: Vec<&'static str>,
    /// Kernel events recorded on the measured CPUs.
    pub events: usize,
    /// With an A/B: the traced stretches against the plain ones.
    pub ab: Option<AbOutcome>,
    /// Why the spikes have no kernel stack, when they have none.
    pub stacks_unavailable: Option<String>,
    /// The CFS throttling of the measuring threads' cgroup and of its
    /// ancestors with a quota, over the run (empty without bandwidth control).
    pub cfs: Vec<Throttling>,
}

impl ExplainedRun {
    /// The phases of the wake-up of trace row `r`, if it was matched.
    pub fn phases_of(&self, r: &TraceRow) -> Option<Phases> {
        self.explained
            .iter()
            .find(|e| e.mechanism == r.mechanism && e.thread == r.thread as usize)
            .and_then(|e| e.by_cycle.get(&r.cycle).copied())
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

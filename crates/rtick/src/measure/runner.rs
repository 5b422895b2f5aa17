//! Runs the mechanisms one after the other and collects the results.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::config::MeasureConfig;
use super::engine::{run_thread, Gate, SlotOutcome, ThreadCtx, ThreadResult};
use super::progress::{Progress, ThreadProgress};
use super::trace::TraceProducer;
use super::TraceMark;
use crate::error::{Error, Result};
use crate::time::Nanos;
use crate::wait::Mechanism;

/// The latency that stopped a run with `breaktrace`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BreakEvent {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Thread index.
    pub thread: usize,
    /// Grid index of the wake-up.
    pub cycle: u64,
    /// Its latency.
    pub latency: Nanos,
    /// With a trace mark: whether it was written and tracing stopped.
    pub marked: bool,
}

/// Where the first thread over the breaktrace threshold leaves its mark.
#[derive(Debug, Default)]
pub(crate) struct BreakSlot {
    claimed: AtomicBool,
    mechanism: AtomicUsize,
    thread: AtomicUsize,
    cycle: AtomicU64,
    latency: AtomicI64,
    marked: AtomicBool,
    done: AtomicBool,
}

impl BreakSlot {
    /// Records the first break; the first claimer also marks the kernel trace.
    pub(crate) fn claim(
        &self,
        mechanism: Mechanism,
        thread: usize,
        cycle: u64,
        latency: Nanos,
        mark: Option<(&TraceMark, Nanos)>,
    ) {
        if self.claimed.compare_exchange(false, true, AcqRel, Acquire).is_ok() {
            if let Some((t, threshold)) = mark {
                self.marked.store(t.hit(mechanism, thread, cycle, latency, threshold), Relaxed);
            }
            let idx = crate::wait::KINDS.iter().position(|k| k.mechanism == mechanism).unwrap_or(0);
            self.mechanism.store(idx, Relaxed);
            self.thread.store(thread, Relaxed);
            self.cycle.store(cycle, Relaxed);
            self.latency.store(latency.as_ns(), Relaxed);
            self.done.store(true, Release);
        }
    }

    fn event(&self) -> Option<BreakEvent> {
        self.done.load(Acquire).then(|| BreakEvent {
            mechanism: crate::wait::KINDS[self.mechanism.load(Relaxed)].mechanism,
            thread: self.thread.load(Relaxed),
            cycle: self.cycle.load(Relaxed),
            latency: Nanos(self.latency.load(Relaxed)),
            marked: self.marked.load(Relaxed),
        })
    }
}

/// A mechanism that could not run here, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Why, with the fix where there is one.
    pub reason: String,
}

/// Everything a run measured.
#[derive(Debug)]
pub struct MeasureReport {
    /// One entry per mechanism and thread, mechanisms in run order.
    pub results: Vec<ThreadResult>,
    /// Mechanisms that could not run on this system.
    pub unavailable: Vec<Unavailable>,
    /// Whether the run was stopped early from outside (Ctrl-C, SIGTERM).
    pub interrupted: bool,
    /// The wake-up that stopped the run, with `breaktrace`.
    pub breaktrace: Option<BreakEvent>,
    /// Wall time of the whole run.
    pub elapsed: Nanos,
}

/// How often the progress callback runs.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Measures every mechanism of `cfg`: one after the other, or interleaved
/// in slices when `cfg.interleave` is set.
///
/// `stop` ends the run early (each thread finishes its current wait first);
/// set it from a signal handler for Ctrl-C. `traces`, when given, holds one
/// ring producer per thread. `observe` is called from the calling thread
/// about ten times a second.
///
/// Signal-based mechanisms need their signals blocked in every thread: call
/// [`crate::wait::block_timer_signals`] before the process spawns any thread.
pub fn run(
    cfg: &MeasureConfig,
    stop: &AtomicBool,
    traces: Option<&mut [TraceProducer]>,
    mut observe: impl FnMut(&Progress<'_>),
) -> Result<MeasureReport> {
    cfg.validate()?;
    if let Some(t) = traces.as_deref() {
        if t.len() != cfg.threads.len() {
            return Err(Error::Invalid("one trace ring per thread is needed".into()));
        }
    }
    crate::wait::block_timer_signals()?;
    let brk = BreakSlot::default();
    let started = Instant::now();
    let slices = cfg.slices();
    let n = cfg.threads.len();
    let progress: Vec<ThreadProgress> = (0..n).map(|_| ThreadProgress::new()).collect();
    let gate = Gate::default();
    let between = Barrier::new(n);
    let mut rings: Vec<Option<&mut TraceProducer>> = match traces {
        Some(t) => t.iter_mut().map(Some).collect(),
        None => (0..n).map(|_| None).collect(),
    };

    let outcomes: Vec<std::thread::Result<Result<Option<Vec<SlotOutcome>>>>> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        let mut spawn_error = None;
        for (i, setup) in cfg.threads.iter().enumerate() {
            let ctx = ThreadCtx {
                index: i,
                setup,
                cfg,
                slices: &slices,
                progress: &progress[i],
                stop,
                gate: &gate,
                between: &between,
                brk: &brk,
                trace: rings[i].take(),
            };
            match std::thread::Builder::new().name(format!("rtick-t{i}")).spawn_scoped(s, move || run_thread(ctx)) {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error = Some(Error::sys("pthread_create", e, "check RLIMIT_NPROC and memory"));
                    break;
                }
            }
        }
        if spawn_error.is_some() {
            gate.abort.store(true, Release);
        }
        // Open the gate once every thread is ready (or one has failed).
        while gate.ready.load(Acquire) < handles.len() && !gate.abort.load(Acquire) {
            std::thread::sleep(Duration::from_micros(500));
        }
        gate.open.store(true, Release);
        let t0 = Instant::now();
        let mut next_report = t0;
        let mut snaps = vec![Default::default(); handles.len()];
        while !handles.iter().all(|h| h.is_finished()) {
            if Instant::now() >= next_report && !handles.is_empty() {
                for (s, p) in snaps.iter_mut().zip(&progress) {
                    *s = p.snapshot();
                }
                let mi = progress[0].mechanism();
                observe(&Progress {
                    mechanism: cfg.mechanisms[mi],
                    mechanism_index: mi,
                    mechanisms: cfg.mechanisms.len(),
                    elapsed: Nanos::from_std(t0.elapsed()),
                    threads: &snaps,
                });
                next_report += PROGRESS_EVERY;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut out: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        if let Some(e) = spawn_error {
            out.push(Ok(Err(e)));
        }
        out
    });

    let mut per_thread = Vec::new();
    for o in outcomes {
        match o {
            Ok(Ok(Some(slots))) => per_thread.push(slots),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(Error::Invalid("a measuring thread panicked".into())),
        }
    }
    // Regroup: mechanisms in run order, threads in index order.
    let mut results = Vec::new();
    let mut unavailable: Vec<Unavailable> = Vec::new();
    for m in 0..cfg.mechanisms.len() {
        for slots in per_thread.iter_mut() {
            match std::mem::replace(&mut slots[m], SlotOutcome::NotReached) {
                SlotOutcome::Measured(r) => results.push(*r),
                SlotOutcome::NotReached => {}
                SlotOutcome::Unavailable(mechanism, reason) => {
                    if !unavailable.iter().any(|u| u.mechanism == mechanism) {
                        unavailable.push(Unavailable { mechanism, reason });
                    }
                }
            }
        }
    }
    let breaktrace = brk.event();
    Ok(MeasureReport {
        interrupted: stop.load(Relaxed) && breaktrace.is_none(),
        breaktrace,
        results,
        unavailable,
        elapsed: Nanos::from_std(started.elapsed()),
    })
}

//! Runs the mechanisms one after the other and collects the results.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU16, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Barrier;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use super::config::MeasureConfig;
use super::engine::{run_thread, Gate, SlotOutcome, ThreadCtx, ThreadResult};
use super::progress::{Progress, ThreadProgress};
use super::slices::Slice;
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
    mechanism: AtomicU16,
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
            self.mechanism.store(mechanism.code(), Relaxed);
            self.thread.store(thread, Relaxed);
            self.cycle.store(cycle, Relaxed);
            self.latency.store(latency.as_ns(), Relaxed);
            self.done.store(true, Release);
        }
    }

    fn event(&self) -> Option<BreakEvent> {
        self.done.load(Acquire).then(|| BreakEvent {
            mechanism: Mechanism::from_code(self.mechanism.load(Relaxed)),
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
    observe: impl FnMut(&Progress<'_>),
) -> Result<MeasureReport> {
    cfg.validate()?;
    let mut rings = trace_rings_per_thread(traces, cfg.threads.len())?;
    crate::wait::block_timer_signals()?;
    let started = Instant::now();
    let n = cfg.threads.len();
    let shared = Shared {
        slices: cfg.slices(),
        progress: (0..n).map(|_| ThreadProgress::new()).collect(),
        gate: Gate::default(),
        between: Barrier::new(n),
        brk: BreakSlot::default(),
    };
    let outcomes = std::thread::scope(|s| {
        let (handles, spawn_error) = spawn_threads(s, cfg, stop, &shared, &mut rings);
        if spawn_error.is_some() {
            shared.gate.abort.store(true, Release);
        }
        watch(cfg, &shared, &handles, observe);
        let mut out: Vec<_> = handles.into_iter().enumerate().map(|(i, h)| thread_outcome(i, h.join())).collect();
        out.extend(spawn_error.map(Err));
        out
    });
    let per_thread = outcomes.into_iter().filter_map(Result::transpose).collect::<Result<Vec<_>>>()?;
    let (results, unavailable) = regroup(cfg.mechanisms.len(), per_thread);
    let breaktrace = shared.brk.event();
    Ok(MeasureReport {
        interrupted: stop.load(Relaxed) && breaktrace.is_none(),
        breaktrace,
        results,
        unavailable,
        elapsed: Nanos::from_std(started.elapsed()),
    })
}

/// What the measuring threads share with each other and the runner.
struct Shared {
    slices: Vec<Slice>,
    progress: Vec<ThreadProgress>,
    gate: Gate,
    between: Barrier,
    brk: BreakSlot,
}

/// One optional trace ring per thread.
fn trace_rings_per_thread(
    traces: Option<&mut [TraceProducer]>,
    threads: usize,
) -> Result<Vec<Option<&mut TraceProducer>>> {
    match traces {
        Some(t) if t.len() != threads => Err(Error::Invalid("one trace ring per thread is needed".into())),
        Some(t) => Ok(t.iter_mut().map(Some).collect()),
        None => Ok((0..threads).map(|_| None).collect()),
    }
}

type ThreadOutcome = Result<Option<Vec<SlotOutcome>>>;

/// Starts one measuring thread per setup; stops at the first that cannot be
/// created, returning the threads started and that error.
fn spawn_threads<'scope, 'env>(
    s: &'scope Scope<'scope, 'env>,
    cfg: &'env MeasureConfig,
    stop: &'env AtomicBool,
    shared: &'env Shared,
    rings: &mut [Option<&'env mut TraceProducer>],
) -> (Vec<ScopedJoinHandle<'scope, ThreadOutcome>>, Option<Error>) {
    let mut handles = Vec::new();
    for (i, setup) in cfg.threads.iter().enumerate() {
        let ctx = ThreadCtx {
            index: i,
            setup,
            cfg,
            slices: &shared.slices,
            progress: &shared.progress[i],
            stop,
            gate: &shared.gate,
            between: &shared.between,
            brk: &shared.brk,
            trace: rings[i].take(),
        };
        match std::thread::Builder::new().name(format!("rtick-t{i}")).spawn_scoped(s, move || run_thread(ctx)) {
            Ok(h) => handles.push(h),
            Err(e) => return (handles, Some(Error::sys("pthread_create", e, "check RLIMIT_NPROC and memory"))),
        }
    }
    (handles, None)
}

/// Opens the start gate once every thread is ready (or the start was
/// aborted), then calls `observe` with progress snapshots until every
/// thread has finished.
fn watch(
    cfg: &MeasureConfig,
    shared: &Shared,
    handles: &[ScopedJoinHandle<'_, ThreadOutcome>],
    mut observe: impl FnMut(&Progress<'_>),
) {
    let gate = &shared.gate;
    while gate.ready.load(Acquire) < handles.len() && !gate.abort.load(Acquire) {
        std::thread::sleep(Duration::from_micros(500));
    }
    gate.open.store(true, Release);
    let t0 = Instant::now();
    let mut next_report = t0;
    let mut snaps = vec![Default::default(); handles.len()];
    while !handles.iter().all(|h| h.is_finished()) {
        if Instant::now() >= next_report && !handles.is_empty() {
            for (s, p) in snaps.iter_mut().zip(&shared.progress) {
                *s = p.snapshot();
            }
            let mi = shared.progress[0].mechanism();
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
}

/// A joined thread's outcome; a panic becomes an error that keeps its message.
fn thread_outcome<T>(index: usize, joined: std::thread::Result<Result<T>>) -> Result<T> {
    joined.unwrap_or_else(|payload| {
        let message = match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
            (Some(s), _) => s.to_string(),
            (None, Some(s)) => s.clone(),
            (None, None) => "(a panic payload that is not text)".into(),
        };
        Err(Error::Panicked { thread: index, message })
    })
}

/// Results with mechanisms in run order, threads in index order; each
/// unavailable mechanism once, with the reason of its first thread that
/// reported one. A mechanism unavailable to any thread (refused at its
/// arm, or stopped mid-run) is unavailable for the run: none of its
/// threads' results is kept, so it is never both measured and unavailable.
fn regroup(mechanisms: usize, mut per_thread: Vec<Vec<SlotOutcome>>) -> (Vec<ThreadResult>, Vec<Unavailable>) {
    let mut results = Vec::new();
    let mut unavailable = Vec::new();
    for m in 0..mechanisms {
        let outcomes: Vec<_> =
            per_thread.iter_mut().map(|slots| std::mem::replace(&mut slots[m], SlotOutcome::NotReached)).collect();
        let refused = outcomes.iter().find_map(|o| match o {
            SlotOutcome::Unavailable(mechanism, reason) => {
                Some(Unavailable { mechanism: *mechanism, reason: reason.clone() })
            }
            _ => None,
        });
        match refused {
            Some(u) => unavailable.push(u),
            None => results.extend(outcomes.into_iter().filter_map(|o| match o {
                SlotOutcome::Measured(r) => Some(*r),
                _ => None,
            })),
        }
    }
    (results, unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_thread_is_an_error_with_its_message() {
        let joined = |f: fn() -> Result<u8>| std::thread::spawn(f).join();
        let e =
            thread_outcome(3, joined(|| panic!("index out of bounds: the len is 2 but the index is 7"))).unwrap_err();
        assert!(matches!(e, Error::Panicked { thread: 3, .. }), "{e:?}");
        assert_eq!(e.to_string(), "measuring thread 3 panicked: index out of bounds: the len is 2 but the index is 7; this is a bug in rtick: please report it with the command line");
        let e = thread_outcome(0, joined(|| panic!("slot {} of {}", 5, 4))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "measuring thread 0 panicked: slot 5 of 4; this is a bug in rtick: please report it with the command line",
            "a formatted message is a String"
        );
        let e = thread_outcome(1, joined(|| std::panic::panic_any(42u32))).unwrap_err();
        assert!(e.to_string().starts_with("measuring thread 1 panicked: "), "{e}");
        // What a thread returns passes through.
        assert_eq!(thread_outcome(0, joined(|| Ok(7))).unwrap(), 7);
        assert!(matches!(thread_outcome(0, joined(|| Err(Error::Invalid("x".into())))), Err(Error::Invalid(_))));
    }

    #[test]
    fn the_break_keeps_its_mechanism_listed_or_not() {
        for m in [crate::testing::MOCK, Mechanism::Futex, Mechanism::ClockNanosleep] {
            let slot = BreakSlot::default();
            slot.claim(m, 2, 7, Nanos(5_000), None);
            let e = slot.event().expect("claimed");
            assert_eq!((e.mechanism, e.thread, e.cycle, e.latency), (m, 2, 7, Nanos(5_000)));
        }
    }

    fn measured(mechanism: Mechanism, thread: usize) -> SlotOutcome {
        SlotOutcome::Measured(Box::new(ThreadResult {
            mechanism,
            thread,
            tid: 100 + thread as i32,
            cpu: None,
            pinned: Vec::new(),
            latency: crate::stats::LatencyStats::new(),
            period: crate::stats::LatencyStats::new(),
            buckets: None,
            overruns: 0,
            missed: 0,
            cpu_time: Nanos::ZERO,
            wall: Nanos::ZERO,
            trace_dropped: 0,
            slack: None,
            calibration: None,
            first_deadline: None,
            clock_steps: 0,
            clock_stepped: Nanos::ZERO,
            warm_up_discarded: 0,
        }))
    }

    /// Thread 0 measured sched-deadline, thread 1 was stopped mid-run (its
    /// watchdog released it): the mechanism is unavailable for the run, once,
    /// with no result of any thread; the other mechanism keeps both.
    #[test]
    fn a_mechanism_unavailable_to_one_thread_is_unavailable_for_all_never_also_measured() {
        let (dl, futex) = (Mechanism::SchedDeadline, Mechanism::Futex);
        let why = "stopped mid-run: released".to_string();
        let per_thread = vec![
            vec![measured(dl, 0), measured(futex, 0)],
            vec![SlotOutcome::Unavailable(dl, why.clone()), measured(futex, 1)],
        ];
        let (results, unavailable) = regroup(2, per_thread);
        assert_eq!(unavailable, vec![Unavailable { mechanism: dl, reason: why.clone() }]);
        let kept: Vec<_> = results.iter().map(|r| (r.mechanism, r.thread)).collect();
        assert_eq!(kept, vec![(futex, 0), (futex, 1)]);
        // Whichever thread it is, and when both were refused: listed once.
        let per_thread = vec![
            vec![SlotOutcome::Unavailable(dl, why.clone()), SlotOutcome::NotReached],
            vec![SlotOutcome::Unavailable(dl, "other".into()), SlotOutcome::NotReached],
            vec![measured(dl, 2), SlotOutcome::NotReached],
        ];
        let (results, unavailable) = regroup(2, per_thread);
        assert!(results.is_empty(), "{results:?}");
        assert_eq!(unavailable, vec![Unavailable { mechanism: dl, reason: why }]);
    }
}

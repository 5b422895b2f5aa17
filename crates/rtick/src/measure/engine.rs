//! One measuring thread: setup, start gate, then its slices of the
//! absolute-deadline loop.
//!
//! The thread builds one waiter per mechanism (a *slot*) before the start
//! gate, and keeps it across slices, with its statistics and its grid: a
//! later slice of the same mechanism resumes on the same grid
//! `first + k·interval`, so trace cycles stay grid indices for the whole run.
//!
//! The loop is the application's: each slot drives the [`Ticker`] that
//! [`crate::periodic::Periodic`] is made of (grid, waiter, clock-step
//! watch); statistics, trace rows, progress and the break are what this
//! module does with each tick. The loop body allocates nothing, takes no
//! lock, formats nothing, and makes no system call but the wait: statistics
//! are preallocated, progress goes through relaxed atomics, trace rows
//! through a lock-free ring.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::Barrier;
use std::time::Duration;

use super::config::MeasureConfig;
use super::progress::ThreadProgress;
use super::runner::BreakSlot;
use super::slices::Slice;
use super::trace::{TraceProducer, TraceRow};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::periodic::ticker::Ticker;
use crate::rt::{prefault_stack, ThreadSetup};
use crate::schedule::Advance;
use crate::stats::{BucketHistogram, LatencyStats};
use crate::sys::{sched, timer};
use crate::time::{Nanos, Time};
use crate::wait::{self, Calibration, Mechanism};

/// What one thread measured for one mechanism.
#[derive(Clone, Debug)]
pub struct ThreadResult {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Thread index.
    pub thread: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// The CPU the thread ran on at the end.
    pub cpu: Option<usize>,
    /// The CPUs it was pinned to (empty: not pinned).
    pub pinned: Vec<usize>,
    /// Wake-up latency (actual − planned).
    pub latency: LatencyStats,
    /// Period deviation (actual_k − actual_{k−1} − interval), within slices.
    pub period: LatencyStats,
    /// cyclictest-style buckets, when asked for.
    pub buckets: Option<BucketHistogram>,
    /// Wake-ups later than the following deadline.
    pub overruns: u64,
    /// Deadlines skipped after overruns.
    pub missed: u64,
    /// CPU time the thread used while measuring this mechanism.
    pub cpu_time: Nanos,
    /// Wall time spent measuring this mechanism.
    pub wall: Nanos,
    /// Trace rows dropped because the ring was full.
    pub trace_dropped: u64,
    /// The hybrid's slack at the end.
    pub slack: Option<Nanos>,
    /// How the hybrid's slack was calibrated.
    pub calibration: Option<Calibration>,
    /// The first deadline (cycle 0) of this mechanism's grid.
    pub first_deadline: Option<Time>,
    /// Steps of the clock (CLOCK_REALTIME, CLOCK_TAI) seen during the run:
    /// those wake-ups were not recorded, and the loop went on with the
    /// next deadline of its grid after each.
    pub clock_steps: u64,
    /// The steps added up.
    pub clock_stepped: Nanos,
    /// Wake-ups of the warm-up ([`MeasureConfig::warm_up`]), discarded:
    /// in no statistic, no trace row, no progress.
    pub warm_up_discarded: u64,
}

impl ThreadResult {
    /// CPU time as a percentage of wall time.
    pub fn cpu_percent(&self) -> f64 {
        if self.wall.as_ns() <= 0 {
            0.0
        } else {
            100.0 * self.cpu_time.as_ns() as f64 / self.wall.as_ns() as f64
        }
    }
}

/// The start gate: threads report ready, the runner opens it (or aborts).
#[derive(Debug, Default)]
pub(crate) struct Gate {
    pub(crate) ready: AtomicUsize,
    pub(crate) open: AtomicBool,
    pub(crate) abort: AtomicBool,
}

impl Gate {
    /// Reports ready and waits until the gate opens; false when aborted.
    fn pass(&self) -> bool {
        self.ready.fetch_add(1, AcqRel);
        while !self.open.load(Acquire) {
            if self.abort.load(Acquire) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        !self.abort.load(Acquire)
    }
}

pub(crate) struct ThreadCtx<'a> {
    pub index: usize,
    pub setup: &'a ThreadSetup,
    pub cfg: &'a MeasureConfig,
    pub slices: &'a [Slice],
    pub progress: &'a ThreadProgress,
    pub stop: &'a AtomicBool,
    pub gate: &'a Gate,
    pub between: &'a Barrier,
    pub brk: &'a BreakSlot,
    pub trace: Option<&'a mut TraceProducer>,
}

/// How one thread's measurement of one mechanism ended.
pub(crate) enum SlotOutcome {
    Measured(Box<ThreadResult>),
    /// The run stopped before this mechanism's first slice.
    NotReached,
    Unavailable(Mechanism, String),
}

/// A mechanism's loop and everything measured with it so far.
struct Slot {
    mechanism: Mechanism,
    ticker: Ticker,
    latency: LatencyStats,
    period: LatencyStats,
    buckets: Option<BucketHistogram>,
    n: u64,
    min: i64,
    max: i64,
    sum: i64,
    overruns: u64,
    missed: u64,
    dropped: u64,
    cpu_time: Nanos,
    wall: Nanos,
    clock_steps: u64,
    clock_stepped: Nanos,
    /// Wake-ups for deadlines before this are the warm-up's: discarded.
    warm_until: Time,
    warm_up_discarded: u64,
}

impl Slot {
    fn new(mechanism: Mechanism, ticker: Ticker, cfg: &MeasureConfig) -> Slot {
        Slot {
            mechanism,
            ticker,
            latency: LatencyStats::new(),
            period: LatencyStats::new(),
            buckets: cfg.histogram.map(|h| BucketHistogram::new(h.buckets, h.unit_ns)),
            n: 0,
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            overruns: 0,
            missed: 0,
            dropped: 0,
            cpu_time: Nanos::ZERO,
            wall: Nanos::ZERO,
            clock_steps: 0,
            clock_stepped: Nanos::ZERO,
            warm_until: Time(i64::MIN),
            warm_up_discarded: 0,
        }
    }

    fn into_result(self, index: usize, setup: &ThreadSetup) -> ThreadResult {
        ThreadResult {
            mechanism: self.mechanism,
            thread: index,
            tid: timer::gettid(),
            cpu: sched::current_cpu(),
            pinned: setup.cpus.clone(),
            slack: self.ticker.waiter().slack(),
            calibration: self.ticker.waiter().calibration(),
            latency: self.latency,
            period: self.period,
            buckets: self.buckets,
            overruns: self.overruns,
            missed: self.missed,
            cpu_time: self.cpu_time,
            wall: self.wall,
            trace_dropped: self.dropped,
            first_deadline: self.ticker.origin(),
            clock_steps: self.clock_steps,
            clock_stepped: self.clock_stepped,
            warm_up_discarded: self.warm_up_discarded,
        }
    }
}

/// Runs one measuring thread through every slice. `Ok(None)` when another
/// thread's failure aborted the start.
pub(crate) fn run_thread(ctx: ThreadCtx<'_>) -> Result<Option<Vec<SlotOutcome>>> {
    let cfg = ctx.cfg;
    ctx.progress.set_tid(timer::gettid());
    let prepared = ctx.setup.apply().and_then(|_| build_slots(cfg));
    prefault_stack(cfg.stack_prefault);
    if prepared.is_err() {
        ctx.gate.abort.store(true, Release);
    }
    let go = ctx.gate.pass();
    let mut slots = prepared?;
    if !go {
        return Ok(None);
    }

    let meta = ctx.meta();
    let mut trace = ctx.trace;
    let mut failure = None;
    for slice in ctx.slices {
        if failure.is_none() && !ctx.stop.load(Relaxed) {
            if let Ok(slot) = &mut slots[slice.mechanism] {
                match run_slice(slot, slice, &meta, trace.as_deref_mut()) {
                    Ok(()) => {}
                    // The kernel refused the run's interval when it was first armed
                    // (sched-deadline's period limits or admission test), or left a
                    // sched-deadline thread throttled until its watchdog released it:
                    // this mechanism is unavailable, the others go on.
                    Err(Error::Unavailable { reason, .. }) => {
                        let reason = if slot.n > 0 { stopped_mid_run(&reason) } else { reason };
                        slots[slice.mechanism] = Err(reason);
                    }
                    Err(e) => {
                        failure = Some(e);
                        ctx.stop.store(true, Relaxed);
                    }
                }
            }
            if slice.rest_after > Nanos::ZERO && !ctx.stop.load(Relaxed) {
                std::thread::sleep(slice.rest_after.to_std());
            }
        }
        // Every thread finishes a slice before any starts the next one.
        ctx.between.wait();
    }
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(Some(
        slots
            .into_iter()
            .zip(&cfg.mechanisms)
            .map(|(s, &m)| match s {
                Ok(slot) if slot.ticker.origin().is_none() => SlotOutcome::NotReached,
                Ok(slot) => SlotOutcome::Measured(Box::new(slot.into_result(ctx.index, ctx.setup))),
                Err(reason) => SlotOutcome::Unavailable(m, reason),
            })
            .collect(),
    ))
}

/// Why a mechanism that became unavailable after wake-ups were counted
/// reports no result: none of its threads' results are kept (see `regroup`).
#[cold]
fn stopped_mid_run(reason: &str) -> String {
    format!("stopped mid-run, its results dropped (its wake-ups until then stay in the trace): {reason}")
}

/// One slot per mechanism; a mechanism this system cannot run becomes its reason.
fn build_slots(cfg: &MeasureConfig) -> Result<Vec<std::result::Result<Slot, String>>> {
    let wc = cfg.wait_config();
    cfg.mechanisms
        .iter()
        .map(|&m| match wait::build(m, &wc) {
            Ok(w) => Ok(Ok(Slot::new(m, Ticker::new(w, m, cfg.clock, cfg.interval, cfg.overrun), cfg))),
            Err(Error::Unavailable { reason, .. }) => Ok(Err(reason)),
            Err(e) => Err(e),
        })
        .collect()
}

/// What `run_slice` needs from the context (split off so the trace ring can
/// be borrowed mutably beside it).
struct Meta<'a> {
    index: usize,
    cfg: &'a MeasureConfig,
    progress: &'a ThreadProgress,
    stop: &'a AtomicBool,
    brk: &'a BreakSlot,
}

impl<'a> ThreadCtx<'a> {
    fn meta(&self) -> Meta<'a> {
        Meta { index: self.index, cfg: self.cfg, progress: self.progress, stop: self.stop, brk: self.brk }
    }
}

fn run_slice(slot: &mut Slot, slice: &Slice, ctx: &Meta<'_>, mut trace: Option<&mut TraceProducer>) -> Result<()> {
    let cfg = ctx.cfg;
    ctx.progress.switch(
        slice.mechanism,
        slot.n,
        slot.min,
        slot.max,
        slot.sum,
        [slot.overruns, slot.missed, slot.dropped],
    );
    let (cpu0, wall0) = (sched::thread_cpu_time(), ClockId::Monotonic.now());

    // The slice starts one interval from now, on the mechanism's grid. The
    // mechanism's first slice begins with the warm-up, before its duration.
    let starting = slot.ticker.origin().is_none();
    let first = slot.ticker.resume()?;
    let warm_up = if starting { cfg.warm_up } else { Nanos::ZERO };
    if starting {
        slot.warm_until = first + warm_up;
    }
    let mut end = slice.duration.map(|d| first + warm_up + d);
    loop {
        let next = slot.ticker.grid().next();
        if ctx.stop.load(Relaxed) || cfg.loops.is_some_and(|l| slot.n >= l) || end.is_some_and(|e| next >= e) {
            break;
        }
        let a = slot.ticker.tick()?;
        if a.stepped() {
            // The deadline moved with the clock: this wake-up measures the
            // step, not the wait. Count it; the slice's end moves with the clock.
            slot.clock_steps += 1;
            slot.clock_stepped = slot.clock_stepped + a.tick.clock_step;
            end = end.map(|e| e + a.tick.clock_step);
            slot.warm_until += a.tick.clock_step;
            continue;
        }
        // One comparison with a deadline computed before the loop.
        if a.tick.deadline < slot.warm_until {
            slot.warm_up_discarded += 1;
            continue;
        }
        slot.record(&a, ctx, trace.as_deref_mut());
    }
    slot.ticker.pause()?;
    slot.cpu_time = slot.cpu_time + (sched::thread_cpu_time() - cpu0);
    slot.wall = slot.wall + (ClockId::Monotonic.now() - wall0);
    Ok(())
}

impl Slot {
    /// What the tool does with each tick: statistics, trace row, progress, break.
    #[inline]
    fn record(&mut self, a: &Advance, ctx: &Meta<'_>, trace: Option<&mut TraceProducer>) {
        let t = &a.tick;
        let lat = t.latency.as_ns();
        self.latency.record(lat);
        if let Some(dev) = a.period_deviation {
            self.period.record(dev.as_ns());
        }
        if let Some(b) = self.buckets.as_mut() {
            b.record(lat, t.cycle);
        }
        if let Some(ring) = trace {
            let row = TraceRow {
                thread: ctx.index as u32,
                mechanism: self.mechanism,
                cycle: t.cycle,
                planned: t.deadline,
                actual: t.woke,
            };
            if ring.push(row).is_err() {
                self.dropped += 1;
            }
        }
        self.n += 1;
        self.min = self.min.min(lat);
        self.max = self.max.max(lat);
        self.sum = self.sum.saturating_add(lat);
        self.overruns += a.overrun as u64;
        self.missed += a.skipped;
        let losses = [self.overruns, self.missed, self.dropped];
        ctx.progress.publish_all(self.n, self.min, self.max, self.sum, lat, losses);
        if let Some(b) = ctx.cfg.breaktrace.filter(|b| lat > b.as_ns()) {
            let mark = ctx.cfg.tracemark.as_deref().map(|t| (t, b));
            ctx.brk.claim(self.mechanism, ctx.index, t.cycle, Nanos(lat), mark);
            ctx.stop.store(true, Relaxed);
        }
    }
}

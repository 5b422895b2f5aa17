//! One measuring thread: setup, start gate, and the absolute-deadline loop.
//!
//! The loop body (one cycle) allocates nothing, takes no lock, formats
//! nothing, and makes no system call but the wait: statistics are
//! preallocated, progress goes through relaxed atomics, trace rows through a
//! lock-free ring.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::time::Duration;

use super::config::MeasureConfig;
use super::progress::ThreadProgress;
use super::runner::BreakSlot;
use super::trace::{TraceProducer, TraceRow};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::rt::{prefault_stack, ThreadSetup};
use crate::schedule::{next_deadline, OverrunPolicy};
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
    /// Period deviation (actual_k − actual_{k−1} − interval).
    pub period: LatencyStats,
    /// cyclictest-style buckets, when asked for.
    pub buckets: Option<BucketHistogram>,
    /// Wake-ups later than the following deadline.
    pub overruns: u64,
    /// Deadlines skipped after overruns.
    pub missed: u64,
    /// CPU time the thread used during the loop.
    pub cpu_time: Nanos,
    /// Wall time of the loop.
    pub wall: Nanos,
    /// Trace rows dropped because the ring was full.
    pub trace_dropped: u64,
    /// The hybrid's slack.
    pub slack: Option<Nanos>,
    /// How the hybrid's slack was calibrated.
    pub calibration: Option<Calibration>,
    /// The first deadline (cycle 0).
    pub first_deadline: Time,
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
    pub mechanism: Mechanism,
    pub setup: &'a ThreadSetup,
    pub cfg: &'a MeasureConfig,
    pub progress: &'a ThreadProgress,
    pub stop: &'a AtomicBool,
    pub gate: &'a Gate,
    pub brk: &'a BreakSlot,
    pub trace: Option<&'a mut TraceProducer>,
}

/// Runs one measuring thread. `Ok(None)` when another thread's failure aborted the start.
pub(crate) fn run_thread(ctx: ThreadCtx<'_>) -> Result<Option<ThreadResult>> {
    let cfg = ctx.cfg;
    let prepared = ctx.setup.apply().and_then(|_| wait::build(ctx.mechanism, &cfg.wait_config()));
    // Everything the loop touches is allocated and faulted in before the gate.
    let mut latency = LatencyStats::new();
    let mut period = LatencyStats::new();
    let mut buckets = cfg.histogram.map(|h| BucketHistogram::new(h.buckets, h.unit_ns));
    prefault_stack(cfg.stack_prefault);
    if prepared.is_err() {
        ctx.gate.abort.store(true, Release);
    }
    let go = ctx.gate.pass();
    let mut waiter = prepared?;
    if !go {
        return Ok(None);
    }

    let info = ctx.mechanism.info();
    let interval = cfg.interval;
    let policy = if info.kernel_grid { OverrunPolicy::Skip } else { cfg.overrun };
    let mut trace = ctx.trace;
    let (cpu0, wall0) = (sched::thread_cpu_time(), ClockId::Monotonic.now());

    let first = waiter.now() + interval;
    waiter.arm(first, interval)?;
    let end = cfg.duration.map(|d| first + d);
    let (mut deadline, mut cycle) = (first, 0u64);
    let (mut n, mut overruns, mut missed, mut dropped) = (0u64, 0u64, 0u64, 0u64);
    let (mut min, mut max, mut sum) = (i64::MAX, i64::MIN, 0i64);
    let mut prev_actual: Option<Time> = None;

    loop {
        if ctx.stop.load(Relaxed) || cfg.loops.is_some_and(|l| n >= l) || end.is_some_and(|e| deadline >= e) {
            break;
        }
        let wake = waiter.wait(deadline)?;
        let lat = (wake.actual - wake.planned).as_ns();
        latency.record(lat);
        if let Some(p) = prev_actual {
            period.record((wake.actual - p).as_ns() - interval.as_ns());
        }
        prev_actual = Some(wake.actual);
        if let Some(b) = buckets.as_mut() {
            b.record(lat, cycle);
        }
        if let Some(t) = trace.as_deref_mut() {
            let row = TraceRow {
                thread: ctx.index as u32,
                mechanism: ctx.mechanism,
                cycle,
                planned: wake.planned,
                actual: wake.actual,
            };
            if t.push(row).is_err() {
                dropped += 1;
            }
        }
        n += 1;
        min = min.min(lat);
        max = max.max(lat);
        sum = sum.saturating_add(lat);
        ctx.progress.publish(n, min, max, sum, lat);
        if cfg.breaktrace.is_some_and(|b| lat > b.as_ns()) {
            ctx.brk.claim(ctx.mechanism, ctx.index, cycle, Nanos(lat));
            ctx.stop.store(true, Relaxed);
        }

        let step = next_deadline(policy, wake.planned, interval, wake.actual);
        overruns += step.overrun as u64;
        if info.relative {
            cycle += 1;
            deadline = step.next;
        } else {
            let next = wake.kernel_next.unwrap_or(step.next);
            let periods = ((next - wake.planned).as_ns() / interval.as_ns()).max(1) as u64;
            missed += periods - 1;
            cycle += periods;
            deadline = next;
        }
    }

    let (cpu_time, wall) = (sched::thread_cpu_time() - cpu0, ClockId::Monotonic.now() - wall0);
    Ok(Some(ThreadResult {
        mechanism: ctx.mechanism,
        thread: ctx.index,
        tid: timer::gettid(),
        cpu: sched::current_cpu(),
        pinned: ctx.setup.cpus.clone(),
        slack: waiter.slack(),
        calibration: waiter.calibration(),
        latency,
        period,
        buckets,
        overruns,
        missed,
        cpu_time,
        wall,
        trace_dropped: dropped,
        first_deadline: first,
    }))
}

impl From<std::thread::Result<Result<Option<ThreadResult>>>> for ThreadOutcome {
    fn from(r: std::thread::Result<Result<Option<ThreadResult>>>) -> Self {
        match r {
            Ok(Ok(Some(t))) => ThreadOutcome::Done(Box::new(t)),
            Ok(Ok(None)) => ThreadOutcome::Aborted,
            Ok(Err(e)) => ThreadOutcome::Failed(e),
            Err(_) => ThreadOutcome::Failed(Error::Invalid("a measuring thread panicked".into())),
        }
    }
}

/// How a measuring thread ended.
pub(crate) enum ThreadOutcome {
    Done(Box<ThreadResult>),
    Aborted,
    Failed(Error),
}

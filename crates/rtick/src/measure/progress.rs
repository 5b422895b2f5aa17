//! Progress published by a measuring thread through atomics, read by the
//! main thread: single writer, relaxed stores, no lock, no allocation.

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

use crate::time::Nanos;
use crate::wait::Mechanism;

/// One thread's running figures. Aligned to a cache line so that threads do
/// not share one.
#[repr(align(64))]
#[derive(Debug)]
pub(crate) struct ThreadProgress {
    mechanism: AtomicUsize,
    count: AtomicU64,
    min: AtomicI64,
    max: AtomicI64,
    sum: AtomicI64,
    last: AtomicI64,
}

impl ThreadProgress {
    pub(crate) fn new() -> Self {
        ThreadProgress {
            mechanism: AtomicUsize::new(0),
            count: AtomicU64::new(0),
            min: AtomicI64::new(0),
            max: AtomicI64::new(0),
            sum: AtomicI64::new(0),
            last: AtomicI64::new(0),
        }
    }

    /// Publishes the thread's figures (it is the only writer).
    #[inline]
    pub(crate) fn publish(&self, count: u64, min: i64, max: i64, sum: i64, last: i64) {
        self.min.store(min, Relaxed);
        self.max.store(max, Relaxed);
        self.sum.store(sum, Relaxed);
        self.last.store(last, Relaxed);
        self.count.store(count, Relaxed);
    }

    /// Starts publishing another mechanism's figures.
    pub(crate) fn switch(&self, mechanism: usize, count: u64, min: i64, max: i64, sum: i64) {
        self.mechanism.store(mechanism, Relaxed);
        self.publish(count, min, max, sum, 0);
    }

    /// The index of the mechanism being measured.
    pub(crate) fn mechanism(&self) -> usize {
        self.mechanism.load(Relaxed)
    }

    pub(crate) fn snapshot(&self) -> ThreadSnapshot {
        let count = self.count.load(Relaxed);
        let sum = self.sum.load(Relaxed);
        ThreadSnapshot {
            count,
            min: Nanos(if count > 0 { self.min.load(Relaxed) } else { 0 }),
            max: Nanos(if count > 0 { self.max.load(Relaxed) } else { 0 }),
            avg: Nanos(if count > 0 { sum / count as i64 } else { 0 }),
            last: Nanos(self.last.load(Relaxed)),
        }
    }
}

/// A thread's figures so far (they may be a cycle apart from each other).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadSnapshot {
    /// Wake-ups so far.
    pub count: u64,
    /// Smallest latency.
    pub min: Nanos,
    /// Largest latency.
    pub max: Nanos,
    /// Mean latency.
    pub avg: Nanos,
    /// Latest latency.
    pub last: Nanos,
}

/// What the progress callback sees.
#[derive(Debug)]
pub struct Progress<'a> {
    /// The mechanism being measured.
    pub mechanism: Mechanism,
    /// Its position among the run's mechanisms.
    pub mechanism_index: usize,
    /// How many mechanisms the run measures.
    pub mechanisms: usize,
    /// Wall time since the measuring threads started.
    pub elapsed: Nanos,
    /// Each thread's figures.
    pub threads: &'a [ThreadSnapshot],
}

//! Progress published by a measuring thread through atomics, read by the
//! main thread: single writer, relaxed stores, no lock, no allocation.

use std::sync::atomic::{fence, AtomicI64, AtomicU64, AtomicUsize, Ordering::*};

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
    overruns: AtomicU64,
    missed: AtomicU64,
    dropped: AtomicU64,
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
            overruns: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
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

    /// Publishes the overruns, missed periods and dropped trace rows so far
    /// (`rtick monitor` exports them live).
    #[inline]
    pub(crate) fn publish_losses(&self, overruns: u64, missed: u64, dropped: u64) {
        self.overruns.store(overruns, Relaxed);
        self.missed.store(missed, Relaxed);
        self.dropped.store(dropped, Relaxed);
    }

    /// Starts publishing another mechanism's figures. The fence orders the
    /// new index before the new figures, so that [`Self::snapshot`] can tell
    /// when it read across a switch.
    pub(crate) fn switch(&self, mechanism: usize, count: u64, min: i64, max: i64, sum: i64, losses: [u64; 3]) {
        self.mechanism.store(mechanism, Relaxed);
        fence(Release);
        self.publish(count, min, max, sum, 0);
        self.publish_losses(losses[0], losses[1], losses[2]);
    }

    /// The index of the mechanism being measured.
    pub(crate) fn mechanism(&self) -> usize {
        self.mechanism.load(Relaxed)
    }

    /// The figures, all of one mechanism: read again when the thread
    /// switched mechanisms meanwhile (a counter of one mechanism must not be
    /// taken for another's).
    pub(crate) fn snapshot(&self) -> ThreadSnapshot {
        loop {
            let mechanism = self.mechanism.load(Relaxed);
            let snap = self.figures(mechanism);
            fence(Acquire);
            if self.mechanism.load(Relaxed) == mechanism {
                return snap;
            }
        }
    }

    fn figures(&self, mechanism: usize) -> ThreadSnapshot {
        let count = self.count.load(Relaxed);
        let sum = self.sum.load(Relaxed);
        ThreadSnapshot {
            mechanism,
            overruns: self.overruns.load(Relaxed),
            missed: self.missed.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
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
    /// The index of the mechanism these figures are of (the thread's own:
    /// threads pass from one slice to the next at slightly different times).
    pub mechanism: usize,
    /// Wake-ups later than the following deadline.
    pub overruns: u64,
    /// Deadlines skipped after overruns.
    pub missed: u64,
    /// Trace rows dropped because the ring was full.
    pub dropped: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_carries_the_mechanism_and_its_losses() {
        let p = ThreadProgress::new();
        p.switch(1, 10, 5, 50, 100, [2, 3, 4]);
        p.publish(11, 5, 60, 160, 60);
        p.publish_losses(3, 5, 4);
        let s = p.snapshot();
        assert_eq!((s.mechanism, s.count, s.overruns, s.missed, s.dropped), (1, 11, 3, 5, 4));
        // Another mechanism's slot brings its own figures, losses included.
        p.switch(0, 7, 1, 9, 20, [0, 0, 1]);
        let s = p.snapshot();
        assert_eq!((s.mechanism, s.count, s.overruns, s.missed, s.dropped, s.last), (0, 7, 0, 0, 1, Nanos(0)));
    }
}

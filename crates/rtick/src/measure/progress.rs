//! Progress published by a measuring thread through atomics, read by the
//! main thread: single writer, no lock, no allocation. A seqlock (a version
//! counter, odd while the writer is storing) lets the reader take figures
//! that all belong to one store, and so to one mechanism.

use std::sync::atomic::{fence, AtomicI32, AtomicI64, AtomicU64, AtomicUsize, Ordering::*};

use crate::sys::sched;
use crate::time::Nanos;
use crate::wait::Mechanism;

/// How often a reader finds the writer mid-store before it yields the CPU
/// instead of spinning (a store takes a few nanoseconds; 100 spins cover it
/// unless the writer was preempted).
const SPINS_BEFORE_YIELD: u32 = 100;

/// One thread's running figures. Aligned to a cache line so that threads do
/// not share one.
#[repr(align(64))]
#[derive(Debug)]
pub(crate) struct ThreadProgress {
    /// Odd while the writer stores; bumped twice around every store.
    version: AtomicU64,
    mechanism: AtomicUsize,
    count: AtomicU64,
    min: AtomicI64,
    max: AtomicI64,
    sum: AtomicI64,
    last: AtomicI64,
    overruns: AtomicU64,
    missed: AtomicU64,
    dropped: AtomicU64,
    /// The thread's id, stored once before its first wake-up (0 until then).
    tid: AtomicI32,
}

impl ThreadProgress {
    pub(crate) fn new() -> Self {
        ThreadProgress {
            version: AtomicU64::new(0),
            mechanism: AtomicUsize::new(0),
            count: AtomicU64::new(0),
            min: AtomicI64::new(0),
            max: AtomicI64::new(0),
            sum: AtomicI64::new(0),
            last: AtomicI64::new(0),
            overruns: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            tid: AtomicI32::new(0),
        }
    }

    /// Records the measuring thread's id (once, before its first wake-up):
    /// `rtick monitor --explain` finds the thread's events in the kernel
    /// trace by it while the run goes on.
    pub(crate) fn set_tid(&self, tid: i32) {
        self.tid.store(tid, Release);
    }

    /// Publishes the thread's figures and its losses so far (overruns,
    /// missed periods, dropped trace rows: `rtick monitor` exports them
    /// live) in one store: one seqlock write per wake-up (it is the only
    /// writer).
    #[inline]
    pub(crate) fn publish_all(&self, count: u64, min: i64, max: i64, sum: i64, last: i64, losses: [u64; 3]) {
        self.write(|| {
            self.store_figures(count, min, max, sum, last);
            self.store_losses(losses);
        });
    }

    /// Starts publishing another mechanism's figures: the index, the figures
    /// and the losses in one store, so that no snapshot pairs one
    /// mechanism's index with another's counts.
    pub(crate) fn switch(&self, mechanism: usize, count: u64, min: i64, max: i64, sum: i64, losses: [u64; 3]) {
        self.write(|| {
            self.mechanism.store(mechanism, Relaxed);
            self.store_figures(count, min, max, sum, 0);
            self.store_losses(losses);
        });
    }

    /// The seqlock's write side: the version is odd while `stores` runs. The
    /// Release fence keeps the stores after the odd version; the Release
    /// store of the even one keeps them before it.
    #[inline]
    fn write(&self, stores: impl FnOnce()) {
        let v = self.version.load(Relaxed);
        self.version.store(v.wrapping_add(1), Relaxed);
        fence(Release);
        stores();
        self.version.store(v.wrapping_add(2), Release);
    }

    #[inline]
    fn store_figures(&self, count: u64, min: i64, max: i64, sum: i64, last: i64) {
        self.min.store(min, Relaxed);
        self.max.store(max, Relaxed);
        self.sum.store(sum, Relaxed);
        self.last.store(last, Relaxed);
        self.count.store(count, Relaxed);
    }

    #[inline]
    fn store_losses(&self, [overruns, missed, dropped]: [u64; 3]) {
        self.overruns.store(overruns, Relaxed);
        self.missed.store(missed, Relaxed);
        self.dropped.store(dropped, Relaxed);
    }

    /// The index of the mechanism being measured.
    pub(crate) fn mechanism(&self) -> usize {
        self.mechanism.load(Relaxed)
    }

    /// The figures of one store, all of one mechanism: the seqlock's read
    /// side, read again while the writer is storing or stored meanwhile.
    /// After [`SPINS_BEFORE_YIELD`] tries it yields the CPU between tries: a
    /// writer preempted mid-store (on this reader's CPU, say) can then finish.
    pub(crate) fn snapshot(&self) -> ThreadSnapshot {
        let mut tries = 0u32;
        loop {
            let before = self.version.load(Acquire);
            if before % 2 == 1 {
                tries = tries.saturating_add(1);
                if tries < SPINS_BEFORE_YIELD {
                    std::hint::spin_loop();
                } else {
                    sched::yield_now();
                }
                continue;
            }
            let snap = self.figures(self.mechanism.load(Relaxed));
            fence(Acquire);
            if self.version.load(Relaxed) == before {
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
            tid: self.tid.load(Acquire),
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
    /// The measuring thread's id (0 before it started).
    pub tid: i32,
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
        let v = p.version.load(Relaxed);
        p.publish_all(11, 5, 60, 160, 60, [3, 5, 4]);
        // One seqlock write per wake-up: the version moves by one store.
        assert_eq!(p.version.load(Relaxed), v + 2);
        let s = p.snapshot();
        assert_eq!((s.mechanism, s.count, s.overruns, s.missed, s.dropped), (1, 11, 3, 5, 4));
        // Another mechanism's slot brings its own figures, losses included.
        p.switch(0, 7, 1, 9, 20, [0, 0, 1]);
        let s = p.snapshot();
        assert_eq!((s.mechanism, s.count, s.overruns, s.missed, s.dropped, s.last), (0, 7, 0, 0, 1, Nanos(0)));
    }

    /// A writer switching between two mechanisms whose figures tell them
    /// apart; every snapshot taken meanwhile must be all of one of them.
    #[test]
    fn a_snapshot_never_pairs_one_mechanisms_index_with_anothers_figures() {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        let p = ThreadProgress::new();
        let (done, seen) = (AtomicBool::new(false), AtomicU64::new(0));
        std::thread::scope(|s| {
            s.spawn(|| {
                // At least 400 000 switches, and on until the reader has
                // looked many times meanwhile (optimized, the switches alone
                // can be over before the reader is first scheduled).
                let mut i = 0u64;
                while i < 400_000 || seen.load(Relaxed) < 10_000 {
                    let m = (i % 2) as usize;
                    let k = m as u64 * 1_000_000 + i % 1_000_000;
                    p.switch(m, k, k as i64, k as i64, k as i64, [k, k, k]);
                    p.publish_all(k, k as i64, k as i64, k as i64, k as i64, [k, k, k]);
                    i += 1;
                }
                done.store(true, Relaxed);
            });
            while !done.load(Relaxed) {
                let s = p.snapshot();
                assert_eq!(s.count / 1_000_000, s.mechanism as u64, "index and count of different stores: {s:?}");
                assert_eq!(
                    (s.overruns, s.min, s.max),
                    (s.count, Nanos(s.count as i64), Nanos(s.count as i64)),
                    "{s:?}"
                );
                seen.fetch_add(1, Relaxed);
            }
            assert!(seen.load(Relaxed) >= 10_000);
        });
    }
}

//! Telemetry of a running loop, readable from any thread while it runs.
//!
//! The loop's thread is the only writer and uses relaxed loads and stores on
//! atomics (no lock, no read-modify-write, no allocation); readers take a
//! [`Snapshot`] whenever they like. Histograms are log-linear: exact below
//! 64 ns, then 32 buckets per power of two (at most 3.2 % wide).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use crate::stats::{percentile, PERCENTILES, PERCENTILE_LABELS};

const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Values up to 2^40 ns (about 18 minutes); larger ones land in the last bucket.
const MAX_BITS: u32 = 40;
const BUCKETS: usize = ((MAX_BITS - SUB_BITS) as usize + 1) * SUB as usize;

fn index(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    ((shift as usize) * SUB as usize + (v >> shift) as usize).min(BUCKETS - 1)
}

/// The largest value that lands in bucket `i`.
fn upper(i: usize) -> u64 {
    if i < 2 * SUB as usize {
        return i as u64;
    }
    let shift = (i / SUB as usize - 1) as u32;
    let top = (i - shift as usize * SUB as usize) as u64;
    ((top + 1) << shift) - 1
}

/// A histogram of non-negative values in atomic buckets.
struct AtomicHist {
    buckets: Box<[AtomicU64]>,
}

impl AtomicHist {
    fn new() -> Self {
        AtomicHist { buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect() }
    }
    #[inline]
    fn record(&self, v: u64) {
        let b = &self.buckets[index(v)];
        b.store(b.load(Relaxed) + 1, Relaxed);
    }
    fn counts(&self) -> Vec<u64> {
        self.buckets.iter().map(|b| b.load(Relaxed)).collect()
    }
}

/// A signed series: histograms of the non-negative values and of the
/// magnitudes of the negative ones, with exact count, min, max and sum.
struct Series {
    pos: AtomicHist,
    neg: AtomicHist,
    count: AtomicU64,
    min: AtomicI64,
    max: AtomicI64,
    sum: AtomicI64,
}

impl Series {
    fn new() -> Self {
        Series {
            pos: AtomicHist::new(),
            neg: AtomicHist::new(),
            count: AtomicU64::new(0),
            min: AtomicI64::new(i64::MAX),
            max: AtomicI64::new(i64::MIN),
            sum: AtomicI64::new(0),
        }
    }

    #[inline]
    fn record(&self, v: i64) {
        if v >= 0 {
            self.pos.record(v as u64);
        } else {
            self.neg.record(v.unsigned_abs());
        }
        if v < self.min.load(Relaxed) {
            self.min.store(v, Relaxed);
        }
        if v > self.max.load(Relaxed) {
            self.max.store(v, Relaxed);
        }
        self.sum.store(self.sum.load(Relaxed).saturating_add(v), Relaxed);
        self.count.store(self.count.load(Relaxed) + 1, Relaxed);
    }

    fn summary(&self) -> SeriesSummary {
        let (pos, neg) = (self.pos.counts(), self.neg.counts());
        let n: u64 = pos.iter().sum::<u64>() + neg.iter().sum::<u64>();
        let (min, max) = (self.min.load(Relaxed), self.max.load(Relaxed));
        if n == 0 {
            return SeriesSummary::default();
        }
        // Negative values first, most negative first; each bucket at its upper edge.
        let neg_buckets = neg.iter().enumerate().rev().map(|(i, &c)| (-(upper(i) as i64), c));
        let buckets = neg_buckets.chain(pos.iter().enumerate().map(|(i, &c)| (upper(i) as i64, c)));
        let mut percentiles = [0i64; 6];
        for (out, q) in percentiles.iter_mut().zip(PERCENTILES) {
            *out = percentile::of_counts(buckets.clone(), q / 100.0).unwrap_or(max).clamp(min, max);
        }
        SeriesSummary {
            count: n,
            min,
            max,
            mean: self.sum.load(Relaxed) as f64 / self.count.load(Relaxed).max(1) as f64,
            percentiles,
        }
    }
}

/// Figures of one series (ns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesSummary {
    /// Values recorded.
    pub count: u64,
    /// Exact minimum.
    pub min: i64,
    /// Exact maximum.
    pub max: i64,
    /// Mean.
    pub mean: f64,
    /// At 50, 90, 99, 99.9, 99.99, 99.999 % (upper bucket edges, within min..max).
    pub percentiles: [i64; 6],
}

impl SeriesSummary {
    /// The value at a label of [`PERCENTILE_LABELS`] ("99.9").
    pub fn percentile(&self, label: &str) -> Option<i64> {
        PERCENTILE_LABELS.iter().position(|l| *l == label).map(|i| self.percentiles[i])
    }
}

/// A loop's telemetry; share it (`Arc`) with the threads that read it.
pub struct Telemetry {
    latency: Series,
    period: Series,
    execution: Series,
    overruns: AtomicU64,
    missed: AtomicU64,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").field("cycles", &self.latency.count.load(Relaxed)).finish_non_exhaustive()
    }
}

impl Default for Telemetry {
    fn default() -> Self {
        Self::new()
    }
}

impl Telemetry {
    /// Empty telemetry (allocates its buckets now).
    pub fn new() -> Self {
        Telemetry {
            latency: Series::new(),
            period: Series::new(),
            execution: Series::new(),
            overruns: AtomicU64::new(0),
            missed: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(crate) fn record_wake(&self, latency: i64, period_deviation: Option<i64>, overrun: bool, missed: u64) {
        self.latency.record(latency);
        if let Some(p) = period_deviation {
            self.period.record(p);
        }
        if overrun {
            self.overruns.store(self.overruns.load(Relaxed) + 1, Relaxed);
        }
        if missed > 0 {
            self.missed.store(self.missed.load(Relaxed) + missed, Relaxed);
        }
    }

    #[inline]
    pub(crate) fn record_execution(&self, ns: i64) {
        self.execution.record(ns);
    }

    /// What the loop has recorded so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            cycles: self.latency.count.load(Relaxed),
            overruns: self.overruns.load(Relaxed),
            missed: self.missed.load(Relaxed),
            latency: self.latency.summary(),
            period: self.period.summary(),
            execution: self.execution.summary(),
        }
    }
}

/// A copy of a loop's telemetry at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Wake-ups.
    pub cycles: u64,
    /// Wake-ups later than the following deadline.
    pub overruns: u64,
    /// Deadlines skipped.
    pub missed: u64,
    /// Wake-up latency (actual − planned).
    pub latency: SeriesSummary,
    /// Period deviation (actual_k − actual_{k−1} − period).
    pub period: SeriesSummary,
    /// Execution time: from a wake-up to the next call of `wait`.
    pub execution: SeriesSummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_narrow() {
        let mut prev_upper = None;
        for i in 0..BUCKETS - 1 {
            let u = upper(i);
            if let Some(p) = prev_upper {
                assert!(u > p, "bucket {i}");
            }
            prev_upper = Some(u);
        }
        for v in [0u64, 1, 63, 64, 65, 1000, 1_000_000, 123_456_789, 1 << 39] {
            let i = index(v);
            assert!(upper(i) >= v, "{v}");
            assert!(i == 0 || upper(i - 1) < v, "{v}");
            assert!((upper(i) - v) as f64 <= v as f64 * 0.032, "{v}: {}", upper(i));
        }
    }

    #[test]
    fn snapshot_figures() {
        let t = Telemetry::new();
        for v in [-50i64, 10, 20, 30, 40, 1000] {
            t.record_wake(v, Some(v), v > 500, u64::from(v > 500));
            t.record_execution(v.abs());
        }
        let s = t.snapshot();
        assert_eq!((s.cycles, s.overruns, s.missed), (6, 1, 1));
        assert_eq!((s.latency.min, s.latency.max), (-50, 1000));
        assert_eq!(s.latency.percentile("50"), Some(20));
        assert_eq!(s.latency.percentiles[0..1], [20]);
        assert_eq!(s.latency.percentile("99.999"), Some(1000));
        assert!((s.latency.mean - 175.0).abs() < 1e-9);
        assert_eq!(s.execution.min, 10);
    }
}

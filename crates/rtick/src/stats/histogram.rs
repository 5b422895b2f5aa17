//! An HdrHistogram for *signed* values.
//!
//! HdrHistogram records non-negative values only. An early wake-up is a
//! negative latency and must be counted, not clamped away, so negative values
//! go to a second histogram of magnitudes and quantiles are taken over both.

use hdrhistogram::Histogram;

use super::percentile;

/// The largest magnitude tracked: one hour in nanoseconds. Larger values are
/// recorded as this value (and the exact maximum is kept elsewhere).
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

/// Significant decimal digits kept (0.1 % relative error).
pub const SIGFIG: u8 = 3;

/// Signed values at nanosecond resolution, 3 significant digits.
#[derive(Clone, Debug)]
pub struct SignedHistogram {
    pos: Histogram<u64>,
    neg: Histogram<u64>,
}

impl Default for SignedHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl SignedHistogram {
    /// An empty histogram (allocates all its buckets now).
    pub fn new() -> Self {
        Self::with_bounds(HIGHEST_NS, SIGFIG)
    }

    /// An empty histogram of magnitudes up to `highest` ns (larger ones
    /// recorded as it) with `sigfig` significant digits (1 to 5): a
    /// smaller one, for many kept at once.
    pub fn with_bounds(highest: u64, sigfig: u8) -> Self {
        let h = Histogram::new_with_bounds(1, highest.max(2), sigfig.clamp(1, 5)).expect("valid bounds");
        SignedHistogram { pos: h.clone(), neg: h }
    }

    /// An empty histogram that takes memory as larger values come, to
    /// `sigfig` significant digits: for a reader that keeps many series and
    /// may allocate (`rtick attach`, a histogram per thread and phase). Its
    /// magnitudes are held to [`HIGHEST_NS`] like [`SignedHistogram::new`]'s.
    pub fn growing(sigfig: u8) -> Self {
        let h = Histogram::new(sigfig.min(SIGFIG)).expect("valid precision");
        SignedHistogram { pos: h.clone(), neg: h }
    }

    /// Records one value. Never allocates (unless [`SignedHistogram::growing`]).
    #[inline]
    pub fn record(&mut self, v: i64) {
        let (h, m) = if v >= 0 { (&mut self.pos, v as u64) } else { (&mut self.neg, v.unsigned_abs()) };
        let m = m.min(HIGHEST_NS);
        // A growing histogram grows to `m`; a fixed one holds it already.
        if h.record(m).is_err() {
            h.saturating_record(m);
        }
    }

    /// Adds every value `other` holds (a value too large for a fixed
    /// histogram is recorded as its largest, like [`SignedHistogram::record`]).
    pub fn absorb(&mut self, other: &SignedHistogram) {
        for (h, o) in [(&mut self.pos, &other.pos), (&mut self.neg, &other.neg)] {
            if h.add(o).is_err() {
                for v in o.iter_recorded() {
                    h.saturating_record_n(o.highest_equivalent(v.value_iterated_to()), v.count_at_value());
                }
            }
        }
    }

    /// Records `n` occurrences of `v`.
    pub fn record_n(&mut self, v: i64, n: u64) {
        let (h, m) = if v >= 0 { (&mut self.pos, v as u64) } else { (&mut self.neg, v.unsigned_abs()) };
        let _ = h.record_n(m.min(h.high()), n);
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.pos.len() + self.neg.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values below zero.
    pub fn negative_count(&self) -> u64 {
        self.neg.len()
    }

    /// The value at quantile `q` (0..=1) by nearest rank ([`super::percentile`]),
    /// to the histogram's precision; 0 when empty.
    pub fn value_at_quantile(&self, q: f64) -> i64 {
        let Some(rank) = percentile::rank(q, self.len()) else { return 0 };
        let neg_n = self.neg.len();
        if rank <= neg_n {
            // The rank-th smallest overall is the (neg_n − rank + 1)-th smallest magnitude
            // counted from the largest.
            -(rank_value(&self.neg, neg_n - rank + 1, true) as i64)
        } else {
            rank_value(&self.pos, rank - neg_n, false) as i64
        }
    }

    /// Every recorded bucket as (value, count), ascending by value; each value
    /// is the bucket's highest equivalent value (negative buckets: lowest magnitude).
    pub fn buckets(&self) -> Vec<(i64, u64)> {
        let mut out: Vec<(i64, u64)> = self
            .neg
            .iter_recorded()
            .map(|v| (-(self.neg.lowest_equivalent(v.value_iterated_to()) as i64), v.count_at_value()))
            .collect();
        out.reverse();
        out.extend(self.pos.iter_recorded().map(|v| (v.value_iterated_to() as i64, v.count_at_value())));
        out
    }

    /// The histogram of non-negative values (for export to HdrHistogram tools).
    pub fn positive(&self) -> &Histogram<u64> {
        &self.pos
    }
}

/// The value of the `rank`-th smallest (1-based) entry of `h`; for the
/// negative side (`low`) the lowest equivalent, so that magnitudes round
/// toward zero and the signed result rounds the same way as the positive side.
fn rank_value(h: &Histogram<u64>, rank: u64, low: bool) -> u64 {
    let buckets = h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value()));
    match percentile::at_rank(buckets, rank) {
        Some(x) if low => h.lowest_equivalent(x),
        Some(x) => h.highest_equivalent(x),
        None => h.max(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_over_signed_values() {
        let mut h = SignedHistogram::new();
        for v in -5..=94 {
            h.record(v);
        }
        assert_eq!(h.len(), 100);
        assert_eq!(h.negative_count(), 5);
        assert_eq!(h.value_at_quantile(0.0), -5);
        assert_eq!(h.value_at_quantile(0.01), -5);
        assert_eq!(h.value_at_quantile(0.05), -1);
        assert_eq!(h.value_at_quantile(0.06), 0);
        assert_eq!(h.value_at_quantile(0.5), 44);
        assert_eq!(h.value_at_quantile(1.0), 94);
    }

    #[test]
    fn quantiles_are_monotone_and_precise() {
        let mut h = SignedHistogram::new();
        let mut x: u64 = 12345;
        for _ in 0..100_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            h.record((x >> 33) as i64 % 2_000_000 - 1000);
        }
        let mut last = i64::MIN;
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            let v = h.value_at_quantile(q);
            assert!(v >= last, "q {q}: {v} < {last}");
            last = v;
        }
        // 3 significant digits: the median of a uniform [-1000, 2e6) is near 1e6.
        let med = h.value_at_quantile(0.5) as f64;
        assert!((med - 1e6).abs() / 1e6 < 0.02, "{med}");
    }

    #[test]
    fn a_smaller_histogram_keeps_its_precision_and_clamps_above_its_bound() {
        let mut h = SignedHistogram::with_bounds(1_000_000, 2);
        h.record(-200);
        h.record_n(5_000_000, 2);
        h.record(100);
        assert_eq!((h.len(), h.negative_count()), (4, 1));
        assert_eq!((h.value_at_quantile(0.25), h.value_at_quantile(0.5)), (-200, 100));
        let top = h.value_at_quantile(1.0);
        assert!((1_000_000..=1_010_000).contains(&top), "{top}");
    }

    #[test]
    fn a_growing_histogram_starts_small_and_answers_alike() {
        let (mut fixed, mut grown) = (SignedHistogram::new(), SignedHistogram::growing(SIGFIG));
        let small = grown.positive().distinct_values();
        for v in [-3, 5, 1_000, 250_000, 7_000_000, HIGHEST_NS as i64 * 2] {
            fixed.record(v);
            grown.record(v);
        }
        for q in [0.0, 0.2, 0.5, 0.9, 1.0] {
            assert_eq!(fixed.value_at_quantile(q), grown.value_at_quantile(q), "q {q}");
        }
        assert!(small * 10 < SignedHistogram::new().positive().distinct_values(), "{small}");
    }

    #[test]
    fn empty_histogram_reports_zero() {
        let h = SignedHistogram::new();
        assert!(h.is_empty());
        assert_eq!(h.value_at_quantile(0.99), 0);
        assert!(h.buckets().is_empty());
    }
}

//! Exact moments plus histogram percentiles of a latency series.

use super::histogram::SignedHistogram;

/// The percentiles every summary reports.
pub const PERCENTILES: [f64; 6] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999];

/// Their labels, as used for JSON keys and table headers.
pub const PERCENTILE_LABELS: [&str; 6] = ["50", "90", "99", "99.9", "99.99", "99.999"];

/// Accumulates a series of signed nanosecond values: an HdrHistogram for
/// percentiles, and exact count, min, max, sum and sum of squares.
#[derive(Clone, Debug)]
pub struct LatencyStats {
    hist: SignedHistogram,
    count: u64,
    min: i64,
    max: i64,
    sum: i128,
    sum_sq: i128,
}

impl Default for LatencyStats {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyStats {
    /// Empty statistics (allocates the histogram now, never later).
    pub fn new() -> Self {
        LatencyStats { hist: SignedHistogram::new(), count: 0, min: i64::MAX, max: i64::MIN, sum: 0, sum_sq: 0 }
    }

    /// Empty statistics whose histogram takes memory as larger values come
    /// ([`SignedHistogram::growing`], `sigfig` significant digits).
    pub fn growing(sigfig: u8) -> Self {
        LatencyStats {
            hist: SignedHistogram::growing(sigfig),
            count: 0,
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            sum_sq: 0,
        }
    }

    /// Records one value. Never allocates.
    #[inline]
    pub fn record(&mut self, v: i64) {
        self.hist.record(v);
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as i128;
        self.sum_sq += (v as i128) * (v as i128);
    }

    /// Adds every value `other` recorded.
    pub fn absorb(&mut self, other: &LatencyStats) {
        self.hist.absorb(&other.hist);
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The histogram.
    pub fn histogram(&self) -> &SignedHistogram {
        &self.hist
    }

    /// The summary of what was recorded.
    pub fn summary(&self) -> Summary {
        if self.count == 0 {
            return Summary::default();
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        // Population variance from exact integer sums: n·Σx² − (Σx)², all in i128.
        let var_num = (self.count as i128) * self.sum_sq - self.sum * self.sum;
        let stddev = ((var_num.max(0) as f64) / (n * n)).sqrt();
        let mut percentiles = [0i64; 6];
        for (p, q) in percentiles.iter_mut().zip(PERCENTILES) {
            // The histogram keeps 3 significant digits; the exact extremes bound it.
            *p = self.hist.value_at_quantile(q / 100.0).clamp(self.min, self.max);
        }
        Summary {
            count: self.count,
            min: self.min,
            max: self.max,
            mean,
            stddev,
            percentiles,
            negative: self.hist.negative_count(),
        }
    }
}

/// The summary of a series (all values in nanoseconds).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Values.
    pub count: u64,
    /// Exact minimum.
    pub min: i64,
    /// Exact maximum.
    pub max: i64,
    /// Exact mean.
    pub mean: f64,
    /// Population standard deviation.
    pub stddev: f64,
    /// Values at [`PERCENTILES`].
    pub percentiles: [i64; 6],
    /// Values below zero (early wake-ups).
    pub negative: u64,
}

impl Summary {
    /// The value at a percentile label of [`PERCENTILE_LABELS`].
    pub fn percentile(&self, label: &str) -> Option<i64> {
        PERCENTILE_LABELS.iter().position(|l| *l == label).map(|i| self.percentiles[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments() {
        let mut s = LatencyStats::new();
        // Below 2048 ns the histogram is exact (1 ns buckets at 3 significant digits).
        for v in [200, 400, 400, 400, 500, 500, 700, 900] {
            s.record(v);
        }
        let m = s.summary();
        assert_eq!((m.count, m.min, m.max), (8, 200, 900));
        assert_eq!(m.mean, 500.0);
        assert_eq!(m.stddev, 200.0);
        assert_eq!(m.percentile("50"), Some(400));
        assert_eq!(m.percentile("99.999"), Some(900));
        assert!(m.percentiles.windows(2).all(|w| w[0] <= w[1]));
    }
}

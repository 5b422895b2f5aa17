//! Fixed-width buckets as cyclictest's `-h` keeps them: one counter per
//! microsecond (or nanosecond with -N) up to a limit, plus overflows.

/// How many overflow cycle numbers are kept (cyclictest prints them).
pub const OVERFLOW_CYCLES_KEPT: usize = 64;

/// cyclictest-compatible histogram of one thread.
#[derive(Clone, Debug)]
pub struct BucketHistogram {
    unit_ns: i64,
    counts: Vec<u64>,
    overflows: u64,
    overflow_cycles: Vec<u64>,
    early: u64,
}

impl BucketHistogram {
    /// `buckets` buckets of `unit_ns` each (1000 for µs). Allocates now.
    pub fn new(buckets: usize, unit_ns: i64) -> Self {
        BucketHistogram {
            unit_ns: unit_ns.max(1),
            counts: vec![0; buckets.max(1)],
            overflows: 0,
            overflow_cycles: Vec::with_capacity(OVERFLOW_CYCLES_KEPT),
            early: 0,
        }
    }

    /// Records a latency. Early wake-ups (negative) count in bucket 0 and in
    /// [`BucketHistogram::early`]. Never allocates.
    #[inline]
    pub fn record(&mut self, latency_ns: i64, cycle: u64) {
        if latency_ns < 0 {
            self.early += 1;
        }
        let idx = (latency_ns.max(0) / self.unit_ns) as usize;
        if let Some(c) = self.counts.get_mut(idx) {
            *c += 1;
        } else {
            self.overflows += 1;
            if self.overflow_cycles.len() < OVERFLOW_CYCLES_KEPT {
                self.overflow_cycles.push(cycle);
            }
        }
    }

    /// The bucket width in nanoseconds.
    pub fn unit_ns(&self) -> i64 {
        self.unit_ns
    }
    /// Per-bucket counts.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }
    /// Values beyond the last bucket.
    pub fn overflows(&self) -> u64 {
        self.overflows
    }
    /// The first cycles that overflowed.
    pub fn overflow_cycles(&self) -> &[u64] {
        &self.overflow_cycles
    }
    /// Early wake-ups counted in bucket 0.
    pub fn early(&self) -> u64 {
        self.early
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_overflow() {
        let mut h = BucketHistogram::new(10, 1000);
        for (c, v) in [-5, 0, 999, 1000, 9999, 10_000, 50_000].into_iter().enumerate() {
            h.record(v, c as u64);
        }
        assert_eq!(h.counts()[0], 3);
        assert_eq!(h.counts()[1], 1);
        assert_eq!(h.counts()[9], 1);
        assert_eq!(h.overflows(), 2);
        assert_eq!(h.overflow_cycles(), &[5, 6]);
        assert_eq!(h.early(), 1);
    }
}

//! The histogram of `rtick_wakeup_latency_seconds`, one per series: fixed
//! buckets, which every exposition carries (the `_bucket` series the shipped
//! alert rules and dashboard query), and native (exponential) buckets, which
//! only the protobuf exposition carries: a Prometheus with native histograms
//! enabled asks for it, and gets the latency at about 9 % resolution
//! anywhere from nanoseconds to seconds instead of 13 fixed buckets.
//!
//! This file needs prometheus-client alone: the benchmark
//! (`benches/latency_histogram.rs`) includes it, to measure the very
//! histogram the monitor fills.

use prometheus_client::metrics::histogram::{Histogram, NativeHistogramConfig};

/// Upper bounds of the latency histogram's buckets, in seconds: 1, 2, 5 per
/// decade from 1 µs to 10 ms (early wake-ups, negative, fall in the first).
pub const BUCKETS: [f64; 13] = [1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2];

/// Native buckets' resolution: schema 3, eight buckets per doubling, each
/// 2^(1/8) = 1.09 times the one below, so a quantile read from them is off
/// by at most one bucket's width, 9 % (the classic 1-2-5 buckets': a factor
/// 2 to 2.5). One step finer (schema 4, 4.4 %) would cover half the range
/// with the same [`MAX_BUCKETS`]; it is also the Go client's usual factor.
pub const SCHEMA: i8 = 3;

/// Native buckets kept at most, both signs together: 160 at schema 3 span
/// 20 doublings, e.g. 1 µs to 1 s, the whole range of one CPU's wake-ups
/// on any machine that works at all. A series that spreads wider widens the
/// zero bucket first (up to [`MAX_ZERO_THRESHOLD`]), then halves the
/// resolution (schema 2: 40 doublings), and stays so: memory per series is
/// bounded (160 × 16 bytes), and so is the protobuf answer. No reset
/// instead: prometheus-client resets a histogram's classic buckets, sum
/// and count with its native ones, which would show the text-format
/// scrapers a counter reset.
pub const MAX_BUCKETS: usize = 160;

/// The zero bucket: |latency| ≤ 2^-30 s (0.93 ns, a bucket boundary).
/// Latencies are whole nanoseconds, so it holds the wake-ups exactly on
/// time; one 1 ns early is in a negative bucket already.
pub const ZERO_THRESHOLD: f64 = 1.0 / (1u64 << 30) as f64;

/// How far the zero bucket may widen to keep within [`MAX_BUCKETS`]: 2^-20 s
/// (0.95 µs, the bucket boundary just below the first classic bucket,
/// 1 µs), so the native buckets never lose what the classic ones tell
/// apart. Below it, early and late are both on time for a wake-up; above
/// it the resolution is what a p99 needs.
pub const MAX_ZERO_THRESHOLD: f64 = 1.0 / (1u64 << 20) as f64;

/// A new series' latency histogram, with the fixed [`BUCKETS`] and native ones.
pub fn histogram() -> Histogram {
    let native = NativeHistogramConfig::with_schema(SCHEMA)
        .zero_threshold(ZERO_THRESHOLD)
        .max_buckets(MAX_BUCKETS)
        .max_zero_threshold(MAX_ZERO_THRESHOLD);
    Histogram::new_classic_and_native(BUCKETS, native)
}

#[cfg(test)]
pub mod tests {
    use std::collections::BTreeMap;

    use prometheus_client::encoding::prometheus_protobuf::{self, prometheus_data_model as pb};
    use prometheus_client::registry::Registry;

    use super::*;

    /// Native buckets from their spans and deltas: index → count, the
    /// buckets of count 0 left out.
    pub fn native_buckets(spans: &[pb::BucketSpan], deltas: &[i64]) -> BTreeMap<i32, u64> {
        let (mut buckets, mut index, mut count, mut deltas) = (BTreeMap::new(), 0i32, 0i64, deltas.iter());
        for span in spans {
            // The first span's offset is an index; the others' a gap.
            index += span.offset;
            for _ in 0..span.length {
                count += deltas.next().expect("a delta for each bucket of the spans");
                if count != 0 {
                    buckets.insert(index, u64::try_from(count).expect("counts are not negative"));
                }
                index += 1;
            }
        }
        assert_eq!(deltas.next(), None, "more deltas than buckets");
        buckets
    }

    /// `n` values from `lo` to `hi`, spread evenly on a log scale.
    fn log_spread(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f64> {
        (0..n).map(move |i| lo * (hi / lo).powf(i as f64 / (n - 1) as f64))
    }

    /// The histogram after observing `values`, as the protobuf answer has it.
    fn observed(values: impl IntoIterator<Item = f64>) -> pb::Histogram {
        let h = histogram();
        values.into_iter().for_each(|v| h.observe(v));
        let mut registry = Registry::default();
        registry.register("h", "", h);
        let families = prometheus_protobuf::encode(&registry).unwrap();
        families[0].metric[0].histogram.clone().unwrap()
    }

    /// Every observation is in a native bucket of its sign or the zero
    /// bucket, and there are at most [`MAX_BUCKETS`] of them.
    fn assert_bounded_and_complete(h: &pb::Histogram) -> usize {
        let positive = native_buckets(&h.positive_span, &h.positive_delta);
        let negative = native_buckets(&h.negative_span, &h.negative_delta);
        let n = positive.len() + negative.len();
        assert!(n <= MAX_BUCKETS, "{n} native buckets");
        assert_eq!(h.zero_count + positive.values().sum::<u64>() + negative.values().sum::<u64>(), h.sample_count);
        assert!(h.zero_threshold <= MAX_ZERO_THRESHOLD, "zero bucket up to {}", h.zero_threshold);
        n
    }

    /// 1 µs to 1 s, as the documentation says: every bucket of schema 3,
    /// 160 of them, the resolution kept.
    #[test]
    fn one_microsecond_to_one_second_keeps_full_resolution() {
        let h = observed(log_spread(1e-6, 1.0, 20_000));
        assert_eq!(assert_bounded_and_complete(&h), MAX_BUCKETS);
        assert_eq!((h.schema, h.zero_threshold, h.zero_count), (i32::from(SCHEMA), ZERO_THRESHOLD, 0));
    }

    /// Wake-ups within a microsecond of their deadline, early and late, on
    /// top of that range: the zero bucket widens to take them (not beyond
    /// 0.95 µs), the resolution above it is kept.
    #[test]
    fn sub_microsecond_wakeups_widen_the_zero_bucket_first() {
        let near = log_spread(1e-8, 9e-7, 500).flat_map(|v| [v, -v]);
        let h = observed(log_spread(1e-6, 1.0, 20_000).chain(near));
        assert_bounded_and_complete(&h);
        assert_eq!(h.schema, i32::from(SCHEMA));
        assert!(h.zero_threshold > ZERO_THRESHOLD && h.zero_count >= 1000, "{} in ±{}", h.zero_count, h.zero_threshold);
    }

    /// From 1 ns to 1000 s, early and late: wider than any run, yet the
    /// buckets stay within the bound, at a lower resolution.
    #[test]
    fn any_range_stays_within_the_bound() {
        let h = observed(log_spread(1e-9, 1e3, 50_000).flat_map(|v| [v, -v]).chain([0.0]));
        assert_bounded_and_complete(&h);
        assert!(h.schema < i32::from(SCHEMA), "schema {}", h.schema);
        assert_eq!(h.sample_count, 100_001);
    }
}

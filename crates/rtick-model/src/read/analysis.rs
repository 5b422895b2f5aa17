//! Figures taken from a distribution: percentiles and fixed-width buckets.

use super::Dist;
use rtick::stats::{percentile, PERCENTILES};

/// The value at quantile `q`: the smallest value with at least ⌈q·n⌉ samples
/// at or below it (samples beyond the range count as `max`).
pub fn quantile(d: &Dist, q: f64, max: i64) -> i64 {
    let overflow = std::iter::once((max, d.overflow));
    percentile::of_counts(d.weighted.iter().copied().chain(overflow), q).unwrap_or(0)
}

/// The report's six percentiles.
pub fn percentiles(d: &Dist, max: i64) -> [i64; 6] {
    let mut out = [0; 6];
    for (o, q) in out.iter_mut().zip(PERCENTILES) {
        *o = quantile(d, q / 100.0, max);
    }
    out
}

/// The distribution table: (bucket lower edge, count), non-empty
/// buckets of `width` ns, with the overflow as a last `None` bucket.
pub fn buckets(d: &Dist, width: i64) -> Vec<(Option<i64>, u64)> {
    let mut out: Vec<(Option<i64>, u64)> = Vec::new();
    for &(v, c) in &d.weighted {
        let b = v.div_euclid(width) * width;
        match out.last_mut() {
            Some((Some(last), n)) if *last == b => *n += c,
            _ => out.push((Some(b), c)),
        }
    }
    if d.overflow > 0 {
        out.push((None, d.overflow));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(w: &[(i64, u64)], overflow: u64) -> Dist {
        Dist { weighted: w.to_vec(), overflow, resolution_ns: 1000 }
    }

    #[test]
    fn quantiles_by_rank() {
        let d = dist(&[(1000, 50), (2000, 40), (5000, 9), (9000, 1)], 0);
        assert_eq!(percentiles(&d, 9000), [1000, 2000, 5000, 9000, 9000, 9000]);
        let o = dist(&[(1000, 99)], 1);
        assert_eq!(quantile(&o, 0.999, 777_000), 777_000, "an overflow counts at the maximum");
        assert_eq!(quantile(&dist(&[], 0), 0.5, 5), 0);
    }

    #[test]
    fn buckets_regroup() {
        let d = dist(&[(100, 1), (900, 2), (1000, 3), (2500, 4)], 5);
        assert_eq!(buckets(&d, 1000), [(Some(0), 3), (Some(1000), 3), (Some(2000), 4), (None, 5)]);
    }
}

//! Nearest-rank percentiles: the one definition every figure in rtick uses.
//!
//! The value at quantile `q` (0..=1) of `n` values is the smallest value with
//! at least ⌈q·n⌉ values at or below it, the rank held within 1..=n: q = 0
//! gives the minimum, q = 1 the maximum, and every result is a value that
//! was recorded (no interpolation). Nothing here allocates.

/// The 1-based nearest rank of quantile `q` among `n` values; `None` when
/// `n` is 0.
pub fn rank(q: f64, n: u64) -> Option<u64> {
    // `as` saturates: a negative or NaN q gives 0, held up to rank 1.
    (n > 0).then(|| ((q * n as f64).ceil() as u64).clamp(1, n))
}

/// The value at quantile `q` of `sorted` (ascending); `None` when empty.
pub fn of_sorted<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let r = rank(q, sorted.len() as u64)?;
    Some(sorted[r as usize - 1])
}

/// The value whose cumulative count first reaches `rank` (1-based), over
/// `(value, count)` pairs in ascending order of value; `None` when the
/// counts add up to less than `rank`.
pub fn at_rank<T>(counts: impl IntoIterator<Item = (T, u64)>, rank: u64) -> Option<T> {
    let mut seen = 0u64;
    counts.into_iter().find_map(|(v, c)| {
        seen += c;
        (c > 0 && seen >= rank).then_some(v)
    })
}

/// The value at quantile `q` of a distribution given as `(value, count)`
/// pairs in ascending order of value; `None` when the counts add up to 0.
pub fn of_counts<T, I>(counts: I, q: f64) -> Option<T>
where
    I: IntoIterator<Item = (T, u64)> + Clone,
{
    let n = counts.clone().into_iter().map(|(_, c)| c).sum();
    at_rank(counts, rank(q, n)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks() {
        assert_eq!(rank(0.5, 0), None);
        assert_eq!(rank(0.0, 1), Some(1));
        assert_eq!(rank(1.0, 1), Some(1));
        assert_eq!(rank(0.0, 100), Some(1));
        assert_eq!(rank(0.5, 100), Some(50));
        assert_eq!(rank(0.99, 100), Some(99));
        assert_eq!(rank(0.999, 100), Some(100));
        assert_eq!(rank(1.0, 100), Some(100));
        assert_eq!(rank(0.5, 7), Some(4));
        assert_eq!(rank(-1.0, 10), Some(1));
        assert_eq!(rank(f64::NAN, 10), Some(1));
        assert_eq!(rank(2.0, 10), Some(10));
    }

    #[test]
    fn sorted_slices() {
        let v: Vec<i64> = (1..=100).map(|x| x * 10).collect();
        let at = |q| of_sorted(&v, q);
        assert_eq!((at(0.0), at(0.5), at(0.99), at(1.0)), (Some(10), Some(500), Some(990), Some(1000)));
        assert_eq!(of_sorted(&[7.5], 0.0), Some(7.5));
        assert_eq!(of_sorted(&[7.5], 0.99), Some(7.5));
        assert_eq!(of_sorted::<i64>(&[], 0.5), None);
        // An even count: the lower middle value, as nearest rank defines it.
        assert_eq!(of_sorted(&[1, 2, 3, 4], 0.5), Some(2));
    }

    #[test]
    fn cumulative_counts() {
        let d = [(-5i64, 1u64), (10, 49), (20, 0), (30, 49), (900, 1)];
        let at = |q| of_counts(d, q);
        assert_eq!(
            (at(0.0), at(0.5), at(0.51), at(0.99), at(1.0)),
            (Some(-5), Some(10), Some(30), Some(30), Some(900))
        );
        assert_eq!(of_counts([(42, 1)], 0.0), Some(42));
        assert_eq!(of_counts([(42, 1)], 1.0), Some(42));
        assert_eq!(of_counts([(1, 0), (2, 0)], 0.5), None);
        assert_eq!(of_counts(std::iter::empty::<(i64, u64)>(), 0.5), None);
        // An empty bucket on the rank's boundary is never the answer.
        assert_eq!(at_rank([(1, 2), (2, 0), (3, 1)], 2), Some(1));
        assert_eq!(at_rank([(1, 2), (2, 0), (3, 1)], 3), Some(3));
        assert_eq!(at_rank([(1, 2)], 3), None);
    }
}

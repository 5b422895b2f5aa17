//! The order in which mechanisms are measured.
//!
//! Sequential: each mechanism once, for the whole duration. Interleaved
//! (`--compare`): rounds of short slices, A B C … A B C …, so that whatever
//! the machine does meanwhile hits every mechanism alike.

use crate::time::Nanos;

/// One stretch of measuring one mechanism.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Index into the run's mechanisms.
    pub mechanism: usize,
    /// How long the slice's grid runs (`None`: until the loop count or a stop).
    pub duration: Option<Nanos>,
    /// Rest after the slice, with nothing measured (lets RT throttling of a
    /// spinning mechanism end before the next slice starts).
    pub rest_after: Nanos,
}

/// One slice per mechanism, each for the whole `duration`.
pub fn sequential(mechanisms: usize, duration: Option<Nanos>, rest: impl Fn(usize) -> Nanos) -> Vec<Slice> {
    (0..mechanisms).map(|m| Slice { mechanism: m, duration, rest_after: rest(m) }).collect()
}

/// Rounds of slices of `slice` each until every mechanism has had `total`;
/// the last round's slices are shortened to fit.
pub fn interleaved(mechanisms: usize, total: Nanos, slice: Nanos, rest: impl Fn(usize) -> Nanos) -> Vec<Slice> {
    let slice = if slice <= Nanos::ZERO { total } else { slice };
    let mut out = Vec::new();
    let mut done = Nanos::ZERO;
    while done < total {
        let len = slice.min(total - done);
        out.extend((0..mechanisms).map(|m| Slice { mechanism: m, duration: Some(len), rest_after: rest(m) }));
        done = done + len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_covers_each_mechanism_exactly() {
        let s = interleaved(3, Nanos::from_ms(2500), Nanos::from_secs(1), |_| Nanos::ZERO);
        assert_eq!(s.iter().map(|x| x.mechanism).collect::<Vec<_>>(), [0, 1, 2, 0, 1, 2, 0, 1, 2]);
        for m in 0..3 {
            let total: i64 = s.iter().filter(|x| x.mechanism == m).map(|x| x.duration.unwrap().as_ns()).sum();
            assert_eq!(total, Nanos::from_ms(2500).as_ns());
        }
        assert_eq!(s[8].duration, Some(Nanos::from_ms(500)));
    }

    #[test]
    fn sequential_is_one_slice_each_with_rests() {
        let s = sequential(2, Some(Nanos::from_secs(3)), |m| if m == 1 { Nanos::from_ms(50) } else { Nanos::ZERO });
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].rest_after, Nanos::from_ms(50));
        assert_eq!(s[0].duration, Some(Nanos::from_secs(3)));
    }

    #[test]
    fn zero_slice_means_one_round() {
        assert_eq!(interleaved(2, Nanos::from_secs(1), Nanos::ZERO, |_| Nanos::ZERO).len(), 2);
    }
}

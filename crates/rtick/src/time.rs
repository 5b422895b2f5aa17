//! Signed integer nanosecond time types.
//!
//! Latency is a *signed* quantity: a wake-up can come early (relative sleeps,
//! a stepped CLOCK_REALTIME), and an unsigned type would wrap that into a huge
//! positive value, as cyclictest's does. Everything here is `i64` nanoseconds,
//! which covers ±292 years. This module holds the only `timespec` conversions
//! in the crate.

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

/// A signed span of time in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub i64);

/// A reading of a clock: nanoseconds since that clock's epoch.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub i64);

const NS_PER_SEC: i64 = 1_000_000_000;

/// The longest span a period, a shift, a start offset or a run may have:
/// 2^61 ns (73 years). A clock reading (CLOCK_REALTIME is ≈ 1.8e18 ns, below
/// 2^61 until 2043) plus two such spans still fits in an `i64`, so no
/// deadline computed from checked inputs can overflow.
pub const MAX_SPAN: Nanos = Nanos(1 << 61);
/// [`MAX_SPAN`] for people.
pub const MAX_SPAN_TEXT: &str = "73 years";

impl Nanos {
    /// Zero.
    pub const ZERO: Nanos = Nanos(0);
    /// From microseconds.
    pub const fn from_us(us: i64) -> Self {
        Nanos(us * 1_000)
    }
    /// From milliseconds.
    pub const fn from_ms(ms: i64) -> Self {
        Nanos(ms * 1_000_000)
    }
    /// From seconds.
    pub const fn from_secs(s: i64) -> Self {
        Nanos(s * NS_PER_SEC)
    }
    /// The value in nanoseconds.
    pub const fn as_ns(self) -> i64 {
        self.0
    }
    /// The value in (fractional) seconds, for display.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Whether `-MAX_SPAN ≤ self ≤ MAX_SPAN` (see [`MAX_SPAN`]).
    pub const fn within_max_span(self) -> bool {
        self.0 >= -MAX_SPAN.0 && self.0 <= MAX_SPAN.0
    }
    /// As a relative `timespec` (negative spans become zero: a sleep cannot go back).
    pub fn to_timespec(self) -> libc::timespec {
        Time(self.0.max(0)).to_timespec()
    }
    /// Converts a `std::time::Duration`, saturating at `i64::MAX` nanoseconds.
    pub fn from_std(d: std::time::Duration) -> Self {
        Nanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
    /// As a `std::time::Duration` (negative spans become zero).
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0.max(0) as u64)
    }
}

impl Time {
    /// As an absolute `timespec` for the clock this time was read from.
    pub fn to_timespec(self) -> libc::timespec {
        libc::timespec {
            tv_sec: self.0.div_euclid(NS_PER_SEC) as libc::time_t,
            tv_nsec: self.0.rem_euclid(NS_PER_SEC) as libc::c_long,
        }
    }
    /// From a `timespec` returned by the kernel.
    // time_t and c_long are narrower than i64 on 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    pub fn from_timespec(ts: &libc::timespec) -> Self {
        Time(ts.tv_sec as i64 * NS_PER_SEC + ts.tv_nsec as i64)
    }
    /// Nanoseconds since the clock's epoch.
    pub const fn as_ns(self) -> i64 {
        self.0
    }
    /// `self + d`, or `None` on overflow.
    pub const fn checked_add(self, d: Nanos) -> Option<Time> {
        match self.0.checked_add(d.0) {
            Some(t) => Some(Time(t)),
            None => None,
        }
    }
    /// `self − other`, or `None` on overflow.
    pub const fn checked_since(self, other: Time) -> Option<Nanos> {
        match self.0.checked_sub(other.0) {
            Some(d) => Some(Nanos(d)),
            None => None,
        }
    }
}

impl Add<Nanos> for Time {
    type Output = Time;
    fn add(self, rhs: Nanos) -> Time {
        Time(self.0 + rhs.0)
    }
}
impl AddAssign<Nanos> for Time {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 += rhs.0;
    }
}
impl Sub<Nanos> for Time {
    type Output = Time;
    fn sub(self, rhs: Nanos) -> Time {
        Time(self.0 - rhs.0)
    }
}
impl SubAssign<Nanos> for Time {
    fn sub_assign(&mut self, rhs: Nanos) {
        self.0 -= rhs.0;
    }
}
impl Sub for Time {
    type Output = Nanos;
    fn sub(self, rhs: Time) -> Nanos {
        Nanos(self.0 - rhs.0)
    }
}
impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 - rhs.0)
    }
}
impl Mul<i64> for Nanos {
    type Output = Nanos;
    fn mul(self, rhs: i64) -> Nanos {
        Nanos(self.0 * rhs)
    }
}
impl Neg for Nanos {
    type Output = Nanos;
    fn neg(self) -> Nanos {
        Nanos(-self.0)
    }
}

impl fmt::Display for Nanos {
    /// Human form with a unit chosen by magnitude: `850 ns`, `12.3 µs`, `1.50 ms`, `2.000 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        let a = ns.unsigned_abs();
        if a < 1_000 {
            write!(f, "{ns} ns")
        } else if a < 1_000_000 {
            write!(f, "{:.1} µs", ns as f64 / 1e3)
        } else if a < 1_000_000_000 {
            write!(f, "{:.2} ms", ns as f64 / 1e6)
        } else {
            write!(f, "{:.3} s", ns as f64 / 1e9)
        }
    }
}

/// The offset of one clock (`now`) to another (`reference`): `now` read
/// between two reference reads no more than 5 µs apart (best of ten tries),
/// less the reference's midpoint.
#[cold]
pub fn clock_offset(mut now: impl FnMut() -> Time, mut reference: impl FnMut() -> Time) -> Nanos {
    let mut best = (Nanos(i64::MAX), Nanos::ZERO);
    for _ in 0..10 {
        let before = reference();
        let t = now();
        let after = reference();
        let span = after - before;
        if span < best.0 {
            best = (span, t - before - Nanos(span.as_ns() / 2));
        }
        if span <= Nanos::from_us(5) {
            break;
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespec_round_trip_including_negative() {
        // (ns, tv_sec, tv_nsec): tv_nsec is in [0, 1 s) and tv_sec floors, as the kernel wants.
        for (ns, sec, nsec) in [
            (0, 0, 0),
            (1, 0, 1),
            (999_999_999, 0, 999_999_999),
            (1_000_000_000, 1, 0),
            (12_345_678_901, 12, 345_678_901),
            (-1, -1, 999_999_999),
            (-1_500_000_000, -2, 500_000_000),
        ] {
            let ts = Time(ns).to_timespec();
            assert_eq!((ts.tv_sec, ts.tv_nsec), (sec, nsec), "{ns}");
            assert_eq!(Time::from_timespec(&ts), Time(ns));
        }
    }

    #[test]
    fn relative_timespec_never_negative() {
        let ts = Nanos(-5).to_timespec();
        assert_eq!((ts.tv_sec, ts.tv_nsec), (0, 0));
    }

    #[test]
    fn arithmetic_and_display() {
        let t = Time(1_000) + Nanos::from_us(2);
        assert_eq!(t, Time(3_000));
        assert_eq!(t - Time(500), Nanos(2_500));
        assert_eq!(Nanos(-1500).to_string(), "-1.5 µs");
        assert_eq!(Nanos(850).to_string(), "850 ns");
        assert_eq!(Nanos::from_ms(1).to_string(), "1.00 ms");
    }
}

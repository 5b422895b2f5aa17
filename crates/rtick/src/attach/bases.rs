//! The clock bases an hrtimer may run on, and their offsets to the trace's
//! clock (CLOCK_MONOTONIC).
//!
//! A timer armed on CLOCK_REALTIME, CLOCK_BOOTTIME or CLOCK_TAI carries its
//! `softexpires` in that clock: about 56 years ahead of CLOCK_MONOTONIC for
//! CLOCK_REALTIME. Its `hrtimer_expire_entry` event carries `now` in the
//! same base, read when the timer interrupt began, a few microseconds before
//! the event's own (monotonic) time stamp. So `now − time stamp` tells the
//! base, and the offset read at the start, exact to the read's noise rather
//! than to the interrupt's delay, is the one used.

use crate::sys::clock::PosixClock;
use crate::time::{clock_offset, Nanos, Time};

/// A seen offset farther than this from every known base's is taken as it
/// is (the clock was set while traced).
const TOLERANCE: Nanos = Nanos(1_000_000);

/// A base's offset this close to CLOCK_MONOTONIC's is read noise, not a
/// different clock.
const SAME: Nanos = Nanos(1_000);

/// The offsets of CLOCK_MONOTONIC (0), CLOCK_REALTIME, CLOCK_BOOTTIME and
/// CLOCK_TAI to CLOCK_MONOTONIC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseOffsets(Vec<Nanos>);

impl BaseOffsets {
    /// Reads them now.
    pub fn read() -> BaseOffsets {
        let mono = || PosixClock::Monotonic.now();
        let mut v = vec![Nanos::ZERO];
        for c in [PosixClock::Realtime, PosixClock::Boottime, PosixClock::Tai] {
            v.push(clock_offset(|| c.now(), mono));
        }
        BaseOffsets(v)
    }

    /// Given offsets (tests).
    pub fn new(offsets: &[Nanos]) -> BaseOffsets {
        BaseOffsets(offsets.to_vec())
    }

    /// The offset of a timer's base, seen at its expiry as `now` (its base)
    /// at time stamp `ts` (CLOCK_MONOTONIC): the nearest known base's.
    pub fn at_expiry(&self, now: Time, ts: Time) -> Nanos {
        let seen = now - ts;
        let nearest = self
            .0
            .iter()
            .copied()
            .min_by_key(|o| (*o - seen).as_ns().unsigned_abs())
            .filter(|o| (*o - seen).as_ns().abs() <= TOLERANCE.as_ns())
            .unwrap_or(seen);
        // A clock within the reads' noise of CLOCK_MONOTONIC (CLOCK_BOOTTIME
        // with no suspend since boot) cannot be told from it: the timer is
        // taken as CLOCK_MONOTONIC, exact.
        if nearest.as_ns().abs() <= SAME.as_ns() {
            Nanos::ZERO
        } else {
            nearest
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_base_is_taken_and_a_set_clock_as_seen() {
        let realtime = Nanos(1_764_000_000_000_000_000);
        let b = BaseOffsets::new(&[Nanos::ZERO, realtime, Nanos(40)]);
        // A monotonic timer: `now` read 3 µs before the event.
        assert_eq!(b.at_expiry(Time(1_000_000), Time(1_003_000)), Nanos::ZERO);
        let now = Time(realtime.as_ns() + 1_000_000 - 2_500);
        assert_eq!(b.at_expiry(now, Time(1_000_000)), realtime);
        // CLOCK_BOOTTIME read 40 ns behind CLOCK_MONOTONIC (no suspend):
        // a timer seen 30 ns behind is a monotonic one, exactly.
        let b = BaseOffsets::new(&[Nanos::ZERO, realtime, Nanos(-40)]);
        assert_eq!(b.at_expiry(Time(1_000_000 - 30), Time(1_000_000)), Nanos::ZERO);
        let stepped = Time(realtime.as_ns() + 5_000_000_000);
        assert_eq!(b.at_expiry(stepped, Time(0)), stepped - Time(0));
    }

    #[test]
    fn realtime_is_read_ahead_of_monotonic_by_decades() {
        let b = BaseOffsets::read();
        assert!(b.0[1].as_ns() > 40 * 365 * 86_400 * 1_000_000_000, "{b:?}");
    }
}

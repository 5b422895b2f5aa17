//! The clocks a periodic loop can run on.

use std::fmt;

use crate::sys;
use crate::time::{Nanos, Time};

/// A clock for deadlines and time stamps.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClockId {
    /// CLOCK_MONOTONIC: never steps, slewed by NTP. The default.
    #[default]
    Monotonic,
    /// CLOCK_REALTIME: wall-clock time; steps when the time is set.
    Realtime,
    /// CLOCK_TAI: like REALTIME without leap seconds.
    Tai,
    /// CLOCK_BOOTTIME: like MONOTONIC but counts suspend.
    Boottime,
}

impl ClockId {
    /// Every selectable clock.
    pub const ALL: [ClockId; 4] = [ClockId::Monotonic, ClockId::Realtime, ClockId::Tai, ClockId::Boottime];

    /// The kernel's clock id.
    pub fn raw(self) -> libc::clockid_t {
        match self {
            ClockId::Monotonic => libc::CLOCK_MONOTONIC,
            ClockId::Realtime => libc::CLOCK_REALTIME,
            ClockId::Tai => libc::CLOCK_TAI,
            ClockId::Boottime => libc::CLOCK_BOOTTIME,
        }
    }

    /// Whether `settimeofday`, `clock_settime` or an NTP/PTP step can move
    /// this clock (REALTIME and TAI).
    pub fn can_step(self) -> bool {
        matches!(self, ClockId::Realtime | ClockId::Tai)
    }

    /// The command-line name (`monotonic`, …).
    pub fn name(self) -> &'static str {
        match self {
            ClockId::Monotonic => "monotonic",
            ClockId::Realtime => "realtime",
            ClockId::Tai => "tai",
            ClockId::Boottime => "boottime",
        }
    }

    /// The name as the kernel spells it (`CLOCK_MONOTONIC`, …).
    pub fn kernel_name(self) -> &'static str {
        match self {
            ClockId::Monotonic => "CLOCK_MONOTONIC",
            ClockId::Realtime => "CLOCK_REALTIME",
            ClockId::Tai => "CLOCK_TAI",
            ClockId::Boottime => "CLOCK_BOOTTIME",
        }
    }

    /// Parses `monotonic`, `CLOCK_MONOTONIC`, or cyclictest's numbers (`0` monotonic, `1` realtime).
    pub fn parse(s: &str) -> Option<ClockId> {
        let l = s.trim().to_ascii_lowercase();
        let l = l.strip_prefix("clock_").unwrap_or(&l);
        match l {
            "monotonic" | "0" => Some(ClockId::Monotonic),
            "realtime" | "1" => Some(ClockId::Realtime),
            "tai" => Some(ClockId::Tai),
            "boottime" => Some(ClockId::Boottime),
            _ => None,
        }
    }

    /// Reads the clock (vDSO for all four).
    #[inline]
    pub fn now(self) -> Time {
        sys::clock::now(self.raw())
    }

    /// `clock_getres` for this clock.
    pub fn resolution(self) -> Option<Nanos> {
        sys::clock::resolution(self.raw()).ok()
    }
}

impl fmt::Display for ClockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names() {
        for c in ClockId::ALL {
            assert_eq!(ClockId::parse(c.name()), Some(c));
            assert_eq!(ClockId::parse(c.kernel_name()), Some(c));
            assert!(c.now().as_ns() > 0);
        }
        assert_eq!(ClockId::parse("1"), Some(ClockId::Realtime));
        assert_eq!(ClockId::parse("nope"), None);
    }
}

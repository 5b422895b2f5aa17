//! The clocks a periodic loop can run on ([`ClockId`]), and every POSIX
//! clock rtick reads ([`PosixClock`]).
//!
//! Only these typed ids reach the clock read in `sys`: a raw `clockid_t`
//! from a caller could name a clock the kernel does not have.

use std::fmt;

use crate::sys;
pub use crate::sys::clock::PosixClock;
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

    /// The POSIX clock this is.
    #[inline]
    pub fn posix(self) -> PosixClock {
        match self {
            ClockId::Monotonic => PosixClock::Monotonic,
            ClockId::Realtime => PosixClock::Realtime,
            ClockId::Tai => PosixClock::Tai,
            ClockId::Boottime => PosixClock::Boottime,
        }
    }

    /// The kernel's clock id.
    #[inline]
    pub fn raw(self) -> libc::clockid_t {
        self.posix().raw()
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
        self.posix().name()
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
        sys::clock::now(self.posix())
    }

    /// `clock_getres` for this clock.
    pub fn resolution(self) -> Option<Nanos> {
        sys::clock::resolution(self.posix()).ok()
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
        let names = [
            (ClockId::Monotonic, "monotonic", "CLOCK_MONOTONIC"),
            (ClockId::Realtime, "realtime", "CLOCK_REALTIME"),
            (ClockId::Tai, "tai", "CLOCK_TAI"),
            (ClockId::Boottime, "boottime", "CLOCK_BOOTTIME"),
        ];
        assert_eq!(names.map(|n| n.0), ClockId::ALL);
        for (c, name, kernel) in names {
            assert_eq!((c.name(), c.kernel_name(), c.to_string()), (name, kernel, name.to_string()));
            assert_eq!(ClockId::parse(name), Some(c));
            assert_eq!(ClockId::parse(kernel), Some(c));
            assert_eq!(ClockId::parse(&format!(" {} ", kernel.to_lowercase())), Some(c));
        }
        assert_eq!(ClockId::parse("0"), Some(ClockId::Monotonic));
        assert_eq!(ClockId::parse("1"), Some(ClockId::Realtime));
        assert_eq!(ClockId::parse("nope"), None);
        assert_eq!(ClockId::parse("CLOCK_MONOTONIC_RAW"), None);
    }

    /// The clocks read what std's independent readings say: REALTIME is
    /// `SystemTime::now()` and TAI is REALTIME plus the TAI offset (0 until
    /// set, else 37 s since 2017), each within a second; MONOTONIC advances
    /// as `Instant` does, and BOOTTIME is never behind MONOTONIC.
    #[test]
    fn readings_agree_with_std() {
        let sys = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        let real = ClockId::Realtime.now();
        assert!((real.as_ns() - sys.as_nanos() as i64).abs() < 1_000_000_000, "{} vs {sys:?}", real.as_ns());
        let tai_offset = ClockId::Tai.now().as_ns() - ClockId::Realtime.now().as_ns();
        assert!([0, 37].iter().any(|s| (tai_offset - s * 1_000_000_000).abs() < 1_000_000_000), "{tai_offset}");
        let (m0, i0) = (ClockId::Monotonic.now(), std::time::Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (i1, m1) = (std::time::Instant::now(), ClockId::Monotonic.now());
        // Instant is CLOCK_MONOTONIC on Linux: the interval read between
        // two MONOTONIC reads lies within them.
        assert!(m1 - m0 >= Nanos::from_std(i1 - i0), "{} < {:?}", m1 - m0, i1 - i0);
        // BOOTTIME is MONOTONIC plus the time spent suspended: read after
        // it, never behind it.
        let mono = ClockId::Monotonic.now();
        assert!(ClockId::Boottime.now() >= mono);
    }

    #[test]
    fn every_posix_clock_reads_and_the_loop_clocks_are_among_them() {
        let names = PosixClock::ALL.map(PosixClock::name);
        assert_eq!(
            names,
            [
                "CLOCK_MONOTONIC",
                "CLOCK_MONOTONIC_RAW",
                "CLOCK_MONOTONIC_COARSE",
                "CLOCK_REALTIME",
                "CLOCK_REALTIME_COARSE",
                "CLOCK_BOOTTIME",
                "CLOCK_TAI",
                "CLOCK_PROCESS_CPUTIME_ID",
                "CLOCK_THREAD_CPUTIME_ID",
            ]
        );
        // The kernel's ABI numbers (include/uapi/linux/time.h).
        assert_eq!(PosixClock::ALL.map(PosixClock::raw), [1, 4, 6, 0, 5, 7, 11, 2, 3]);
        for c in PosixClock::ALL {
            let (a, b) = (c.now(), c.now());
            assert!(b >= a, "{} went back", c.name());
        }
        for c in ClockId::ALL {
            assert!(PosixClock::ALL.contains(&c.posix()));
            assert_eq!(c.raw(), c.posix().raw());
        }
    }
}

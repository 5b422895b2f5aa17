//! The clocks a periodic loop can run on ([`ClockId`]), and every POSIX
//! clock rtick reads ([`PosixClock`]).
//!
//! Only these typed ids reach the clock read in `sys`: a raw `clockid_t`
//! from a caller could name a clock the kernel does not have.

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

/// A POSIX clock the kernel has had since Linux 3.10 (CLOCK_TAI is the
/// youngest): the clocks `rtick clocks` surveys, and those a loop runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PosixClock {
    /// CLOCK_MONOTONIC.
    Monotonic,
    /// CLOCK_MONOTONIC_RAW: not slewed by NTP.
    MonotonicRaw,
    /// CLOCK_MONOTONIC_COARSE: the last tick's time, cheap to read.
    MonotonicCoarse,
    /// CLOCK_REALTIME.
    Realtime,
    /// CLOCK_REALTIME_COARSE.
    RealtimeCoarse,
    /// CLOCK_BOOTTIME.
    Boottime,
    /// CLOCK_TAI.
    Tai,
    /// CLOCK_PROCESS_CPUTIME_ID: CPU time of the process.
    ProcessCputime,
    /// CLOCK_THREAD_CPUTIME_ID: CPU time of the calling thread.
    ThreadCputime,
}

impl PosixClock {
    /// Every POSIX clock, in the order `rtick clocks` lists them.
    pub const ALL: [PosixClock; 9] = [
        PosixClock::Monotonic,
        PosixClock::MonotonicRaw,
        PosixClock::MonotonicCoarse,
        PosixClock::Realtime,
        PosixClock::RealtimeCoarse,
        PosixClock::Boottime,
        PosixClock::Tai,
        PosixClock::ProcessCputime,
        PosixClock::ThreadCputime,
    ];

    /// The kernel's clock id.
    #[inline]
    pub fn raw(self) -> libc::clockid_t {
        match self {
            PosixClock::Monotonic => libc::CLOCK_MONOTONIC,
            PosixClock::MonotonicRaw => libc::CLOCK_MONOTONIC_RAW,
            PosixClock::MonotonicCoarse => libc::CLOCK_MONOTONIC_COARSE,
            PosixClock::Realtime => libc::CLOCK_REALTIME,
            PosixClock::RealtimeCoarse => libc::CLOCK_REALTIME_COARSE,
            PosixClock::Boottime => libc::CLOCK_BOOTTIME,
            PosixClock::Tai => libc::CLOCK_TAI,
            PosixClock::ProcessCputime => libc::CLOCK_PROCESS_CPUTIME_ID,
            PosixClock::ThreadCputime => libc::CLOCK_THREAD_CPUTIME_ID,
        }
    }

    /// The name as the kernel spells it (`CLOCK_MONOTONIC_RAW`, …).
    pub fn name(self) -> &'static str {
        match self {
            PosixClock::Monotonic => "CLOCK_MONOTONIC",
            PosixClock::MonotonicRaw => "CLOCK_MONOTONIC_RAW",
            PosixClock::MonotonicCoarse => "CLOCK_MONOTONIC_COARSE",
            PosixClock::Realtime => "CLOCK_REALTIME",
            PosixClock::RealtimeCoarse => "CLOCK_REALTIME_COARSE",
            PosixClock::Boottime => "CLOCK_BOOTTIME",
            PosixClock::Tai => "CLOCK_TAI",
            PosixClock::ProcessCputime => "CLOCK_PROCESS_CPUTIME_ID",
            PosixClock::ThreadCputime => "CLOCK_THREAD_CPUTIME_ID",
        }
    }

    /// Reads the clock (through the vDSO where the kernel serves it there).
    #[inline]
    pub fn now(self) -> Time {
        sys::clock::now(self)
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

    #[test]
    fn every_posix_clock_reads_and_the_loop_clocks_are_among_them() {
        for c in PosixClock::ALL {
            assert!(c.name().starts_with("CLOCK_"));
            let (a, b) = (c.now(), c.now());
            assert!(b >= a, "{} went back", c.name());
        }
        let raws: Vec<_> = PosixClock::ALL.iter().map(|c| c.raw()).collect();
        for c in ClockId::ALL {
            assert!(PosixClock::ALL.contains(&c.posix()));
            assert_eq!(c.kernel_name(), c.posix().name());
            assert_eq!(raws.iter().filter(|&&r| r == c.raw()).count(), 1);
        }
    }
}

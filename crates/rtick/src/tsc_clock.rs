//! The TSC as a clock: whether this machine lets it stand in for
//! CLOCK_MONOTONIC ([`usable`]: x86-64, `constant_tsc` and `nonstop_tsc`,
//! and the kernel's clocksource is `tsc`, i.e. the kernel trusts it), and
//! its ticks turned into nanoseconds and CLOCK_MONOTONIC times
//! ([`TscClock`]) by a calibration against a POSIX clock.
//!
//! The conversion is the kernel's own: `ns = ticks × mult >> 32`, rounded,
//! one multiplication, so that a loop can convert every reading.

use std::fmt;

use crate::clock::PosixClock;
use crate::system::SysRoot;
use crate::time::{Nanos, Time};

/// The TSC's flags in /proc/cpuinfo, read once.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TscFlags {
    /// `tsc`: the CPU has one.
    pub tsc: bool,
    /// `rdtscp`: the ordered read instruction.
    pub rdtscp: bool,
    /// `constant_tsc`: it ticks at one rate whatever the CPU's frequency.
    pub constant: bool,
    /// `nonstop_tsc`: it keeps ticking in deep C-states.
    pub nonstop: bool,
    /// `tsc_known_freq`: the frequency comes from CPUID or the hypervisor.
    pub known_freq: bool,
    /// `tsc_reliable`: the kernel skips the TSC's watchdog.
    pub reliable: bool,
}

impl TscFlags {
    /// The flags of the first processor in /proc/cpuinfo's text; `None`
    /// without a flags line.
    pub fn parse(cpuinfo: &str) -> Option<TscFlags> {
        let flags = crate::system::cpu_flags(cpuinfo)?;
        let has = |f: &str| flags.contains(&f);
        Some(TscFlags {
            tsc: has("tsc"),
            rdtscp: has("rdtscp"),
            constant: has("constant_tsc"),
            nonstop: has("nonstop_tsc"),
            known_freq: has("tsc_known_freq"),
            reliable: has("tsc_reliable"),
        })
    }

    /// The flags under `root` (/proc/cpuinfo).
    pub fn read(root: &SysRoot) -> Option<TscFlags> {
        TscFlags::parse(&root.read("/proc/cpuinfo")?)
    }

    /// `constant_tsc` and `nonstop_tsc`: one rate, always ticking.
    pub fn invariant(&self) -> bool {
        self.constant && self.nonstop
    }

    /// The flags set, as the kernel spells them.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.tsc, "tsc"),
            (self.rdtscp, "rdtscp"),
            (self.constant, "constant_tsc"),
            (self.nonstop, "nonstop_tsc"),
            (self.known_freq, "tsc_known_freq"),
            (self.reliable, "tsc_reliable"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// Why the TSC cannot stand in for CLOCK_MONOTONIC here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotUsable {
    /// `rdtsc` is an x86-64 instruction.
    NotX86_64,
    /// /proc/cpuinfo is unreadable or has no flags line.
    NoFlags,
    /// The CPU has no TSC.
    NoTsc,
    /// The TSC changes rate or stops (the flags missing).
    NotInvariant(Vec<&'static str>),
    /// The kernel does not use it as its clocksource (the one it uses, if known).
    NotClocksource(Option<String>),
    /// It did not move forward while it was calibrated.
    Stalled,
}

impl fmt::Display for NotUsable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotUsable::NotX86_64 => write!(f, "the CPU is not x86-64 (no rdtsc)"),
            NotUsable::NoFlags => write!(f, "the CPU's flags are unreadable (/proc/cpuinfo)"),
            NotUsable::NoTsc => write!(f, "the CPU has no TSC"),
            NotUsable::NotInvariant(missing) => write!(f, "the TSC is not invariant (no {})", missing.join(", no ")),
            NotUsable::NotClocksource(Some(cs)) => write!(f, "the clocksource is {cs}"),
            NotUsable::NotClocksource(None) => write!(f, "the clocksource is unknown"),
            NotUsable::Stalled => write!(f, "the TSC did not advance while it was calibrated"),
        }
    }
}

/// Whether the TSC stands in for CLOCK_MONOTONIC: on x86-64, with
/// `constant_tsc` and `nonstop_tsc`, and `tsc` the current clocksource
/// (the kernel's watchdog trusts it: it is what CLOCK_MONOTONIC reads).
pub fn usable(x86_64: bool, flags: Option<&TscFlags>, clocksource: Option<&str>) -> Result<(), NotUsable> {
    let flags = match (x86_64, flags) {
        (false, _) => return Err(NotUsable::NotX86_64),
        (true, None) => return Err(NotUsable::NoFlags),
        (true, Some(f)) => f,
    };
    if !flags.tsc {
        return Err(NotUsable::NoTsc);
    }
    if !flags.invariant() {
        let missing = [(flags.constant, "constant_tsc"), (flags.nonstop, "nonstop_tsc")];
        return Err(NotUsable::NotInvariant(missing.into_iter().filter(|(on, _)| !on).map(|(_, n)| n).collect()));
    }
    match clocksource {
        Some("tsc") => Ok(()),
        cs => Err(NotUsable::NotClocksource(cs.map(str::to_string))),
    }
}

/// [`usable`] for the machine under `root`.
pub fn usable_under(root: &SysRoot) -> Result<(), NotUsable> {
    let cs = crate::system::current_clocksource(root);
    usable(cfg!(target_arch = "x86_64"), TscFlags::read(root).as_ref(), cs.as_deref())
}

/// Fraction bits of [`TscClock`]'s multiplier.
const SHIFT: u32 = 32;

/// A TSC reading and a reading of another clock taken between two TSC
/// reads `width` ticks apart: `tsc` is their midpoint, within `width / 2`
/// of the TSC at `time`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The TSC (midpoint).
    pub tsc: u64,
    /// The other clock.
    pub time: Time,
    /// Ticks between the TSC reads around it.
    pub width: u64,
}

/// TSC ticks as nanoseconds and as times of the clock it was calibrated
/// against.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TscClock {
    /// The frequency, Hz.
    pub hz: f64,
    /// The calibration's error bound, parts per million of every span.
    pub error_ppm: f64,
    mult: u64,
    anchor: Pair,
}

impl TscClock {
    /// The clock of two pairs: the frequency is the ticks between them
    /// over the nanoseconds. The bound adds the TSC's uncertainty at each
    /// end (half its bracket) and the other clock's (1 ns at each end).
    pub fn from_pairs(first: Pair, last: Pair) -> Option<TscClock> {
        let ticks = last.tsc.checked_sub(first.tsc).filter(|&t| t > 0)? as f64;
        let ns = (last.time - first.time).as_ns();
        if ns <= 0 {
            return None;
        }
        let ns = ns as f64;
        let hz = ticks * 1e9 / ns;
        let error = (first.width + last.width) as f64 / 2.0 / ticks + 2.0 / ns;
        let mult = ((1u128 << SHIFT) as f64 * 1e9 / hz).round() as u64;
        Some(TscClock { hz, error_ppm: error * 1e6, mult, anchor: last })
    }

    /// `ticks` in nanoseconds, rounded (saturating at `i64::MAX`).
    #[inline]
    pub fn ns(&self, ticks: u64) -> i64 {
        let ns = (ticks as u128 * self.mult as u128 + (1u128 << (SHIFT - 1))) >> SHIFT;
        ns.min(i64::MAX as u128) as i64
    }

    /// The time of the other clock when the TSC read `tsc`, from the latest anchor.
    #[inline]
    pub fn time(&self, tsc: u64) -> Time {
        match tsc.checked_sub(self.anchor.tsc) {
            Some(after) => self.anchor.time + Nanos(self.ns(after)),
            None => self.anchor.time - Nanos(self.ns(self.anchor.tsc - tsc)),
        }
    }

    /// Ties the TSC to the other clock at `p` from now on (its frequency unchanged).
    #[inline]
    pub fn anchor(&mut self, p: Pair) {
        self.anchor = p;
    }

    /// The ticks of `span`, rounded.
    pub fn ticks(&self, span: Nanos) -> u64 {
        (span.as_ns().max(0) as f64 * self.hz / 1e9).round() as u64
    }
}

/// The TSC around a reading of `clock`: `rdtsc` fenced on both sides, so
/// that neither read moves across the clock's.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn pair(clock: PosixClock) -> Pair {
    let a = crate::sys::tsc::rdtsc_ordered();
    let time = crate::sys::clock::now(clock);
    let b = crate::sys::tsc::rdtsc_ordered();
    Pair { tsc: a + (b - a) / 2, time, width: b - a }
}

/// The narrowest of `tries` [`pair`]s (an interrupt widens one, not all).
#[cfg(target_arch = "x86_64")]
pub fn tight_pair(clock: PosixClock, tries: usize) -> Pair {
    (0..tries.max(1)).map(|_| pair(clock)).min_by_key(|p| p.width).unwrap_or_else(|| pair(clock))
}

/// Calibrates the TSC against `clock` over `span` (spinning), its ends the
/// narrowest of a few pairs each; `None` if the TSC did not move forward.
#[cfg(target_arch = "x86_64")]
pub fn calibrate(clock: PosixClock, span: Nanos) -> Option<TscClock> {
    let first = tight_pair(clock, 16);
    while crate::sys::clock::now(clock) - first.time < span {
        std::hint::spin_loop();
    }
    TscClock::from_pairs(first, tight_pair(clock, 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &str = "processor\t: 0\nflags\t\t: fpu tsc msr rdtscp constant_tsc nonstop_tsc tsc_known_freq\n";

    #[test]
    fn flags_are_read_once_typed() {
        let f = TscFlags::parse(FLAGS).unwrap();
        assert!(f.tsc && f.rdtscp && f.constant && f.nonstop && f.known_freq && !f.reliable);
        assert!(f.invariant());
        assert_eq!(f.names(), ["tsc", "rdtscp", "constant_tsc", "nonstop_tsc", "tsc_known_freq"]);
        assert_eq!(TscFlags::parse("processor\t: 0\n"), None);
    }

    /// Every reason, in the order checked, from a fake cpuinfo and clocksource.
    #[test]
    fn the_tsc_is_used_only_where_the_kernel_trusts_it() {
        let good = TscFlags::parse(FLAGS).unwrap();
        assert_eq!(usable(true, Some(&good), Some("tsc")), Ok(()));
        assert_eq!(usable(false, Some(&good), Some("tsc")), Err(NotUsable::NotX86_64));
        assert_eq!(usable(true, None, Some("tsc")), Err(NotUsable::NoFlags));
        let none = TscFlags::parse("flags\t: fpu msr\n").unwrap();
        assert_eq!(usable(true, Some(&none), Some("tsc")), Err(NotUsable::NoTsc));
        let varying = TscFlags::parse("flags\t: tsc constant_tsc\n").unwrap();
        let e = usable(true, Some(&varying), Some("tsc")).unwrap_err();
        assert_eq!(e, NotUsable::NotInvariant(vec!["nonstop_tsc"]));
        assert_eq!(e.to_string(), "the TSC is not invariant (no nonstop_tsc)");
        let bare = TscFlags::parse("flags\t: tsc\n").unwrap();
        assert_eq!(
            usable(true, Some(&bare), None).unwrap_err().to_string(),
            "the TSC is not invariant (no constant_tsc, no nonstop_tsc)"
        );
        let kvm = usable(true, Some(&good), Some("kvm-clock")).unwrap_err();
        assert_eq!(kvm.to_string(), "the clocksource is kvm-clock");
        assert_eq!(usable(true, Some(&good), None), Err(NotUsable::NotClocksource(None)));
    }

    /// The same decision from files under a fixture root.
    #[test]
    fn the_decision_reads_cpuinfo_and_the_clocksource() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::new(dir.path());
        let cs = root.path("/sys/devices/system/clocksource/clocksource0");
        std::fs::create_dir_all(&cs).unwrap();
        std::fs::create_dir_all(root.path("/proc")).unwrap();
        std::fs::write(root.path("/proc/cpuinfo"), FLAGS).unwrap();
        std::fs::write(cs.join("current_clocksource"), "hpet\n").unwrap();
        let expect = |ok| if cfg!(target_arch = "x86_64") { ok } else { Err(NotUsable::NotX86_64) };
        assert_eq!(usable_under(&root), expect(Err(NotUsable::NotClocksource(Some("hpet".into())))));
        std::fs::write(cs.join("current_clocksource"), "tsc\n").unwrap();
        assert_eq!(usable_under(&root), expect(Ok(())));
    }

    /// 300 000 000 ticks in 100 ms: 3 GHz; mult = round(2³² / 3) =
    /// 1 431 655 765, and 3000 ticks are 1000 ns after rounding.
    #[test]
    fn ticks_become_nanoseconds_and_times() {
        let first = Pair { tsc: 1_000, time: Time(5_000), width: 40 };
        let last = Pair { tsc: 300_001_000, time: Time(100_005_000), width: 20 };
        let c = TscClock::from_pairs(first, last).unwrap();
        assert_eq!(c.hz, 3e9);
        assert_eq!(c.mult, 1_431_655_765);
        assert_eq!([c.ns(0), c.ns(1), c.ns(2), c.ns(3), c.ns(3000)], [0, 0, 1, 1, 1000]);
        assert_eq!(c.ns(3_000_000_000), 1_000_000_000);
        assert_eq!(c.ns(u64::MAX), 6_148_914_689_804_861_440, "no overflow, whatever the ticks");
        // (40 + 20) / 2 ticks of 3·10⁸, and 2 ns of 10⁸: 0.1 + 0.02 ppm.
        assert!((c.error_ppm - 0.12).abs() < 1e-9, "{}", c.error_ppm);
        // Anchored at the last pair: ticks after and before it.
        assert_eq!(c.time(300_001_000 + 3000), Time(100_005_000 + 1000));
        assert_eq!(c.time(300_001_000 - 3000), Time(100_005_000 - 1000));
        assert_eq!(c.ticks(Nanos(1000)), 3000);
        let mut moved = c;
        moved.anchor(Pair { tsc: 0, time: Time(7), width: 0 });
        assert_eq!(moved.time(6), Time(9));
        // 2.5 GHz: mult = round(0.4 · 2³²) = 1 717 986 918; 2.5·10⁹ ticks are 1 s.
        let c = TscClock::from_pairs(first, Pair { tsc: 250_001_000, time: Time(100_005_000), width: 0 }).unwrap();
        assert_eq!((c.mult, c.ns(2_500_000_000), c.ns(25)), (1_717_986_918, 1_000_000_000, 10));
        // At 0.5 GHz the longest ticks are more ns than an i64 holds: saturated.
        let slow = TscClock::from_pairs(first, Pair { tsc: 50_001_000, time: Time(100_005_000), width: 0 }).unwrap();
        assert_eq!((slow.ns(1), slow.ns(u64::MAX)), (2, i64::MAX));
        // No forward tick or no time between the pairs: no clock.
        assert_eq!(TscClock::from_pairs(last, first), None);
        assert_eq!(TscClock::from_pairs(first, Pair { time: first.time, ..last }), None);
    }

    /// Against the real clock: the frequency the kernel's clocksource
    /// implies within 0.1 %, and a time converted from the TSC within
    /// 50 µs of CLOCK_MONOTONIC read right after (a loaded VM's margin).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_calibrated_tsc_tells_monotonic_time() {
        if usable_under(&SysRoot::default()).is_err() {
            return crate::sys::skip::skip("the TSC is not the clocksource here", true);
        }
        let mono = PosixClock::Monotonic;
        let c = calibrate(mono, Nanos::from_ms(50)).unwrap();
        let raw = calibrate(PosixClock::MonotonicRaw, Nanos::from_ms(50)).unwrap();
        assert!((c.hz / raw.hz - 1.0).abs() < 1e-3, "{} vs {}", c.hz, raw.hz);
        assert!(c.error_ppm < 10.0, "{c:?}");
        let p = pair(mono);
        let d = (c.time(p.tsc) - p.time).as_ns().abs();
        assert!(d < 50_000, "{d} ns off ({c:?}, {p:?})");
    }
}

//! A thread's cycle, found from its successive timed waits: its period,
//! how regularly it wakes, how long it computes and how much time it had
//! left, and where it overran.
//!
//! ```text
//!   wait i                     wait i+1
//!  ──┤requested├─ exit ── compute ──┤ blocked ── margin ──┤requested├─ exit
//! ```
//!
//! - **period**: the interval between successive requested times that
//!   (with its multiples) nearly all of them are, or none ("no fixed
//!   period": a relative sleep's requests drift with its lateness);
//! - **jitter**: how much the interval between two wake-ups (system call
//!   exits) differs from the interval asked for (between the requests):
//!   `|Δexit − Δrequested|`, the difference of successive latenesses;
//! - **compute**: back in user space → asleep in the next wait (`exit →
//!   blocked`), the work of one cycle;
//! - **margin**: the next wait's request − the time it went to sleep for
//!   it: the time left before the next deadline; negative when it overran;
//! - **overruns**: waits armed after their own request (the program asked
//!   for a time already past), and **skipped** periods (requests several
//!   periods apart: a periodic timer that expired more than once before it
//!   was read, or a loop that gave up deadlines).
//!
//! The end of a cycle's work is where the thread blocked for its next
//! wait, not where that wait's timer was armed: a periodic timerfd, POSIX
//! timer or itimer is re-armed inside the call that consumed its last
//! expiry, before that call returns (or in a later one: a `read` after
//! `epoll_wait`); for a sleep the two are the same call.
//!
//! Memory is bounded: a few histograms of two significant digits (1 %,
//! exact up to 255 ns; minima and maxima exact) that grow with the values
//! they hold, as [`ThreadStats`](super::stats::ThreadStats)'s do (a thread
//! that never waits takes next to nothing), and at most [`SLOTS`]
//! candidate periods.

use super::waits::TimedWait;
use crate::stats::SignedHistogram;
use crate::time::{Nanos, Time};

/// Candidate periods kept (Misra–Gries: any interval more frequent than
/// 1 / (SLOTS + 1) of them is among them).
pub const SLOTS: usize = 8;

/// Intervals this close are one (a period computed in floating point).
const SAME: i64 = 1_000;

/// A period is fixed when at least this share of the intervals are it or
/// its multiples.
const FIXED_SHARE: f64 = 0.9;

/// One thread's cycle, fed its timed waits in time order.
#[derive(Clone, Debug)]
pub struct Cycle {
    /// The last wait: its request and system call's exit.
    last: Option<(Time, Time)>,
    /// Candidate periods: (interval, count).
    slots: Vec<(i64, u64)>,
    intervals: u64,
    jitter: Extremes,
    compute: Extremes,
    margin: Extremes,
    overruns: u64,
    waits: u64,
}

/// A histogram and its exact extremes.
#[derive(Clone, Debug)]
struct Extremes {
    h: SignedHistogram,
    min: i64,
    max: i64,
}

impl Extremes {
    fn new() -> Extremes {
        Extremes { h: SignedHistogram::growing(2), min: i64::MAX, max: i64::MIN }
    }

    fn record(&mut self, v: Nanos) {
        let v = v.as_ns();
        self.h.record(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn absorb(&mut self, other: &Extremes) {
        self.h.absorb(&other.h);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// `q`-quantile (0: the exact minimum, 1: the exact maximum).
    fn at(&self, q: f64) -> Nanos {
        Nanos(match q {
            q if q <= 0.0 => self.min,
            q if q >= 1.0 => self.max,
            q => self.h.value_at_quantile(q).clamp(self.min, self.max),
        })
    }

    fn of(&self, qs: [f64; 3]) -> Option<[Nanos; 3]> {
        (!self.h.is_empty()).then(|| qs.map(|q| self.at(q)))
    }
}

/// A thread's cycle in figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CycleSummary {
    /// Timed waits seen.
    pub waits: u64,
    /// Its period (`None`: no fixed period).
    pub period: Option<Nanos>,
    /// Periods skipped: with a fixed period, requests k periods apart
    /// count k − 1 each.
    pub skipped: u64,
    /// `|Δexit − Δrequested|` of successive waits: p50, p99, max.
    pub jitter: Option<[Nanos; 3]>,
    /// Exit → asleep in the next wait: p50, p99, max.
    pub compute: Option<[Nanos; 3]>,
    /// The next wait's request − the time it went to sleep for it: min,
    /// p1, p50.
    pub margin: Option<[Nanos; 3]>,
    /// Waits armed after their own request.
    pub overruns: u64,
}

impl Default for Cycle {
    fn default() -> Self {
        Self::new()
    }
}

impl Cycle {
    /// No wait yet.
    pub fn new() -> Cycle {
        Cycle {
            last: None,
            slots: Vec::with_capacity(SLOTS),
            intervals: 0,
            jitter: Extremes::new(),
            compute: Extremes::new(),
            margin: Extremes::new(),
            overruns: 0,
            waits: 0,
        }
    }

    /// Takes the thread's next timed wait.
    pub fn add(&mut self, w: &TimedWait) {
        self.waits += 1;
        if w.overrun() > Nanos::ZERO {
            self.overruns += 1;
        }
        if let Some((requested, exit)) = self.last {
            let asked = w.requested - requested;
            if asked > Nanos::ZERO {
                self.interval(asked.as_ns());
            }
            let d = (w.exit - exit) - asked;
            self.jitter.record(d.max(-d));
            // Before the last exit only when events were lost.
            if w.blocked >= exit {
                self.compute.record(w.blocked - exit);
                self.margin.record(w.requested - w.blocked);
            }
        }
        self.last = Some((w.requested, w.exit));
    }

    /// Adds another thread's waits, jitter, compute, margin and overruns
    /// (not its period: threads' periods are their own, so a pooled cycle
    /// has none).
    pub fn absorb(&mut self, other: &Cycle) {
        self.waits += other.waits;
        self.overruns += other.overruns;
        self.jitter.absorb(&other.jitter);
        self.compute.absorb(&other.compute);
        self.margin.absorb(&other.margin);
    }

    /// Counts interval `d` among the candidate periods.
    fn interval(&mut self, d: i64) {
        self.intervals += 1;
        if let Some(s) = self.slots.iter_mut().find(|(p, _)| (p - d).abs() <= SAME) {
            s.1 += 1;
        } else if self.slots.len() < SLOTS {
            self.slots.push((d, 1));
        } else {
            for s in &mut self.slots {
                s.1 -= 1;
            }
            self.slots.retain(|s| s.1 > 0);
        }
    }

    /// The period, if one is fixed, and the periods skipped.
    fn period(&self) -> (Option<Nanos>, u64) {
        let multiple = |d: i64, p: i64| {
            let k = (d + p / 2) / p;
            (k >= 1 && (d - k * p).abs() <= SAME * k).then_some(k as u64)
        };
        let Some(&(p, _)) = self.slots.iter().max_by_key(|(p, n)| (*n, -p)) else {
            return (None, 0);
        };
        let on: u64 = self.slots.iter().filter(|(d, _)| multiple(*d, p).is_some()).map(|(_, n)| n).sum();
        if (on as f64) < FIXED_SHARE * self.intervals as f64 {
            return (None, 0);
        }
        let skipped = self.slots.iter().filter_map(|(d, n)| Some((multiple(*d, p)? - 1) * n)).sum();
        (Some(Nanos(p)), skipped)
    }

    /// Its figures so far.
    pub fn summary(&self) -> CycleSummary {
        let (period, skipped) = self.period();
        CycleSummary {
            waits: self.waits,
            period,
            skipped,
            jitter: self.jitter.of([0.5, 0.99, 1.0]),
            compute: self.compute.of([0.5, 0.99, 1.0]),
            margin: self.margin.of([0.0, 0.01, 0.5]),
            overruns: self.overruns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::{Matched, Phases};

    /// A wait: requested, armed, exit (ns); blocked when armed.
    fn wait(requested: i64, armed: i64, exit: i64) -> TimedWait {
        TimedWait { blocked: Time(armed), ..rearmed(requested, armed, exit, armed) }
    }

    /// A wait: requested, armed, blocked, exit (ns).
    fn rearmed(requested: i64, armed: i64, exit: i64, blocked: i64) -> TimedWait {
        let m =
            Matched { cpu: 0, hrtimer: 0, expired: Time(exit), waking: Time(exit), switched_in: Time(exit), prio: 120 };
        let late = Nanos(exit - requested);
        TimedWait {
            requested: Time(requested),
            slack: Nanos::ZERO,
            slack_taken: Nanos::ZERO,
            lateness: late,
            phases: Phases { irq_delay: late, wakeup_path: Nanos(0), scheduling: Nanos(0), return_to_user: Nanos(0) },
            matched: m,
            exit: Time(exit),
            armed: Time(armed),
            callback: 0,
            blocked: Time(blocked),
        }
    }

    fn of(waits: &[TimedWait]) -> CycleSummary {
        let mut c = Cycle::new();
        for w in waits {
            c.add(w);
        }
        c.summary()
    }

    /// An absolute sleep every 1 ms: late 10, 30, 20, 10 ns; computes 100,
    /// 150, 120 ns after each exit before arming the next.
    #[test]
    fn a_periodic_sleep_has_its_period_jitter_compute_and_margin() {
        let s = of(&[
            wait(1_000_000, 0, 1_000_010),
            wait(2_000_000, 1_000_110, 2_000_030),
            wait(3_000_000, 2_000_180, 3_000_020),
            wait(4_000_000, 3_000_140, 4_000_010),
        ]);
        assert_eq!((s.waits, s.period, s.skipped, s.overruns), (4, Some(Nanos(1_000_000)), 0, 0));
        assert_eq!(s.jitter, Some([Nanos(10), Nanos(20), Nanos(20)]));
        assert_eq!(s.compute, Some([Nanos(120), Nanos(150), Nanos(150)]));
        // The minimum is exact; the percentiles to the histograms' 1 %.
        let [min, p1, p50] = s.margin.unwrap();
        assert_eq!(min, Nanos(999_820));
        assert!(p1 >= min && (p50.as_ns() - 999_860).abs() <= 9_999, "{p1} {p50}");
    }

    /// The loop overran once: the third wait asked for 3 ms at 3.0005 ms
    /// (margin −500 ns, an overrun); then a deadline was skipped (5 ms next).
    #[test]
    fn an_overrun_and_a_skipped_period_are_counted() {
        let s = of(&[
            wait(1_000_000, 0, 1_000_100),
            wait(2_000_000, 1_000_200, 2_002_900),
            wait(3_000_000, 3_000_500, 3_000_600),
            wait(5_000_000, 3_000_700, 5_000_100),
            wait(6_000_000, 5_000_200, 6_000_100),
        ]);
        assert_eq!((s.period, s.skipped, s.overruns), (Some(Nanos(1_000_000)), 1, 1));
        assert_eq!(s.margin.unwrap()[0], Nanos(-500), "negative margin: it armed after its deadline");
        assert_eq!(s.compute.unwrap()[2], Nanos(997_600), "2.0029 ms → 3.0005 ms");
    }

    /// A periodic timerfd: re-armed in the `read` that returned, before its
    /// exit; the thread computes 200 ns and 300 ns before it blocks in the
    /// next `read`.
    #[test]
    fn a_timer_re_armed_in_the_call_computes_until_it_blocks_again() {
        let s = of(&[
            rearmed(1_000_000, 0, 1_000_050, 100),
            rearmed(2_000_000, 1_000_040, 2_000_060, 1_000_250),
            rearmed(3_000_000, 2_000_055, 3_000_030, 2_000_360),
        ]);
        assert_eq!((s.period, s.overruns), (Some(Nanos(1_000_000)), 0));
        assert_eq!(s.compute, Some([Nanos(200), Nanos(300), Nanos(300)]));
        assert_eq!(s.margin.unwrap()[0], Nanos(999_640));
        assert_eq!(s.jitter, Some([Nanos(10), Nanos(30), Nanos(30)]));
    }

    /// Relative sleeps: each request is the last exit plus 1 ms plus the
    /// time to arm, so the intervals drift: no fixed period.
    #[test]
    fn relative_sleeps_have_no_fixed_period() {
        let mut t = 0;
        let mut waits = Vec::new();
        for i in 0..50 {
            let armed = t + 100 + (i % 7) * 1_500;
            let requested = armed + 1_000_000;
            t = requested + 20_000 + (i % 5) * 3_000;
            waits.push(wait(requested, armed, t));
        }
        let s = of(&waits);
        assert_eq!((s.waits, s.period, s.skipped), (50, None, 0));
        assert!(s.compute.is_some());
    }

    /// Memory: ten thousand distinct intervals keep at most SLOTS candidates.
    #[test]
    fn candidate_periods_are_bounded() {
        let mut c = Cycle::new();
        let mut r = 0;
        for i in 0..10_000i64 {
            r += 1_000_000 + (i % 97) * 5_000;
            c.add(&wait(r, r - 500_000, r + 10_000));
        }
        assert!(c.slots.len() <= SLOTS);
        assert_eq!(c.summary().period, None);
    }
}

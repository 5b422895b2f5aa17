//! Busy waiting: `spin`, and `hybrid` (sleep most of the way, spin the rest).

use super::{HybridSlack, Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::clock;
use crate::time::{Nanos, Time};

/// Polls the clock until `deadline`; returns the first reading at or after it.
#[inline]
fn spin_until(clock: ClockId, deadline: Time) -> Time {
    loop {
        let t = clock.now();
        if t >= deadline {
            return t;
        }
        std::hint::spin_loop();
    }
}

/// Busy polling of the clock.
pub(super) struct Spin {
    clock: ClockId,
}

impl Spin {
    pub(super) fn new(clock: ClockId) -> Self {
        Spin { clock }
    }
}

impl Waiter for Spin {
    fn now(&self) -> Time {
        self.clock.now()
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        let actual = spin_until(self.clock, deadline);
        Ok(Wake { planned: deadline, actual, kernel_next: None })
    }
}

/// How `--hybrid-slack auto` chose its slack.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// Calibration sleeps made.
    pub samples: usize,
    /// Median sleep overshoot seen.
    pub overshoot_p50: Nanos,
    /// 99th percentile of the sleep overshoot seen.
    pub overshoot_p99: Nanos,
    /// The slack chosen for the interval last armed: p99 · 1.25 + 2 µs, at
    /// least 2 µs; the whole interval when that does not fit in ¾ of it.
    pub slack: Nanos,
    /// The slack chosen when first armed, from this calibration's p99
    /// (later arms, as each interleaved slice makes, follow the overshoot
    /// tracked since); zero until armed.
    pub first_slack: Nanos,
    /// The sleep overshoot does not fit in ¾ of the interval: the hybrid
    /// spins the whole period and never sleeps (a sleep would overshoot
    /// the deadline).
    pub spins_whole_period: bool,
}

/// Length of each calibration sleep: the interval is not known when the
/// waiter is built (it comes with `arm`), and the overshoot depends little
/// on the sleep's length; the tracker follows the real one while running.
const CALIBRATION_SLEEP: Nanos = Nanos::from_us(1000);
/// Calibration sleeps.
const CALIBRATION_SAMPLES: usize = 200;

/// Measures the `clock_nanosleep(TIMER_ABSTIME)` overshoot in the calling
/// thread (under its policy), for sleeps of [`CALIBRATION_SLEEP`].
pub fn calibrate(clock: ClockId) -> Result<Calibration> {
    let mut over = Vec::with_capacity(CALIBRATION_SAMPLES);
    for _ in 0..CALIBRATION_SAMPLES {
        let target = clock.now() + CALIBRATION_SLEEP;
        clock::sleep_until(clock.raw(), target).map_err(|e| Error::sys("clock_nanosleep", e, ""))?;
        over.push((clock.now() - target).as_ns());
    }
    over.sort_unstable();
    let samples = over.len();
    let at = |q: f64| Nanos(crate::stats::percentile::of_sorted(&over, q).unwrap_or(0));
    let (p50, p99) = (at(0.50), at(0.99));
    Ok(Calibration {
        samples,
        overshoot_p50: p50,
        overshoot_p99: p99,
        slack: Nanos::ZERO,
        first_slack: Nanos::ZERO,
        spins_whole_period: false,
    })
}

/// The slack wanted for a given sleep-overshoot p99: p99 · 1.25 + 2 µs. When
/// that does not fit in ¾ of the interval, the whole interval (never sleep):
/// a sleep there would overshoot every deadline it came near. Returns the
/// slack and whether it is the whole interval.
fn slack_for(p99: Nanos, interval: Nanos) -> (Nanos, bool) {
    let want = Nanos(p99.as_ns().max(0) * 5 / 4) + Nanos::from_us(2);
    if want > Nanos(interval.as_ns() * 3 / 4) {
        (interval, true)
    } else {
        (want, false)
    }
}

/// Online estimate of a high percentile of the sleep overshoot: a histogram
/// of 1 µs buckets (the last one open-ended) whose counts halve every
/// [`OvershootTracker::DECAY_EVERY`] samples, so it follows a machine whose
/// behaviour changes. Fixed size: recording never allocates.
struct OvershootTracker {
    counts: Box<[u32; OvershootTracker::BUCKETS]>,
    total: u64,
    since_update: u32,
    since_decay: u32,
}

impl OvershootTracker {
    const BUCKETS: usize = 2048;
    const UPDATE_EVERY: u32 = 64;
    const DECAY_EVERY: u32 = 4096;

    fn new() -> Self {
        OvershootTracker { counts: Box::new([0; Self::BUCKETS]), total: 0, since_update: 0, since_decay: 0 }
    }

    /// Records one overshoot; every UPDATE_EVERY samples returns the current p99.
    #[inline]
    fn record(&mut self, overshoot: Nanos) -> Option<Nanos> {
        let b = ((overshoot.as_ns().max(0) / 1000) as usize).min(Self::BUCKETS - 1);
        self.counts[b] += 1;
        self.total += 1;
        self.since_decay += 1;
        if self.since_decay >= Self::DECAY_EVERY {
            self.since_decay = 0;
            self.total = 0;
            for c in self.counts.iter_mut() {
                *c /= 2;
                self.total += *c as u64;
            }
        }
        self.since_update += 1;
        if self.since_update < Self::UPDATE_EVERY {
            return None;
        }
        self.since_update = 0;
        // The nearest-rank p99 (the one percentile of the crate); reported
        // as the upper edge of its 1 µs bucket.
        let rank = crate::stats::percentile::rank(0.99, self.total)?;
        let counts = self.counts.iter().enumerate().map(|(i, &c)| (i, u64::from(c)));
        let bucket = crate::stats::percentile::at_rank(counts, rank)?;
        Some(Nanos::from_us(bucket as i64 + 1))
    }
}

/// Absolute sleep until deadline − slack, then spin. With `auto`, the slack
/// starts from a calibration and keeps following the sleep overshoot's p99;
/// when that does not fit in the interval it spins the whole period.
pub(super) struct Hybrid {
    clock: ClockId,
    slack: Nanos,
    interval: Nanos,
    calibration: Option<Calibration>,
    tracker: Option<OvershootTracker>,
    /// The overshoot p99 the auto slack follows.
    overshoot_p99: Nanos,
}

impl Hybrid {
    pub(super) fn new(clock: ClockId, slack: HybridSlack) -> Result<Self> {
        let fixed = |slack| Hybrid {
            clock,
            slack,
            interval: Nanos::ZERO,
            calibration: None,
            tracker: None,
            overshoot_p99: Nanos::ZERO,
        };
        match slack {
            HybridSlack::Fixed(s) if s < Nanos::ZERO => Err(Error::Invalid("hybrid slack must not be negative".into())),
            HybridSlack::Fixed(s) => Ok(fixed(s)),
            HybridSlack::Auto => {
                let c = calibrate(clock)?;
                let mut tracker = OvershootTracker::new();
                // Seed the tracker with the calibration so it starts where it left off.
                tracker.counts
                    [((c.overshoot_p99.as_ns().max(0) / 1000) as usize).min(OvershootTracker::BUCKETS - 1)] +=
                    (c.samples / 100).max(1) as u32;
                tracker.counts
                    [((c.overshoot_p50.as_ns().max(0) / 1000) as usize).min(OvershootTracker::BUCKETS - 1)] +=
                    c.samples as u32;
                tracker.total = (c.samples + (c.samples / 100).max(1)) as u64;
                Ok(Hybrid {
                    calibration: Some(c),
                    tracker: Some(tracker),
                    overshoot_p99: c.overshoot_p99,
                    ..fixed(Nanos::ZERO)
                })
            }
        }
    }

    /// Follows the sleep overshoot while running: the slack stays within
    /// [2 µs, ¾ interval], so a burst of overshoot never stops the sleeps
    /// (and with them the tracking). Whether to sleep at all is decided when
    /// the interval is armed.
    fn follow(&mut self, p99: Nanos) {
        self.overshoot_p99 = p99;
        if self.calibration.is_some_and(|c| !c.spins_whole_period) {
            let cap = Nanos(self.interval.as_ns() * 3 / 4);
            self.slack = slack_for(p99, self.interval).0.clamp(Nanos::from_us(2).min(cap), cap);
        }
    }
}

impl Waiter for Hybrid {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, _first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        if let Some(c) = self.calibration.as_mut() {
            // Decided from the overshoot followed so far (the calibration's at first).
            (c.slack, c.spins_whole_period) = slack_for(self.overshoot_p99, interval);
            if c.first_slack == Nanos::ZERO {
                c.first_slack = c.slack;
            }
            self.slack = c.slack;
        }
        Ok(())
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        let wake_early = deadline - self.slack;
        if self.clock.now() < wake_early {
            clock::sleep_until(self.clock.raw(), wake_early)
                .map_err(|e| Error::sys("clock_nanosleep(TIMER_ABSTIME)", e, ""))?;
            if let Some(t) = self.tracker.as_mut() {
                if let Some(p99) = t.record(self.clock.now() - wake_early) {
                    self.follow(p99);
                }
            }
        }
        let actual = spin_until(self.clock, deadline);
        Ok(Wake { planned: deadline, actual, kernel_next: None })
    }

    fn slack(&self) -> Option<Nanos> {
        Some(self.slack)
    }

    fn calibration(&self) -> Option<Calibration> {
        self.calibration
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_never_returns_before_the_deadline() {
        let c = ClockId::Monotonic;
        let mut s = Spin::new(c);
        let d = c.now() + Nanos::from_us(300);
        let w = s.wait(d).unwrap();
        assert!(w.actual >= d);
    }

    #[test]
    fn tracker_follows_the_tail_and_decays() {
        let mut t = OvershootTracker::new();
        let mut last = None;
        // 98 % at 3.5 µs, 2 % at 40 µs: the p99 is in the 40 µs bucket.
        for i in 0..6400u32 {
            let v = if i % 50 == 0 { Nanos::from_us(40) } else { Nanos(3_500) };
            if let Some(p) = t.record(v) {
                last = Some(p);
            }
        }
        assert_eq!(last, Some(Nanos::from_us(41)));
        // The machine calms down: after enough quiet samples the tail decays away.
        for _ in 0..40_000 {
            if let Some(p) = t.record(Nanos(3_500)) {
                last = Some(p);
            }
        }
        assert_eq!(last, Some(Nanos::from_us(4)));
        assert_eq!(slack_for(Nanos::from_us(4), Nanos::from_ms(1)), (Nanos::from_us(7), false));
        // An overshoot that does not fit in ¾ of the interval: spin the whole period.
        assert_eq!(slack_for(Nanos::from_ms(2), Nanos::from_ms(1)), (Nanos::from_ms(1), true));
        assert_eq!(slack_for(Nanos::from_us(18), Nanos::from_us(10)), (Nanos::from_us(10), true));
        // 18 µs · 1.25 + 2 µs = 24.5 µs fits in ¾ of 50 µs (37.5 µs).
        assert_eq!(slack_for(Nanos::from_us(18), Nanos::from_us(50)), (Nanos(24_500), false));
    }

    #[test]
    fn the_auto_slack_follows_the_armed_interval() {
        let mut h = Hybrid::new(ClockId::Monotonic, HybridSlack::Auto).unwrap();
        let cal = h.calibration.unwrap();
        assert_eq!(cal.samples, CALIBRATION_SAMPLES);
        let now = h.now();
        h.arm(now, Nanos::from_ms(10)).unwrap();
        assert_eq!(h.slack, slack_for(cal.overshoot_p99, Nanos::from_ms(10)).0);
        // A period shorter than the overshoot allows: the slack becomes the whole period.
        h.arm(now, Nanos(100)).unwrap();
        assert_eq!(h.slack, Nanos(100));
        assert!(h.calibration.unwrap().spins_whole_period);
        let d = h.now() + Nanos::from_us(50);
        assert!(h.wait(d).unwrap().actual >= d);
        // While running, a burst of overshoot raises the slack up to ¾ of the
        // interval but never stops the sleeps (it would stop the tracking too).
        h.overshoot_p99 = Nanos::from_us(4);
        h.arm(now, Nanos::from_ms(10)).unwrap();
        assert_eq!(h.slack, Nanos::from_us(7));
        h.follow(Nanos::from_ms(50));
        assert_eq!(h.slack, Nanos::from_us(7_500));
        assert!(!h.calibration.unwrap().spins_whole_period);
    }

    /// Each interleaved slice arms the waiter again, from the overshoot
    /// followed so far: the slack it started at stays the first arm's.
    #[test]
    fn the_first_armed_slack_survives_later_arms() {
        let mut h = Hybrid::new(ClockId::Monotonic, HybridSlack::Auto).unwrap();
        let cal = h.calibration.unwrap();
        let now = h.now();
        h.arm(now, Nanos::from_ms(10)).unwrap();
        let first = slack_for(cal.overshoot_p99, Nanos::from_ms(10)).0;
        assert_eq!(h.calibration.unwrap().first_slack, first);
        h.follow(cal.overshoot_p99 + Nanos::from_us(400));
        h.arm(now, Nanos::from_ms(10)).unwrap();
        let c = h.calibration.unwrap();
        assert_eq!(c.first_slack, first);
        assert_eq!(c.slack, slack_for(cal.overshoot_p99 + Nanos::from_us(400), Nanos::from_ms(10)).0);
        assert_ne!(c.slack, c.first_slack);
    }
}

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
    /// The slack chosen: p99 · 1.25 + 2 µs, within [2 µs, ¾ interval].
    pub slack: Nanos,
    /// Whether the slack hit the ¾-interval cap (the sleep overshoot is too
    /// large for this interval; the hybrid then mostly spins).
    pub capped: bool,
}

/// Measures the `clock_nanosleep(TIMER_ABSTIME)` overshoot in the calling
/// thread (under its policy) and derives a slack from it.
pub fn calibrate(clock: ClockId, interval: Nanos) -> Result<Calibration> {
    let budget = Nanos::from_ms(300);
    let samples = (budget.as_ns() / interval.as_ns().max(1)).clamp(20, 200) as usize;
    let mut over = Vec::with_capacity(samples);
    for _ in 0..samples {
        let target = clock.now() + interval;
        clock::sleep_until(clock.raw(), target).map_err(|e| Error::sys("clock_nanosleep", e, ""))?;
        over.push((clock.now() - target).as_ns());
    }
    over.sort_unstable();
    let at = |q: f64| Nanos(crate::stats::percentile::of_sorted(&over, q).unwrap_or(0));
    let (p50, p99) = (at(0.50), at(0.99));
    let (slack, capped) = slack_for(p99, interval);
    Ok(Calibration { samples, overshoot_p50: p50, overshoot_p99: p99, slack, capped })
}

/// The slack wanted for a given sleep-overshoot p99: p99 · 1.25 + 2 µs,
/// within [2 µs, ¾ interval] (and whether the cap applied).
fn slack_for(p99: Nanos, interval: Nanos) -> (Nanos, bool) {
    let cap = Nanos(interval.as_ns() * 3 / 4);
    let want = Nanos(p99.as_ns() * 5 / 4) + Nanos::from_us(2);
    (want.clamp(Nanos::from_us(2).min(cap), cap), want > cap)
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
        // The 1 % tail, counted from the top; the p99 is the upper edge of its bucket.
        let tail = self.total.div_ceil(100);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate().rev() {
            seen += c as u64;
            if seen >= tail {
                return Some(Nanos::from_us(i as i64 + 1));
            }
        }
        Some(Nanos::ZERO)
    }
}

/// Absolute sleep until deadline − slack, then spin. With `auto`, the slack
/// starts from a calibration and keeps following the sleep overshoot's p99.
pub(super) struct Hybrid {
    clock: ClockId,
    slack: Nanos,
    interval: Nanos,
    calibration: Option<Calibration>,
    tracker: Option<OvershootTracker>,
}

impl Hybrid {
    pub(super) fn new(clock: ClockId, interval: Nanos, slack: HybridSlack) -> Result<Self> {
        match slack {
            HybridSlack::Fixed(s) if s < Nanos::ZERO => Err(Error::Invalid("hybrid slack must not be negative".into())),
            HybridSlack::Fixed(s) => Ok(Hybrid { clock, slack: s, interval, calibration: None, tracker: None }),
            HybridSlack::Auto => {
                let c = calibrate(clock, interval)?;
                let mut tracker = OvershootTracker::new();
                // Seed the tracker with the calibration so it starts where it left off.
                tracker.counts
                    [((c.overshoot_p99.as_ns().max(0) / 1000) as usize).min(OvershootTracker::BUCKETS - 1)] +=
                    (c.samples / 100).max(1) as u32;
                tracker.counts
                    [((c.overshoot_p50.as_ns().max(0) / 1000) as usize).min(OvershootTracker::BUCKETS - 1)] +=
                    c.samples as u32;
                tracker.total = (c.samples + (c.samples / 100).max(1)) as u64;
                Ok(Hybrid { clock, slack: c.slack, interval, calibration: Some(c), tracker: Some(tracker) })
            }
        }
    }
}

impl Waiter for Hybrid {
    fn now(&self) -> Time {
        self.clock.now()
    }

    #[inline]
    fn wait(&mut self, deadline: Time) -> Result<Wake> {
        let wake_early = deadline - self.slack;
        if self.clock.now() < wake_early {
            clock::sleep_until(self.clock.raw(), wake_early)
                .map_err(|e| Error::sys("clock_nanosleep(TIMER_ABSTIME)", e, ""))?;
            if let Some(t) = self.tracker.as_mut() {
                if let Some(p99) = t.record(self.clock.now() - wake_early) {
                    self.slack = slack_for(p99, self.interval).0;
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
            let v = if i % 50 == 0 { Nanos::from_us(40) } else { Nanos::from_ns(3_500) };
            if let Some(p) = t.record(v) {
                last = Some(p);
            }
        }
        assert_eq!(last, Some(Nanos::from_us(41)));
        // The machine calms down: after enough quiet samples the tail decays away.
        for _ in 0..40_000 {
            if let Some(p) = t.record(Nanos::from_ns(3_500)) {
                last = Some(p);
            }
        }
        assert_eq!(last, Some(Nanos::from_us(4)));
        assert_eq!(slack_for(Nanos::from_us(4), Nanos::from_ms(1)), (Nanos::from_us(7), false));
        assert_eq!(slack_for(Nanos::from_ms(2), Nanos::from_ms(1)), (Nanos::from_us(750), true));
    }

    #[test]
    fn calibration_is_within_bounds() {
        let interval = Nanos::from_us(500);
        let cal = calibrate(ClockId::Monotonic, interval).unwrap();
        assert!(cal.slack >= Nanos::from_us(2).min(Nanos(interval.as_ns() * 3 / 4)));
        assert!(cal.slack <= Nanos(interval.as_ns() * 3 / 4));
        assert!(cal.overshoot_p99 >= cal.overshoot_p50);
        assert!(cal.samples >= 20);
    }
}

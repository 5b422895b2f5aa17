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
    let at = |q: f64| Nanos(over[((q * samples as f64).ceil() as usize).clamp(1, samples) - 1]);
    let (p50, p99) = (at(0.50), at(0.99));
    let cap = Nanos(interval.as_ns() * 3 / 4);
    let want = Nanos(p99.as_ns() * 5 / 4) + Nanos::from_us(2);
    let slack = want.clamp(Nanos::from_us(2).min(cap), cap);
    Ok(Calibration { samples, overshoot_p50: p50, overshoot_p99: p99, slack, capped: want > cap })
}

/// Absolute sleep until deadline − slack, then spin.
pub(super) struct Hybrid {
    clock: ClockId,
    slack: Nanos,
    calibration: Option<Calibration>,
}

impl Hybrid {
    pub(super) fn new(clock: ClockId, interval: Nanos, slack: HybridSlack) -> Result<Self> {
        match slack {
            HybridSlack::Fixed(s) if s < Nanos::ZERO => Err(Error::Invalid("hybrid slack must not be negative".into())),
            HybridSlack::Fixed(s) => Ok(Hybrid { clock, slack: s, calibration: None }),
            HybridSlack::Auto => {
                let c = calibrate(clock, interval)?;
                Ok(Hybrid { clock, slack: c.slack, calibration: Some(c) })
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
    fn calibration_is_within_bounds() {
        let interval = Nanos::from_us(500);
        let cal = calibrate(ClockId::Monotonic, interval).unwrap();
        assert!(cal.slack >= Nanos::from_us(2).min(Nanos(interval.as_ns() * 3 / 4)));
        assert!(cal.slack <= Nanos(interval.as_ns() * 3 / 4));
        assert!(cal.overshoot_p99 >= cal.overshoot_p50);
        assert!(cal.samples >= 20);
    }
}

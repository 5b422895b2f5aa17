//! The switching of an A/B during the run ([`super::ab`]): the caller's
//! progress callback (never a measuring thread) switches the session's
//! events off and on in fixed stretches and records when; afterwards the
//! traced and the plain stretches are compared, and only the traced ones
//! are explained.
//!
//! The default stretch is a second; with interleaved slices, half a slice
//! at most, so that every slice (and so every mechanism) has both: any
//! window of two stretches is half traced, half plain, wherever it begins.

use std::time::{Duration, Instant};

use super::ab::{self, Compared, Schedule, Stretch, Switch};
use super::run::SpikeChoice;
use crate::clock::ClockId;
use crate::ktrace::Session;
use crate::measure::{MeasureConfig, ThreadResult, TraceRow};
use crate::time::Nanos;
use crate::wait::Mechanism;

/// The switching during the run.
#[derive(Debug)]
pub struct Alternating {
    period: Nanos,
    guard: Nanos,
    next: Option<Instant>,
    schedule: Schedule,
    error: Option<String>,
}

impl Alternating {
    /// The stretch length when none is asked for.
    pub const DEFAULT_PERIOD: Nanos = Nanos::from_secs(1);

    /// The shortest stretch: the tracing is switched from the progress
    /// callback, which comes ten times a second.
    pub const MIN_PERIOD: Nanos = Nanos::from_ms(200);

    /// The stretch length for `requested` in `cfg`'s run.
    pub fn period(requested: Option<Nanos>, cfg: &MeasureConfig) -> Nanos {
        requested.unwrap_or_else(|| match cfg.interleave {
            Some(slice) => Self::DEFAULT_PERIOD.min(Nanos(slice.as_ns() / 2)).max(Self::MIN_PERIOD),
            None => Self::DEFAULT_PERIOD,
        })
    }

    /// Stretches of `period`; wake-ups within two of `cfg`'s periods of a
    /// switch count for neither side (the timer of the first one after a
    /// switch was armed before it, and the switch itself interrupts every CPU).
    pub fn new(period: Nanos, cfg: &MeasureConfig) -> Alternating {
        let guard = Nanos(cfg.interval.as_ns() * 2);
        Alternating { period, guard, next: None, schedule: Schedule::default(), error: None }
    }

    /// From the progress callback: switches when the stretch is over. The
    /// first call (the measurement has started) starts the first, traced,
    /// stretch. A failed switch ends the A/B, with tracing left as it is.
    pub fn tick(&mut self, session: &mut Session) {
        let now = Instant::now();
        let next = *self.next.get_or_insert(now + Duration::from_nanos(self.period.as_ns() as u64));
        if now < next || self.error.is_some() {
            return;
        }
        let traced = session.is_paused();
        let began = ClockId::Monotonic.now();
        let switched = if traced { session.resume() } else { session.pause() };
        let done = ClockId::Monotonic.now();
        match switched {
            // Recorded even when it failed: some events may have switched.
            Ok(()) => self.schedule.switches.push(Switch { began, done, traced }),
            Err(e) => {
                self.schedule.switches.push(Switch { began, done, traced: !traced });
                self.error = Some(format!("switching the tracing {} failed: {e}", if traced { "on" } else { "off" }));
            }
        }
        // On a grid of periods: the callback comes every 100 ms, so a stretch
        // may be that much longer or shorter, but traced and plain time stay
        // equal on the whole. After a stall, the grid starts again from now.
        let period = Duration::from_nanos(self.period.as_ns() as u64);
        self.next = Some(if next + period > now { next + period } else { now + period });
    }

    /// Whether `r`'s wake-up is of a traced stretch (one to explain).
    pub fn traced(&self, r: &TraceRow) -> bool {
        self.schedule.stretch(r.planned, r.actual, self.guard) == Stretch::Traced
    }

    /// Compares the stretches over every row of the run.
    pub fn finish(self, rows: &[TraceRow], results: &[ThreadResult], choice: SpikeChoice) -> AbOutcome {
        let slots: Vec<(Mechanism, usize)> = results.iter().map(|r| (r.mechanism, r.thread)).collect();
        let compared = ab::compare(rows, &slots, &self.schedule, self.guard, choice);
        AbOutcome { period: self.period, guard: self.guard, schedule: self.schedule, compared, error: self.error }
    }
}

/// An A/B's outcome: traced against plain stretches, per mechanism and thread.
#[derive(Debug)]
pub struct AbOutcome {
    /// The stretch length.
    pub period: Nanos,
    /// Wake-ups this close to a switch count for neither side.
    pub guard: Nanos,
    /// The switches made.
    pub schedule: Schedule,
    /// One per mechanism and thread, in the run's order.
    pub compared: Vec<Compared>,
    /// Why the A/B stopped early, if it did.
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_default_to_a_second_or_half_a_slice_and_are_never_shorter_than_200_ms() {
        let period = Alternating::period;
        let mut cfg = MeasureConfig::default();
        assert_eq!(period(None, &cfg), Nanos::from_secs(1));
        assert_eq!(period(Some(Nanos::from_ms(300)), &cfg), Nanos::from_ms(300));
        cfg.interleave = Some(Nanos::from_secs(1));
        assert_eq!(period(None, &cfg), Nanos::from_ms(500));
        cfg.interleave = Some(Nanos::from_ms(100));
        assert_eq!(period(None, &cfg), Nanos::from_ms(200));
        cfg.interleave = Some(Nanos::from_secs(5));
        assert_eq!(period(None, &cfg), Nanos::from_secs(1));
    }
}

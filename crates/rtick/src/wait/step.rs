//! Steps of a settable clock (CLOCK_REALTIME, CLOCK_TAI), told apart from
//! slewing by watching its offset to CLOCK_MONOTONIC at each wake-up.

use super::Waiter;
use crate::time::{clock_offset, Nanos, Time};

/// The offset of a waiter's clock to CLOCK_MONOTONIC, watched for steps.
#[derive(Copy, Clone, Debug)]
pub(crate) struct StepWatch {
    offset: Nanos,
}

impl StepWatch {
    /// Starts watching `w`'s clock.
    pub(crate) fn new(w: &dyn Waiter) -> StepWatch {
        StepWatch { offset: offset(w) }
    }

    /// After a wake-up at `actual` (on `w`'s clock), `since` after the
    /// previous one: the step the clock took meanwhile, if it took one. One
    /// vDSO read when nothing happened; a suspected step is confirmed with a
    /// tightly bracketed read, since preemption between the two reads would
    /// look like one.
    #[inline]
    pub(crate) fn check(&mut self, w: &dyn Waiter, actual: Time, since: Nanos) -> Option<Nanos> {
        let prev = self.offset;
        self.offset = actual - w.reference_now();
        if !is_step(self.offset - prev, since) {
            return None;
        }
        self.offset = offset(w);
        let jump = self.offset - prev;
        is_step(jump, since).then_some(jump)
    }
}

/// NTP slews at most 500 ppm: a change of the offset beyond 1000 ppm of the
/// time since, plus 50 µs of read noise, is a step.
fn is_step(jump: Nanos, since: Nanos) -> bool {
    jump.as_ns().abs() > 50_000 + since.as_ns().max(0) / 1000
}

/// The offset of the waiter's clock to CLOCK_MONOTONIC (see [`clock_offset`]).
#[cold]
fn offset(w: &dyn Waiter) -> Nanos {
    clock_offset(|| w.now(), || w.reference_now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slewing_is_not_a_step() {
        assert!(!is_step(Nanos::from_us(50), Nanos::from_ms(1)));
        assert!(is_step(Nanos::from_us(52), Nanos::from_ms(1)));
        // 1000 ppm of 10 s is 10 ms: a slew cannot move it that far.
        assert!(!is_step(Nanos::from_ms(10), Nanos::from_secs(10)));
        assert!(is_step(Nanos::from_ms(-11), Nanos::from_secs(10)));
    }
}

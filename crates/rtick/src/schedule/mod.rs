//! The absolute-deadline schedule and what to do after an overrun.
//!
//! Deadline k is `start + k·interval`: nothing accumulates, whatever each
//! wake-up's latency. A wake-up later than the *following* deadline is an
//! overrun. The policy then decides the next deadline:
//!
//! ```text
//! grid:        |d0       |d1       |d2       |d3       |d4
//! woke:          ^w0                      ^w1 (late for d1, past d2)
//!
//! skip:        next after w1 is d3; d2 is counted as missed (1 period)
//!              |d0       |d1 ...........  ^w1      |d3
//! catch-up:    next after w1 is d2 (already due: returns at once), then d3
//!              |d0       |d1 ...........  ^w1^w2   |d3
//! ```
//!
//! `skip` is the "jump forward" time-check timer; `catch-up` keeps the
//! cycle count (every period gets its wake-up, late ones back to back).
//!
//! [`Grid`] is the whole of the loop's time keeping, as a pure state
//! machine: `Periodic` (applications) and `rtick measure` (the tool) both
//! drive one, so the loop measured is the loop shipped.

mod grid;

pub use grid::{Advance, Grid, Tick, Timing};

use crate::time::{Nanos, Time};

/// What to do when a wake-up comes after the following deadline.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum OverrunPolicy {
    /// Jump to the first deadline still in the future; count the periods missed.
    #[default]
    Skip,
    /// Keep every deadline; late ones are served back to back.
    CatchUp,
    /// Like `Skip`, and report the overrun as an error ([`crate::Error::Overrun`]).
    Fail,
}

impl OverrunPolicy {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            OverrunPolicy::Skip => "skip",
            OverrunPolicy::CatchUp => "catch-up",
            OverrunPolicy::Fail => "fail",
        }
    }

    /// Parses `skip` or `catch-up`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "skip" => Some(OverrunPolicy::Skip),
            "catch-up" | "catchup" => Some(OverrunPolicy::CatchUp),
            _ => None,
        }
    }
}

/// The outcome of one step of the schedule.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The next deadline to wait for.
    pub next: Time,
    /// Whether the wake-up came after the following deadline.
    pub overrun: bool,
    /// Deadlines jumped over (only with `Skip`).
    pub missed: u64,
}

/// Given the deadline just waited for and when the thread actually woke,
/// returns the next deadline under `policy`.
pub fn next_deadline(policy: OverrunPolicy, deadline: Time, interval: Nanos, actual: Time) -> Step {
    debug_assert!(interval > Nanos::ZERO);
    let following = deadline + interval;
    let overrun = actual > following;
    match policy {
        OverrunPolicy::CatchUp => Step { next: following, overrun, missed: 0 },
        OverrunPolicy::Skip | OverrunPolicy::Fail if !overrun => Step { next: following, overrun, missed: 0 },
        OverrunPolicy::Skip | OverrunPolicy::Fail => {
            // Periods from the deadline to the first grid point strictly after `actual`.
            let k = (actual - deadline).as_ns() / interval.as_ns() + 1;
            Step { next: deadline + interval * k, overrun, missed: (k - 1) as u64 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: Nanos = Nanos(1000);

    #[test]
    fn on_time_and_late_within_period_advance_by_one() {
        for actual in [Time(0), Time(999), Time(1000)] {
            for p in [OverrunPolicy::Skip, OverrunPolicy::CatchUp] {
                assert_eq!(next_deadline(p, Time(0), I, actual), Step { next: Time(1000), overrun: false, missed: 0 });
            }
        }
    }

    #[test]
    fn skip_jumps_to_the_first_future_deadline() {
        // Woke 2.5 periods late: d1 and d2 have passed, next is d3, two missed... d1 is
        // "the following deadline" (passed) and d2 too.
        assert_eq!(
            next_deadline(OverrunPolicy::Skip, Time(0), I, Time(2500)),
            Step { next: Time(3000), overrun: true, missed: 2 }
        );
        // Exactly on a later grid point: that point is not in the future.
        assert_eq!(
            next_deadline(OverrunPolicy::Skip, Time(0), I, Time(2000)),
            Step { next: Time(3000), overrun: true, missed: 2 }
        );
        assert_eq!(
            next_deadline(OverrunPolicy::Skip, Time(0), I, Time(1001)),
            Step { next: Time(2000), overrun: true, missed: 1 }
        );
    }

    #[test]
    fn catch_up_keeps_every_deadline() {
        assert_eq!(
            next_deadline(OverrunPolicy::CatchUp, Time(0), I, Time(2500)),
            Step { next: Time(1000), overrun: true, missed: 0 }
        );
    }

    #[test]
    fn grid_is_preserved_whatever_the_latency() {
        let mut d = Time(0);
        for actual in [10, 1500, 5100, 5200, 9999, 20000] {
            let s = next_deadline(OverrunPolicy::Skip, d, I, Time(actual).max(d));
            assert_eq!(s.next.as_ns() % 1000, 0);
            assert!(s.next > Time(actual).max(d) || !s.overrun);
            d = s.next;
        }
    }

    #[test]
    fn command_line_names() {
        assert_eq!((OverrunPolicy::Skip.name(), OverrunPolicy::CatchUp.name()), ("skip", "catch-up"));
        assert_eq!(OverrunPolicy::parse("skip"), Some(OverrunPolicy::Skip));
        assert_eq!(OverrunPolicy::parse("catch-up"), Some(OverrunPolicy::CatchUp));
        assert_eq!(OverrunPolicy::parse("catchup"), Some(OverrunPolicy::CatchUp));
        assert_eq!(OverrunPolicy::parse("drop"), None);
    }
}

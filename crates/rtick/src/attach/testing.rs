//! Waits made to order for the tests: one place that builds a
//! [`TimedWait`], whatever fields it gains.

use super::waits::TimedWait;
use crate::explain::{Matched, Phases};
use crate::time::{Nanos, Time};

/// A timed wait asked for at `requested`, late by the sum of `phases`
/// (irq_delay, wakeup_path, scheduling, return_to_user), with `slack`.
pub(crate) fn timed(requested: i64, slack: i64, [a, b, c, d]: [i64; 4]) -> TimedWait {
    let phases = Phases { irq_delay: Nanos(a), wakeup_path: Nanos(b), scheduling: Nanos(c), return_to_user: Nanos(d) };
    let late = phases.total();
    let at = |t: i64| Time(requested) + Nanos(t);
    let matched =
        Matched { cpu: 0, hrtimer: 0, expired: at(a), waking: at(a + b), switched_in: at(a + b + c), prio: 120 };
    TimedWait {
        requested: Time(requested),
        slack: Nanos(slack),
        slack_taken: Nanos::ZERO,
        lateness: late,
        phases,
        matched,
        exit: at(late.0),
        armed: at(-1_000),
        callback: 0,
        blocked: at(-900),
    }
}

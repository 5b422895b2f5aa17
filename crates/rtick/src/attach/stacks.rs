//! When an attach takes kernel stacks: only while the target's waits run
//! late.
//!
//! A stack ([`ktrace::stack`](crate::ktrace::stack)) is unwound at every
//! timer wake-up on the traced CPUs while its trigger is set, each one the
//! traced program pays for: measured here, a 20 kHz loop's p99 grew by
//! 7 µs with it, by 0.4 µs with the trace's events alone. A stack is only
//! read when a wait is explained, and the waits explained are the late
//! ones: so the trigger is set while waits run late, and removed after a
//! quiet spell ([`StackArming`] has the rule).

use super::waits::TimedWait;
use crate::clock::ClockId;
use crate::error::Result;
use crate::explain::{Spike, Unexplained};
use crate::ktrace::Stream;
use crate::time::{Nanos, Time};

/// How long after the last late wait the trigger stays set.
pub const QUIET: Nanos = Nanos::from_secs(10);

/// Why a late wait explained has no stack when the trigger was not set at
/// its expiry.
pub const NOT_TAKEN: &str = "not taken (stacks are armed from the first late wait on)";

/// Whether a timed wait `lateness` late is late by [`StackArming`]'s rule:
/// later than `spike` when there is a threshold; else `ranks` (it enters
/// its thread's list of worst waits) while that list was `full`.
pub fn is_late(spike: Option<Nanos>, lateness: Nanos, ranks: bool, full: bool) -> bool {
    match spike {
        Some(s) => lateness > s,
        None => ranks && full,
    }
}

/// The rule, in one place. A timed wait is **late** when its lateness
/// passes the spike threshold (`monitor --attach --spike`); without one
/// (`rtick attach`, which explains each thread's `--explain-top` worst
/// waits), when it enters its thread's list of worst waits once that list
/// is full: a new record. The first late wait sets the trigger (its own
/// stack, due at its expiry, came before rtick read the wait: it has none);
/// every late wait keeps it set; [`QUIET`] after the last one, in the
/// trace's time, it is removed, until the next late wait. Only when the
/// trigger was set at a wait's expiry can the wait have a stack
/// ([`StackArming::covers`]).
#[derive(Clone, Debug)]
pub struct StackArming {
    quiet: Nanos,
    /// Since when the trigger is set, if it is.
    since: Option<Time>,
    /// A late wait came while it was not set: set it.
    pending: bool,
    /// When the latest late wait ended.
    last_late: Option<Time>,
    /// The last time it was set, once over: from, to.
    last_span: Option<(Time, Time)>,
    /// How long it was set, the spans over; and how many times it was set.
    total: Nanos,
    times: u64,
}

impl StackArming {
    /// Not set; removed `quiet` after the last late wait.
    pub fn new(quiet: Nanos) -> StackArming {
        StackArming {
            quiet,
            since: None,
            pending: false,
            last_late: None,
            last_span: None,
            total: Nanos::ZERO,
            times: 0,
        }
    }

    /// A late wait ended at `at`.
    pub fn late(&mut self, at: Time) {
        self.last_late = Some(self.last_late.map_or(at, |l| l.max(at)));
        self.pending |= self.since.is_none();
    }

    /// Whether the trigger is to be set now ([`StackArming::armed`] once it is).
    pub fn to_arm(&self) -> bool {
        self.pending
    }

    /// The trigger was set at `at`.
    pub fn armed(&mut self, at: Time) {
        self.pending = false;
        if self.since.is_none() {
            self.since = Some(at);
            self.times += 1;
        }
    }

    /// Whether the trigger is to be removed: it is set and no late wait
    /// ended in the `quiet` before `upto` (every event before it taken).
    pub fn to_disarm(&self, upto: Time) -> bool {
        self.since.is_some() && !self.pending && self.last_late.is_none_or(|l| upto - l >= self.quiet)
    }

    /// The trigger was removed at `at`.
    pub fn disarmed(&mut self, at: Time) {
        if let Some(s) = self.since.take() {
            self.total = self.total + (at - s).max(Nanos::ZERO);
            self.last_span = Some((s, at));
        }
    }

    /// Whether the trigger was set at `expired`, a wake-up's expiry: now,
    /// or the last time it was (a wait ends moments after its expiry).
    pub fn covers(&self, expired: Time) -> bool {
        self.since.is_some_and(|s| s <= expired) || self.last_span.is_some_and(|(s, e)| s <= expired && expired <= e)
    }

    /// Sets `stream`'s stack trigger when a late wait asked for it, or
    /// removes it after a quiet spell up to `upto` (every event before it
    /// taken). The removal waits an RCU grace period (70–170 ms here), once
    /// a spell: the kernel's buffers hold what comes meanwhile. `Ok(Err)`:
    /// the kernel refused the trigger, why.
    pub fn tend(&mut self, stream: &Stream, upto: Time) -> Result<Result<(), String>> {
        if self.to_arm() {
            match stream.arm_stacks() {
                Ok(()) => self.armed(ClockId::Monotonic.now()),
                Err(e) => return Ok(Err(crate::ktrace::stack::refused(&e))),
            }
        } else if self.to_disarm(upto) {
            let at = ClockId::Monotonic.now();
            stream.disarm_stacks()?;
            self.disarmed(at);
        }
        Ok(Ok(()))
    }

    /// Notes `t`, a wait explained (`explained`), with `arming` if any:
    /// `late` by the rule above. Why it has no stack, when the trigger was
    /// not set at its expiry.
    pub fn note(
        arming: Option<&mut StackArming>,
        late: bool,
        t: &TimedWait,
        explained: &Result<Spike, Unexplained>,
    ) -> Option<&'static str> {
        let a = arming?;
        if late {
            a.late(t.exit);
        }
        let none = explained.as_ref().is_ok_and(|s| s.stack.is_none());
        (none && !a.covers(t.matched.expired)).then_some(NOT_TAKEN)
    }

    /// How long the trigger was set up to `now`, and how many times.
    pub fn armed_for(&self, now: Time) -> (Nanos, u64) {
        let current = self.since.map_or(Nanos::ZERO, |s| (now - s).max(Nanos::ZERO));
        (self.total + current, self.times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    /// Late waits at 1, 3 and 12 s, then quiet; the trigger set as rtick
    /// reads them (0.1 s later), removed 10 s after the last late wait, set
    /// again by the next one.
    #[test]
    fn the_trigger_is_set_from_the_first_late_wait_and_removed_after_a_quiet_spell() {
        let mut a = StackArming::new(QUIET);
        assert!(!a.to_arm() && !a.to_disarm(Time(100 * S)), "nothing late, nothing set");
        a.late(Time(S));
        assert!(a.to_arm());
        a.armed(Time(S + S / 10));
        assert!(!a.to_arm());
        // Its own expiry came before: no stack; the next ones have one.
        assert!(!a.covers(Time(S - 1000)) && a.covers(Time(2 * S)));
        a.late(Time(3 * S));
        assert!(!a.to_arm(), "already set");
        assert!(!a.to_disarm(Time(12 * S)), "9 s after the last late wait");
        a.late(Time(12 * S));
        assert!(!a.to_disarm(Time(21 * S)) && a.to_disarm(Time(22 * S)));
        a.disarmed(Time(22 * S + S / 10));
        assert!(!a.to_disarm(Time(40 * S)));
        assert_eq!(a.armed_for(Time(40 * S)), (Nanos(21 * S), 1));
        // A wait ending after the removal, due while it was set, has one.
        assert!(a.covers(Time(22 * S)) && !a.covers(Time(23 * S)));
        a.late(Time(50 * S));
        assert!(a.to_arm());
        a.armed(Time(50 * S + S / 10));
        assert_eq!(a.armed_for(Time(51 * S)), (Nanos(21 * S + 9 * S / 10), 2));
        assert!(a.covers(Time(50 * S + S / 2)) && !a.covers(Time(30 * S)));
    }

    /// Late: over the threshold when there is one, whatever the list;
    /// without one, a new record of a full list, not a wait that fills it.
    #[test]
    fn a_wait_is_late_over_the_threshold_or_as_a_record_of_a_full_list() {
        let us = Nanos::from_us;
        assert!(is_late(Some(us(100)), us(101), false, false));
        assert!(!is_late(Some(us(100)), us(100), true, true), "a record under the threshold");
        assert!(is_late(None, us(5), true, true));
        assert!(!is_late(None, us(500), true, false), "the list is filling");
        assert!(!is_late(None, us(500), false, true), "not among the worst");
    }

    /// A late wait read before the trigger could be set keeps it from
    /// being removed: it is set first.
    #[test]
    fn a_pending_arm_is_not_a_quiet_spell() {
        let mut a = StackArming::new(Nanos::from_secs(1));
        a.armed(Time(0));
        a.late(Time(S / 2));
        a.disarmed(Time(2 * S));
        a.late(Time(2 * S));
        assert!(a.to_arm() && !a.to_disarm(Time(10 * S)));
        assert_eq!(a.armed_for(Time(10 * S)), (Nanos(2 * S), 1));
    }
}

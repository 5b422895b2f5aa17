//! One attached thread's waits as bounded statistics: however long the
//! run, a thread's figures take the same room (a histogram per series, a
//! bounded count of wakers), not a record per wait.

use std::collections::HashMap;

use super::cycle::Cycle;
use super::waits::{Wake, Waker};
use crate::stats::LatencyStats;

/// Wakers counted by name, per thread: later new ones are counted together
/// ([`ThreadStats::other_wakers`]). A thread woken by events has a handful.
pub const WAKERS: usize = 32;

/// The lateness is kept to rtick's usual 3 significant digits; the slack,
/// the phases and the event-driven scheduling latency to 2 (1 %): their
/// histograms take a tenth of the room, which a process of hundreds of
/// threads notices.
const LATENESS_DIGITS: u8 = 3;
const OTHER_DIGITS: u8 = 2;

/// One thread's waits so far, in figures.
#[derive(Clone, Debug)]
pub struct ThreadStats {
    /// Timed waits' lateness (back in user space − requested).
    pub lateness: LatencyStats,
    /// Their timer slack.
    pub slack: LatencyStats,
    /// The slack the kernel took of it ([`TimedWait::slack_taken`](super::waits::TimedWait::slack_taken)).
    pub slack_taken: LatencyStats,
    /// Their phases, in [`Phases::NAMES`](crate::explain::Phases::NAMES) order.
    pub phases: [LatencyStats; 4],
    /// Event-driven wake-ups' scheduling latency (waking → running).
    pub event_scheduling: LatencyStats,
    /// Who woke them: the first [`WAKERS`] by name.
    pub wakers: HashMap<Waker, u64>,
    /// Wake-ups by wakers past the first [`WAKERS`].
    pub other_wakers: u64,
    /// Waits that ended without a wake-up rtick could follow.
    pub unmatched: u64,
    /// Its cycle, from its timed waits in the order they ended.
    pub cycle: Cycle,
}

impl Default for ThreadStats {
    fn default() -> Self {
        ThreadStats::new()
    }
}

impl ThreadStats {
    /// No wait yet (small: the histograms grow with the values they hold).
    pub fn new() -> ThreadStats {
        let other = || LatencyStats::growing(OTHER_DIGITS);
        ThreadStats {
            lateness: LatencyStats::growing(LATENESS_DIGITS),
            slack: other(),
            slack_taken: other(),
            phases: std::array::from_fn(|_| other()),
            event_scheduling: other(),
            wakers: HashMap::new(),
            other_wakers: 0,
            unmatched: 0,
            cycle: Cycle::new(),
        }
    }

    /// Adds one wait's end.
    pub fn add(&mut self, w: &Wake) {
        match w {
            Wake::Timed(t) => {
                self.lateness.record(t.lateness.as_ns());
                self.slack.record(t.slack.as_ns());
                self.slack_taken.record(t.slack_taken.as_ns());
                for (s, (_, v)) in self.phases.iter_mut().zip(t.phases.named()) {
                    s.record(v.as_ns());
                }
                self.cycle.add(t);
            }
            Wake::Event(e) => {
                self.event_scheduling.record(e.scheduling.as_ns());
                if let Some(n) = self.wakers.get_mut(&e.waker) {
                    *n += 1;
                } else if self.wakers.len() < WAKERS {
                    self.wakers.insert(e.waker.clone(), 1);
                } else {
                    self.other_wakers += 1;
                }
            }
            Wake::Unmatched => self.unmatched += 1,
        }
    }

    /// Adds another thread's figures (an exited one's, into the exited
    /// threads' row): its wakers join these up to [`WAKERS`].
    pub fn absorb(&mut self, other: &ThreadStats) {
        self.lateness.absorb(&other.lateness);
        self.slack.absorb(&other.slack);
        for (s, o) in self.phases.iter_mut().zip(&other.phases) {
            s.absorb(o);
        }
        self.event_scheduling.absorb(&other.event_scheduling);
        for (w, n) in &other.wakers {
            if let Some(m) = self.wakers.get_mut(w) {
                *m += n;
            } else if self.wakers.len() < WAKERS {
                self.wakers.insert(w.clone(), *n);
            } else {
                self.other_wakers += n;
            }
        }
        self.other_wakers += other.other_wakers;
        self.unmatched += other.unmatched;
        self.cycle.absorb(&other.cycle);
    }
}

#[cfg(test)]
mod tests {
    use super::super::waits::EventWake;
    use super::*;
    use crate::time::{Nanos, Time};

    #[test]
    fn wakers_past_the_bound_are_counted_together() {
        let mut s = ThreadStats::new();
        let wake =
            |pid| Wake::Event(EventWake { woken: Time(0), scheduling: Nanos(5), waker: Waker::Task(pid, "w".into()) });
        for pid in 0..WAKERS as i32 + 10 {
            s.add(&wake(pid));
        }
        s.add(&wake(0));
        s.add(&Wake::Unmatched);
        assert_eq!((s.wakers.len(), s.other_wakers, s.unmatched), (WAKERS, 10, 1));
        assert_eq!(s.wakers[&Waker::Task(0, "w".into())], 2);
        assert_eq!(s.event_scheduling.count(), WAKERS as u64 + 11);
    }

    /// Two threads' figures pooled are those of all their waits in one.
    #[test]
    fn absorbed_figures_are_those_of_every_wait() {
        let waits: Vec<Wake> =
            (1..=40).map(|k| Wake::Timed(super::super::testing::timed(k * 1_000_000, 50, [k * 10, 0, 0, 0]))).collect();
        let (mut a, mut b, mut all) = (ThreadStats::new(), ThreadStats::new(), ThreadStats::new());
        for (k, w) in waits.iter().enumerate() {
            if k % 3 == 0 { &mut a } else { &mut b }.add(w);
            all.add(w);
        }
        b.add(&Wake::Unmatched);
        a.absorb(&b);
        assert_eq!((a.lateness.summary(), a.unmatched), (all.lateness.summary(), 1));
        assert_eq!(a.phases[0].summary(), all.phases[0].summary());
        assert_eq!((a.slack.count(), a.cycle.summary().waits), (40, 40));
    }
}

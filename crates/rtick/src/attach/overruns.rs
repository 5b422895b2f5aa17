//! A thread's worst overruns, each with its cause: a wait armed after the
//! time it asked for ([`TimedWait::overrun`]) means the cycle before it
//! took longer than the interval it had. Either the thread computed longer
//! than that interval by itself, or it began late: the wait before it was
//! late, and that wait's explanation (a spike, as `measure --explain`
//! gives) is the overrun's cause. A thread keeps at most `n`, the largest
//! first, one a stall (the catch-ups that follow overrun too, less each
//! time, for the same cause); the rest are only counted
//! ([`Cycle`](super::cycle::Cycle)).

use super::waits::TimedWait;
use crate::explain::{Spike, Unexplained};
use crate::time::Nanos;

/// Why a cycle overran.
#[derive(Clone, Debug)]
pub enum OverrunCause {
    /// From back in user space after the wait before to arming this one
    /// took `compute`, more than the `interval` between the two requests.
    Compute {
        /// Exit of the wait before → this wait armed.
        compute: Nanos,
        /// This wait's request − the one before's.
        interval: Nanos,
    },
    /// A wait before ended `late` after its request, which with the
    /// cycle's work left too little of the interval: its explanation. The
    /// wait just before, or, when that one was itself a catch-up that
    /// overran, the late wait the catch-ups began with, `back` waits before.
    LateWake {
        /// That wait's lateness.
        late: Nanos,
        /// How many waits before this one it was (1: the one just before).
        back: u64,
        /// Its breakdown and cause (or why it has none).
        explained: Box<Result<Spike, Unexplained>>,
    },
    /// No timed wait of the thread before it was seen.
    Unknown,
}

impl OverrunCause {
    /// Whether overran wait `w`, `before` it the thread's previous timed
    /// wait, overran by computing: otherwise the wait before was late
    /// (`None` when it is, and its explanation is to be found).
    pub fn of(w: &TimedWait, before: Option<&TimedWait>) -> Option<OverrunCause> {
        let Some(b) = before else { return Some(OverrunCause::Unknown) };
        let interval = w.requested - b.requested;
        let compute = w.armed - b.exit;
        (compute >= interval).then_some(OverrunCause::Compute { compute, interval })
    }

    /// One line: "compute 1.2 ms > interval 1 ms", or the late wait's.
    pub fn text(&self) -> String {
        match self {
            OverrunCause::Compute { compute, interval } => format!("compute {compute} > interval {interval}"),
            OverrunCause::LateWake { explained, back, .. } if explained.is_ok() => {
                let s = explained.as_ref().as_ref().expect("matched Ok");
                format!("{} was late: {}", Self::which(*back), s.line_as("").trim_start())
            }
            OverrunCause::LateWake { late, back, explained } => {
                let u = explained.as_ref().as_ref().expect_err("the Ok case is above");
                format!("{} was {late} late (not explained: {})", Self::which(*back), u.reason())
            }
            OverrunCause::Unknown => "no wait of the thread before it was traced".into(),
        }
    }
}

impl OverrunCause {
    /// "the wait before", "the wait 3 before".
    fn which(back: u64) -> String {
        match back {
            1 => "the wait before".into(),
            n => format!("the wait {n} before (the catch-ups since overran too)"),
        }
    }

    /// The cause of the next overrun of a chain of catch-ups: this one's,
    /// a wait further back.
    pub fn further(&self) -> OverrunCause {
        match self {
            OverrunCause::LateWake { late, back, explained } => {
                OverrunCause::LateWake { late: *late, back: back + 1, explained: explained.clone() }
            }
            other => other.clone(),
        }
    }
}

/// One overrun and its cause.
#[derive(Clone, Debug)]
pub struct Overrun {
    /// The wait armed after its request.
    pub wait: TimedWait,
    /// Why.
    pub cause: OverrunCause,
}

/// A thread's `n` largest overruns so far, the largest first.
#[derive(Clone, Debug)]
pub struct Overruns {
    n: usize,
    list: Vec<Overrun>,
}

impl Overruns {
    /// Keeps the largest `n`.
    pub fn new(n: usize) -> Overruns {
        Overruns { n, list: Vec::with_capacity(n.min(16)) }
    }

    /// Whether `w` overran and by more than the least kept of a full list.
    pub fn ranks(&self, w: &TimedWait) -> bool {
        w.overrun() > Nanos::ZERO
            && self.n > 0
            && (self.list.len() < self.n || self.list.last().is_some_and(|o| w.overrun() > o.wait.overrun()))
    }

    /// Adds `o`, which [`Overruns::ranks`].
    pub fn add(&mut self, o: Overrun) {
        if !self.ranks(&o.wait) {
            return;
        }
        let at = self.list.partition_point(|k| k.wait.overrun() >= o.wait.overrun());
        self.list.insert(at, o);
        self.list.truncate(self.n);
    }

    /// Takes them, the largest first.
    pub fn into_list(self) -> Vec<Overrun> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    /// A wait asked for at `requested`, armed at `armed`, its exit at `exit` (ns).
    fn wait(requested: i64, armed: i64, exit: i64) -> TimedWait {
        let mut w = super::super::testing::timed(requested, 0, [exit - requested, 0, 0, 0]);
        w.armed = Time(armed);
        w
    }

    #[test]
    fn an_overrun_is_compute_when_the_work_alone_outlasted_the_interval() {
        let before = wait(1_000_000, 0, 1_000_100);
        // Armed 1.2004 ms after the exit before, for 1 ms after the request before.
        let w = wait(2_000_000, 2_200_500, 2_200_600);
        let c = OverrunCause::of(&w, Some(&before)).expect("compute");
        assert_eq!(c.text(), "compute 1.20 ms > interval 1.00 ms");
        // Late wake: exit before at 1.9 ms, 0.2 ms of work, armed at 2.1 ms.
        let late = wait(1_000_000, 0, 1_900_000);
        assert!(OverrunCause::of(&wait(2_000_000, 2_100_000, 2_100_100), Some(&late)).is_none());
        assert_eq!(OverrunCause::of(&w, None).unwrap().text(), "no wait of the thread before it was traced");
        let e =
            OverrunCause::LateWake { late: Nanos(900_000), back: 1, explained: Box::new(Err(Unexplained::NotHeld)) };
        assert!(e.text().starts_with("the wait before was 900.0 µs late (not explained: "), "{}", e.text());
        let further = e.further().further();
        assert!(further.text().starts_with("the wait 3 before (the catch-ups since overran too) was 900.0 µs late"));
    }

    #[test]
    fn the_largest_overruns_are_kept_and_waits_in_time_are_not() {
        let mut o = Overruns::new(2);
        assert!(!o.ranks(&wait(1_000, 500, 1_100)), "armed before its request");
        for by in [300, 100, 500, 200] {
            let w = wait(1_000, 1_000 + by, 2_000);
            if o.ranks(&w) {
                o.add(Overrun { wait: w, cause: OverrunCause::Unknown });
            }
        }
        let kept: Vec<i64> = o.into_list().iter().map(|k| k.wait.overrun().as_ns()).collect();
        assert_eq!(kept, [500, 300]);
    }
}

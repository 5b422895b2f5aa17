//! Each thread's worst timed waits, explained as they end: a wait is
//! explained when it ranks among the worst so far, while its events are
//! still in the recent window ([`Recent`](crate::explain::Recent)); the
//! rest are only counted. A thread keeps at most `n`.

use super::waits::TimedWait;
use crate::explain::{Spike, Unexplained};

/// One of a thread's worst waits, and its explanation (or why it has none).
#[derive(Clone, Debug)]
pub struct WorstWait {
    /// The wait.
    pub wait: TimedWait,
    /// Its breakdown and cause, as `measure --explain` gives a spike's.
    pub explained: Result<Spike, Unexplained>,
    /// Why its explanation has no kernel stack, when the stack trigger was
    /// not set at its expiry ([`StackArming`](super::stacks::StackArming)).
    pub stack_missing: Option<&'static str>,
}

/// A thread's `n` worst waits so far, the worst first.
#[derive(Clone, Debug)]
pub struct Worst {
    n: usize,
    waits: Vec<WorstWait>,
}

impl Worst {
    /// Keeps the worst `n` (none when 0).
    pub fn new(n: usize) -> Worst {
        Worst { n, waits: Vec::with_capacity(n.min(64)) }
    }

    /// Whether a wait this late ranks among the worst so far (ties with
    /// the least of a full list do not: the earlier stays).
    pub fn ranks(&self, wait: &TimedWait) -> bool {
        self.n > 0 && (self.waits.len() < self.n || self.waits.last().is_some_and(|w| wait.lateness > w.wait.lateness))
    }

    /// Whether it holds `n` waits already (a wait that ranks now is a new record).
    pub fn full(&self) -> bool {
        self.n > 0 && self.waits.len() >= self.n
    }

    /// Adds `w`, which [`Worst::ranks`]; the least of a full list leaves.
    pub fn add(&mut self, w: WorstWait) {
        if !self.ranks(&w.wait) {
            return;
        }
        let at = self.waits.partition_point(|o| o.wait.lateness >= w.wait.lateness);
        self.waits.insert(at, w);
        self.waits.truncate(self.n);
    }

    /// The worst waits, the worst first.
    pub fn waits(&self) -> &[WorstWait] {
        &self.waits
    }

    /// Takes them.
    pub fn into_waits(self) -> Vec<WorstWait> {
        self.waits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(late: i64) -> WorstWait {
        WorstWait {
            wait: super::super::testing::timed(late, 0, [late, 0, 0, 0]),
            explained: Err(Unexplained::NotHeld),
            stack_missing: None,
        }
    }

    #[test]
    fn the_worst_n_stay_largest_first() {
        let mut w = Worst::new(3);
        for late in [5, 1, 9, 7, 7, 2, 8] {
            if w.ranks(&wait(late).wait) {
                w.add(wait(late));
            }
        }
        let kept: Vec<i64> = w.waits().iter().map(|w| w.wait.lateness.as_ns()).collect();
        assert_eq!(kept, [9, 8, 7]);
        assert!(!w.ranks(&wait(7).wait) && w.ranks(&wait(10).wait));
        let none = Worst::new(0);
        assert!(!none.ranks(&wait(100).wait));
    }
}

//! The merged events of a run taken one at a time: each wait that ends
//! goes into its thread's figures ([`ThreadStats`]) and, when it ranks
//! among the thread's worst, is explained from the recent window
//! ([`Worst`]). Nothing here grows with the run's length.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::bases::BaseOffsets;
use super::stats::ThreadStats;
use super::waits::{Follower, TimedWait, Wake};
use super::worst::{Worst, WorstWait};
use crate::explain::{Recent, Recorded};
use crate::ktrace::{Event, EventKind};
use crate::time::{Nanos, Time};

/// How far before a wait's requested time its explanation reads when its
/// thread's previous system call exit is not known (the CPU's current task
/// at the deadline is told by a switch before it).
const LOOKBACK: Nanos = Nanos::from_ms(10);

/// The followed threads' waits, figures and worst waits so far.
#[derive(Debug)]
pub struct Feed {
    follower: Follower,
    threads: HashSet<i32>,
    stats: BTreeMap<i32, ThreadStats>,
    worst: BTreeMap<i32, Worst>,
    /// Each thread's latest system call exit: it ran then.
    last_exit: HashMap<i32, Time>,
    top: usize,
    events: u64,
}

impl Feed {
    /// Follows no thread yet (see [`Follower::new`]); explains each
    /// thread's `top` worst timed waits.
    pub fn new(sleeper_fn: Option<u64>, bases: BaseOffsets, top: usize) -> Feed {
        Feed {
            follower: Follower::new(sleeper_fn, bases),
            threads: HashSet::new(),
            stats: BTreeMap::new(),
            worst: BTreeMap::new(),
            last_exit: HashMap::new(),
            top,
            events: 0,
        }
    }

    /// Follows `tids` too, from their next event on.
    pub fn follow_threads(&mut self, tids: &[i32]) {
        self.follower.follow_threads(tids);
        self.threads.extend(tids);
    }

    /// Takes event `e` of `cpu`, the next in time order of all CPUs';
    /// `recent` holds every traced CPU's events up to it at least. Returns
    /// the wait that ended with it, if one did.
    pub fn take(&mut self, cpu: usize, e: &Event, recent: &Recent) -> Option<(i32, Wake)> {
        self.events += 1;
        let ended = self.follower.feed(cpu, e);
        if let Some((tid, w)) = &ended {
            self.stats.entry(*tid).or_default().add(w);
            if let Wake::Timed(t) = w {
                self.rank(*tid, t, recent);
            }
        }
        if matches!(e.kind, EventKind::SysExit { .. }) && self.threads.contains(&e.pid) {
            self.last_exit.insert(e.pid, e.ts);
        }
        ended
    }

    /// Explains `t`, a timed wait of `tid` that just ended, if it ranks among its worst.
    fn rank(&mut self, tid: i32, t: &TimedWait, recent: &Recent) {
        // A wait armed after the time it asked for (the thread was back in
        // user space after it) was late before it began: a catch-up after
        // a stall, whose cause is the stalled wait's, explained with it.
        if self.last_exit.get(&tid).is_some_and(|&x| x > t.requested) {
            return;
        }
        let top = self.top;
        let worst = self.worst.entry(tid).or_insert_with(|| Worst::new(top));
        if !worst.ranks(t) {
            return;
        }
        let cycle = self.stats.get(&tid).map_or(0, |s| s.lateness.count());
        let wake = Recorded { tid, cycle, planned: t.requested, actual: t.exit };
        // From the exit before this wait (the thread ran then), or a little
        // before the deadline.
        let from = self.last_exit.get(&tid).copied().unwrap_or(t.requested).min(t.requested - LOOKBACK);
        worst.add(WorstWait { wait: *t, explained: recent.explain_matched(wake, t.matched, from) });
    }

    /// The threads in a wait now.
    pub fn in_progress(&self) -> impl Iterator<Item = i32> + '_ {
        self.follower.in_progress()
    }

    /// Events taken.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Each thread's figures and its worst waits (threads with a wait).
    pub fn finish(self) -> (BTreeMap<i32, ThreadStats>, BTreeMap<i32, Vec<WorstWait>>) {
        (self.stats, self.worst.into_iter().map(|(t, w)| (t, w.into_waits())).collect())
    }
}

//! What watches an attach as it runs: one [`Observer`], handed each wait
//! as it ends (`rtick attach --trace`, `--plot`), each spike explained, and
//! after every look at the target the threads followed (`rtick monitor
//! --attach`'s series and their labels). Nothing is kept for it: what it
//! wants past the call, it copies.

use std::collections::BTreeMap;

use super::target::ThreadInfo;
use super::waits::{TimedWait, Wake};
use crate::explain::{Spike, Unexplained};
use crate::ktrace::LostEvents;

/// The target as last looked at, ten times a second.
#[derive(Debug)]
pub struct Polled<'a> {
    /// Its threads alive, as first read, in tid order.
    pub threads: &'a BTreeMap<i32, ThreadInfo>,
    /// The threads retired since the last look: gone, and every event of
    /// theirs taken (no wait of theirs comes after; a tid among them that
    /// is in `threads` too is a new thread reusing it).
    pub retired: &'a [i32],
    /// Events the kernel or the reader lost so far (its `unread`: those
    /// in the buffers now, not lost: [`LostEvents::count_read`]).
    pub lost: LostEvents,
}

/// Watches an attach: every method does nothing unless implemented. A
/// closure `FnMut(i32, &Wake)` is an observer of the waits.
pub trait Observer {
    /// A wait of thread `tid` ended.
    fn wait(&mut self, tid: i32, w: &Wake) {
        let _ = (tid, w);
    }

    /// A timed wait of `tid` later than
    /// [`AttachOptions::spike`](super::AttachOptions::spike) ended (after
    /// [`Observer::wait`] for it): its explanation, or why it has none.
    fn spike(&mut self, tid: i32, t: &TimedWait, explained: &Result<Spike, Unexplained>) {
        let _ = (tid, t, explained);
    }

    /// The target looked at: before the first wait, and every poll.
    fn poll(&mut self, p: &Polled<'_>) {
        let _ = p;
    }
}

impl<F: FnMut(i32, &Wake)> Observer for F {
    fn wait(&mut self, tid: i32, w: &Wake) {
        self(tid, w)
    }
}

//! `--attach`: the gaps of an application's own thread, found in its CPU's
//! trace events instead of a spinner's clock reads.
//!
//! A [`Follower`] watches one CPU for the thread. While the thread runs
//! there, an interrupt context (IRQ, vector, softirq, NMI) opening and the
//! last one closing bound a gap; while it waits there, runnable but switched
//! out, the whole wait is a gap. The gaps go to the CPU's [`Attributor`],
//! which names their sources exactly as it does a spinner's. What leaves no
//! kernel event (the host, an SMI) makes no gap here: the mode cannot see it.

use super::attribute::{Attributor, Gap};
use crate::ktrace::{Event, EventKind, Sender};
use crate::stats::SignedHistogram;
use crate::time::{Nanos, Time};

/// Where the followed thread is, as this CPU's events say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Here {
    /// Running on this CPU.
    Running,
    /// Runnable on this CPU, switched out.
    Waiting,
    /// Asleep, on another CPU, or not seen yet.
    Away,
}

/// One CPU's view of the followed thread.
#[derive(Debug)]
pub struct Follower {
    /// The attribution of this CPU's gaps.
    pub attr: Attributor,
    tid: i32,
    threshold: Nanos,
    /// Where it was then is read from /proc: the events before are stale.
    begin: Time,
    here: Here,
    /// The start of the gap under way.
    gap_from: Option<Time>,
    /// Since when the thread has been on this CPU (running or waiting).
    at_since: Option<Time>,
    /// Its time on this CPU, running or waiting, so far.
    pub present: Nanos,
    /// The gaps over the threshold, ns.
    pub gaps: SignedHistogram,
    /// Their sum.
    pub noise: Nanos,
    /// The longest.
    pub max_gap: Nanos,
}

impl Follower {
    /// The thread followed.
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// Follows thread `tid` (kernel priority `prio`) from `begin`; a gap
    /// is one longer than `threshold`.
    pub fn new(tid: i32, prio: i32, threshold: Nanos, begin: Time) -> Follower {
        let mut attr = Attributor::new(tid, prio);
        attr.observed = Some(Vec::new());
        attr.begin(begin);
        attr.away(Some(begin));
        Follower {
            attr,
            tid,
            threshold,
            begin,
            here: Here::Away,
            gap_from: None,
            at_since: None,
            present: Nanos::ZERO,
            gaps: SignedHistogram::new(),
            noise: Nanos::ZERO,
            max_gap: Nanos::ZERO,
        }
    }

    /// The thread is known to run here at `t` (read from /proc at the start).
    pub fn running_at(&mut self, t: Time) {
        self.arrive(t);
    }

    /// Since when the thread has been on this CPU (running or waiting), as its events say.
    pub fn here_since(&self) -> Option<Time> {
        self.at_since.filter(|_| self.here != Here::Away)
    }

    /// Its time on this CPU, running or waiting, up to `now`.
    pub fn present_at(&self, now: Time) -> Nanos {
        self.present + self.at_since.map_or(Nanos::ZERO, |s| (now - s).max(Nanos::ZERO))
    }

    fn arrive(&mut self, t: Time) {
        if self.here == Here::Away {
            self.at_since = Some(t);
            self.attr.away(None);
        }
        self.here = Here::Running;
    }

    /// One event of this CPU, in timestamp order.
    pub fn event(&mut self, e: &Event) {
        self.event_from(e, None)
    }

    /// [`Follower::event`]; for an IPI's entry, `from` its sender when the trace names it.
    pub fn event_from(&mut self, e: &Event, from: Option<Sender>) {
        if e.ts < self.begin {
            return;
        }
        // An event in its context (its own switch out too) says it ran here.
        if self.here == Here::Waiting && e.pid == self.tid {
            // Its switch back in was lost: right after the idle task's
            // last event when it came out of idle
            // ([`IdleWatch`](crate::ktrace::IdleWatch)), else at the latest
            // now. Who ran meanwhile is charged until then.
            let at = self.attr.idle.last().unwrap_or(e.ts);
            self.end_gap(at);
            self.attr.away(Some(at));
            self.attr.away(None);
            self.here = Here::Running;
        } else if self.here == Here::Away && e.pid == self.tid {
            // It runs here, its switch in not recorded (out of idle: after idle's last event).
            self.arrive(self.attr.idle.last().unwrap_or(e.ts));
        }
        let before = self.attr.in_context();
        self.attr.event_from(e, from);
        let ts = e.ts;
        match &e.kind {
            EventKind::SchedSwitch(sw) if sw.prev_pid == self.tid => {
                if sw.slept() {
                    self.leave(ts);
                } else {
                    self.here = Here::Waiting;
                    self.gap_from.get_or_insert(ts);
                }
            }
            EventKind::SchedSwitch(sw) if sw.next_pid == self.tid => {
                self.end_gap(ts);
                self.arrive(ts);
            }
            EventKind::Nmi { delta_ns, .. } if self.here == Here::Running && !before => {
                self.push(Gap { start: ts - Nanos(*delta_ns), end: ts });
            }
            _ if self.here == Here::Running => match (before, self.attr.in_context()) {
                (false, true) => self.gap_from = Some(ts),
                (true, false) => self.end_gap(ts),
                _ => {}
            },
            _ => {}
        }
    }

    /// The thread was switched in on another CPU at `ts`: a wait here ends.
    pub fn left(&mut self, ts: Time) {
        if self.here != Here::Away && ts >= self.begin {
            self.leave(ts);
        }
    }

    fn leave(&mut self, ts: Time) {
        self.end_gap(ts);
        if let Some(s) = self.at_since.take() {
            self.present = self.present + (ts - s).max(Nanos::ZERO);
        }
        self.here = Here::Away;
        self.attr.away(Some(ts));
    }

    fn end_gap(&mut self, ts: Time) {
        if let Some(start) = self.gap_from.take() {
            self.push(Gap { start, end: ts });
        }
    }

    fn push(&mut self, g: Gap) {
        let len = g.len();
        if len > self.threshold {
            self.gaps.record(len.as_ns());
            self.noise = self.noise + len;
            self.max_gap = self.max_gap.max(len);
            self.attr.gap(g);
        }
    }

    /// Attributes the gaps ending by `known` (the trace is read up to it).
    pub fn settle(&mut self, known: Time) {
        self.attr.hold(self.gap_from);
        self.attr.settle(known);
    }

    /// The run ends at `end`: a gap under way ends there, and everything is attributed.
    pub fn finish(&mut self, end: Time) {
        self.end_gap(end);
        // Whoever still holds the CPU is charged until the end.
        self.attr.away(Some(end));
        if let Some(s) = self.at_since.take() {
            self.present = self.present + (end - s);
        }
        self.settle(end);
    }
}

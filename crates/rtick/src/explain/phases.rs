//! Each wake-up matched to the kernel events that made it, and its latency
//! split into the phases between them:
//!
//! ```text
//!  planned        hrtimer callback     sched_waking        sched_switch in    user clock read
//!     │── IRQ delay ──│── wake-up path ──│── scheduling ──│── return to user ──│
//! ```
//!
//! The phases telescope: they add up to `actual − planned` exactly when the
//! events are on the same clock as the deadlines (trace clock `mono`).
//!
//! Matching is by the waiting thread's pid and the hrtimers it armed: every
//! `hrtimer_start` recorded while the thread was current names a timer of
//! that thread (its sleep's on-stack timer, its timerfd's, its POSIX
//! timer's), and the wake-up's timer is the last expiry of one of them
//! before the thread was woken.

use std::collections::{HashMap, HashSet};

use super::input::{CpuTrace, Recorded};
use crate::ktrace::EventKind;
use crate::time::{Nanos, Time};

/// The four phases of one wake-up's latency.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Phases {
    /// Planned wake-up → the hrtimer's callback: the timer interrupt came late.
    pub irq_delay: Nanos,
    /// Callback → `sched_waking` of the thread (signal delivery for signal mechanisms).
    pub wakeup_path: Nanos,
    /// `sched_waking` → `sched_switch` onto the thread.
    pub scheduling: Nanos,
    /// Switched in → the thread's clock read after the wait.
    pub return_to_user: Nanos,
}

impl Phases {
    /// Their sum.
    pub fn total(&self) -> Nanos {
        self.irq_delay + self.wakeup_path + self.scheduling + self.return_to_user
    }

    /// The phases' names, in order.
    pub const NAMES: [&'static str; 4] = ["irq_delay", "wakeup_path", "scheduling", "return_to_user"];

    /// The same phases for people (tables, plots, spike lines), in order:
    /// every display uses these words, so one phase reads the same everywhere.
    pub const DISPLAY_NAMES: [&'static str; 4] = ["IRQ delay", "wake-up path", "scheduling", "return to user"];

    /// The phases as (name, value), in order.
    pub fn named(&self) -> [(&'static str, Nanos); 4] {
        let v = [self.irq_delay, self.wakeup_path, self.scheduling, self.return_to_user];
        std::array::from_fn(|k| (Self::NAMES[k], v[k]))
    }
}

/// The kernel events one wake-up was matched to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    /// The CPU the thread was switched in on.
    pub cpu: u32,
    /// The hrtimer that woke it.
    pub hrtimer: u64,
    /// Its callback started.
    pub expired: Time,
    /// The thread's `sched_waking`.
    pub waking: Time,
    /// The thread's `sched_switch` in.
    pub switched_in: Time,
    /// The thread's kernel priority when switched in.
    pub prio: i32,
}

impl Matched {
    /// The phases of wake-up `w`.
    pub fn phases(&self, w: &Recorded) -> Phases {
        Phases {
            irq_delay: self.expired - w.planned,
            wakeup_path: self.waking - self.expired,
            scheduling: self.switched_in - self.waking,
            return_to_user: w.actual - self.switched_in,
        }
    }
}

/// Why a wake-up could not be split.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Unmatched {
    /// The thread was not switched in since its previous wake-up: the wait
    /// returned without sleeping (its deadline had passed), or it spun.
    DidNotSleep,
    /// No `sched_waking` of the thread before it was switched in.
    NoWaking,
    /// No expiry of a timer of the thread before it was woken.
    NoTimer,
}

impl Unmatched {
    /// One line for the user.
    pub fn reason(self) -> &'static str {
        match self {
            Unmatched::DidNotSleep => "the wait returned without sleeping",
            Unmatched::NoWaking => "no sched_waking of the thread was recorded",
            Unmatched::NoTimer => "no expiry of a timer the thread armed was recorded",
        }
    }
}

/// The events of one thread, by kind, in time order: (time, CPU, its priority).
#[derive(Debug, Default)]
struct ThreadEvents {
    switched_in: Vec<(Time, u32, i32)>,
    /// When it was switched out, and whether it went to sleep then (not
    /// preempted while runnable).
    switched_out: Vec<(Time, bool)>,
    waking: Vec<(Time, u32, i32)>,
    wakeup: Vec<(Time, u32, i32)>,
    timers: HashSet<u64>,
}

/// Matches every wake-up of `wakes` (any order) to the events of the CPUs
/// of `cpus`; returns one result per wake-up, in the order given.
pub fn match_all(cpus: &[CpuTrace<'_>], wakes: &[Recorded]) -> Vec<Result<Matched, Unmatched>> {
    match_all_every(cpus, wakes, None)
}

/// [`match_all`], with the loop's period when the caller knows it (with
/// few wake-ups it cannot be read from their deadlines).
pub fn match_all_every(
    cpus: &[CpuTrace<'_>],
    wakes: &[Recorded],
    period: Option<Nanos>,
) -> Vec<Result<Matched, Unmatched>> {
    let tids: HashSet<i32> = wakes.iter().map(|w| w.tid).collect();
    let mut by_tid: HashMap<i32, ThreadEvents> = tids.iter().map(|&t| (t, ThreadEvents::default())).collect();
    // Expiries of every timer, by address.
    let mut expiries: HashMap<u64, Vec<Time>> = HashMap::new();
    for c in cpus {
        for e in c.events {
            match &e.kind {
                EventKind::HrtimerStart { hrtimer, .. } => {
                    if let Some(t) = by_tid.get_mut(&e.pid) {
                        t.timers.insert(*hrtimer);
                    }
                }
                EventKind::HrtimerExpireEntry { hrtimer, .. } => expiries.entry(*hrtimer).or_default().push(e.ts),
                EventKind::SchedWaking(w) => {
                    if let Some(t) = by_tid.get_mut(&w.pid) {
                        t.waking.push((e.ts, c.cpu, w.prio));
                    }
                }
                EventKind::SchedWakeup(w) => {
                    if let Some(t) = by_tid.get_mut(&w.pid) {
                        t.wakeup.push((e.ts, c.cpu, w.prio));
                    }
                }
                EventKind::SchedSwitch(sw) => {
                    if let Some(t) = by_tid.get_mut(&sw.next_pid) {
                        t.switched_in.push((e.ts, c.cpu, sw.next_prio));
                    }
                    if let Some(t) = by_tid.get_mut(&sw.prev_pid) {
                        t.switched_out.push((e.ts, slept(sw.prev_state)));
                    }
                }
                _ => {}
            }
        }
    }
    // Several CPUs' events interleave: time order within each list.
    for t in by_tid.values_mut() {
        t.switched_in.sort_unstable();
        t.switched_out.sort_unstable();
        t.waking.sort_unstable();
        t.wakeup.sort_unstable();
    }
    for v in expiries.values_mut() {
        v.sort_unstable();
    }
    // The previous wake-up of each thread bounds the search for the next,
    // and so do two periods before its deadline: the first wake-up of a run
    // or of a slice must not match the events of an earlier one (one thread
    // measures several mechanisms in turn).
    let mut order: Vec<usize> = (0..wakes.len()).collect();
    order.sort_by_key(|&i| (wakes[i].tid, wakes[i].actual));
    let span = period.filter(|p| *p > Nanos::ZERO).unwrap_or_else(|| typical_period(wakes, &order));
    let mut out = vec![Err(Unmatched::NoTimer); wakes.len()];
    let mut prev: Option<(i32, Time)> = None;
    for i in order {
        let w = &wakes[i];
        let after = match prev {
            Some((tid, t)) if tid == w.tid => t,
            _ => Time(i64::MIN),
        };
        let after = after.max(w.planned - span - span);
        prev = Some((w.tid, w.actual));
        out[i] = match_one(&by_tid[&w.tid], &expiries, w, after, span);
    }
    out
}

/// The median spacing of consecutive deadlines (in `order`, per thread):
/// the period, also for relative sleeps; a second when there is none.
fn typical_period(wakes: &[Recorded], order: &[usize]) -> Nanos {
    let mut gaps: Vec<i64> = order
        .windows(2)
        .map(|p| (&wakes[p[0]], &wakes[p[1]]))
        .filter(|(a, b)| a.tid == b.tid)
        .map(|(a, b)| (b.planned - a.planned).as_ns())
        .filter(|&g| g > 0)
        .collect();
    gaps.sort_unstable();
    Nanos(crate::stats::percentile::of_sorted(&gaps, 0.5).unwrap_or(1_000_000_000))
}

/// Whether a task switched out in `prev_state` went to sleep: any state but
/// running. A preempted task shows as running (0), on newer kernels with
/// TASK_REPORT_MAX (0x100, the "+" of "R+") set.
fn slept(prev_state: i64) -> bool {
    prev_state & 0xff != 0
}

/// The thread's last switch in within `(after, upto]` that ended a sleep:
/// a switch back in after a preemption is not its wake-up (a wait that
/// returned without sleeping, then preempted, has only such a switch). A
/// switch in whose switch out was not recorded counts as ending a sleep.
fn last_wake_switch(t: &ThreadEvents, after: Time, upto: Time) -> Option<(Time, u32, i32)> {
    let end = t.switched_in.partition_point(|s| s.0 <= upto);
    t.switched_in[..end].iter().rev().take_while(|s| s.0 > after).copied().find(|&(at, ..)| {
        let out = t.switched_out.partition_point(|o| o.0 < at);
        t.switched_out[..out].last().is_none_or(|&(_, slept)| slept)
    })
}

/// The last element of `v` (sorted by `key`) with `after < key ≤ upto`.
fn last_in<T: Copy>(v: &[T], key: impl Fn(&T) -> Time, after: Time, upto: Time) -> Option<T> {
    let i = v.partition_point(|x| key(x) <= upto);
    v[..i].last().copied().filter(|x| key(x) > after)
}

fn match_one(
    t: &ThreadEvents,
    expiries: &HashMap<u64, Vec<Time>>,
    w: &Recorded,
    after: Time,
    period: Nanos,
) -> Result<Matched, Unmatched> {
    let switch = last_wake_switch(t, after, w.actual);
    let (waking, switched_in, cpu, prio) = match switch {
        Some((at, cpu, prio)) => (last_in(&t.waking, |x| x.0, after, at).ok_or(Unmatched::NoWaking)?.0, at, cpu, prio),
        // No switch in recorded: it was woken before it was switched out
        // (its timer fired while it was still going to sleep), or the kernel
        // did not record the switch (on this VM's CPU 1 no switch out of the
        // idle task ever is). It ran from its sched_wakeup on: on an idle
        // CPU the switch follows at once.
        None => {
            let (waking, ..) = last_in(&t.waking, |x| x.0, after, w.actual).ok_or(Unmatched::DidNotSleep)?;
            match last_in(&t.wakeup, |x| x.0, after, w.actual).filter(|x| x.0 >= waking) {
                Some((at, cpu, prio)) => (waking, at, cpu, prio),
                None => {
                    let (at, cpu, prio) = last_in(&t.waking, |x| x.0, after, w.actual).ok_or(Unmatched::DidNotSleep)?;
                    (at, at, cpu, prio)
                }
            }
        }
    };
    let (hrtimer, expired) = t
        .timers
        .iter()
        .filter_map(|h| Some((*h, last_in(expiries.get(h)?, |&x| x, after, waking)?)))
        .max_by_key(|&(_, ts)| ts)
        .ok_or(Unmatched::NoTimer)?;
    // A timer does not fire before its deadline: an expiry half a period
    // or more before it is the previous cycle's, whose events are all this
    // wait found — it returned without sleeping (seen on a run's first
    // wake-up, which has no previous one to bound the search).
    if expired < w.planned - Nanos(period.as_ns() / 2) {
        return Err(Unmatched::DidNotSleep);
    }
    Ok(Matched { cpu, hrtimer, expired, waking, switched_in, prio })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::testing::{cycle, ev, ME};
    use crate::ktrace::EventKind as K;

    fn on_cpu1(evs: &[crate::ktrace::Event]) -> [CpuTrace<'_>; 1] {
        [CpuTrace { cpu: 1, events: evs }]
    }

    fn rec(cycle: u64, planned: i64, actual: i64) -> Recorded {
        Recorded { tid: ME, cycle, planned: Time(planned), actual: Time(actual) }
    }

    #[test]
    fn phases_of_two_cycles_add_up() {
        let mut evs = cycle(0, 1000, 1400, 1450, 1700);
        evs.extend(cycle(1800, 2000, 2003, 2010, 2020));
        // Another thread's timer and wake-up are not ours.
        evs.push(ev(
            1300,
            5,
            K::HrtimerStart { hrtimer: 0xb0, function: 0xf1, expires: Time(1390), softexpires: Time(1390), mode: 0 },
        ));
        evs.push(ev(1390, 0, K::HrtimerExpireEntry { hrtimer: 0xb0, now: Time(1390), function: 0xf1 }));
        evs.push(ev(1395, 0, crate::explain::testing::waking(5, 120)));
        evs.sort_by_key(|e| e.ts);
        let wakes = [rec(2, 2000, 2030), rec(1, 1000, 1750)];
        let m = match_all(&on_cpu1(&evs), &wakes);
        let p1 = m[1].unwrap().phases(&wakes[1]);
        assert_eq!(
            p1,
            Phases { irq_delay: Nanos(400), wakeup_path: Nanos(50), scheduling: Nanos(250), return_to_user: Nanos(50) }
        );
        assert_eq!(p1.total(), wakes[1].actual - wakes[1].planned);
        let p2 = m[0].unwrap().phases(&wakes[0]);
        assert_eq!(
            p2,
            Phases { irq_delay: Nanos(3), wakeup_path: Nanos(7), scheduling: Nanos(10), return_to_user: Nanos(10) }
        );
        assert_eq!((m[0].unwrap().hrtimer, m[0].unwrap().cpu, m[0].unwrap().prio), (0xa0, 1, 9));
    }

    #[test]
    fn a_first_wake_up_never_matches_the_events_of_an_earlier_run() {
        // One run at 1000 (period 1000), then, 1 s later, a wake-up of the same
        // thread whose own events were not recorded: no match, rather than the
        // earlier run's events (1 s of "return to user").
        let evs = cycle(0, 1000, 1001, 1002, 1003);
        let later = [rec(9, 1_000_000_000, 1_000_000_010), rec(10, 1_000_001_000, 1_000_001_010)];
        let m = match_all(&on_cpu1(&evs), &later);
        assert_eq!(m, [Err(Unmatched::DidNotSleep), Err(Unmatched::DidNotSleep)]);
        let wakes = [rec(1, 1000, 1010), rec(2, 2000, 2010)];
        assert!(match_all(&on_cpu1(&evs), &wakes)[0].is_ok());
    }

    #[test]
    fn waits_that_did_not_sleep_and_wake_ups_without_a_switch() {
        let evs = cycle(0, 1000, 1001, 1002, 1003);
        // Served back to back after it (catch-up): no wake-up in between.
        let wakes = [rec(1, 1000, 1010), rec(2, 1005, 1020)];
        let m = match_all(&on_cpu1(&evs), &wakes);
        assert!(m[0].is_ok());
        assert_eq!(m[1], Err(Unmatched::DidNotSleep));
        // Woken while still on the CPU: no switch out or in, scheduling 0.
        let evs: Vec<_> =
            cycle(0, 1000, 1004, 1006, 0).into_iter().filter(|e| !matches!(e.kind, K::SchedSwitch(_))).collect();
        let m = match_all(&on_cpu1(&evs), &wakes[..1]);
        let p = m[0].unwrap().phases(&wakes[0]);
        assert_eq!(
            (p.irq_delay, p.wakeup_path, p.scheduling, p.return_to_user),
            (Nanos(4), Nanos(2), Nanos(0), Nanos(4))
        );
        // A thread whose timer was never seen armed.
        let lone: Vec<_> = cycle(0, 1000, 1001, 1002, 1003).into_iter().skip(1).collect();
        assert_eq!(match_all(&on_cpu1(&lone), &wakes[..1]), [Err(Unmatched::NoTimer)]);
        // A first wake-up (nothing before it bounds the search) that did not
        // sleep: the events found are the cycle before it, a period early.
        let evs = cycle(0, 1000, 1001, 1002, 1003);
        let late = [rec(2, 2000, 2010)];
        assert_eq!(match_all_every(&on_cpu1(&evs), &late, Some(Nanos(1000))), [Err(Unmatched::DidNotSleep)]);
        assert!(match_all_every(&on_cpu1(&evs), &[rec(1, 1000, 1010)], Some(Nanos(1000)))[0].is_ok());
    }

    #[test]
    fn a_switch_back_in_after_a_preemption_is_not_a_wake_up() {
        use crate::explain::testing::{switch, MEE};
        // Cycle 1 at 1000; cycle 2 (deadline 2000) returns without sleeping
        // at 2005, is preempted by a FIFO 95 task 2006–2050, reads its clock
        // at 2060: not a wake-up of 2050's switch (no waking for it).
        let mut evs = cycle(0, 1000, 1001, 1002, 1003);
        evs.push(ev(2006, ME, switch(MEE, ("hog", 42, 4))));
        let mut back = switch(("hog", 42, 4), MEE);
        if let K::SchedSwitch(sw) = &mut back {
            sw.prev_state = 1;
        }
        evs.push(ev(2050, 42, back));
        if let K::SchedSwitch(sw) = &mut evs.iter_mut().find(|e| e.ts == Time(2006)).unwrap().kind {
            sw.prev_state = 0x100; // R+: preempted
        }
        let wakes = [rec(1, 1000, 1010), rec(2, 2000, 2060)];
        let m = match_all(&on_cpu1(&evs), &wakes);
        assert!(m[0].is_ok());
        assert_eq!(m[1], Err(Unmatched::DidNotSleep));
        // Had it gone to sleep at 2006 (prev_state S), 2050 would end that sleep.
        if let K::SchedSwitch(sw) = &mut evs.iter_mut().find(|e| e.ts == Time(2006)).unwrap().kind {
            sw.prev_state = 1;
        }
        assert_eq!(match_all(&on_cpu1(&evs), &wakes)[1], Err(Unmatched::NoWaking));
    }
}

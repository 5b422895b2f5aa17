//! The trace turned into each attached thread's wake-ups.
//!
//! Per thread, per wait (events in time order, all CPUs merged):
//!
//! ```text
//!  hrtimer_start   expire_entry      sched_waking   switch in      sys_exit
//!  (softexpires) ─ IRQ delay ─│─ wake-up path ─│─ scheduling ─│─ return to user ─│
//! ```
//!
//! The wait begins at an `hrtimer_start` of an hrtimer-sleeper timer
//! (callback `hrtimer_wakeup`) armed by the thread itself, outside an
//! interrupt, and ends at the thread's next system call exit after it was
//! woken. When that timer's callback ran before the thread's `sched_waking`,
//! the timer woke it: a **timed** wait, late by `sys_exit − softexpires`.
//! Otherwise something else woke it first (data, a futex wake, a signal)
//! and the kernel cancelled the timer: an **event-driven** wake-up,
//! counted apart with its scheduling latency and its waker. (The kernel
//! also records `hrtimer_cancel` as a timer expires, so the cancel event
//! itself does not tell them apart; the expiry does.)

use std::collections::{HashMap, HashSet};

use super::bases::BaseOffsets;
use crate::explain::{Matched, Phases};
use crate::ktrace::{Comm, Event, EventKind};
use crate::time::{Nanos, Time};

/// Who woke a thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Waker {
    /// A hard interrupt handler (a timer's callback, a device's IRQ).
    Irq,
    /// A softirq.
    Softirq,
    /// A task: its pid and name (empty when it never ran on a traced CPU).
    Task(i32, String),
}

impl std::fmt::Display for Waker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waker::Irq => f.write_str("irq"),
            Waker::Softirq => f.write_str("softirq"),
            Waker::Task(pid, c) if c.is_empty() => write!(f, "pid {pid}"),
            Waker::Task(pid, c) => write!(f, "{c}/{pid}"),
        }
    }
}

/// A wait that its timer ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TimedWait {
    /// The time asked for (`softexpires`, CLOCK_MONOTONIC).
    pub requested: Time,
    /// The timer slack the kernel added (`expires − softexpires`).
    pub slack: Nanos,
    /// Back in user space (the system call's exit) − requested.
    pub lateness: Nanos,
    /// The lateness in its four phases (they add up to it).
    pub phases: Phases,
    /// The events it was matched to: its timer's expiry, the thread's
    /// `sched_waking` and switch-in (the waking's time when it was still
    /// running), the CPU it ran on and its priority.
    pub matched: Matched,
    /// Its system call's exit.
    pub exit: Time,
}

/// A wait that something other than its timer ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventWake {
    /// The thread's `sched_waking`.
    pub woken: Time,
    /// `sched_waking` → switched in (0 when it was still running).
    pub scheduling: Nanos,
    /// Who woke it.
    pub waker: Waker,
}

/// How one wait of an attached thread ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Its timer woke it.
    Timed(TimedWait),
    /// Something else woke it first.
    Event(EventWake),
    /// It ended without a wake-up rtick could follow: the call returned
    /// unwoken (its time had passed), a new timer replaced the wait's
    /// before its call returned, or the events between were lost.
    Unmatched,
}

/// One thread's wake-ups in the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadWaits {
    /// Its timed waits, in time order.
    pub timed: Vec<TimedWait>,
    /// Its event-driven wake-ups, in time order.
    pub event_driven: Vec<EventWake>,
    /// Waits that ended without a wake-up rtick could follow ([`Wake::Unmatched`]).
    pub unmatched: u64,
    /// Still waiting on its timer when the trace stopped.
    pub in_progress: bool,
}

impl ThreadWaits {
    /// Adds one wait's end.
    pub fn add(&mut self, w: Wake) {
        match w {
            Wake::Timed(t) => self.timed.push(t),
            Wake::Event(e) => self.event_driven.push(e),
            Wake::Unmatched => self.unmatched += 1,
        }
    }
}

/// A wait in progress.
#[derive(Clone, Debug)]
struct Pending {
    hrtimer: u64,
    soft: Time,
    hard: Time,
    /// The expiry's time stamp, and its base's offset to CLOCK_MONOTONIC.
    expired: Option<(Time, Nanos)>,
    /// The `sched_waking`, who did it, and the thread's priority then.
    waking: Option<(Time, Waker, i32)>,
    /// The switch-in and its CPU.
    switched_in: Option<(Time, u32)>,
}

/// The waits of the followed threads, one event at a time: fed every traced
/// CPU's events in time order (all CPUs merged), it gives each wait's end
/// as its system call returns.
#[derive(Debug)]
pub struct Follower {
    threads: HashSet<i32>,
    pending: HashMap<i32, Pending>,
    comms: HashMap<i32, Comm>,
    sleeper_fn: Option<u64>,
    bases: BaseOffsets,
}

impl Follower {
    /// Follows no thread yet; `sleeper_fn` is the address of
    /// `hrtimer_wakeup` (`None` when unknown: then every timer a thread arms
    /// is taken for its wait's); `bases` turns a timer's requested time
    /// into CLOCK_MONOTONIC.
    pub fn new(sleeper_fn: Option<u64>, bases: BaseOffsets) -> Follower {
        Follower { threads: HashSet::new(), pending: HashMap::new(), comms: HashMap::new(), sleeper_fn, bases }
    }

    /// Follows `tids` too, from their next event on.
    pub fn follow_threads(&mut self, tids: &[i32]) {
        self.threads.extend(tids);
    }

    /// The threads in a wait now (when the trace stops: still waiting).
    pub fn in_progress(&self) -> impl Iterator<Item = i32> + '_ {
        self.pending.keys().copied()
    }

    /// Takes event `e` of `cpu` (the next in time order): a followed
    /// thread's wait that ended with it, if one did.
    pub fn feed(&mut self, cpu: usize, e: &Event) -> Option<(i32, Wake)> {
        match &e.kind {
            EventKind::HrtimerStart { hrtimer, function, expires, softexpires, .. }
                if self.threads.contains(&e.pid)
                    && !e.in_hardirq()
                    && self.sleeper_fn.is_none_or(|f| f == *function) =>
            {
                let p = Pending {
                    hrtimer: *hrtimer,
                    soft: *softexpires,
                    hard: *expires,
                    expired: None,
                    waking: None,
                    switched_in: None,
                };
                // A previous wait that never reached its system call's exit.
                return self.pending.insert(e.pid, p).map(|_| (e.pid, Wake::Unmatched));
            }
            EventKind::HrtimerExpireEntry { hrtimer, now, .. } => {
                let bases = &self.bases;
                for p in self.pending.values_mut().filter(|p| p.hrtimer == *hrtimer && p.expired.is_none()) {
                    p.expired = Some((e.ts, bases.at_expiry(*now, e.ts)));
                }
            }
            EventKind::SchedWaking(w) => {
                if let Some(p) = self.pending.get_mut(&w.pid).filter(|p| p.waking.is_none()) {
                    p.waking = Some((e.ts, waker(e, &self.comms), w.prio));
                }
            }
            EventKind::SchedSwitch(s) => {
                self.comms.insert(s.next_pid, s.next_comm);
                self.comms.insert(s.prev_pid, s.prev_comm);
                if let Some(p) =
                    self.pending.get_mut(&s.next_pid).filter(|p| p.waking.is_some() && p.switched_in.is_none())
                {
                    p.switched_in = Some((e.ts, cpu as u32));
                }
            }
            EventKind::SysExit { .. } => {
                let p = self.pending.remove(&e.pid)?;
                return Some((e.pid, end(p, e.ts, cpu as u32)));
            }
            _ => {}
        }
        None
    }
}

/// Follows the waits of `tids` through `events` (time order, every traced
/// CPU's, each with its CPU): [`Follower`] over a whole trace.
pub fn follow(
    events: &[(usize, &Event)],
    tids: &[i32],
    sleeper_fn: Option<u64>,
    bases: &BaseOffsets,
) -> HashMap<i32, ThreadWaits> {
    let mut out: HashMap<i32, ThreadWaits> = tids.iter().map(|&t| (t, ThreadWaits::default())).collect();
    let mut f = Follower::new(sleeper_fn, bases.clone());
    f.follow_threads(tids);
    for (cpu, e) in events {
        if let Some((tid, w)) = f.feed(*cpu, e) {
            out.entry(tid).or_default().add(w);
        }
    }
    for tid in f.in_progress() {
        out.entry(tid).or_default().in_progress = true;
    }
    out
}

/// The wait `p` ended at the system call's exit `exit`, on `cpu`.
fn end(p: Pending, exit: Time, cpu: u32) -> Wake {
    let Some((woken, waker, prio)) = p.waking else {
        return Wake::Unmatched;
    };
    let (on_cpu, cpu) = p.switched_in.unwrap_or((woken, cpu));
    match p.expired {
        Some((expired, base)) if expired <= woken => {
            let requested = p.soft - base;
            Wake::Timed(TimedWait {
                requested,
                slack: p.hard - p.soft,
                lateness: exit - requested,
                phases: Phases {
                    irq_delay: expired - requested,
                    wakeup_path: woken - expired,
                    scheduling: on_cpu - woken,
                    return_to_user: exit - on_cpu,
                },
                matched: Matched { cpu, hrtimer: p.hrtimer, expired, waking: woken, switched_in: on_cpu, prio },
                exit,
            })
        }
        _ => Wake::Event(EventWake { woken, scheduling: on_cpu - woken, waker }),
    }
}

/// The waker of the `sched_waking` event `e`.
fn waker(e: &Event, comms: &HashMap<i32, Comm>) -> Waker {
    if e.in_hardirq() {
        Waker::Irq
    } else if e.in_softirq() {
        Waker::Softirq
    } else {
        Waker::Task(e.pid, comms.get(&e.pid).map(|c| c.to_string()).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ktrace::{Switch, Wakeup};

    const SLEEPER: u64 = 0xffff_0001;
    const T: i32 = 42;
    const REALTIME: Nanos = Nanos(1_764_000_000_000_000_000);

    fn ev(ts: i64, pid: i32, flags: u8, kind: EventKind) -> Event {
        Event { ts: Time(ts), pid, flags, preempt_count: 0, kind }
    }
    fn start(ts: i64, soft: i64) -> Event {
        let k = EventKind::HrtimerStart {
            hrtimer: 0xa,
            function: SLEEPER,
            expires: Time(soft + 50),
            softexpires: Time(soft),
            mode: 0,
        };
        ev(ts, T, 0, k)
    }
    fn expire(ts: i64) -> Event {
        ev(ts, 0, 0x09, EventKind::HrtimerExpireEntry { hrtimer: 0xa, now: Time(ts), function: SLEEPER })
    }
    fn waking(ts: i64, by: i32, flags: u8) -> Event {
        let w = Wakeup { comm: Comm::new(b"app"), pid: T, prio: 120, target_cpu: 0 };
        ev(ts, by, flags, EventKind::SchedWaking(w))
    }
    fn switch_in(ts: i64, from: i32) -> Event {
        let s = Switch {
            prev_comm: Comm::new(b"writer"),
            prev_pid: from,
            prev_prio: 120,
            prev_state: 1,
            next_comm: Comm::new(b"app"),
            next_pid: T,
            next_prio: 120,
        };
        ev(ts, from, 0, EventKind::SchedSwitch(s))
    }
    fn exit(ts: i64) -> Event {
        ev(ts, T, 0, EventKind::SysExit { id: 230, ret: 0 })
    }

    fn run(events: &[Event]) -> ThreadWaits {
        let refs: Vec<(usize, &Event)> = events.iter().map(|e| (0, e)).collect();
        follow(&refs, &[T], Some(SLEEPER), &BaseOffsets::new(&[Nanos::ZERO, REALTIME])).remove(&T).unwrap()
    }

    #[test]
    fn a_timed_wait_is_split_into_phases_that_add_up_to_its_lateness() {
        let w = run(&[
            exit(500),
            start(1_000, 10_000),
            expire(10_100),
            waking(10_300, 0, 0x09),
            switch_in(10_700, 0),
            exit(11_000),
        ]);
        assert_eq!((w.event_driven.len(), w.unmatched), (0, 0));
        let t = w.timed[0];
        assert_eq!((t.requested, t.slack, t.lateness), (Time(10_000), Nanos(50), Nanos(1_000)));
        assert_eq!(
            t.phases,
            Phases {
                irq_delay: Nanos(100),
                wakeup_path: Nanos(200),
                scheduling: Nanos(400),
                return_to_user: Nanos(300)
            }
        );
        assert_eq!(t.phases.total(), t.lateness);
    }

    #[test]
    fn a_wait_woken_before_its_timer_is_event_driven_with_its_waker() {
        let mut events = vec![switch_in(0, 77), start(1_000, 50_000), waking(2_000, 77, 0)];
        events.extend([switch_in(2_500, 77), exit(3_000)]);
        // Woken by data, then the timer fired before the thread cancelled it: still event-driven.
        events.extend([start(4_000, 90_000), waking(5_000, 0, 0x08), expire(5_100), switch_in(6_000, 0), exit(6_100)]);
        let w = run(&events);
        assert!(w.timed.is_empty());
        let e = &w.event_driven;
        assert_eq!((e[0].scheduling, e[0].waker.clone()), (Nanos(500), Waker::Task(77, "writer".into())));
        assert_eq!(e[0].waker.to_string(), "writer/77");
        assert_eq!((e[1].scheduling, e[1].waker.to_string()), (Nanos(1_000), "irq".to_string()));
    }

    #[test]
    fn other_timers_and_waits_that_never_slept_are_not_waits() {
        let mut tick = start(1_000, 2_000);
        if let EventKind::HrtimerStart { function, .. } = &mut tick.kind {
            *function = 0xdead;
        }
        let mut in_irq = start(1_100, 2_000);
        in_irq.flags = 0x08;
        let w = run(&[tick, in_irq, exit(1_500), start(2_000, 2_500), exit(2_100)]);
        assert!(w.timed.is_empty() && w.event_driven.is_empty());
        assert_eq!(w.unmatched, 1, "the armed wait that returned unwoken");
        assert!(!w.in_progress);
    }

    #[test]
    fn a_wait_replaced_before_it_ended_is_unmatched_and_one_left_open_in_progress() {
        let w = run(&[start(1_000, 10_000), start(2_000, 20_000), expire(20_000)]);
        assert_eq!((w.unmatched, w.in_progress), (1, true));
        assert!(w.timed.is_empty() && w.event_driven.is_empty());
    }

    #[test]
    fn a_realtime_timer_is_late_against_its_request_in_monotonic_time() {
        let mut events = vec![exit(500), start(1_000, 10_000 + REALTIME.as_ns())];
        // The interrupt read CLOCK_REALTIME 2 µs before the event's time stamp.
        let mut e = expire(12_100);
        e.kind = EventKind::HrtimerExpireEntry { hrtimer: 0xa, now: Time(10_100) + REALTIME, function: SLEEPER };
        events.extend([e, waking(12_300, 0, 0x09), switch_in(12_700, 0), exit(13_000)]);
        let t = run(&events).timed[0];
        assert_eq!((t.requested, t.lateness, t.slack), (Time(10_000), Nanos(3_000), Nanos(50)));
        assert_eq!(t.phases.irq_delay, Nanos(2_100));
    }
}

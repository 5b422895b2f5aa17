//! The trace turned into each attached thread's wake-ups.
//!
//! Per thread, per wait (events in time order, all CPUs merged):
//!
//! ```text
//!  hrtimer_start   expire_entry      sched_waking   switch in      sys_exit
//!  (softexpires) ─ IRQ delay ─│─ wake-up path ─│─ scheduling ─│─ return to user ─│
//! ```
//!
//! A **timed** wait is one a timer's callback ended: a `sched_waking` of
//! the thread done inside the callback of a timer a followed thread armed
//! ([`timers`](super::timers)): its own sleep's (`hrtimer_wakeup`: a
//! `clock_nanosleep`, a `poll`/`epoll_wait`/futex timeout), or a timerfd's,
//! a POSIX timer's or an itimer's, which wake a thread blocked with no
//! timer of its own (`read`, `epoll_wait(-1)`, `sigwaitinfo`). It ends at
//! the thread's next system call exit, late by `sys_exit − softexpires` of
//! that timer; its request is that timer's even when the thread had a sleep
//! of its own pending (an `epoll_wait` with a timeout woken by its timerfd
//! is timed by the timerfd).
//!
//! A wait that begins with a sleep the thread armed itself (outside an
//! interrupt) and that something other than a timer ended first (data, a
//! futex wake, a signal) is **event-driven**: counted apart with its
//! scheduling latency and its waker. (The kernel also records
//! `hrtimer_cancel` as a timer expires, so the cancel event itself does not
//! tell them apart; the callback does.)

use std::collections::HashMap;

use super::bases::BaseOffsets;
use super::timers::{Armed, Callback, Timers};
use crate::explain::{Matched, Phases};
use crate::ktrace::{Comm, Event, EventKind};
use crate::time::{Nanos, Time};

/// The kernel priority of a SCHED_OTHER thread of nice 0.
const DEFAULT_PRIO: i32 = 120;

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

/// A wait that a timer ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TimedWait {
    /// The time asked for (`softexpires`, CLOCK_MONOTONIC).
    pub requested: Time,
    /// The timer slack the kernel added (`expires − softexpires`).
    pub slack: Nanos,
    /// The part of that slack it took: `min(expired, expires) −
    /// softexpires` (≥ 0), the time it was allowed to wait before firing
    /// (to fire timers together) and did.
    pub slack_taken: Nanos,
    /// Back in user space (the system call's exit) − requested.
    pub lateness: Nanos,
    /// The lateness less the slack taken, in four phases: the IRQ delay
    /// counts from `requested + slack_taken`, when the kernel meant to
    /// fire (`slack_taken` + the phases = the lateness).
    pub phases: Phases,
    /// The events it was matched to: its timer's expiry, the thread's
    /// `sched_waking` and switch-in (the waking's time when it was still
    /// running), the CPU it ran on and its priority.
    pub matched: Matched,
    /// Its system call's exit.
    pub exit: Time,
    /// When its timer was armed: the `hrtimer_start` that set the time
    /// asked for (a periodic timerfd's, POSIX timer's or itimer's last
    /// re-arm, on the thread's `read` or signal dequeue). After
    /// `requested` when the program asked for a time already past (it
    /// overran): see [`TimedWait::overrun`].
    pub armed: Time,
    /// The timer's callback's address (`hrtimer_wakeup` for a sleep,
    /// `timerfd_tmrproc`, `posix_timer_fn`, `it_real_fn`…): what kind of
    /// timer it was, named through kallsyms.
    pub callback: u64,
    /// When the thread went to sleep for it: its last switch-out in a
    /// sleeping state before the waking (the waking's time when it never
    /// slept). Where its previous cycle's work ended, whatever armed the
    /// timer (a periodic timer is re-armed before the call that consumed
    /// its last expiry returns).
    pub blocked: Time,
}

impl TimedWait {
    /// When the kernel meant to fire its timer: the request plus the slack
    /// it took (where its phases begin).
    pub fn planned(&self) -> Time {
        self.requested + self.slack_taken
    }

    /// How long after the time it asked for the program armed its timer
    /// (0 when it asked in time), or, for a periodic timer whose expiry
    /// fired while the thread was busy, came to consume it. When positive the program overran: that
    /// much of [`lateness`](TimedWait::lateness) (and of the IRQ delay
    /// phase, counted from the request) passed before it even asked, and
    /// is the program's own, not the kernel's.
    pub fn overrun(&self) -> Nanos {
        (self.armed - self.requested).max(Nanos::ZERO)
    }

    /// The part of the lateness the kernel is answerable for: from the
    /// later of the request and the arm to the system call's exit.
    pub fn kernel_lateness(&self) -> Nanos {
        self.lateness - self.overrun()
    }
}

/// A wait that something other than a timer ended.
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
    /// A timer woke it.
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

/// What woke a wait in progress.
#[derive(Clone, Debug)]
enum By {
    /// The callback of a remembered timer, and its base's offset to CLOCK_MONOTONIC.
    Timer(Callback, Armed, Nanos),
    /// Anything else.
    Other(Waker),
}

/// The `sched_waking` that ended a wait.
#[derive(Clone, Debug)]
struct Woken {
    at: Time,
    by: By,
    /// The thread's priority then.
    prio: i32,
    /// When the thread had gone to sleep.
    blocked: Time,
}

/// A wait in progress: begun by a sleep the thread armed (not woken
/// yet), or by a timer's waking of the thread.
#[derive(Clone, Debug, Default)]
struct Pending {
    woken: Option<Woken>,
    /// The switch-in and its CPU.
    switched_in: Option<(Time, u32)>,
}

/// The waits of the followed threads, one event at a time: fed every traced
/// CPU's events in time order (all CPUs merged), it gives each wait's end
/// as its system call returns. Its memory is bounded by the threads
/// followed, the timers armed at once and the CPUs.
#[derive(Debug)]
pub struct Follower {
    /// The followed threads, each from the time its events are all traced
    /// (its system calls' exits enter the kernel's filter when it is found).
    threads: HashMap<i32, Time>,
    pending: HashMap<i32, Pending>,
    timers: Timers,
    /// Per CPU, the task running (its last switch-in): a waker's name, a
    /// thread's priority.
    current: Vec<(i32, Comm, i32)>,
    /// The followed threads' names (one may wake another before either
    /// was seen switched in).
    names: HashMap<i32, Comm>,
    /// When each followed thread not running went to sleep.
    asleep: HashMap<i32, Time>,
    sleeper_fn: Option<u64>,
    bases: BaseOffsets,
}

impl Follower {
    /// Follows no thread yet; `sleeper_fn` is the address of
    /// `hrtimer_wakeup` (`None` when unknown: then every timer a thread arms
    /// may be its wait's sleep); `bases` turns a timer's requested time
    /// into CLOCK_MONOTONIC.
    pub fn new(sleeper_fn: Option<u64>, bases: BaseOffsets) -> Follower {
        Follower {
            threads: HashMap::new(),
            pending: HashMap::new(),
            timers: Timers::default(),
            current: Vec::new(),
            names: HashMap::new(),
            asleep: HashMap::new(),
            sleeper_fn,
            bases,
        }
    }

    /// Follows `tids` too, from their next event on.
    pub fn follow_threads(&mut self, tids: &[i32]) {
        self.follow_threads_from(tids, Time(i64::MIN));
    }

    /// Follows `tids` too, from their first event at or after `from` (when
    /// the trace began to record their system calls' exits: a wait ending
    /// before then would end unseen).
    pub fn follow_threads_from(&mut self, tids: &[i32], from: Time) {
        self.threads.extend(tids.iter().map(|&t| (t, from)));
    }

    /// Whether the event at `ts` of thread `tid` is followed.
    fn follows(&self, tid: i32, ts: Time) -> bool {
        self.threads.get(&tid).is_some_and(|&from| ts >= from)
    }

    /// Stops following `tids` (threads that exited), forgetting their wait
    /// in progress.
    pub fn unfollow_threads(&mut self, tids: &[i32]) {
        for t in tids {
            self.threads.remove(t);
            self.pending.remove(t);
            self.names.remove(t);
            self.asleep.remove(t);
        }
    }

    /// The threads in a wait now (when the trace stops: still waiting).
    pub fn in_progress(&self) -> impl Iterator<Item = i32> + '_ {
        self.pending.keys().copied()
    }

    /// Takes event `e` of `cpu` (the next in time order): a followed
    /// thread's wait that ended with it, if one did.
    pub fn feed(&mut self, cpu: usize, e: &Event) -> Option<(i32, Wake)> {
        match &e.kind {
            EventKind::HrtimerStart { hrtimer, function, expires, softexpires, .. } => {
                let a = Armed { hrtimer: *hrtimer, function: *function, soft: *softexpires, hard: *expires, at: e.ts };
                let by_followed = self.follows(e.pid, e.ts) && !e.in_hardirq();
                let fired = self.timers.start(cpu, a, by_followed);
                if by_followed {
                    if let Some(cb) = fired.filter(|_| self.sleeper_fn != Some(a.function)) {
                        return self.came_late(cpu, e, cb);
                    }
                    return self.sleep(e.pid, a);
                }
            }
            EventKind::HrtimerCancel { hrtimer } => self.timers.cancel(cpu, *hrtimer),
            EventKind::HrtimerExpireEntry { hrtimer, now, .. } => self.timers.entry(cpu, *hrtimer, e.ts, *now),
            EventKind::HrtimerExpireExit { hrtimer } => self.timers.exit(cpu, *hrtimer),
            EventKind::SchedWaking(w) if self.follows(w.pid, e.ts) => {
                self.names.insert(w.pid, w.comm);
                return self.waking(cpu, e, w.pid, w.prio);
            }
            EventKind::SchedSwitch(s) => {
                if self.current.len() <= cpu {
                    self.current.resize(cpu + 1, (0, Comm::default(), DEFAULT_PRIO));
                }
                self.current[cpu] = (s.next_pid, s.next_comm, s.next_prio);
                self.asleep.remove(&s.next_pid);
                if s.slept() && self.follows(s.prev_pid, e.ts) {
                    self.asleep.insert(s.prev_pid, e.ts);
                }
                if let Some(p) =
                    self.pending.get_mut(&s.next_pid).filter(|p| p.woken.is_some() && p.switched_in.is_none())
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

    /// The thread of event `e` on `cpu` re-armed a timer whose last expiry
    /// (callback `cb`) woke nobody: it fired while the thread was busy (its
    /// loop overran), and the call re-arming it (a `read`, a signal
    /// dequeue) consumes that expiry and returns at once. A timed wait for
    /// that expiry's request, come to (armed, blocked, woken and running)
    /// now: an overrun ([`TimedWait::overrun`]), ending at the call's exit.
    fn came_late(&mut self, cpu: usize, e: &Event, cb: Callback) -> Option<(i32, Wake)> {
        let tid = e.pid;
        if self.pending.get(&tid).is_some_and(|p| p.woken.is_some()) {
            return None;
        }
        let armed = Armed { at: e.ts, ..cb.armed? };
        let by = By::Timer(cb, armed, self.bases.at_expiry(cb.now, cb.entry));
        // Its priority as it was switched in here (the default's if unseen).
        let prio = self.current.get(cpu).filter(|c| c.0 == tid).map_or(DEFAULT_PRIO, |c| c.2);
        let woken = Some(Woken { at: e.ts, by, prio, blocked: e.ts });
        let p = Pending { woken, switched_in: Some((e.ts, cpu as u32)) };
        self.pending.insert(tid, p).map(|_| (tid, Wake::Unmatched))
    }

    /// Thread `tid` armed timer `a` itself: when it is a sleep, its wait
    /// begins (a previous one that never reached its system call's exit
    /// is unmatched). With the sleep's callback unknown, a timer armed
    /// after the thread was woken is taken for a re-arm on its way back
    /// (a timerfd's on `read`), not a new wait.
    fn sleep(&mut self, tid: i32, a: Armed) -> Option<(i32, Wake)> {
        match self.sleeper_fn {
            Some(f) if f != a.function => return None,
            None if self.pending.get(&tid).is_some_and(|p| p.woken.is_some()) => return None,
            _ => {}
        }
        self.pending.insert(tid, Pending::default()).map(|_| (tid, Wake::Unmatched))
    }

    /// The waker of the `sched_waking` event `e` on `cpu`: named as the
    /// task running there, or as the followed thread it is.
    fn waker(&self, e: &Event, cpu: usize) -> Waker {
        if e.in_hardirq() {
            Waker::Irq
        } else if e.in_softirq() {
            Waker::Softirq
        } else {
            let running = self.current.get(cpu).filter(|(pid, ..)| *pid == e.pid).map(|(_, c, _)| c);
            let comm = running.or_else(|| self.names.get(&e.pid)).map(|c| c.to_string());
            Waker::Task(e.pid, comm.unwrap_or_default())
        }
    }

    /// A `sched_waking` of followed thread `tid` (priority `prio`), event
    /// `e` on `cpu`: inside a remembered timer's callback, that timer ends
    /// its wait (a wait already woken and run since ended unseen: its
    /// exit was lost, it is unmatched); else it ends the sleep it armed, if
    /// any, as an event.
    fn waking(&mut self, cpu: usize, e: &Event, tid: i32, prio: i32) -> Option<(i32, Wake)> {
        let blocked = self.asleep.remove(&tid).unwrap_or(e.ts);
        let Some(cb) = self.timers.callback(cpu).copied() else {
            let by = By::Other(self.waker(e, cpu));
            let p = self.pending.get_mut(&tid).filter(|p| p.woken.is_none())?;
            p.woken = Some(Woken { at: e.ts, by, prio, blocked });
            return None;
        };
        let armed = cb.armed?;
        self.timers.woke(cpu);
        let by = By::Timer(cb, armed, self.bases.at_expiry(cb.now, cb.entry));
        let fresh = Pending { woken: Some(Woken { at: e.ts, by, prio, blocked }), ..Pending::default() };
        match self.pending.get_mut(&tid) {
            None => {
                self.pending.insert(tid, fresh);
                None
            }
            Some(p) if p.woken.is_none() => {
                p.woken = fresh.woken;
                None
            }
            Some(p) if p.switched_in.is_some() => {
                *p = fresh;
                Some((tid, Wake::Unmatched))
            }
            Some(_) => None,
        }
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
    let Some(Woken { at: woken, by, prio, blocked }) = p.woken else {
        return Wake::Unmatched;
    };
    let (on_cpu, cpu) = p.switched_in.unwrap_or((woken, cpu));
    let (cb, armed, base) = match by {
        By::Timer(cb, armed, base) => (cb, armed, base),
        By::Other(waker) => return Wake::Event(EventWake { woken, scheduling: on_cpu - woken, waker }),
    };
    let requested = armed.soft - base;
    let expired = cb.entry;
    let slack_taken = (expired.min(armed.hard - base) - requested).max(Nanos::ZERO);
    Wake::Timed(TimedWait {
        requested,
        slack: armed.hard - armed.soft,
        slack_taken,
        lateness: exit - requested,
        phases: Phases {
            irq_delay: expired - (requested + slack_taken),
            wakeup_path: woken - expired,
            scheduling: on_cpu - woken,
            return_to_user: exit - on_cpu,
        },
        matched: Matched { cpu, hrtimer: armed.hrtimer, expired, waking: woken, switched_in: on_cpu, prio },
        exit,
        armed: armed.at,
        callback: armed.function,
        blocked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ktrace::{Switch, Wakeup};

    const SLEEPER: u64 = 0xffff_0001;
    const TIMERFD: u64 = 0xffff_0002;
    const POSIX: u64 = 0xffff_0003;
    const ITIMER: u64 = 0xffff_0004;
    const T: i32 = 42;
    const U: i32 = 43;
    const REALTIME: Nanos = Nanos(1_764_000_000_000_000_000);
    /// In a hard interrupt (TRACE_FLAG_HARDIRQ | IRQS_OFF).
    const IRQ: u8 = 0x09;

    fn ev(ts: i64, pid: i32, flags: u8, kind: EventKind) -> Event {
        Event { ts: Time(ts), pid, flags, preempt_count: 0, kind }
    }
    /// Thread `by` arms timer `hrtimer` (callback `function`) for `soft`, 50 ns of slack.
    fn arm(ts: i64, by: i32, hrtimer: u64, function: u64, soft: i64) -> Event {
        let k =
            EventKind::HrtimerStart { hrtimer, function, expires: Time(soft + 50), softexpires: Time(soft), mode: 0 };
        ev(ts, by, 0, k)
    }
    fn start(ts: i64, soft: i64) -> Event {
        arm(ts, T, 0xa, SLEEPER, soft)
    }
    /// The kernel removes a timer (records a cancel) just before its callback.
    fn fire(ts: i64, hrtimer: u64) -> [Event; 2] {
        [
            ev(ts - 1, 0, IRQ, EventKind::HrtimerCancel { hrtimer }),
            ev(ts, 0, IRQ, EventKind::HrtimerExpireEntry { hrtimer, now: Time(ts), function: 0 }),
        ]
    }
    fn done(ts: i64, hrtimer: u64) -> Event {
        ev(ts, 0, IRQ, EventKind::HrtimerExpireExit { hrtimer })
    }
    fn wake(ts: i64, tid: i32, by: i32, flags: u8) -> Event {
        let comm = Comm::new(if tid == U { b"writer" } else { b"app" });
        let w = Wakeup { comm, pid: tid, prio: 120, target_cpu: 0 };
        ev(ts, by, flags, EventKind::SchedWaking(w))
    }
    fn waking(ts: i64, by: i32, flags: u8) -> Event {
        wake(ts, T, by, flags)
    }
    fn switch(ts: i64, from: (i32, &[u8]), to: (i32, &[u8])) -> Event {
        let s = Switch {
            prev_comm: Comm::new(from.1),
            prev_pid: from.0,
            prev_prio: 120,
            prev_state: 1,
            next_comm: Comm::new(to.1),
            next_pid: to.0,
            next_prio: 120,
        };
        ev(ts, from.0, 0, EventKind::SchedSwitch(s))
    }
    fn switch_in(ts: i64, from: i32) -> Event {
        switch(ts, (from, b"writer"), (T, b"app"))
    }
    fn sys_exit(ts: i64, tid: i32) -> Event {
        ev(ts, tid, 0, EventKind::SysExit { id: 0, ret: 0 })
    }
    fn exit(ts: i64) -> Event {
        sys_exit(ts, T)
    }

    /// The waits of T and U, every event on CPU 0.
    fn run(events: &[Event]) -> ThreadWaits {
        run_on(&events.iter().map(|e| (0, e.clone())).collect::<Vec<_>>(), Some(SLEEPER)).remove(&T).unwrap()
    }
    fn run_on(events: &[(usize, Event)], sleeper: Option<u64>) -> HashMap<i32, ThreadWaits> {
        let refs: Vec<(usize, &Event)> = events.iter().map(|(c, e)| (*c, e)).collect();
        follow(&refs, &[T, U], sleeper, &BaseOffsets::new(&[Nanos::ZERO, REALTIME]))
    }
    fn phases(irq: i64, path: i64, sched: i64, ret: i64) -> Phases {
        Phases { irq_delay: Nanos(irq), wakeup_path: Nanos(path), scheduling: Nanos(sched), return_to_user: Nanos(ret) }
    }

    #[test]
    fn a_timed_wait_is_split_into_phases_that_add_up_to_its_lateness() {
        let mut events = vec![exit(500), start(1_000, 10_000)];
        events.extend(fire(10_100, 0xa));
        events.extend([waking(10_300, 0, IRQ), done(10_350, 0xa), switch_in(10_700, 0), exit(11_000)]);
        let w = run(&events);
        assert_eq!((w.event_driven.len(), w.unmatched), (0, 0));
        let t = w.timed[0];
        assert_eq!((t.requested, t.slack, t.lateness), (Time(10_000), Nanos(50), Nanos(1_000)));
        assert_eq!((t.armed, t.callback, t.overrun()), (Time(1_000), SLEEPER, Nanos::ZERO));
        // 50 ns of slack, all taken (it fired 100 ns after its request).
        assert_eq!((t.slack_taken, t.planned()), (Nanos(50), Time(10_050)));
        assert_eq!(t.phases, phases(50, 200, 400, 300));
        assert_eq!(t.slack_taken + t.phases.total(), t.lateness);
    }

    #[test]
    fn a_wait_woken_before_its_timer_is_event_driven_with_its_waker() {
        // The writer runs on CPU 1 and wakes the thread sleeping on CPU 0.
        let mut events = vec![(1, switch(0, (0, b"swapper/1"), (77, b"writer"))), (0, start(1_000, 50_000))];
        events.extend([(1, waking(2_000, 77, 0)), (0, switch_in(2_500, 0)), (0, exit(3_000))]);
        // Woken by an interrupt, then its timer fired before the thread
        // cancelled it: still event-driven.
        events.extend([(0, start(4_000, 90_000)), (0, waking(5_000, 0, 0x08))]);
        events.extend(fire(5_100, 0xa).map(|e| (0, e)));
        events.extend([(0, done(5_200, 0xa)), (0, switch_in(6_000, 0)), (0, exit(6_100))]);
        let w = run_on(&events, Some(SLEEPER)).remove(&T).unwrap();
        assert!(w.timed.is_empty());
        let e = &w.event_driven;
        assert_eq!((e[0].scheduling, e[0].waker.clone()), (Nanos(500), Waker::Task(77, "writer".into())));
        assert_eq!(e[0].waker.to_string(), "writer/77");
        assert_eq!((e[1].scheduling, e[1].waker.to_string()), (Nanos(1_000), "irq".to_string()));
    }

    #[test]
    fn a_followed_waker_is_named_before_it_is_seen_switched_in() {
        // U, already running on CPU 1 when the trace began, was woken once
        // (its name is in its waking); then it wakes T.
        let mut events = vec![(1, wake(500, U, 0, IRQ)), (0, start(1_000, 50_000)), (1, waking(2_000, U, 0))];
        events.extend([(1, waking(2_100, 99, 0)), (0, switch_in(2_500, 0)), (0, exit(3_000))]);
        let w = run_on(&events, Some(SLEEPER)).remove(&T).unwrap();
        assert_eq!(w.event_driven[0].waker, Waker::Task(U, "writer".into()));
    }

    #[test]
    fn other_timers_and_waits_that_never_slept_are_not_waits() {
        let tick = arm(1_000, T, 0xb, 0xdead, 2_000);
        let mut in_irq = start(1_100, 2_000);
        in_irq.flags = 0x08;
        let w = run(&[tick, in_irq, exit(1_500), start(2_000, 2_500), exit(2_100)]);
        assert!(w.timed.is_empty() && w.event_driven.is_empty());
        assert_eq!(w.unmatched, 1, "the armed wait that returned unwoken");
        assert!(!w.in_progress);
    }

    #[test]
    fn a_wait_replaced_before_it_ended_is_unmatched_and_one_left_open_in_progress() {
        let mut events = vec![start(1_000, 10_000), start(2_000, 20_000)];
        events.extend(fire(20_000, 0xa));
        let w = run(&events);
        assert_eq!((w.unmatched, w.in_progress), (1, true));
        assert!(w.timed.is_empty() && w.event_driven.is_empty());
    }

    #[test]
    fn a_realtime_timer_is_late_against_its_request_in_monotonic_time() {
        let mut events = vec![exit(500), start(1_000, 10_000 + REALTIME.as_ns())];
        // The interrupt read CLOCK_REALTIME 2 µs before the event's time stamp.
        let [c, mut e] = fire(12_100, 0xa);
        e.kind = EventKind::HrtimerExpireEntry { hrtimer: 0xa, now: Time(10_100) + REALTIME, function: SLEEPER };
        events.extend([c, e, waking(12_300, 0, IRQ), done(12_400, 0xa), switch_in(12_700, 0), exit(13_000)]);
        let t = run(&events).timed[0];
        assert_eq!((t.requested, t.lateness, t.slack), (Time(10_000), Nanos(3_000), Nanos(50)));
        assert_eq!((t.slack_taken, t.phases.irq_delay), (Nanos(50), Nanos(2_050)));
    }

    /// A periodic timerfd read in a loop, as this kernel traces it: the
    /// callback wakes the thread blocked in `read`, which re-arms the timer
    /// for the next period before returning.
    #[test]
    fn a_timerfd_read_is_timed_by_the_timerfd_and_armed_at_its_re_arm() {
        let mut events = vec![arm(1_000, T, 0xf, TIMERFD, 10_000), exit(1_100)];
        let mut asleep = 1_200;
        for (soft, next, late) in [(10_000, 20_000, 100), (20_000, 30_000, 50)] {
            events.push(switch(asleep, (T, b"app"), (0, b"swapper/0")));
            events.extend(fire(soft + late, 0xf));
            events.extend([waking(soft + late + 10, 0, IRQ), done(soft + late + 20, 0xf)]);
            events.extend([switch_in(soft + 300, 0), arm(soft + 400, T, 0xf, TIMERFD, next), exit(soft + 450)]);
            asleep = soft + 500;
        }
        let w = run(&events);
        assert_eq!((w.timed.len(), w.event_driven.len(), w.unmatched, w.in_progress), (2, 0, 0, false));
        let (a, b) = (w.timed[0], w.timed[1]);
        assert_eq!((a.requested, a.lateness, a.armed, a.callback), (Time(10_000), Nanos(450), Time(1_000), TIMERFD));
        assert_eq!(a.phases, phases(50, 10, 190, 150));
        assert_eq!((b.requested, b.lateness, b.armed), (Time(20_000), Nanos(450), Time(10_400)));
        assert_eq!((b.slack_taken, b.phases), (Nanos(50), phases(0, 10, 240, 150)));
        assert_eq!((a.slack, a.matched.hrtimer, b.matched.expired), (Nanos(50), 0xf, Time(20_050)));
        assert_eq!((a.blocked, b.blocked), (Time(1_200), Time(10_500)), "gone to sleep in its read");
    }

    /// `epoll_wait` with a 1 ms timeout (its own sleep) on a timerfd that
    /// fires first: timed by the timerfd; the `read` after it returns at
    /// once and is no wait.
    #[test]
    fn an_epoll_wait_with_a_timeout_woken_by_its_timerfd_is_timed_by_the_timerfd() {
        let mut events = vec![arm(1_000, T, 0xf, TIMERFD, 10_000), exit(1_100), start(2_000, 1_002_000)];
        events.extend(fire(10_200, 0xf));
        events.extend([waking(10_210, 0, IRQ), done(10_220, 0xf), switch_in(10_500, 0), exit(10_600)]);
        events.extend([arm(10_700, T, 0xf, TIMERFD, 20_000), exit(10_750)]);
        let w = run(&events);
        assert_eq!((w.timed.len(), w.event_driven.len(), w.unmatched), (1, 0, 0));
        let t = w.timed[0];
        assert_eq!((t.requested, t.lateness, t.armed, t.callback), (Time(10_000), Nanos(600), Time(1_000), TIMERFD));
        assert_eq!(t.phases, phases(150, 10, 290, 100));
    }

    /// A POSIX timer armed by one thread (timer_settime), its signal sent
    /// to another (SIGEV_THREAD_ID) blocked in `sigwaitinfo`, which
    /// re-arms it as it dequeues the signal; the same with an itimer's
    /// SIGALRM. The first wait of T on CPU 1 is timed, U's on CPU 0 too.
    #[test]
    fn a_posix_timer_or_an_itimer_wakes_the_thread_it_signals_timed_by_its_request() {
        let mut events = vec![(0, arm(1_000, U, 0xb, POSIX, 10_000)), (0, sys_exit(1_100, U))];
        events.push((1, arm(1_200, T, 0xc, ITIMER, 12_000)));
        events.push((1, exit(1_300)));
        events.extend(fire(10_040, 0xb).map(|e| (0, e)));
        events.extend([(0, wake(10_050, T, 0, IRQ)), (0, done(10_060, 0xb))]);
        events.extend(fire(12_030, 0xc).map(|e| (1, e)));
        events.extend([(1, wake(12_040, U, 0, IRQ)), (1, done(12_050, 0xc))]);
        events.extend([(1, switch_in(12_100, 0)), (1, arm(12_150, T, 0xb, POSIX, 20_000)), (1, exit(12_200))]);
        events.push((0, switch(12_300, (0, b"swapper/0"), (U, b"app"))));
        events.extend([(0, arm(12_350, U, 0xc, ITIMER, 22_000)), (0, sys_exit(12_400, U))]);
        let mut w = run_on(&events, Some(SLEEPER));
        let (t, u) = (w.remove(&T).unwrap(), w.remove(&U).unwrap());
        let (t, u) = (t.timed[0], u.timed[0]);
        assert_eq!((t.requested, t.lateness, t.armed, t.callback), (Time(10_000), Nanos(2_200), Time(1_000), POSIX));
        assert_eq!((t.slack_taken, t.phases), (Nanos(40), phases(0, 10, 2_050, 100)), "fired within its slack");
        assert_eq!(t.matched.cpu, 1, "switched in on CPU 1");
        assert_eq!((u.requested, u.lateness, u.armed, u.callback), (Time(12_000), Nanos(400), Time(1_200), ITIMER));
        assert_eq!((u.slack_taken, u.phases), (Nanos(30), phases(0, 10, 260, 100)));
    }

    /// `clock_nanosleep` to an absolute time already past: the program
    /// overran; the timer fires at once, before the thread even slept.
    #[test]
    fn a_wait_armed_after_its_request_is_told_apart_as_the_programs_overrun() {
        let mut events = vec![exit(500), start(12_000, 10_000)];
        events.extend(fire(12_050, 0xa));
        events.extend([waking(12_060, T, IRQ), done(12_070, 0xa), exit(12_100)]);
        let t = run(&events).timed[0];
        assert_eq!((t.requested, t.armed, t.lateness), (Time(10_000), Time(12_000), Nanos(2_100)));
        assert_eq!((t.overrun(), t.kernel_lateness()), (Nanos(2_000), Nanos(100)));
        assert_eq!(t.blocked, Time(12_060), "it never slept: blocked is the waking");
        assert_eq!((t.slack_taken, t.phases), (Nanos(50), phases(2_000, 10, 0, 40)));
    }

    /// A SCHED_OTHER sleep with 50 µs of slack that fired at its hard
    /// expiry exactly: the slack taken is all of it, the IRQ delay none
    /// (the kernel fired when it meant to).
    #[test]
    fn slack_taken_is_apart_from_the_irq_delay() {
        let sleep = |ts, soft: i64| {
            let k = EventKind::HrtimerStart {
                hrtimer: 0xa,
                function: SLEEPER,
                expires: Time(soft + 50_000),
                softexpires: Time(soft),
                mode: 0,
            };
            ev(ts, T, 0, k)
        };
        let mut events = vec![exit(500)];
        // Fired at its hard expiry; early (batched with another timer's
        // interrupt), 20 µs into its slack; 500 ns past its hard expiry.
        for (at, soft, fired) in [(1_000, 100_000, 150_000), (150_300, 200_000, 220_000), (220_300, 300_000, 350_500)] {
            events.push(sleep(at, soft));
            events.extend(fire(fired, 0xa));
            events.extend([
                waking(fired + 10, 0, IRQ),
                done(fired + 20, 0xa),
                switch_in(fired + 100, 0),
                exit(fired + 200),
            ]);
        }
        let w = run(&events);
        let [a, b, c] = [0, 1, 2].map(|k| w.timed[k]);
        assert_eq!(
            (a.slack, a.slack_taken, a.lateness, a.planned()),
            (Nanos(50_000), Nanos(50_000), Nanos(50_200), Time(150_000))
        );
        assert_eq!(a.phases, phases(0, 10, 90, 100), "no IRQ delay: it fired when the kernel meant to");
        assert_eq!((b.slack_taken, b.lateness, b.phases), (Nanos(20_000), Nanos(20_200), phases(0, 10, 90, 100)));
        assert_eq!((c.slack_taken, c.lateness, c.phases), (Nanos(50_000), Nanos(50_700), phases(500, 10, 90, 100)));
    }

    /// A periodic timerfd whose loop overran: its expiry fired while the
    /// thread computed (the callback woke nobody), and the `read` that
    /// re-arms it returns at once. That cycle is a timed wait for that
    /// expiry, an overrun (the program came to it late), not lost.
    #[test]
    fn a_periodic_timer_that_expired_while_its_thread_was_busy_is_an_overrun() {
        let mut events = vec![arm(1_000, T, 0xf, TIMERFD, 10_000), exit(1_100)];
        events.push(switch(1_200, (T, b"app"), (0, b"swapper/0")));
        events.extend(fire(10_100, 0xf));
        events.extend([waking(10_110, 0, IRQ), done(10_120, 0xf), switch_in(10_300, 0)]);
        events.extend([arm(10_400, T, 0xf, TIMERFD, 20_000), exit(10_450)]);
        // Busy: the expiry for 20 µs fires, waking nobody; read at 23 µs.
        events.extend(fire(20_080, 0xf));
        events.extend([done(20_090, 0xf), arm(23_000, T, 0xf, TIMERFD, 30_000), exit(23_050)]);
        // Back in time: an ordinary wait.
        events.push(switch(23_100, (T, b"app"), (0, b"swapper/0")));
        events.extend(fire(30_060, 0xf));
        events.extend([waking(30_070, 0, IRQ), done(30_080, 0xf), switch_in(30_200, 0)]);
        events.extend([arm(30_300, T, 0xf, TIMERFD, 40_000), exit(30_350)]);
        let w = run(&events);
        assert_eq!((w.timed.len(), w.event_driven.len(), w.unmatched, w.in_progress), (3, 0, 0, false));
        let o = w.timed[1];
        assert_eq!((o.requested, o.exit, o.lateness), (Time(20_000), Time(23_050), Nanos(3_050)));
        assert_eq!(
            (o.armed, o.blocked, o.overrun(), o.kernel_lateness()),
            (Time(23_000), Time(23_000), Nanos(3_000), Nanos(50))
        );
        assert_eq!((o.slack_taken, o.phases), (Nanos(50), phases(30, 2_920, 0, 50)));
        assert_eq!((o.matched.expired, o.callback), (Time(20_080), TIMERFD));
        assert_eq!(o.slack_taken + o.phases.total(), o.lateness);
        let last = w.timed[2];
        assert_eq!((last.requested, last.overrun(), last.blocked), (Time(30_000), Nanos::ZERO, Time(23_100)));
        // The cycle counts it among its overruns; its margin is negative.
        let mut c = super::super::cycle::Cycle::new();
        w.timed.iter().for_each(|t| c.add(t));
        let s = c.summary();
        assert_eq!((s.waits, s.overruns, s.margin.map(|m| m[0])), (3, 1, Some(Nanos(-3_000))));
    }

    /// A wait woken by a timer whose thread ran and slept again without a
    /// system call's exit seen (lost, or not yet filtered in): the next
    /// timer's waking starts a new wait, the old one is unmatched.
    #[test]
    fn a_timed_wait_whose_exit_was_not_seen_is_unmatched_not_late_by_a_period() {
        let mut events = vec![arm(1_000, T, 0xf, TIMERFD, 10_000)];
        events.extend(fire(10_100, 0xf));
        events.extend([waking(10_110, 0, IRQ), done(10_120, 0xf), switch_in(10_200, 0)]);
        events.push(arm(10_300, T, 0xf, TIMERFD, 20_000));
        events.extend(fire(20_100, 0xf));
        events.extend([waking(20_110, 0, IRQ), done(20_120, 0xf), switch_in(20_200, 0), exit(20_300)]);
        let w = run(&events);
        assert_eq!(w.unmatched, 1);
        assert_eq!((w.timed.len(), w.timed[0].requested, w.timed[0].lateness), (1, Time(20_000), Nanos(300)));
    }

    /// With the sleep's callback unknown (no kallsyms), every timer a
    /// thread arms may be its sleep, but a timerfd re-armed in its `read`
    /// after the waking does not replace the wait.
    #[test]
    fn without_the_sleep_callback_a_re_arm_after_the_waking_is_no_new_wait() {
        let mut events = vec![(0, arm(1_000, T, 0xf, TIMERFD, 10_000)), (0, exit(1_100))];
        events.extend(fire(10_100, 0xf).map(|e| (0, e)));
        events.extend([(0, waking(10_110, 0, IRQ)), (0, done(10_120, 0xf)), (0, switch_in(10_200, 0))]);
        events.extend([(0, arm(10_300, T, 0xf, TIMERFD, 20_000)), (0, exit(10_400))]);
        let w = run_on(&events, None).remove(&T).unwrap();
        assert_eq!(w.unmatched, 1, "timerfd_settime taken for a sleep that returned unwoken");
        assert_eq!((w.timed.len(), w.timed[0].requested, w.timed[0].lateness), (1, Time(10_000), Nanos(400)));
    }

    /// A timer armed before the attach is not known: its callback's waking
    /// of a thread in a sleep of its own is an event (an interrupt).
    #[test]
    fn an_unknown_timers_callback_ending_a_sleep_is_an_interrupts_event() {
        let mut events = vec![start(1_000, 50_000)];
        events.extend(fire(2_000, 0xe));
        events.extend([waking(2_010, 0, IRQ), done(2_020, 0xe), switch_in(2_100, 0), exit(2_200)]);
        let w = run(&events);
        assert!(w.timed.is_empty());
        assert_eq!((w.event_driven[0].waker.clone(), w.event_driven[0].scheduling), (Waker::Irq, Nanos(90)));
    }

    /// A thread found during the run is followed from when its exits are
    /// traced: a wait it ended before then (its exit filtered out) is not
    /// left pending to be taken for unmatched, nor joined to a later exit.
    #[test]
    fn a_thread_followed_from_a_time_has_no_wait_before_it() {
        let mut f = Follower::new(Some(SLEEPER), BaseOffsets::new(&[Nanos::ZERO]));
        f.follow_threads_from(&[T], Time(5_000));
        let mut events = vec![start(1_000, 2_000)];
        events.extend(fire(2_000, 0xa));
        // Its exit at 2_200 was not recorded (not yet in the filter).
        events.extend([waking(2_010, 0, IRQ), done(2_020, 0xa), switch_in(2_100, 0)]);
        events.push(start(6_000, 8_000));
        events.extend(fire(8_000, 0xa));
        events.extend([waking(8_010, 0, IRQ), done(8_020, 0xa), switch_in(8_100, 0), exit(8_200)]);
        let ends: Vec<(i32, Wake)> = events.iter().filter_map(|e| f.feed(0, e)).collect();
        assert_eq!(ends.len(), 1, "{ends:?}");
        let Wake::Timed(t) = &ends[0].1 else { panic!("{ends:?}") };
        assert_eq!((t.requested, t.lateness), (Time(8_000), Nanos(200)));
    }

    #[test]
    fn memory_does_not_grow_with_the_run() {
        let mut f = Follower::new(Some(SLEEPER), BaseOffsets::new(&[Nanos::ZERO]));
        f.follow_threads(&[T, U]);
        let mut n = 0;
        for i in 0..5_000i64 {
            let t0 = i * 100_000;
            let mut events =
                vec![arm(t0, T, 0xf, TIMERFD, t0 + 50_000), arm(t0 + 1, T, 0x100 + i as u64, SLEEPER, t0 + 90_000)];
            events.extend(fire(t0 + 50_100, 0xf));
            events.extend([waking(t0 + 50_110, 0, IRQ), done(t0 + 50_120, 0xf), switch_in(t0 + 50_200, 0)]);
            // The sleep is cancelled as the call returns; a task not followed comes and goes.
            events.push(ev(t0 + 50_250, T, 0, EventKind::HrtimerCancel { hrtimer: 0x100 + i as u64 }));
            events.extend([exit(t0 + 50_300), switch(t0 + 50_400, (T, b"app"), (1_000 + i as i32, b"other"))]);
            n += events.iter().filter_map(|e| f.feed(0, e)).filter(|(_, w)| matches!(w, Wake::Timed(_))).count();
        }
        assert_eq!(n, 5_000);
        assert_eq!((f.timers.len(), f.pending.len(), f.current.len()), (0, 0, 1));
        f.unfollow_threads(&[T]);
        assert_eq!(f.threads.len(), 1);
    }
}

//! One CPU's history as intervals: which task ran, which IRQ handlers,
//! softirqs, IPIs, NMIs and hrtimer callbacks ran, which work items the
//! kworkers ran and which idle state the CPU was in, so that any window of
//! time can be asked "what ran here, and for how long".

use std::collections::HashMap;
use std::sync::Arc;

use super::idle::CStates;
use super::input::Task;
use crate::ktrace::{softirq_name, Event, EventKind, IdleWatch, Ipi, Sender, Senders, Switch};
use crate::time::{Nanos, Time};

/// Something that took a CPU's time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Culprit {
    /// A task (thread) ran.
    Task(Task),
    /// The CPU was idle.
    Idle,
    /// An IRQ handler ran.
    Irq {
        /// IRQ number.
        irq: i32,
        /// Handler name.
        name: String,
    },
    /// A softirq ran.
    Softirq(&'static str),
    /// An inter-processor interrupt (or irq_work) ran, and who sent it
    /// when its send was traced.
    Ipi(Ipi, Option<Sender>),
    /// An NMI handler ran.
    Nmi,
    /// Another hrtimer's callback ran.
    Hrtimer {
        /// The `struct hrtimer` address.
        hrtimer: u64,
        /// The callback's address.
        function: u64,
    },
}

impl std::fmt::Display for Culprit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Culprit::Task(t) => write!(f, "{}:{} (prio {})", t.comm, t.pid, t.prio),
            Culprit::Idle => f.write_str("idle"),
            Culprit::Irq { irq, name } => write!(f, "IRQ {irq} {name}"),
            Culprit::Softirq(n) => write!(f, "softirq {n}"),
            Culprit::Ipi(Ipi::IrqWork, _) => f.write_str("irq_work interrupt"),
            Culprit::Ipi(i, None) => write!(f, "{i} IPI"),
            Culprit::Ipi(i, Some(s)) => write!(f, "{i} IPI {}", s.describe()),
            Culprit::Nmi => f.write_str("NMI"),
            Culprit::Hrtimer { function, .. } => {
                write!(f, "hrtimer callback {}", crate::ktrace::kallsyms::describe(*function))
            }
        }
    }
}

/// An interval of a CPU's time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start.
    pub start: Time,
    /// End.
    pub end: Time,
    /// What ran.
    pub what: Culprit,
}

/// A work item a kworker ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkSpan {
    /// Start.
    pub start: Time,
    /// End.
    pub end: Time,
    /// The kworker's pid.
    pub pid: i32,
    /// The work function's address.
    pub function: u64,
}

/// One CPU's intervals, each kind sorted by start.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Task run intervals (idle included), back to back.
    pub tasks: Vec<Span>,
    /// IRQ handlers, softirqs, IPIs, NMIs and hrtimer callbacks (interrupt context).
    pub interrupts: Vec<Span>,
    /// Work items run by kworkers (inside their task spans).
    pub works: Vec<WorkSpan>,
    /// `power:cpu_idle` changes: from when the CPU was in which idle
    /// state (its cpuidle index; `None`: out of idle).
    pub idle: Vec<(Time, Option<u32>)>,
    /// The idle states' names and exit latencies: this machine's
    /// ([`CStates::system`]) unless set.
    pub cstates: Option<CStates>,
    /// The kernel stacks taken at timer expiries ([`ktrace::stack`](crate::ktrace::stack)):
    /// the expiry's time and timer, and the stack.
    pub stacks: Vec<(Time, u64, Arc<[u64]>)>,
    /// When each timer was armed (`hrtimer_start`: time, timer, and the
    /// slack the kernel may add: `expires − softexpires`).
    pub arms: Vec<(Time, u64, Nanos)>,
}

impl Timeline {
    /// Builds the timeline of the events of one CPU, sorted by time.
    /// Intervals still open at the end close at `end`.
    pub fn build(events: &[Event], end: Time) -> Timeline {
        Timeline::build_on(events, end, 0, &Senders::default())
    }

    /// [`Timeline::build`] for CPU `cpu`, each IPI named with its sender from `senders`.
    pub fn build_on(events: &[Event], end: Time, cpu: usize, senders: &Senders) -> Timeline {
        let mut b = Builder {
            t: Timeline::default(),
            cpu,
            senders,
            current: None,
            open: Vec::new(),
            working: Vec::new(),
            woken: HashMap::new(),
            seen: HashMap::new(),
            expiry: None,
            idle: IdleWatch::default(),
        };
        for e in events {
            b.event(e);
        }
        b.finish(end)
    }

    /// The task current at `at` (None before the first switch seen).
    pub fn current(&self, at: Time) -> Option<&Culprit> {
        let i = self.tasks.partition_point(|s| s.start <= at);
        self.tasks[..i].last().filter(|s| s.end >= at).map(|s| &s.what)
    }

    /// When timer `hrtimer` was last armed, at or before `at`, and with
    /// how much slack.
    pub fn armed(&self, hrtimer: u64, at: Time) -> Option<(Time, Nanos)> {
        let i = self.arms.partition_point(|a| a.0 <= at);
        self.arms[..i].iter().rev().find(|a| a.1 == hrtimer).map(|a| (a.0, a.2))
    }

    /// The work function task `pid` ran longest in `[from, to)`, if it ran one.
    pub fn work_in(&self, pid: i32, from: Time, to: Time) -> Option<u64> {
        let upto = self.works.partition_point(|w| w.start < to);
        let mine = self.works[..upto].iter().filter(|w| w.pid == pid && w.end > from);
        mine.max_by_key(|w| w.end.min(to) - w.start.max(from)).map(|w| w.function)
    }

    /// The stack taken when timer `hrtimer` expired at `at` (its
    /// `hrtimer_expire_entry`), if one was.
    pub fn stack_at(&self, at: Time, hrtimer: u64) -> Option<Arc<[u64]>> {
        let i = self.stacks.partition_point(|s| s.0 < at);
        self.stacks[i..].iter().take_while(|s| s.0 == at).find(|s| s.1 == hrtimer).map(|s| Arc::clone(&s.2))
    }

    /// The idle state the CPU was in at `at`, as `power:cpu_idle` said it
    /// (`None`: not in one, or no such event seen before).
    pub fn idle_state(&self, at: Time) -> Option<u32> {
        let i = self.idle.partition_point(|(t, _)| *t <= at);
        self.idle[..i].last().and_then(|(_, s)| *s)
    }

    /// What took the window `[from, to)`, longest first, with its time in
    /// it: tasks and interrupt work, except the measuring thread (`tid`) and
    /// its own timer's callback (`own_timer`).
    pub fn in_window(&self, from: Time, to: Time, tid: i32, own_timer: u64) -> Vec<(Culprit, Nanos)> {
        let mut out: Vec<(Culprit, Nanos)> = Vec::new();
        let mut add = |what: &Culprit, d: Nanos| {
            if d <= Nanos::ZERO {
                return;
            }
            match out.iter_mut().find(|(c, _)| c == what) {
                Some((_, t)) => *t = *t + d,
                None => out.push((what.clone(), d)),
            }
        };
        for spans in [&self.tasks, &self.interrupts] {
            // Spans starting before `to`; those ending before `from` add nothing.
            let upto = spans.partition_point(|s| s.start < to);
            for s in &spans[..upto] {
                match &s.what {
                    Culprit::Task(t) if t.pid == tid => continue,
                    Culprit::Hrtimer { hrtimer, .. } if *hrtimer == own_timer => continue,
                    _ => {}
                }
                add(&s.what, s.end.min(to) - s.start.max(from));
            }
        }
        out.sort_by_key(|c| std::cmp::Reverse(c.1));
        out
    }
}

/// [`Timeline::build`] between two events: the task span in progress and
/// the interrupt work entered but not yet left.
struct Builder<'a> {
    t: Timeline,
    /// The CPU, and the sends to it.
    cpu: usize,
    senders: &'a Senders,
    /// The task running since when.
    current: Option<(Time, Culprit)>,
    /// Interrupt work entered, innermost last.
    open: Vec<(Time, Culprit)>,
    /// Work items started and not ended: (start, pid, work, function).
    working: Vec<(Time, i32, u64, u64)>,
    /// When each pid was last made runnable here, and first seen running
    /// (as an event's common_pid), since the current span began: the
    /// switch into a task is sometimes not recorded (on this VM's CPU 1 no
    /// switch out of the idle task ever is), and is inferred from them.
    woken: HashMap<i32, Time>,
    seen: HashMap<i32, Time>,
    /// The timer expiry just recorded (time, timer): the kernel records
    /// the stack its trigger takes right after it.
    expiry: Option<(Time, u64)>,
    /// A switch out of the idle task that was not recorded, inferred
    /// after the idle task's last event.
    idle: IdleWatch,
}

impl Builder<'_> {
    fn event(&mut self, e: &Event) {
        if e.pid != 0 {
            self.seen.entry(e.pid).or_insert(e.ts);
        }
        if let Some((at, sw)) = self.idle.missed(e, 0) {
            // Not before its wake-up here (a thread of pid 1 records no
            // event: idle's last one may be older), nor after its first event.
            let at = self.woken.get(&sw.next_pid).map_or(at, |&w| at.max(w));
            let at = self.seen.get(&sw.next_pid).map_or(at, |&s| at.min(s));
            self.switch(at, &sw);
        }
        let expiry = self.expiry.take();
        match &e.kind {
            EventKind::KernelStack { frames } => {
                if let Some((at, hrtimer)) = expiry {
                    self.t.stacks.push((at, hrtimer, Arc::clone(frames)));
                }
            }
            // Recorded between an event and its stack (an NMI's, in the trigger).
            EventKind::Nmi { .. } => self.expiry = expiry,
            _ => {}
        }
        match &e.kind {
            EventKind::SchedWakeup(w) => {
                self.woken.insert(w.pid, e.ts);
            }
            EventKind::SchedSwitch(sw) => self.switch(e.ts, sw),
            EventKind::IrqHandlerEntry { irq, name } => {
                self.open.push((e.ts, Culprit::Irq { irq: *irq, name: name.to_string() }))
            }
            EventKind::IrqHandlerExit { irq, .. } => {
                self.close(e.ts, |c| matches!(c, Culprit::Irq { irq: i, .. } if i == irq))
            }
            EventKind::SoftirqEntry { vec } => self.open.push((e.ts, Culprit::Softirq(softirq_name(*vec)))),
            EventKind::SoftirqExit { vec } => {
                let name = softirq_name(*vec);
                self.close(e.ts, |c| *c == Culprit::Softirq(name))
            }
            EventKind::HrtimerStart { hrtimer, expires, softexpires, .. } => {
                self.t.arms.push((e.ts, *hrtimer, (*expires - *softexpires).max(Nanos::ZERO)))
            }
            EventKind::HrtimerExpireEntry { hrtimer, function, .. } => {
                self.expiry = Some((e.ts, *hrtimer));
                self.open.push((e.ts, Culprit::Hrtimer { hrtimer: *hrtimer, function: *function }))
            }
            EventKind::HrtimerExpireExit { hrtimer } => {
                self.close(e.ts, |c| matches!(c, Culprit::Hrtimer { hrtimer: h, .. } if h == hrtimer))
            }
            EventKind::IpiEntry { ipi, .. } => {
                let from = self.senders.sender_of(self.cpu, *ipi, e.ts).cloned();
                self.open.push((e.ts, Culprit::Ipi(*ipi, from)))
            }
            EventKind::IpiExit { ipi, .. } => self.close(e.ts, |c| matches!(c, Culprit::Ipi(i, _) if i == ipi)),
            // Recorded as the handler returns, with how long it ran.
            EventKind::Nmi { delta_ns, .. } => {
                let start = Time(e.ts.0 - (*delta_ns).max(0));
                self.t.interrupts.push(Span { start, end: e.ts, what: Culprit::Nmi })
            }
            EventKind::WorkStart { work, function } => self.working.push((e.ts, e.pid, *work, *function)),
            EventKind::WorkEnd { work } => {
                if let Some(i) = self.working.iter().rposition(|w| w.1 == e.pid && w.2 == *work) {
                    let (start, pid, _, function) = self.working.remove(i);
                    self.t.works.push(WorkSpan { start, end: e.ts, pid, function });
                }
            }
            EventKind::CpuIdle { state } => {
                self.t.idle.push((e.ts, (*state != EventKind::IDLE_EXIT).then_some(*state)))
            }
            _ => {}
        }
    }

    /// A context switch at `ts`: the current task's span ends, the next one's begins.
    fn switch(&mut self, ts: Time, sw: &Switch) {
        self.idle.switched(ts, sw);
        let prev = Task::new(&sw.prev_comm, sw.prev_pid, sw.prev_prio);
        let current_pid = self.current.as_ref().map(|(_, c)| match c {
            Culprit::Task(t) => t.pid,
            _ => 0,
        });
        if current_pid.is_some_and(|p| p != prev.pid) && !prev.is_idle() {
            // The switch into `prev` was not recorded: it ran from
            // its wake-up here (or its first event) until now.
            let since = self.current.as_ref().map_or(ts, |(s, _)| *s);
            let start =
                self.woken.get(&prev.pid).or(self.seen.get(&prev.pid)).copied().filter(|&t| t >= since).unwrap_or(ts);
            if let Some((s0, what)) = self.current.take() {
                self.t.tasks.push(Span { start: s0, end: start, what });
            }
            self.current = Some((start, Culprit::Task(prev)));
        }
        if let Some((start, what)) = self.current.take() {
            self.t.tasks.push(Span { start, end: ts, what });
        }
        let next = Task::new(&sw.next_comm, sw.next_pid, sw.next_prio);
        self.current = Some((ts, if next.is_idle() { Culprit::Idle } else { Culprit::Task(next) }));
        self.woken.clear();
        self.seen.clear();
    }

    /// Interrupt work left at `at`: the innermost open span `pred` matches.
    fn close(&mut self, at: Time, pred: impl Fn(&Culprit) -> bool) {
        if let Some(i) = self.open.iter().rposition(|(_, c)| pred(c)) {
            let (start, what) = self.open.remove(i);
            self.t.interrupts.push(Span { start, end: at, what });
        }
    }

    /// The timeline, with every span still open closed at `end`.
    fn finish(mut self, end: Time) -> Timeline {
        if let Some((start, what)) = self.current {
            self.t.tasks.push(Span { start, end: end.max(start), what });
        }
        for (start, what) in self.open {
            self.t.interrupts.push(Span { start, end: end.max(start), what });
        }
        for (start, pid, _, function) in self.working {
            self.t.works.push(WorkSpan { start, end: end.max(start), pid, function });
        }
        self.t.interrupts.sort_by_key(|s| s.start);
        self.t.works.sort_by_key(|w| w.start);
        self.t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::testing::{ev, switch};
    use crate::ktrace::EventKind as K;

    fn task(comm: &str, pid: i32, prio: i32) -> Task {
        Task { comm: comm.into(), pid, prio }
    }

    #[test]
    fn windows_add_up_what_ran() {
        // 0: idle; 100: hog runs; 300: idle again, an IRQ 150–180 and a softirq 200–260 inside hog.
        let evs = [
            ev(0, 7, switch(("x", 7, 120), ("swapper/1", 0, 120))),
            ev(100, 0, switch(("swapper/1", 0, 120), ("hog", 42, 9))),
            ev(150, 42, K::IrqHandlerEntry { irq: 11, name: "virtio0".into() }),
            ev(180, 42, K::IrqHandlerExit { irq: 11, ret: 1 }),
            ev(200, 42, K::SoftirqEntry { vec: 1 }),
            ev(260, 42, K::SoftirqExit { vec: 1 }),
            ev(300, 42, switch(("hog", 42, 9), ("swapper/1", 0, 120))),
        ];
        let t = Timeline::build(&evs, Time(1000));
        let hog = task("hog", 42, 9);
        assert_eq!(t.current(Time(50)), Some(&Culprit::Idle));
        assert_eq!(t.current(Time(120)), Some(&Culprit::Task(hog.clone())));
        let w = t.in_window(Time(50), Time(250), 99, 0);
        assert_eq!(
            w,
            [
                (Culprit::Task(hog.clone()), Nanos(150)),
                (Culprit::Idle, Nanos(50)),
                (Culprit::Softirq("TIMER"), Nanos(50)),
                (Culprit::Irq { irq: 11, name: "virtio0".into() }, Nanos(30)),
            ]
        );
        // The measuring thread itself is not a culprit.
        assert_eq!(t.in_window(Time(100), Time(140), 42, 0), []);
    }

    #[test]
    fn a_switch_out_of_idle_that_was_not_recorded_is_inferred() {
        // idle from 0; hog woken at 100 (no switch recorded), runs, leaves at 400.
        let evs = [
            ev(0, 7, switch(("x", 7, 120), ("swapper/1", 0, 120))),
            ev(100, 0, crate::explain::testing::wakeup(42, 4)),
            ev(250, 42, K::SoftirqEntry { vec: 7 }),
            ev(260, 42, K::SoftirqExit { vec: 7 }),
            ev(400, 42, switch(("hog", 42, 4), ("me", 77, 9))),
        ];
        let t = Timeline::build(&evs, Time(1000));
        let hog = Culprit::Task(task("hog", 42, 4));
        assert_eq!(t.current(Time(50)), Some(&Culprit::Idle));
        assert_eq!(t.current(Time(150)), Some(&hog));
        assert_eq!(t.in_window(Time(0), Time(400), 77, 0)[0], (hog, Nanos(300)));
    }

    /// Woken while its CPU was throttled (idle, the switch out of idle not
    /// recorded), the hog runs when the RT period timer ends the stretch,
    /// not from its wake-up: the idle task held the CPU until that timer.
    #[test]
    fn a_switch_out_of_idle_not_recorded_is_after_idles_last_event() {
        let evs = [
            ev(0, 7, switch(("x", 7, 120), ("swapper/1", 0, 120))),
            ev(100, 0, crate::explain::testing::wakeup(42, 4)),
            ev(5_000, 0, K::HrtimerExpireEntry { hrtimer: 1, now: Time(5_000), function: 2 }),
            ev(5_010, 0, K::HrtimerExpireExit { hrtimer: 1 }),
            ev(6_000, 42, switch(("hog", 42, 4), ("me", 77, 9))),
        ];
        let t = Timeline::build(&evs, Time(10_000));
        let hog = Culprit::Task(task("hog", 42, 4));
        assert_eq!(t.current(Time(4_000)), Some(&Culprit::Idle));
        assert_eq!(t.current(Time(5_500)), Some(&hog));
        assert_eq!(t.in_window(Time(0), Time(6_000), 77, 0)[0].0, Culprit::Idle);
        assert!(t.in_window(Time(0), Time(6_000), 77, 0).contains(&(hog, Nanos(990))));
    }

    /// A stack recorded right after a timer's expiry (an NMI may come in
    /// between) is that expiry's, and the spike of the wake-up it caused
    /// carries it; a stack after anything else belongs to no expiry.
    #[test]
    fn a_stack_after_an_expiry_is_the_spikes() {
        use crate::explain::testing::{cycle, ME};
        use crate::explain::{Analysis, CpuTrace, Recorded};
        let stack = |f: &[u64]| K::KernelStack { frames: f.into() };
        let mut evs = cycle(0, 10_000, 30_000, 31_000, 40_000);
        // The expiry is the third event: its stack follows, after an NMI.
        evs.insert(3, ev(30_050, 0, K::Nmi { delta_ns: 20, handled: 1 }));
        evs.insert(4, ev(30_100, 0, stack(&[0xffff_1000, 0xffff_2000])));
        // A stack not after an expiry, and an expiry without one.
        evs.insert(0, ev(-10, 0, stack(&[0xdead])));
        evs.extend(cycle(50_000, 60_000, 61_000, 61_500, 62_000));
        let t = Timeline::build(&evs, Time(100_000));
        assert_eq!(t.stacks.len(), 1);
        assert_eq!(t.stack_at(Time(30_000), 0xa0).as_deref(), Some(&[0xffff_1000, 0xffff_2000][..]));
        assert_eq!(t.stack_at(Time(30_000), 0xa1), None, "another timer's");
        assert_eq!(t.stack_at(Time(61_000), 0xa0), None);
        let w = [
            Recorded { tid: ME, cycle: 1, planned: Time(10_000), actual: Time(41_000) },
            Recorded { tid: ME, cycle: 2, planned: Time(60_000), actual: Time(63_000) },
        ];
        let a = Analysis::new(&[CpuTrace { cpu: 1, events: &evs }], &w);
        let first = a.spike(&w, 0, &[]).expect("matched");
        assert_eq!(first.stack.as_deref(), Some(&[0xffff_1000, 0xffff_2000][..]));
        assert_eq!(a.spike(&w, 1, &[]).expect("matched").stack, None);
    }
}

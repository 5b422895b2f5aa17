//! Each gap of a spinner explained by its CPU's trace events.
//!
//! The events of one CPU, in order, open and close contexts: IRQ handlers,
//! vectors and softirqs nest on a stack; a switch away from the spinner
//! opens a task (another thread, or RT throttling) that lasts until the
//! spinner is switched back in. Each context, once closed, is an
//! [`Instance`] whose **net** time excludes what nested in it (an IRQ inside
//! a softirq is the IRQ's time only; a thread's time excludes its IRQs), as
//! the kernel's osnoise tracer counts it. An NMI event carries its duration.
//!
//! Every instance lies inside one gap of the spinner (it ran while the
//! spinner did not): the gap's sources are the instances within it. A gap
//! with none is the hardware's or the host's; the rest of a gap that had
//! some is the kernel's entry and exit around them (and the host's share).
//!
//! Memory is bounded: instances wait only until the gap that holds them is
//! known, and gaps until the trace is read past their end.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::senders::SentBy;
use super::source::{Source, Tally, Vector, MAX_THREADS};
use super::switch_stacks::KeptStacks;
use super::tick::TickTally;
use crate::cfs::{CfsRun, FAIR_PRIO};
use crate::explain::{Cgroups, Task};
use crate::ktrace::{Event, EventKind, IdleWatch, Sender, Switch};
use crate::time::{Nanos, Time};

/// Instances or gaps waiting beyond this many are dropped (and counted).
const MAX_PENDING: usize = 1 << 16;
/// The largest gaps kept with their sources, per CPU.
pub const WORST_KEPT: usize = 5;

/// One gap of a spinner: two consecutive clock reads further apart than the threshold.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// The read before.
    pub start: Time,
    /// The read after.
    pub end: Time,
}

impl Gap {
    /// Its length.
    pub fn len(&self) -> Nanos {
        self.end - self.start
    }
}

/// A context that ran on the CPU, closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// What it was.
    pub source: Source,
    /// When it began.
    pub start: Time,
    /// Its time, less what nested in it.
    pub net: Nanos,
    /// The time of what nested in it (interrupts inside a thread's run).
    pub nested: Nanos,
    /// Who sent it, for an IPI whose send was traced.
    pub from: Option<Sender>,
    /// A thread's kernel stack when it gave the CPU back to the spinner,
    /// when recorded ([`switch_stacks`](super::switch_stacks)).
    pub stack: Option<Arc<[u64]>>,
}

/// A gap with its sources (the largest ones of a run are kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GapRecord {
    /// The gap.
    pub gap: Gap,
    /// Its sources with their time in it, most first.
    pub sources: Vec<(Source, Nanos)>,
}

/// An open context: what, since when, and the time nested in it so far.
#[derive(Clone, Debug)]
struct Open {
    source: Source,
    start: Time,
    nested: Nanos,
    from: Option<Sender>,
}

/// The attribution of one CPU's gaps.
#[derive(Debug, Default)]
pub struct Attributor {
    spinner_pid: i32,
    /// The spinner's kernel priority when real-time (below 100).
    spinner_rt_prio: Option<i32>,
    stack: Vec<Open>,
    task: Option<Open>,
    /// The spinner was left runnable (preempted) when it last left the CPU.
    spinner_runnable: bool,
    instances: VecDeque<Instance>,
    gaps: VecDeque<Gap>,
    /// The spinner's first read: what ran before it is no noise of the run.
    begin: Time,
    /// Per source, its instances inside gaps.
    pub sources: HashMap<Source, Tally>,
    threads_named: usize,
    /// Kernel work between gaps: it delayed the spinner by less than the threshold.
    pub below_threshold: Tally,
    /// Gaps dropped past the memory bound: left unattributed.
    pub dropped_gaps: u64,
    /// Instances (kernel work) dropped past the memory bound: their gaps are attributed without them.
    pub dropped_instances: u64,
    /// The largest gaps, with their sources.
    pub worst: Vec<GapRecord>,
    /// Whether the tick stopped, and what kept it (`timer:tick_stop`).
    pub tick: TickTally,
    /// Since when the followed thread is away (asleep, or on another CPU):
    /// what runs then is none of its noise (`--attach`; never for a spinner).
    away_since: Option<Time>,
    /// The start of a gap still open, not handed over yet (`--attach`).
    holding: Option<Time>,
    /// When set, every gap attributed, in order, until taken (a run's observer drains it each round).
    pub observed: Option<Vec<GapRecord>>,
    /// Where the cgroups of thread sources are read, when they are ([`Attributor::read_cgroups`]).
    reader: Option<&'static Cgroups>,
    /// The cgroup of each thread source not in the root, read as it is first named.
    pub cgroups: HashMap<Source, Arc<str>>,
    /// Who sent each IPI source's IPIs inside gaps, where the trace named them.
    pub senders: HashMap<Source, SentBy>,
    /// The start of the task just ended by a switch back to the spinner: the stack recorded next is its.
    gave_back: Option<Time>,
    /// Per thread source, its stack when its longest run gave the CPU back.
    pub stacks: KeptStacks,
    /// The CFS throttling of the spinner's cgroups, sampled after the
    /// events being attributed were read ([`Attributor::set_cfs`]).
    cfs: Option<CfsRun>,
    /// Switches out of the idle task that were not recorded, inferred.
    pub(super) idle: IdleWatch,
}

impl Attributor {
    /// For the spinner `pid`, of kernel priority `prio` (0–99 real-time, 120 normal).
    pub fn new(pid: i32, prio: i32) -> Attributor {
        Attributor { spinner_pid: pid, spinner_rt_prio: (prio < FAIR_PRIO).then_some(prio), ..Default::default() }
    }

    /// Names the cgroup of each thread source as it is first named, from
    /// `cgroups` (read while the thread lives: the attribution itself reads
    /// nothing of the machine).
    pub fn read_cgroups(&mut self, cgroups: &'static Cgroups) {
        self.reader = Some(cgroups);
    }

    /// A source seen for the first time: a thread counts towards those named,
    /// its cgroup read.
    fn first_seen(&mut self, s: &Source) {
        let Source::Thread { comm, pid, prio } = s else { return };
        self.threads_named += 1;
        let task = Task { comm: comm.to_string(), pid: *pid, prio: *prio };
        if let Some(path) = self.reader.and_then(|r| r.of(&task)) {
            self.cgroups.insert(s.clone(), path);
        }
    }

    /// One event of the CPU, in timestamp order.
    pub fn event(&mut self, e: &Event) {
        self.event_from(e, None)
    }

    /// [`Attributor::event`]; for an IPI's entry, `from` its sender when
    /// the trace names it ([`Senders::sender_of_entry`](crate::ktrace::Senders::sender_of_entry)).
    pub fn event_from(&mut self, e: &Event, from: Option<Sender>) {
        if let Some((at, sw)) = self.idle.missed(e, self.spinner_pid) {
            self.switch(at, &sw);
        }
        let ts = e.ts;
        let gave_back = self.gave_back.take();
        match &e.kind {
            EventKind::IrqHandlerEntry { irq, name } => self.open(Source::Irq { irq: *irq, name: name.clone() }, ts),
            EventKind::IrqHandlerExit { irq, .. } => {
                self.close(ts, |s| matches!(s, Source::Irq { irq: i, .. } if i == irq))
            }
            EventKind::LocalTimerEntry { .. } => self.open(Source::Vector(Vector::LocalTimer), ts),
            EventKind::LocalTimerExit { .. } => self.close(ts, |s| *s == Source::Vector(Vector::LocalTimer)),
            EventKind::IpiEntry { ipi, .. } => self.open_from(Source::Vector(Vector::Ipi(*ipi)), ts, from),
            EventKind::IpiExit { ipi, .. } => self.close(ts, |s| *s == Source::Vector(Vector::Ipi(*ipi))),
            EventKind::SoftirqEntry { vec } => self.open(Source::Softirq(*vec), ts),
            EventKind::SoftirqExit { vec } => self.close(ts, |s| *s == Source::Softirq(*vec)),
            EventKind::Nmi { delta_ns, .. } => self.nmi(ts, Nanos(*delta_ns)),
            EventKind::SchedSwitch(sw) => self.switch(ts, sw),
            EventKind::TickStop { success, dependency } => self.tick.event(*success, *dependency),
            EventKind::KernelStack { frames } => self.stack_of(gave_back, frames),
            _ => {}
        }
    }

    fn open(&mut self, source: Source, start: Time) {
        self.open_from(source, start, None)
    }

    fn open_from(&mut self, source: Source, start: Time, from: Option<Sender>) {
        if self.stack.len() < 16 {
            self.stack.push(Open { source, start, nested: Nanos::ZERO, from });
        }
    }

    /// Closes the innermost open context `is` matches (those above it
    /// never closed: their exits were lost) and charges it to its parent.
    fn close(&mut self, ts: Time, is: impl Fn(&Source) -> bool) {
        let Some(i) = self.stack.iter().rposition(|o| is(&o.source)) else { return };
        self.stack.truncate(i + 1);
        let Some(o) = self.stack.pop() else { return };
        let dur = ts - o.start;
        self.emit(Instance {
            source: o.source,
            start: o.start,
            net: dur - o.nested,
            nested: o.nested,
            from: o.from,
            stack: None,
        });
        self.charge_parent(dur);
    }

    /// `dur` ran nested in whatever is open: the parent's net time loses it.
    fn charge_parent(&mut self, dur: Nanos) {
        if let Some(p) = self.stack.last_mut().or(self.task.as_mut()) {
            p.nested = p.nested + dur;
        }
    }

    fn nmi(&mut self, end: Time, dur: Nanos) {
        let dur = dur.max(Nanos::ZERO);
        self.emit(Instance {
            source: Source::Nmi,
            start: end - dur,
            net: dur,
            nested: Nanos::ZERO,
            from: None,
            stack: None,
        });
        self.charge_parent(dur);
    }

    /// A switch: away from the spinner opens a task, back to it closes it.
    /// A real-time spinner left runnable while a task of lower priority
    /// (or idle) runs is RT throttling (or, on kernels with the fair
    /// server, the server's reservation for normal tasks), whoever runs.
    fn switch(&mut self, ts: Time, sw: &Switch) {
        self.idle.switched(ts, sw);
        let next = Source::Thread { comm: sw.next_comm, pid: sw.next_pid, prio: sw.next_prio };
        let below_spinner = self.spinner_rt_prio.is_some_and(|p| sw.next_prio > p);
        if sw.prev_pid == self.spinner_pid {
            // Nothing of the spinner's interrupts outlives the switch.
            self.stack.clear();
            self.spinner_runnable = sw.prev_state & 0xff == 0;
            let source = if self.spinner_runnable && below_spinner { Source::RtThrottling } else { next };
            self.task = Some(Open { source, start: ts, nested: Nanos::ZERO, from: None });
        } else if sw.next_pid == self.spinner_pid {
            self.gave_back = self.task.as_ref().filter(|t| t.source.pid() == Some(sw.prev_pid)).map(|t| t.start);
            self.end_task(ts);
        } else if let Some(task) = &self.task {
            // One throttled stretch is one occurrence, whoever runs in it;
            // a task above the spinner that runs after it is itself.
            let source = if self.spinner_runnable && below_spinner { Source::RtThrottling } else { next };
            if !(source == Source::RtThrottling && task.source == Source::RtThrottling) {
                self.end_task(ts);
                self.task = Some(Open { source, start: ts, nested: Nanos::ZERO, from: None });
            }
        }
    }

    fn end_task(&mut self, ts: Time) {
        self.stack.clear();
        if let Some(t) = self.task.take() {
            // (Nested time can pass the span's when a switch out of idle was inferred: IdleWatch.)
            let net = (ts - t.start - t.nested).max(Nanos::ZERO);
            let other_runnable = self.spinner_rt_prio.is_none() && self.spinner_runnable;
            let source = super::cfs::source_of(self.cfs.as_ref(), t.source, (t.start, ts), net, other_runnable);
            self.emit(Instance { source, start: t.start, net, nested: t.nested, from: None, stack: None });
        }
    }

    /// The CFS samples of the spinner's cgroups, taken after the events
    /// this round attributes were read (so each task's end has a sample
    /// after it): [`super::cfs`].
    pub fn set_cfs(&mut self, run: &CfsRun) {
        self.cfs = Some(run.clone());
    }

    /// A stack recorded right after the switch back to the spinner that
    /// ended a task begun at `started`: that task's, where it gave the CPU back.
    fn stack_of(&mut self, started: Option<Time>, frames: &Arc<[u64]>) {
        if let Some(i) = self.instances.back_mut().filter(|i| started == Some(i.start)) {
            i.stack = Some(Arc::clone(frames));
        }
    }

    /// The spinner's first read: instances before it are not counted.
    pub fn begin(&mut self, t: Time) {
        self.begin = t;
    }

    /// The spinner read its clock at `t`: a switch to it out of idle the trace lacks came before.
    pub fn spinner_read(&mut self, t: Time) {
        if let Some((at, sw)) = self.idle.back_to(self.spinner_pid, t) {
            self.switch(at, &sw);
        }
    }

    /// Whether an interrupt context (IRQ, vector, softirq) is open.
    pub fn in_context(&self) -> bool {
        !self.stack.is_empty()
    }

    /// The followed thread is away from this CPU from `ts` (asleep, or on another CPU), or back
    /// (`None`): what runs while it is away is not its noise. A task open here ends when it leaves.
    pub fn away(&mut self, ts: Option<Time>) {
        match ts {
            None => self.away_since = None,
            // What ran until then stays (its time was taken from the thread); what began then is dropped.
            Some(t) if self.away_since.is_none() => {
                self.away_since = Some(t);
                self.end_task(t);
            }
            Some(_) => {}
        }
    }

    /// A gap opened at `from` and not handed over yet: what starts after it waits for it (not below the threshold).
    pub fn hold(&mut self, from: Option<Time>) {
        self.holding = from;
    }

    fn emit(&mut self, i: Instance) {
        if i.start < self.begin || self.away_since.is_some_and(|a| i.start >= a) {
            return;
        }
        if self.instances.len() >= MAX_PENDING {
            self.instances.pop_front();
            self.dropped_instances += 1;
        }
        self.instances.push_back(i);
    }

    /// A gap of the spinner, in order.
    pub fn gap(&mut self, g: Gap) {
        if self.gaps.len() >= MAX_PENDING {
            self.gaps.pop_front();
            self.dropped_gaps += 1;
        }
        self.gaps.push_back(g);
    }

    /// Attributes every gap ending by `known`: the trace has been read up
    /// to it and the spinner has handed over every gap ending before it.
    /// Instances starting before it and in no gap were below the threshold.
    pub fn settle(&mut self, known: Time) {
        let mut ready: Vec<Instance> = Vec::new();
        let mut later = VecDeque::new();
        for i in self.instances.drain(..) {
            if i.start < known {
                ready.push(i);
            } else {
                later.push_back(i);
            }
        }
        self.instances = later;
        ready.sort_by_key(|i| i.start);
        let mut ready = ready.into_iter().peekable();
        while let Some(g) = self.gaps.front().copied().filter(|g| g.end <= known) {
            self.gaps.pop_front();
            while let Some(i) = ready.next_if(|i| i.start < g.start) {
                self.below_threshold.add(i.net);
            }
            let inside: Vec<Instance> = std::iter::from_fn(|| ready.next_if(|i| i.start < g.end)).collect();
            self.attribute(g, inside);
        }
        // Before `known` and in no gap ending by then: below the threshold,
        // unless a gap still open (ending later) holds them.
        let open_from = self.gaps.front().map_or(known, |g| g.start).min(self.holding.unwrap_or(known));
        for i in ready {
            if i.start < open_from {
                self.below_threshold.add(i.net);
            } else {
                self.instances.push_front(i);
            }
        }
    }

    /// One gap's sources: its instances, merged by source; none at all is
    /// the hardware or the host; the rest of the gap is around the events.
    fn attribute(&mut self, g: Gap, inside: Vec<Instance>) {
        let mut parts: Vec<(Source, Nanos)> = Vec::new();
        for mut i in inside {
            if matches!(i.source, Source::Thread { .. })
                && !self.sources.contains_key(&i.source)
                && self.threads_named >= MAX_THREADS
            {
                i.source = Source::OtherThreads;
            }
            if !self.sources.contains_key(&i.source) {
                self.first_seen(&i.source);
            }
            self.sources.entry(i.source.clone()).or_default().add_nested(i.net, i.nested);
            if let Some(from) = &i.from {
                self.senders.entry(i.source.clone()).or_default().add(from);
            }
            if let Some(stack) = &i.stack {
                self.stacks.offer(&i.source, i.net, stack);
            }
            match parts.iter_mut().find(|(s, _)| *s == i.source) {
                Some((_, d)) => *d = *d + i.net,
                None => parts.push((i.source, i.net)),
            }
        }
        let named = parts.iter().fold(Nanos::ZERO, |a, (_, d)| a + *d);
        let rest = if parts.is_empty() { g.len() } else { g.len() - named };
        if rest > Nanos::ZERO {
            let source = if parts.is_empty() { Source::HardwareOrHost } else { Source::AroundEvents };
            self.sources.entry(source.clone()).or_default().add(rest);
            parts.push((source, rest));
        }
        if let Some(out) = self.observed.as_mut() {
            let mut sources = parts.clone();
            sources.sort_by_key(|s| std::cmp::Reverse(s.1));
            out.push(GapRecord { gap: g, sources });
        }
        self.keep_worst(g, parts);
    }

    fn keep_worst(&mut self, gap: Gap, mut sources: Vec<(Source, Nanos)>) {
        if self.worst.len() == WORST_KEPT && self.worst.last().is_some_and(|w| w.gap.len() >= gap.len()) {
            return;
        }
        sources.sort_by_key(|s| std::cmp::Reverse(s.1));
        self.worst.push(GapRecord { gap, sources });
        self.worst.sort_by_key(|w| std::cmp::Reverse(w.gap.len()));
        self.worst.truncate(WORST_KEPT);
    }

    /// Gaps not attributed yet.
    pub fn pending_gaps(&self) -> usize {
        self.gaps.len()
    }

    /// The sources, most time first.
    pub fn ranked(&self) -> Vec<(Source, Tally)> {
        let mut v: Vec<(Source, Tally)> = self.sources.iter().map(|(s, t)| (s.clone(), *t)).collect();
        v.sort_by(|a, b| b.1.total.cmp(&a.1.total).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

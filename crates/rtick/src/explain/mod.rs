//! Why was it late: each wake-up's latency split into the kernel's phases,
//! and the culprits of each spike named.
//!
//! The input is the kernel's own record of what happened on the measured
//! CPUs (trace events on the `mono` trace clock, so on the deadlines'
//! CLOCK_MONOTONIC) and the wake-ups the measuring threads recorded. The
//! analysis is pure: tests feed it exact event sequences.
//!
//! A spike is classified by its largest phase, the way rtla's timerlat
//! auto-analysis reads a trace, but for any mechanism woken by an hrtimer:
//!
//! - *IRQ delay*: the timer interrupt came late. CPU idle at the deadline →
//!   an idle-state exit, or in a virtual machine the host not running the
//!   vCPU (the CPU's steal time over the same interval tells which); a task
//!   running → interrupts were disabled in it (or the host held the vCPU);
//!   interrupt work in the window → that handler.
//! - *wake-up path*: other hrtimer callbacks, or the signal delivery of a
//!   signal-based mechanism.
//! - *scheduling delay*: the thread was runnable while another ran: a task of
//!   higher priority preempted it, one of the same or lower priority held the
//!   CPU, an IRQ/softirq ran, or the CPU idled while the thread waited (RT
//!   throttling).
//! - *return to user*: interrupt work before the thread read its clock.

pub mod ab;
mod alternate;
mod cause;
mod cfs;
mod cgroups;
mod idle;
pub mod input;
pub mod live;
mod off_cpu;
mod phases;
mod run;
mod summary;
#[cfg(test)]
mod testing;
mod timeline;
mod tracing;
mod watch;
mod window;

use std::collections::HashMap;

pub use alternate::{AbOutcome, Alternating};
pub use cause::Cause;
pub use cgroups::Cgroups;
pub use idle::{CState, CStates};
pub use input::{CpuTrace, Recorded, Task};
pub use live::{Live, Recent, Unexplained};
pub use off_cpu::OffCpu;
pub use phases::{match_all, match_all_every, Matched, Phases, Unmatched};
pub use run::{explain_run, explain_run_where, not_timer_woken, Explained, SpikeChoice};
pub use summary::{cause_summary, BoundedNames, CauseTotal};
pub use timeline::{Culprit, Span, Timeline, WorkSpan};
pub use tracing::{ExplainedRun, TraceBuffers, Tracing};
pub use watch::{Drained, NoBreakdown, SpikeWatcher, WatchedSpike};
pub use window::{WindowMax, WINDOW_SECS};

use crate::time::{Nanos, Time};

/// One spike explained.
#[derive(Clone, Debug)]
pub struct Spike {
    /// The wake-up.
    pub wake: Recorded,
    /// Its events.
    pub matched: Matched,
    /// Its phases.
    pub phases: Phases,
    /// What else ran on its CPU in each phase (longest first).
    pub culprits: [Vec<(Culprit, Nanos)>; 4],
    /// The verdict.
    pub cause: Cause,
    /// The work function the culprit task ran in the spike (a kworker's work item).
    pub work: Option<u64>,
    /// The cgroup of the task blamed, unless the root ([`Spike::find_cgroup`]).
    pub cgroup: Option<std::sync::Arc<str>>,
    /// The kernel stack where the wake-up was due: taken in the timer
    /// interrupt, innermost first, through the context it interrupted
    /// ([`stack`](crate::ktrace::stack)). `None` when none was recorded.
    pub stack: Option<std::sync::Arc<[u64]>>,
}

impl Spike {
    /// One line: `cycle 18  817 µs = IRQ delay 800 µs: CPU idle … | scheduling 12 µs: ksoftirqd/1 10 µs`.
    pub fn line(&self) -> String {
        self.line_as(&format!("cycle {}", self.wake.cycle))
    }

    /// [`Spike::line`] with `label` in place of `cycle N` (`rtick attach`
    /// names a wait by the time it asked for).
    pub fn line_as(&self, label: &str) -> String {
        let labels = Phases::DISPLAY_NAMES;
        let (big, _) = self.largest();
        let mut s = format!(
            "{label}  {} = {} {}: {}",
            self.wake.actual - self.wake.planned,
            labels[big],
            self.phases.named()[big].1,
            self.blame()
        );
        for (i, (_, d)) in self.phases.named().iter().enumerate() {
            if i == big || *d < Nanos::from_us(5) {
                continue;
            }
            s.push_str(&format!(" | {} {d}", labels[i]));
            if let Some((c, t)) = self.culprits[i].iter().find(|(c, _)| *c != Culprit::Idle) {
                s.push_str(&format!(": {c} {t}"));
            }
        }
        s
    }

    /// Its cause in words, with the work function its culprit ran and its
    /// cgroup right after the culprit's name.
    pub fn blame(&self) -> String {
        let mut after = String::new();
        if let Some(f) = self.work {
            after.push_str(&format!(" running {}", crate::ktrace::kallsyms::describe(f)));
        }
        if let Some(c) = &self.cgroup {
            after.push_str(&format!(" in {c}"));
        }
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = self.cause.describe(&mut s, &after);
        s
    }

    /// Names the cgroup of the task blamed, from `cgroups` (read while the
    /// task lives: the analysis itself reads nothing of the machine).
    pub fn find_cgroup(&mut self, cgroups: &Cgroups) {
        if let Some(Culprit::Task(t)) = self.cause.culprit() {
            self.cgroup = cgroups.of(&t);
        }
    }

    /// The name of its largest phase ([`Phases::NAMES`]).
    pub fn largest_phase(&self) -> &'static str {
        Phases::NAMES[self.largest().0]
    }

    fn largest(&self) -> (usize, Nanos) {
        let named = self.phases.named();
        (0..4).map(|i| (i, named[i].1)).max_by_key(|&(_, d)| d).unwrap_or((0, Nanos::ZERO))
    }
}

/// Cumulative steal time of one CPU, sampled (from `/proc/stat`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StealSample {
    /// When sampled (CLOCK_MONOTONIC).
    pub at: Time,
    /// The CPU.
    pub cpu: u32,
    /// Steal time so far.
    pub steal: Nanos,
}

impl StealSample {
    /// The steal time of `cpus` now, from one read of `/proc/stat` (none
    /// when it cannot be read: the analysis then cannot tell the host from
    /// an idle state, and says so).
    pub fn sample(cpus: &[usize]) -> Vec<StealSample> {
        let at = crate::clock::ClockId::Monotonic.now();
        let times = crate::system::cpustat::read().unwrap_or_default();
        let mine = times.into_iter().filter(|c| cpus.contains(&(c.cpu as usize)));
        mine.map(|c| StealSample { at, cpu: c.cpu, steal: c.steal }).collect()
    }
}

/// Steal time of `cpu` between the samples around `[from, to]`, if sampled.
/// `/proc/stat` counts it in USER_HZ ticks and the CLI samples it ten times
/// a second, so this says whether the host took time from the vCPU around
/// the spike, not exactly how much during it.
fn steal_over(samples: &[StealSample], cpu: u32, from: Time, to: Time) -> Option<Nanos> {
    let mine: Vec<&StealSample> = samples.iter().filter(|s| s.cpu == cpu).collect();
    let before = mine.iter().rev().find(|s| s.at <= from)?;
    let after = mine.iter().find(|s| s.at >= to)?;
    Some(after.steal - before.steal)
}

/// The analysis of one run's events.
#[derive(Debug)]
pub struct Analysis {
    timelines: HashMap<u32, Timeline>,
    matched: Vec<Result<Matched, Unmatched>>,
}

impl Analysis {
    /// Matches `wakes` to the events of `cpus` and builds each CPU's timeline.
    pub fn new(cpus: &[CpuTrace<'_>], wakes: &[Recorded]) -> Analysis {
        Analysis::every(cpus, wakes, None)
    }

    /// [`Analysis::new`] for a loop of `period`, when the caller knows it
    /// (with few wake-ups it cannot be read from their deadlines).
    pub fn every(cpus: &[CpuTrace<'_>], wakes: &[Recorded], period: Option<Nanos>) -> Analysis {
        let mut senders = crate::ktrace::Senders::new(true);
        cpus.iter().for_each(|c| c.events.iter().for_each(|e| senders.event(c.cpu as usize, e)));
        Analysis::with_senders(cpus, wakes, period, &senders)
    }

    /// The idle states its timelines read instead of this machine's.
    #[cfg(test)]
    pub(crate) fn with_cstates(mut self, cstates: CStates) -> Analysis {
        self.timelines.values_mut().for_each(|tl| tl.cstates = Some(cstates.clone()));
        self
    }

    /// Each wake-up's match, in the order given to [`Analysis::new`].
    pub fn matched(&self) -> &[Result<Matched, Unmatched>] {
        &self.matched
    }

    /// Explains wake-up `i` (of those given to [`Analysis::new`]), if it was matched.
    pub fn spike(&self, wakes: &[Recorded], i: usize, steal: &[StealSample]) -> Option<Spike> {
        let (w, m) = (wakes[i], self.matched[i].ok()?);
        Some(Spike::explain(w, m, self.timelines.get(&m.cpu)?, steal))
    }
}

impl Spike {
    /// Explains wake-up `w`, matched to the events `m`, from the timeline
    /// `tl` of the CPU it was switched in on (which must cover `w.planned`
    /// to `w.actual`): the one place a spike's cause is decided, for
    /// `measure --explain` ([`Analysis::spike`]), the monitor and `rtick
    /// attach` ([`Recent`]).
    pub fn explain(w: Recorded, m: Matched, tl: &Timeline, steal: &[StealSample]) -> Spike {
        let phases = m.phases(&w);
        let bounds = [w.planned, m.expired, m.waking, m.switched_in, w.actual];
        let culprits: [Vec<(Culprit, Nanos)>; 4] =
            std::array::from_fn(|k| tl.in_window(bounds[k], bounds[k + 1].max(bounds[k]), w.tid, m.hrtimer));
        let mut spike = Spike {
            wake: w,
            matched: m,
            phases,
            culprits,
            cause: Cause::KernelPath(""),
            work: None,
            cgroup: None,
            stack: None,
        };
        spike.stack = tl.stack_at(m.expired, m.hrtimer);
        spike.cause = spike.cause_of(tl, steal);
        if let Some(Culprit::Task(t)) = spike.cause.culprit() {
            spike.work = tl.work_in(t.pid, w.planned, w.actual);
        }
        spike
    }

    /// Whether the stack taken at its timer's expiry shows the interrupt
    /// came in user space (false without a stack, or frames unnamed).
    fn came_in_user_space(&self) -> bool {
        use crate::ktrace::stack;
        self.stack.as_deref().is_some_and(|f| stack::came_in_user_space(&stack::named(f)))
    }

    /// The timer interrupt came late while task `t` ran: steal counted
    /// around it, or taken in user space (interrupts on there), is the
    /// host; else interrupts were off in it (or a host stall below steal).
    fn late_while(&self, t: &Task, steal: &[StealSample]) -> Cause {
        let (w, m) = (self.wake, self.matched);
        match steal_over(steal, m.cpu, w.planned, m.expired).filter(|s| *s > Nanos::ZERO) {
            Some(s) => Cause::HostWhile { task: t.clone(), steal: s },
            None if self.came_in_user_space() => Cause::HostInUser(t.clone()),
            None => Cause::IrqsOffIn(t.clone()),
        }
    }

    /// Of an IRQ delay, the part beyond the timer's slack (the kernel may
    /// fire that much late on purpose; the idle state and the host answer
    /// only for the rest).
    fn beyond_slack(&self, tl: &Timeline, delay: Nanos) -> Nanos {
        let slack = tl.armed(self.matched.hrtimer, self.matched.expired).map_or(Nanos::ZERO, |a| a.1);
        (delay - slack).max(Nanos::ZERO)
    }

    /// The IRQ delay of a thread `me` that was itself on its CPU at its
    /// deadline (late, not asleep yet): another task that held the CPU for
    /// half the delay or more kept it from asking in time; the CPU idle
    /// that long (it slept), the idle verdict; its timer armed after the
    /// deadline for half the delay or more, it asked late; else the
    /// interrupt came late while it ran.
    fn own_delay(&self, me: &Task, tl: &Timeline, steal: &[StealSample]) -> Cause {
        let (w, m) = (self.wake, self.matched);
        let delay = m.expired - w.planned;
        let other = self.culprits[0].iter().find(|(c, _)| matches!(c, Culprit::Task(_) | Culprit::Idle));
        match other {
            Some((Culprit::Idle, d)) if *d * 2 >= delay => {
                let late = self.beyond_slack(tl, delay);
                idle_verdict(tl, m.cpu, m.expired, late, steal_over(steal, m.cpu, w.planned, m.expired))
            }
            Some((c, d)) if *d * 2 >= delay => ran_instead(c.clone(), m.prio),
            _ if tl.armed(m.hrtimer, m.expired).is_some_and(|(at, _)| (at - w.planned) * 2 >= delay) => {
                Cause::KernelPath(ASKED_LATE)
            }
            _ => self.late_while(me, steal),
        }
    }

    /// The verdict on the spike, by its largest phase.
    fn cause_of(&self, tl: &Timeline, steal: &[StealSample]) -> Cause {
        let (w, m) = (self.wake, self.matched);
        let (big, _) = self.largest();
        let top = |k: usize| self.culprits[k].iter().find(|(c, _)| *c != Culprit::Idle).map(|(c, _)| c.clone());
        // Interrupt work is the cause where it took half the phase or more
        // (it runs inside a task's or the idle task's time): 46 µs of an
        // hrtimer callback in 620 µs of idle is an idle CPU whose interrupt
        // came late, not the callback's doing.
        let named = self.phases.named();
        let interrupt = |k: usize| {
            let (c, t) = self.culprits[k].iter().find(|(c, _)| !matches!(c, Culprit::Idle | Culprit::Task(_)))?;
            (*t * 2 >= named[k].1).then(|| c.clone())
        };
        match big {
            0 => match (interrupt(0), tl.current(w.planned)) {
                (Some(c), _) => Cause::InterruptWork(c),
                (None, Some(Culprit::Task(t))) if t.pid == w.tid => self.own_delay(t, tl, steal),
                (None, Some(Culprit::Task(t))) => self.late_while(t, steal),
                _ => {
                    let late = self.beyond_slack(tl, named[0].1);
                    idle_verdict(tl, m.cpu, w.planned, late, steal_over(steal, m.cpu, w.planned, m.expired))
                }
            },
            1 => interrupt(1).map_or(Cause::KernelPath("signal delivery / wake-up path"), Cause::InterruptWork),
            2 => match top(2) {
                Some(c) => ran_instead(c, m.prio),
                None => match self.culprits[2].iter().find(|(c, _)| *c == Culprit::Idle) {
                    Some((_, idle)) if rt_throttled(m.prio, *idle) => Cause::Throttled,
                    Some(_) => {
                        idle_verdict(tl, m.cpu, m.waking, named[2].1, steal_over(steal, m.cpu, m.waking, m.switched_in))
                    }
                    None => Cause::KernelPath("the scheduler's path"),
                },
            },
            // A task here preempted the thread after it was switched in
            // (the switch back in is not its wake-up).
            _ => top(3).map_or(Cause::KernelPath("the return to user space"), |c| ran_instead(c, m.prio)),
        }
    }
}

/// The verdict when the thread armed its timer after its deadline.
const ASKED_LATE: &str = "its timer armed after its deadline: the thread was late to ask";

/// The CPU was idle at `at` and the wake-up `delay` late there: steal
/// counted is the host; else the idle state (`power:cpu_idle`) says
/// whether its exit explains the delay or something outside Linux held
/// the CPU.
fn idle_verdict(tl: &Timeline, cpu: u32, at: Time, delay: Nanos, steal: Option<Nanos>) -> Cause {
    let cstates = tl.cstates.as_ref().unwrap_or_else(|| CStates::system());
    let no_steal = steal.is_none_or(|s| s == Nanos::ZERO);
    match tl.idle_state(at).map(|i| cstates.state(cpu, i)) {
        Some(c) if no_steal && delay > c.explains() => Cause::HostIdle(c),
        // No state named: whichever it was in, the deepest bounds its exit.
        None if no_steal && delay > cstates.deepest(cpu).explains() => Cause::HostIdleAnyState(cstates.deepest(cpu)),
        state => Cause::IdleExit { steal, state },
    }
}

/// Whether a real-time thread of kernel priority `prio`, kept runnable
/// for `held` while its CPU idled (or a task of lower priority ran), was
/// RT throttled: throttling holds the CPU for tens of ms; a stretch under
/// a millisecond is the CPU waking from an idle state, a wake-up's latency.
/// The one rule of a spike's explanation and an overrun's split.
pub fn rt_throttled(prio: i32, held: Nanos) -> bool {
    prio < crate::cfs::FAIR_PRIO && held >= Nanos::from_ms(1)
}

/// The cause when `c` ran while the thread (kernel priority `prio`) was
/// runnable: a task of higher priority preempted it, another held it up;
/// or interrupt work.
fn ran_instead(c: Culprit, prio: i32) -> Cause {
    match c {
        Culprit::Task(t) if t.prio < prio => Cause::PreemptedBy(t),
        Culprit::Task(t) => Cause::WaitedFor(t),
        c => Cause::InterruptWork(c),
    }
}

/// p50, p99 and max of each phase over the matched wake-ups.
pub fn phase_summary(phases: &[Phases]) -> [(&'static str, [Nanos; 3]); 4] {
    std::array::from_fn(|k| {
        let l = ab::Latencies::of(phases.iter().map(|p| p.named()[k].1.as_ns()).collect());
        (Phases::NAMES[k], [l.p50, l.p99, l.max])
    })
}

#[cfg(test)]
mod tests;

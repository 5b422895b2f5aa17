//! What a spike is blamed on, in words and as a metric's token.

use super::{CState, Culprit, Task};
use crate::time::Nanos;

/// What a late timer interrupt may also be: a host stall below steal's
/// resolution.
const HOST_HEDGE: &str = " (or a host stall below steal's 10 ms ticks)";

/// What a spike is blamed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The timer interrupt came late while the CPU was idle: leaving a deep
    /// idle state, or (`host`) the hypervisor not running the vCPU, as the
    /// steal time shows.
    IdleExit {
        /// Steal time over the spike's interval, when known.
        steal: Option<Nanos>,
        /// The idle state the CPU was in (`power:cpu_idle`), when known.
        state: Option<CState>,
    },
    /// The timer interrupt came late while the CPU was idle in a state
    /// whose exit latency is far below the delay ([`CState::explains`]):
    /// the host (or firmware) held the CPU.
    HostIdle(CState),
    /// The timer interrupt came late while the CPU was idle in no state the
    /// trace names (this VM's non-boot CPUs record no `power:cpu_idle`; or
    /// it had left its state), yet far beyond the exit latency of the
    /// deepest state it has, this one: whichever it was in, the host (or
    /// firmware) held the CPU.
    HostIdleAnyState(CState),
    /// The timer interrupt came late while this task ran: interrupts were
    /// off in it (or the host held the vCPU below steal's resolution).
    IrqsOffIn(Task),
    /// The timer interrupt came late while this task ran, and came in user
    /// space (its stack says so): interrupts were on there, so nothing in
    /// the guest held it off: the host held the vCPU.
    HostInUser(Task),
    /// The timer interrupt came late while this task ran, and the host took
    /// steal time from the vCPU around it: the host held the vCPU.
    HostWhile {
        /// The task that was running.
        task: Task,
        /// Steal time around the spike.
        steal: Nanos,
    },
    /// A task of higher priority ran while the thread was runnable.
    PreemptedBy(Task),
    /// A task of the same or lower priority held the CPU (it was running
    /// non-preemptibly, or the thread waited its turn).
    WaitedFor(Task),
    /// Interrupt work: an IRQ handler, a softirq or another hrtimer.
    InterruptWork(Culprit),
    /// The CPU idled while the real-time thread was runnable: RT throttling.
    Throttled,
    /// The SCHED_OTHER thread was runnable while its cgroup (in
    /// [`Spike::cgroup`](super::Spike::cgroup)) was throttled for its CPU quota.
    CfsThrottled,
    /// The largest phase had no other occupant of the CPU to blame (the
    /// kernel's own path: signal delivery, the syscall's return; or the
    /// thread itself, which armed its timer after its deadline).
    KernelPath(&'static str),
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.describe(f, "")
    }
}

impl Cause {
    /// Writes it in words with `after` (what the task ran, its cgroup)
    /// right after the task it names — its `comm:pid`, or with its priority
    /// `comm:pid (prio P…)` — before any hedge or verdict; at the end when
    /// it names no task.
    pub(super) fn describe(&self, f: &mut impl std::fmt::Write, after: &str) -> std::fmt::Result {
        match self {
            Cause::IrqsOffIn(t) => {
                return write!(f, "interrupts off in {}:{}{after}{HOST_HEDGE}", t.comm, t.pid);
            }
            Cause::HostInUser(t) => {
                return write!(
                    f,
                    "the interrupt came in user space in {}:{}{after}, interrupts on → the host held the vCPU",
                    t.comm, t.pid
                );
            }
            Cause::HostWhile { task, steal } => {
                return write!(
                    f,
                    "steal +{steal} around it while {}:{}{after} ran → the host held the vCPU",
                    task.comm, task.pid
                );
            }
            Cause::PreemptedBy(t) => write!(f, "preempted by {}:{} (prio {})", t.comm, t.pid, t.prio)?,
            Cause::WaitedFor(t) => write!(f, "held up by {}:{} (prio {}, not preempted there)", t.comm, t.pid, t.prio)?,
            Cause::IdleExit { steal: Some(s), .. } if *s > Nanos::ZERO => {
                write!(f, "CPU idle, steal +{s} around it → the host held the vCPU")?
            }
            Cause::IdleExit { state: Some(c), .. } => write!(
                f,
                "CPU idle in {c} → idle-state exit (keep the CPU shallower: --deepest-idle-state, --dma-latency)"
            )?,
            Cause::IdleExit { steal: Some(_), .. } => {
                write!(f, "CPU idle, no steal counted → idle-state exit{HOST_HEDGE}")?
            }
            Cause::IdleExit { steal: None, .. } => f.write_str("CPU idle → idle-state exit or the host")?,
            Cause::HostIdle(c) => {
                write!(f, "CPU idle in {c}, far less than the delay → the host (or firmware) held the CPU")?
            }
            Cause::HostIdleAnyState(c) => write!(
                f,
                "CPU idle: even its deepest state, {c}, is far less than the delay → the host (or firmware) held the CPU"
            )?,
            Cause::InterruptWork(c) => write!(f, "{c}")?,
            Cause::Throttled => f.write_str("CPU idle while runnable → RT throttling (kernel.sched_rt_runtime_us)")?,
            Cause::CfsThrottled => f.write_str("runnable while its cgroup was out of CPU quota → CFS throttling")?,
            Cause::KernelPath(p) => f.write_str(p)?,
        }
        f.write_str(after)
    }

    /// The task or the interrupt work it blames, if it names one.
    pub fn culprit(&self) -> Option<Culprit> {
        match self {
            Cause::IrqsOffIn(t)
            | Cause::HostInUser(t)
            | Cause::PreemptedBy(t)
            | Cause::WaitedFor(t)
            | Cause::HostWhile { task: t, .. } => Some(Culprit::Task(t.clone())),
            Cause::InterruptWork(c) => Some(c.clone()),
            Cause::IdleExit { .. }
            | Cause::HostIdle(_)
            | Cause::HostIdleAnyState(_)
            | Cause::Throttled
            | Cause::CfsThrottled
            | Cause::KernelPath(_) => None,
        }
    }

    /// What kind of cause, as a token without the task or handler it
    /// names: a metric's label (`rtick monitor`), of a handful of values.
    pub fn token(&self) -> &'static str {
        match self {
            Cause::IdleExit { steal: Some(s), .. } if *s > Nanos::ZERO => "host",
            Cause::HostWhile { .. } | Cause::HostIdle(_) | Cause::HostIdleAnyState(_) | Cause::HostInUser(_) => "host",
            Cause::IdleExit { .. } => "idle_exit",
            Cause::IrqsOffIn(_) => "irqs_off",
            Cause::PreemptedBy(_) => "preempted",
            Cause::WaitedFor(_) => "held_up",
            Cause::InterruptWork(_) => "interrupt",
            Cause::Throttled => "rt_throttled",
            Cause::CfsThrottled => "cfs_throttled",
            Cause::KernelPath(_) => "kernel_path",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_follows_the_task_comes_right_after_its_name() {
        let t = Task { comm: "hog".into(), pid: 7, prio: 4 };
        let with = |c: Cause| {
            let mut s = String::new();
            c.describe(&mut s, " in /cg").unwrap();
            s
        };
        assert_eq!(with(Cause::PreemptedBy(t.clone())), "preempted by hog:7 (prio 4) in /cg");
        assert_eq!(with(Cause::WaitedFor(t.clone())), "held up by hog:7 (prio 4, not preempted there) in /cg");
        assert_eq!(
            with(Cause::IrqsOffIn(t.clone())),
            "interrupts off in hog:7 in /cg (or a host stall below steal's 10 ms ticks)"
        );
        assert_eq!(
            with(Cause::HostInUser(t.clone())),
            "the interrupt came in user space in hog:7 in /cg, interrupts on → the host held the vCPU"
        );
        let steal = Nanos::from_us(20);
        assert!(with(Cause::HostWhile { task: t, steal }).contains("while hog:7 in /cg ran → the host"));
        // No task named: at the end.
        assert!(with(Cause::CfsThrottled).ends_with("CFS throttling in /cg"));
        assert_eq!(Cause::Throttled.to_string() + " in /cg", with(Cause::Throttled));
    }
}

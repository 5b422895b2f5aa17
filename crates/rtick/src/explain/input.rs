//! What the analysis reads: the kernel's events on the measured CPUs (from
//! the trace, on the `mono` trace clock, so in CLOCK_MONOTONIC ns like the
//! deadlines) and the wake-ups the measuring threads recorded.

use crate::time::Time;

/// A task as the scheduler's events name it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Task {
    /// Its `comm`.
    pub comm: String,
    /// Its pid (thread id); 0 is the idle task.
    pub pid: i32,
    /// The kernel's priority (0–99 real-time, lower is more urgent; 100–139 normal).
    pub prio: i32,
}

impl Task {
    /// The idle task (`swapper/N`).
    pub fn is_idle(&self) -> bool {
        self.pid == 0
    }
}

/// One kernel event the analysis uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelEvent {
    /// `timer:hrtimer_start`: a timer armed (by `pid`, the task current then).
    HrtimerStart {
        /// The `struct hrtimer` address.
        hrtimer: u64,
        /// The earliest expiry the kernel may use.
        softexpires: Time,
    },
    /// `timer:hrtimer_expire_entry`: its callback starts.
    HrtimerExpireEntry {
        /// The `struct hrtimer` address.
        hrtimer: u64,
        /// The callback's address.
        function: u64,
    },
    /// `timer:hrtimer_expire_exit`: its callback returned.
    HrtimerExpireExit {
        /// The `struct hrtimer` address.
        hrtimer: u64,
    },
    /// `irq_vectors:local_timer_entry` (x86): the timer interrupt arrived.
    LocalTimerEntry,
    /// `irq_vectors:local_timer_exit`.
    LocalTimerExit,
    /// `sched:sched_waking`: a wake-up of `pid` begins (in the waker's context).
    Waking {
        /// The task woken.
        pid: i32,
    },
    /// `sched:sched_wakeup`: `pid` is runnable on `target_cpu`.
    Wakeup {
        /// The task woken.
        pid: i32,
        /// Where it will run.
        target_cpu: u32,
    },
    /// `sched:sched_switch`.
    Switch {
        /// The task leaving the CPU.
        prev: Task,
        /// Its state (0: still runnable, i.e. preempted).
        prev_state: i64,
        /// The task taking the CPU.
        next: Task,
    },
    /// `irq:irq_handler_entry`.
    IrqEntry {
        /// The IRQ number.
        irq: i32,
        /// The handler's name.
        name: String,
    },
    /// `irq:irq_handler_exit`.
    IrqExit {
        /// The IRQ number.
        irq: i32,
    },
    /// `irq:softirq_entry`.
    SoftirqEntry {
        /// The softirq vector (0 HI … 9 RCU).
        vec: u32,
    },
    /// `irq:softirq_exit`.
    SoftirqExit {
        /// The softirq vector.
        vec: u32,
    },
}

/// A kernel event with where and when it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamped {
    /// CLOCK_MONOTONIC time (trace clock `mono`).
    pub ts: Time,
    /// The CPU it was recorded on.
    pub cpu: u32,
    /// The task current on that CPU (`common_pid`).
    pub pid: i32,
    /// What happened.
    pub event: KernelEvent,
}

/// One wake-up a measuring thread recorded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The measuring thread's tid.
    pub tid: i32,
    /// The CPU it ran on, when pinned or known.
    pub cpu: Option<u32>,
    /// Grid index.
    pub cycle: u64,
    /// The planned wake-up (the deadline).
    pub planned: Time,
    /// The clock read right after the wait returned.
    pub actual: Time,
}

/// The softirq vectors' names, as `/proc/softirqs` prints them.
pub fn softirq_name(vec: u32) -> &'static str {
    const NAMES: [&str; 10] =
        ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];
    NAMES.get(vec as usize).copied().unwrap_or("?")
}

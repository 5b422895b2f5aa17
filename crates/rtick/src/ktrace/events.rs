//! The kernel trace events the latency analysis reads, typed.
//!
//! [`Tracepoint`] is the one list of them (system, name, and the fields
//! read); [`Decoder`] resolves those fields in the running kernel's format
//! files once, then turns each raw record into an [`Event`] without a name
//! look-up. Strings of variable length (IRQ handler names) are interned, so
//! a million IRQ events hold a handful of names.

use std::fmt;
use std::sync::Arc;

pub use super::comm::Comm;
pub use super::decode::{Decoded, Decoder};
pub use super::ipi_send::{IpiSend, Targets};
pub use super::tick::TickDependency;
pub use super::vectors::Ipi;
use crate::time::Time;

/// A trace event the analysis uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tracepoint {
    /// `timer:hrtimer_start`: a high-resolution timer armed.
    HrtimerStart,
    /// `timer:hrtimer_expire_entry`: its callback starts (in the timer interrupt).
    HrtimerExpireEntry,
    /// `timer:hrtimer_expire_exit`: its callback returned.
    HrtimerExpireExit,
    /// `timer:hrtimer_cancel`: a timer disarmed before it expired.
    HrtimerCancel,
    /// `irq_vectors:local_timer_entry` (x86): the local APIC timer interrupt begins.
    LocalTimerEntry,
    /// `irq_vectors:local_timer_exit` (x86): it ends.
    LocalTimerExit,
    /// `sched:sched_waking`: a wake-up starts (on the waker's CPU).
    SchedWaking,
    /// `sched:sched_wakeup`: the task is runnable.
    SchedWakeup,
    /// `sched:sched_switch`: the CPU switches tasks.
    SchedSwitch,
    /// `irq:irq_handler_entry`: a device interrupt handler starts.
    IrqHandlerEntry,
    /// `irq:irq_handler_exit`: it returned.
    IrqHandlerExit,
    /// `irq:softirq_entry`: a softirq starts.
    SoftirqEntry,
    /// `irq:softirq_exit`: it ends.
    SoftirqExit,
    /// `raw_syscalls:sys_exit`: a system call returns to user space. Not
    /// in [`Tracepoint::ALL`] (every system call of the CPU): only
    /// [`Tracepoint::ATTACH`] enables it, filtered to the attached threads.
    SysExit,
    /// `irq_vectors:reschedule_entry` (x86): a reschedule IPI begins. This
    /// and the other IPIs and `nmi:nmi_handler` are [`Tracepoint::NOISE`]'s only.
    RescheduleEntry,
    /// `irq_vectors:reschedule_exit` (x86): it ends.
    RescheduleExit,
    /// `irq_vectors:call_function_entry` (x86): a call-function IPI (TLB
    /// shootdowns among them) begins.
    CallFunctionEntry,
    /// `irq_vectors:call_function_exit` (x86): it ends.
    CallFunctionExit,
    /// `irq_vectors:call_function_single_entry` (x86): a single-CPU call-function IPI begins.
    CallFunctionSingleEntry,
    /// `irq_vectors:call_function_single_exit` (x86): it ends.
    CallFunctionSingleExit,
    /// `irq_vectors:irq_work_entry` (x86): an irq_work interrupt begins.
    IrqWorkEntry,
    /// `irq_vectors:irq_work_exit` (x86): it ends.
    IrqWorkExit,
    /// `nmi:nmi_handler`: an NMI handler ran (recorded at its end, with its duration).
    NmiHandler,
    /// `timer:tick_stop`: the CPU's tick stopped, or could not (and why).
    TickStop,
    /// `workqueue:workqueue_execute_start`: a kworker starts a work item.
    WorkqueueExecuteStart,
    /// `workqueue:workqueue_execute_end`: it finished it.
    WorkqueueExecuteEnd,
    /// `power:cpu_idle`: the CPU enters an idle state (its cpuidle index), or leaves it.
    CpuIdle,
    /// `ftrace:kernel_stack`: a kernel stack, recorded by the `stacktrace`
    /// trigger rtick sets on [`Tracepoint::HrtimerExpireEntry`] (see
    /// [`stack`](super::stack)); not an event one enables.
    KernelStack,
    /// `ipi:ipi_send_cpu`: an IPI sent to one CPU, on the sender's CPU and in its context.
    IpiSendCpu,
    /// `ipi:ipi_send_cpumask`: an IPI sent to a set of CPUs, likewise.
    IpiSendCpumask,
    /// `csd:csd_queue_cpu`: a function queued for another CPU to run (what a
    /// call-function IPI then runs: `flush_tlb_func` for a TLB shootdown).
    CsdQueueCpu,
}

impl Tracepoint {
    /// Every event a session enables by default, when the kernel has it:
    /// the wake-up's own path, and what else can hold the CPU (interrupts,
    /// IPIs, NMIs, kworkers' work items, idle states), on the measured CPUs.
    pub const ALL: [Tracepoint; 25] = Tracepoint::join(&[
        &[
            Tracepoint::HrtimerStart,
            Tracepoint::HrtimerExpireEntry,
            Tracepoint::HrtimerExpireExit,
            Tracepoint::HrtimerCancel,
            Tracepoint::LocalTimerEntry,
            Tracepoint::LocalTimerExit,
            Tracepoint::SchedWaking,
            Tracepoint::SchedWakeup,
            Tracepoint::SchedSwitch,
            Tracepoint::IrqHandlerEntry,
            Tracepoint::IrqHandlerExit,
            Tracepoint::SoftirqEntry,
            Tracepoint::SoftirqExit,
        ],
        &Tracepoint::VECTORS,
        &[Tracepoint::WorkqueueExecuteStart, Tracepoint::WorkqueueExecuteEnd, Tracepoint::CpuIdle],
    ]);

    /// What `--explain` enables (`measure`, `monitor`): [`Tracepoint::ALL`]
    /// and who sent each IPI ([`Tracepoint::SENDS`]).
    ///
    /// The sends are written on the sender's CPU, in its task's context:
    /// the session records the other CPUs too, and cuts their events in the
    /// kernel to sends aimed at the measured CPUs (`cpu == N`, `cpumask &
    /// CPUS{N}`), every other event to the measured CPUs (`CPU == N`). A
    /// measured CPU records no more events than without the sends, but
    /// those it sends to another measured CPU (counted per CPU in
    /// ktrace's tests: `the_senders_events_are_written_on_the_other_cpus`);
    /// what it pays more is the filter each of its events now passes.
    pub const EXPLAIN: [Tracepoint; 28] = Tracepoint::join(&[&Tracepoint::ALL, &Tracepoint::SENDS]);

    /// What `rtick attach` enables: [`Tracepoint::ALL`] but the local
    /// timer interrupt's edges, and the system calls' exits, where an
    /// attached thread is back in user space. The traced program pays for
    /// each event written on its CPU between its timer's interrupt and its
    /// return to user space (eight a wake-up with the edges); neither attach
    /// nor its spikes' explanation reads those two (the hrtimer callbacks
    /// say what the interrupt did; only `noise` names the interrupt): see
    /// BENCHMARKS.md, "What `rtick attach` costs the program it traces".
    /// And who sent each IPI ([`Tracepoint::SENDS`], written on the
    /// senders' CPUs: see [`Tracepoint::EXPLAIN`]).
    pub const ATTACH: [Tracepoint; 27] = {
        let mut out = [Tracepoint::SysExit; 27];
        let (mut i, mut n) = (0, 0);
        while i < Tracepoint::ALL.len() {
            if !matches!(Tracepoint::ALL[i], Tracepoint::LocalTimerEntry | Tracepoint::LocalTimerExit) {
                out[n] = Tracepoint::ALL[i];
                n += 1;
            }
            i += 1;
        }
        // out[n] stays SysExit.
        i = 0;
        while i < Tracepoint::SENDS.len() {
            out[n + 1 + i] = Tracepoint::SENDS[i];
            i += 1;
        }
        out
    };

    /// `parts` one after the other, in one array of their total length `N`
    /// (a constant that says another length does not compile).
    pub(super) const fn join<const N: usize>(parts: &[&[Tracepoint]]) -> [Tracepoint; N] {
        let mut all = [Tracepoint::SysExit; N];
        let (mut n, mut p) = (0, 0);
        while p < parts.len() {
            let mut i = 0;
            while i < parts[p].len() {
                all[n] = parts[p][i];
                (n, i) = (n + 1, i + 1);
            }
            p += 1;
        }
        assert!(n == N, "the parts' lengths add up to N");
        all
    }

    /// `system:name`, as tracefs's `set_event` spells it.
    pub const fn full_name(self) -> &'static str {
        match self {
            Tracepoint::HrtimerStart => "timer:hrtimer_start",
            Tracepoint::HrtimerExpireEntry => "timer:hrtimer_expire_entry",
            Tracepoint::HrtimerExpireExit => "timer:hrtimer_expire_exit",
            Tracepoint::HrtimerCancel => "timer:hrtimer_cancel",
            Tracepoint::LocalTimerEntry => "irq_vectors:local_timer_entry",
            Tracepoint::LocalTimerExit => "irq_vectors:local_timer_exit",
            Tracepoint::SchedWaking => "sched:sched_waking",
            Tracepoint::SchedWakeup => "sched:sched_wakeup",
            Tracepoint::SchedSwitch => "sched:sched_switch",
            Tracepoint::IrqHandlerEntry => "irq:irq_handler_entry",
            Tracepoint::IrqHandlerExit => "irq:irq_handler_exit",
            Tracepoint::SoftirqEntry => "irq:softirq_entry",
            Tracepoint::SoftirqExit => "irq:softirq_exit",
            Tracepoint::SysExit => "raw_syscalls:sys_exit",
            Tracepoint::RescheduleEntry => "irq_vectors:reschedule_entry",
            Tracepoint::RescheduleExit => "irq_vectors:reschedule_exit",
            Tracepoint::CallFunctionEntry => "irq_vectors:call_function_entry",
            Tracepoint::CallFunctionExit => "irq_vectors:call_function_exit",
            Tracepoint::CallFunctionSingleEntry => "irq_vectors:call_function_single_entry",
            Tracepoint::CallFunctionSingleExit => "irq_vectors:call_function_single_exit",
            Tracepoint::IrqWorkEntry => "irq_vectors:irq_work_entry",
            Tracepoint::IrqWorkExit => "irq_vectors:irq_work_exit",
            Tracepoint::NmiHandler => "nmi:nmi_handler",
            Tracepoint::TickStop => "timer:tick_stop",
            Tracepoint::WorkqueueExecuteStart => "workqueue:workqueue_execute_start",
            Tracepoint::WorkqueueExecuteEnd => "workqueue:workqueue_execute_end",
            Tracepoint::CpuIdle => "power:cpu_idle",
            Tracepoint::KernelStack => "ftrace:kernel_stack",
            Tracepoint::IpiSendCpu => "ipi:ipi_send_cpu",
            Tracepoint::IpiSendCpumask => "ipi:ipi_send_cpumask",
            Tracepoint::CsdQueueCpu => "csd:csd_queue_cpu",
        }
    }

    /// The subsystem directory under `events/`.
    pub fn system(self) -> &'static str {
        self.full_name().split_once(':').map_or("", |(s, _)| s)
    }

    /// The event directory under `events/<system>/`.
    pub fn name(self) -> &'static str {
        self.full_name().split_once(':').map_or("", |(_, n)| n)
    }

    /// The fields read, in the order [`Decoder`] reads them.
    pub(super) const fn fields(self) -> &'static [&'static str] {
        match self {
            Tracepoint::HrtimerStart => &["hrtimer", "function", "expires", "softexpires", "mode"],
            Tracepoint::HrtimerExpireEntry => &["hrtimer", "now", "function"],
            Tracepoint::HrtimerExpireExit | Tracepoint::HrtimerCancel => &["hrtimer"],
            Tracepoint::LocalTimerEntry | Tracepoint::LocalTimerExit => &["vector"],
            Tracepoint::RescheduleEntry
            | Tracepoint::RescheduleExit
            | Tracepoint::CallFunctionEntry
            | Tracepoint::CallFunctionExit
            | Tracepoint::CallFunctionSingleEntry
            | Tracepoint::CallFunctionSingleExit
            | Tracepoint::IrqWorkEntry
            | Tracepoint::IrqWorkExit => &["vector"],
            Tracepoint::NmiHandler => &["delta_ns", "handled"],
            Tracepoint::SchedWaking | Tracepoint::SchedWakeup => &["comm", "pid", "prio", "target_cpu"],
            Tracepoint::SchedSwitch => {
                &["prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"]
            }
            Tracepoint::IrqHandlerEntry => &["irq", "name"],
            Tracepoint::IrqHandlerExit => &["irq", "ret"],
            Tracepoint::SoftirqEntry | Tracepoint::SoftirqExit => &["vec"],
            Tracepoint::SysExit => &["id", "ret"],
            Tracepoint::TickStop => &["success", "dependency"],
            Tracepoint::WorkqueueExecuteStart | Tracepoint::WorkqueueExecuteEnd => &["work", "function"],
            Tracepoint::CpuIdle => &["state", "cpu_id"],
            // The number of frames, then the frames (`caller`: the format
            // says 8, the record holds `size`).
            Tracepoint::KernelStack => &["size", "caller"],
            Tracepoint::IpiSendCpu => &["cpu", "callsite", "callback"],
            Tracepoint::IpiSendCpumask => &["cpumask", "callsite", "callback"],
            Tracepoint::CsdQueueCpu => &["cpu", "func"],
        }
    }
}

impl fmt::Display for Tracepoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.full_name())
    }
}

/// The task a wake-up is for (`sched_waking`, `sched_wakeup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wakeup {
    /// Its name.
    pub comm: Comm,
    /// Its thread id.
    pub pid: i32,
    /// Kernel priority (0–99 real-time, higher is lower; 100–139 normal).
    pub prio: i32,
    /// The CPU it will run on.
    pub target_cpu: i32,
}

/// A context switch (`sched_switch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The task leaving the CPU.
    pub prev_comm: Comm,
    /// Its thread id (0: idle).
    pub prev_pid: i32,
    /// Its kernel priority.
    pub prev_prio: i32,
    /// Its state: 0 = still runnable (preempted), else the kernel's task
    /// state bits (1 = sleeping, 2 = uninterruptible, …).
    pub prev_state: i64,
    /// The task entering.
    pub next_comm: Comm,
    /// Its thread id (0: idle).
    pub next_pid: i32,
    /// Its kernel priority.
    pub next_prio: i32,
}

impl Switch {
    /// Whether the task leaving went to sleep: any state but running. A
    /// preempted task shows as running (0), on newer kernels with
    /// TASK_REPORT_MAX (0x100, the "+" of "R+") set.
    pub fn slept(&self) -> bool {
        self.prev_state & 0xff != 0
    }
}

/// What happened, with the fields the analysis reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A high-resolution timer was armed. Times are on the timer's clock
    /// (CLOCK_MONOTONIC for the timers rtick's mechanisms arm).
    HrtimerStart {
        /// The timer's address: the key that matches it to its expiry.
        hrtimer: u64,
        /// Its callback's address.
        function: u64,
        /// Hard expiry: the latest it fires.
        expires: Time,
        /// Soft expiry: the earliest it may fire (expires minus the slack).
        softexpires: Time,
        /// `enum hrtimer_mode` (0 = ABS, 1 = REL, +2 PINNED, +4 SOFT, +8 HARD).
        mode: u32,
    },
    /// A timer's callback starts, in the timer interrupt.
    HrtimerExpireEntry {
        /// The timer's address.
        hrtimer: u64,
        /// The clock base's time the interrupt read.
        now: Time,
        /// Its callback's address.
        function: u64,
    },
    /// A timer's callback returned.
    HrtimerExpireExit {
        /// The timer's address.
        hrtimer: u64,
    },
    /// A timer was disarmed before expiring.
    HrtimerCancel {
        /// The timer's address.
        hrtimer: u64,
    },
    /// The local APIC timer interrupt begins (x86).
    LocalTimerEntry {
        /// Its vector.
        vector: i32,
    },
    /// The local APIC timer interrupt ends (x86).
    LocalTimerExit {
        /// Its vector.
        vector: i32,
    },
    /// A wake-up starts.
    SchedWaking(Wakeup),
    /// The woken task is runnable.
    SchedWakeup(Wakeup),
    /// The CPU switched tasks.
    SchedSwitch(Switch),
    /// A device interrupt handler starts.
    IrqHandlerEntry {
        /// The IRQ number.
        irq: i32,
        /// The handler's name (`/proc/interrupts`).
        name: Arc<str>,
    },
    /// It returned.
    IrqHandlerExit {
        /// The IRQ number.
        irq: i32,
        /// Non-zero when it handled the interrupt.
        ret: i32,
    },
    /// A softirq starts.
    SoftirqEntry {
        /// Its vector: see [`softirq_name`].
        vec: u32,
    },
    /// A softirq ends.
    SoftirqExit {
        /// Its vector.
        vec: u32,
    },
    /// An inter-processor interrupt (or irq_work) begins (x86).
    IpiEntry {
        /// Which.
        ipi: Ipi,
        /// Its vector.
        vector: i32,
    },
    /// It ends.
    IpiExit {
        /// Which.
        ipi: Ipi,
        /// Its vector.
        vector: i32,
    },
    /// An NMI handler ran, ending at the event's time.
    Nmi {
        /// How long it ran, ns.
        delta_ns: i64,
        /// Non-zero when it handled the NMI.
        handled: i32,
    },
    /// The tick stopped (`success`), or not: `dependency` kept it.
    TickStop {
        /// Whether it stopped.
        success: bool,
        /// What kept it (none when it stopped).
        dependency: TickDependency,
    },
    /// A kworker starts running a work item.
    WorkStart {
        /// The `struct work_struct` address.
        work: u64,
        /// The work function's address.
        function: u64,
    },
    /// It finished the work item (which may have freed it: only the address is kept).
    WorkEnd {
        /// The `struct work_struct` address.
        work: u64,
    },
    /// The CPU enters idle state `state` (its cpuidle index), or leaves
    /// idle ([`EventKind::IDLE_EXIT`]).
    CpuIdle {
        /// The state's index, or [`EventKind::IDLE_EXIT`].
        state: u32,
    },
    /// The kernel stack where the event before it on its CPU fired,
    /// innermost frame first (return addresses; the first is where it was).
    KernelStack {
        /// The frames, shared between identical stacks.
        frames: Arc<[u64]>,
    },
    /// An IPI sent (recorded on the sender's CPU, in its task's context).
    IpiSend(IpiSend),
    /// A function queued for CPU `cpu` to run in a call-function IPI.
    CsdQueue {
        /// The CPU that will run it.
        cpu: u32,
        /// The function's address.
        func: u64,
    },
    /// A system call of the event's task returns to user space.
    SysExit {
        /// The system call's number.
        id: i64,
        /// What it returned.
        ret: i64,
    },
}

impl EventKind {
    /// `power:cpu_idle`'s state when the CPU leaves idle (PWR_EVENT_EXIT, -1 as u32).
    pub const IDLE_EXIT: u32 = u32::MAX;
}

/// The name of softirq vector `vec`, as the kernel prints it.
pub fn softirq_name(vec: u32) -> &'static str {
    const NAMES: [&str; 10] =
        ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];
    NAMES.get(vec as usize).copied().unwrap_or("?")
}

/// One kernel event on one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When (CLOCK_MONOTONIC: the session's trace clock is `mono`).
    pub ts: Time,
    /// The task running when it fired (`common_pid`; 0 = idle).
    pub pid: i32,
    /// `common_flags`: see [`Event::irqs_off`] and the other accessors.
    pub flags: u8,
    /// `common_preempt_count`: preemption-disable depth (low nibble) and
    /// softirq-disable depth (high nibble), as the trace shows them.
    pub preempt_count: u8,
    /// What happened.
    pub kind: EventKind,
}

impl Event {
    /// Interrupts were disabled (TRACE_FLAG_IRQS_OFF).
    pub fn irqs_off(&self) -> bool {
        self.flags & 0x01 != 0
    }

    /// Recorded in a hard interrupt handler (TRACE_FLAG_HARDIRQ).
    pub fn in_hardirq(&self) -> bool {
        self.flags & 0x08 != 0
    }

    /// Recorded in a softirq (TRACE_FLAG_SOFTIRQ).
    pub fn in_softirq(&self) -> bool {
        self.flags & 0x10 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_switched_out_slept_unless_it_was_preempted() {
        let mut s = Switch {
            prev_comm: Comm::new(b"a"),
            prev_pid: 1,
            prev_prio: 120,
            prev_state: 1,
            next_comm: Comm::new(b"b"),
            next_pid: 2,
            next_prio: 120,
        };
        assert!(s.slept(), "S");
        s.prev_state = 2;
        assert!(s.slept(), "D");
        s.prev_state = 0;
        assert!(!s.slept(), "R");
        s.prev_state = 0x100;
        assert!(!s.slept(), "R+");
    }

    #[test]
    fn the_table_names_system_and_event() {
        assert_eq!(
            (Tracepoint::LocalTimerEntry.system(), Tracepoint::LocalTimerEntry.name()),
            ("irq_vectors", "local_timer_entry")
        );
        assert_eq!(Tracepoint::ALL.iter().filter(|t| t.system() == "timer").count(), 4);
        assert_eq!(Tracepoint::ATTACH[23].full_name(), "raw_syscalls:sys_exit");
        assert_eq!(&Tracepoint::EXPLAIN[..25], &Tracepoint::ALL[..]);
        assert!(Tracepoint::SENDS.iter().all(|s| !Tracepoint::ALL.contains(s) && Tracepoint::ATTACH.contains(s)));
        assert_eq!(&Tracepoint::ATTACH[24..], &Tracepoint::SENDS[..]);
        assert!(!Tracepoint::ALL.contains(&Tracepoint::SysExit), "measure never traces every system call");
        assert_eq!((softirq_name(1), softirq_name(9), softirq_name(10)), ("TIMER", "RCU", "?"));
        assert_eq!(Comm::new(b"0123456789abcdefXYZ").to_string(), "0123456789abcdef");
    }

    #[test]
    fn attach_records_all_that_explain_reads_but_the_local_timer_edges() {
        // What the traced program pays for at each wake-up (BENCHMARKS.md):
        // the local timer's entry and exit are two of its ten events, and
        // neither attach's waits nor the explanation of its spikes reads them.
        let edges = [Tracepoint::LocalTimerEntry, Tracepoint::LocalTimerExit];
        assert!(edges.iter().all(|t| Tracepoint::ALL.contains(t) && !Tracepoint::ATTACH.contains(t)));
        let rest: Vec<_> = Tracepoint::ALL.iter().filter(|t| !edges.contains(t)).collect();
        assert_eq!(Tracepoint::ATTACH[..23].iter().collect::<Vec<_>>(), rest, "every other event, in order");
        assert_eq!(Tracepoint::ATTACH.len(), Tracepoint::ALL.len() - edges.len() + 1 + Tracepoint::SENDS.len());
    }
}

//! What took a CPU from its spinner ([`Source`]), and the tally of each
//! (count, total, largest).

use std::fmt;
use std::sync::Arc;

use crate::ktrace::{softirq_name, Comm, Ipi};
use crate::time::Nanos;

/// Threads named apart per CPU; the others are counted together.
pub const MAX_THREADS: usize = 1024;

/// An interrupt vector with a trace event of its own (x86).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vector {
    /// The local APIC timer (the tick, hrtimers).
    LocalTimer,
    /// An inter-processor interrupt or irq_work.
    Ipi(Ipi),
}

impl fmt::Display for Vector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Vector::LocalTimer => f.write_str("local_timer"),
            Vector::Ipi(Ipi::IrqWork) => f.write_str("irq_work"),
            Vector::Ipi(i) => write!(f, "{i} IPI"),
        }
    }
}

/// One source of noise, as the analysis names it. Nested work is counted
/// once: an IRQ's time is not also its softirq's or its thread's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// A device interrupt handler (`/proc/interrupts`' name).
    Irq {
        /// The IRQ number.
        irq: i32,
        /// The handler's name.
        name: Arc<str>,
    },
    /// An interrupt vector: the local timer, an IPI, irq_work.
    Vector(Vector),
    /// A softirq, by vector.
    Softirq(u32),
    /// Non-maskable interrupts.
    Nmi,
    /// Another thread ran on the CPU (the spinner preempted, or not runnable).
    Thread {
        /// Its name.
        comm: Comm,
        /// Its thread id (0: idle).
        pid: i32,
        /// Its kernel priority (0–99 real-time, higher is lower; 100–139 normal).
        prio: i32,
    },
    /// Threads past the number kept apart ([`MAX_THREADS`]), together: a
    /// long run beside short-lived processes keeps bounded memory.
    OtherThreads,
    /// A real-time spinner stopped by the kernel's RT throttling
    /// (`sched_rt_runtime_us`; on kernels with the fair server, its
    /// reservation for normal tasks): lower-priority tasks or idle ran
    /// while it was runnable.
    RtThrottling,
    /// A SCHED_OTHER spinner (or followed thread) left runnable while its
    /// cgroup, named, was out of its CPU quota (CFS bandwidth throttling:
    /// `cpu.max`, `cpu.cfs_quota_us`), whoever ran meanwhile.
    CfsThrottling(Arc<str>),
    /// A gap with no kernel event in it: the hardware (an SMI) or, in a
    /// virtual machine, the host.
    HardwareOrHost,
    /// The rest of gaps that had kernel events: entering and leaving the
    /// kernel around them, switching tasks, and whatever the host took meanwhile.
    AroundEvents,
}

impl Source {
    /// A named thread's id.
    pub fn pid(&self) -> Option<i32> {
        match self {
            Source::Thread { pid, .. } => Some(*pid),
            _ => None,
        }
    }

    /// The kind, one word (the JSON's `kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Irq { .. } => "irq",
            Source::Vector(_) => "vector",
            Source::Softirq(_) => "softirq",
            Source::Nmi => "nmi",
            Source::Thread { .. } | Source::OtherThreads => "thread",
            Source::RtThrottling => "rt_throttling",
            Source::CfsThrottling(_) => "cfs_throttling",
            Source::HardwareOrHost => "hardware_or_host",
            Source::AroundEvents => "around_events",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Irq { irq, name } => write!(f, "irq {irq} {name}"),
            Source::Vector(v) => write!(f, "{v}"),
            Source::Softirq(v) => write!(f, "softirq {}", softirq_name(*v)),
            Source::Nmi => f.write_str("NMI"),
            Source::Thread { comm, pid: 0, .. } => write!(f, "idle ({comm})"),
            Source::Thread { comm, pid, prio } => write!(f, "thread {comm} (pid {pid}, prio {prio})"),
            Source::OtherThreads => write!(f, "other threads (past the {MAX_THREADS} named)"),
            Source::RtThrottling => f.write_str("RT throttling"),
            Source::CfsThrottling(cgroup) => write!(f, "CFS throttling in {cgroup}"),
            Source::HardwareOrHost => f.write_str("hardware or host (no kernel event)"),
            Source::AroundEvents => f.write_str("around kernel events (entry, exit, switches, host)"),
        }
    }
}

/// How often a source struck, for how long in all, and its longest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Occurrences.
    pub count: u64,
    /// Their time, summed.
    pub total: Nanos,
    /// The longest one.
    pub max: Nanos,
    /// The time of what ran nested in them, counted apart (the interrupts
    /// inside a thread's run): with `total`, the time they held the CPU.
    pub nested: Nanos,
}

impl Tally {
    /// Counts one occurrence of `d`.
    pub fn add(&mut self, d: Nanos) {
        self.count += 1;
        self.total = self.total + d;
        self.max = self.max.max(d);
    }

    /// Counts one occurrence of `d`, with `nested` counted apart.
    pub fn add_nested(&mut self, d: Nanos, nested: Nanos) {
        self.add(d);
        self.nested = self.nested + nested;
    }
}

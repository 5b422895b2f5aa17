//! The x86 interrupt vectors beyond the local timer, and NMIs: what
//! `rtick noise` traces with the IRQs, softirqs and switches
//! ([`Tracepoint::NOISE`]) to name every interruption of a CPU, and
//! `--explain` ([`Tracepoint::ALL`]) to name the interrupt work of a spike:
//! the one list of their events is [`Tracepoint::VECTORS`].

use std::fmt;

use super::events::Tracepoint;

/// An inter-processor interrupt, or the irq_work self-interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ipi {
    /// Another CPU asked this one to reschedule (a wake-up of a task here).
    Reschedule,
    /// A function run on several CPUs at once (TLB shootdowns among them).
    CallFunction,
    /// A function run on this CPU alone.
    CallFunctionSingle,
    /// Work queued from a context that could do nothing else (perf, printk, RCU).
    IrqWork,
}

impl Ipi {
    /// The vector's name, as its trace event names it.
    pub fn name(self) -> &'static str {
        match self {
            Ipi::Reschedule => "reschedule",
            Ipi::CallFunction => "call_function",
            Ipi::CallFunctionSingle => "call_function_single",
            Ipi::IrqWork => "irq_work",
        }
    }
}

impl fmt::Display for Ipi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Tracepoint {
    /// The IPIs' and the irq_work interrupt's entries and exits, and NMIs:
    /// traced by `rtick noise` and by `--explain` alike.
    pub const VECTORS: [Tracepoint; 9] = [
        Tracepoint::RescheduleEntry,
        Tracepoint::RescheduleExit,
        Tracepoint::CallFunctionEntry,
        Tracepoint::CallFunctionExit,
        Tracepoint::CallFunctionSingleEntry,
        Tracepoint::CallFunctionSingleExit,
        Tracepoint::IrqWorkEntry,
        Tracepoint::IrqWorkExit,
        Tracepoint::NmiHandler,
    ];

    /// What `rtick noise` enables: every event that marks the CPU taken
    /// from the thread running on it (IRQ handlers, vectors, softirqs,
    /// NMIs, switches), whether the tick stopped (`nohz_full`), and who
    /// sent each IPI ([`Tracepoint::SENDS`], written on the senders' CPUs).
    pub const NOISE: [Tracepoint; 20] = Tracepoint::join(&[
        &[
            Tracepoint::SchedSwitch,
            Tracepoint::IrqHandlerEntry,
            Tracepoint::IrqHandlerExit,
            Tracepoint::SoftirqEntry,
            Tracepoint::SoftirqExit,
            Tracepoint::LocalTimerEntry,
            Tracepoint::LocalTimerExit,
        ],
        &Tracepoint::VECTORS,
        &[Tracepoint::TickStop],
        &Tracepoint::SENDS,
    ]);

    /// The IPI this event begins or ends, and whether it begins it.
    pub const fn ipi(self) -> Option<(Ipi, bool)> {
        Some(match self {
            Tracepoint::RescheduleEntry => (Ipi::Reschedule, true),
            Tracepoint::RescheduleExit => (Ipi::Reschedule, false),
            Tracepoint::CallFunctionEntry => (Ipi::CallFunction, true),
            Tracepoint::CallFunctionExit => (Ipi::CallFunction, false),
            Tracepoint::CallFunctionSingleEntry => (Ipi::CallFunctionSingle, true),
            Tracepoint::CallFunctionSingleExit => (Ipi::CallFunctionSingle, false),
            Tracepoint::IrqWorkEntry => (Ipi::IrqWork, true),
            Tracepoint::IrqWorkExit => (Ipi::IrqWork, false),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_traces_interruptions_only_and_leaves_the_other_sets_alone() {
        for tp in Tracepoint::NOISE {
            let tick = tp == Tracepoint::TickStop;
            assert!(tick || !matches!(tp.system(), "timer" | "raw_syscalls"), "{tp}");
            assert!(tp.system() != "sched" || tp == Tracepoint::SchedSwitch, "{tp}: no wake-ups");
            if let Some((ipi, entry)) = tp.ipi() {
                let suffix = if entry { "_entry" } else { "_exit" };
                assert_eq!(tp.name(), format!("{}{suffix}", ipi.name()));
            }
        }
        assert_eq!(Tracepoint::NOISE.iter().filter(|t| t.ipi().is_some()).count(), 8);
        let vectors = Tracepoint::NOISE.iter().filter(|t| t.ipi().is_some() || **t == Tracepoint::NmiHandler);
        assert!(vectors.eq(Tracepoint::VECTORS.iter()), "{:?}", Tracepoint::VECTORS);
        for tp in Tracepoint::VECTORS {
            assert!(Tracepoint::ALL.contains(&tp) && Tracepoint::ATTACH.contains(&tp), "{tp}: explain names it too");
        }
        assert!(Tracepoint::SENDS.iter().all(|s| Tracepoint::NOISE.contains(s)), "who sent each IPI");
        let tick = Tracepoint::TickStop;
        assert!(
            Tracepoint::NOISE.contains(&tick)
                && !Tracepoint::ALL.contains(&tick)
                && !Tracepoint::ATTACH.contains(&tick)
        );
    }
}

//! Who sent each IPI: `ipi:ipi_send_cpu` and `ipi:ipi_send_cpumask` fire on
//! the sender's CPU, in the sender's context (its pid in the common fields),
//! naming the target CPU(s); `csd:csd_queue_cpu` names the function a
//! call-function IPI runs (the send's own callback is the kernel's generic
//! dispatcher). [`Senders`] keeps the recent sends and matches an IPI's entry
//! on the receiving CPU to the latest send to that CPU of the same kind.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use super::events::{Comm, Event, EventKind, Ipi, Tracepoint};
use crate::time::{Nanos, Time};

/// The CPUs an IPI was sent to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// One CPU (`ipi_send_cpu`).
    Cpu(u32),
    /// A `cpumask_t` as the event records it: a bitmap of `unsigned long`s,
    /// CPU 0 the lowest bit of the first (`ipi_send_cpumask`).
    Mask(Arc<[u8]>),
}

impl Targets {
    /// Whether `cpu` is among them.
    pub fn contains(&self, cpu: usize) -> bool {
        match self {
            Targets::Cpu(c) => *c as usize == cpu,
            Targets::Mask(bytes) => mask_bit(bytes, cpu),
        }
    }
}

/// Bit `cpu` of a kernel bitmap of native `unsigned long`s.
fn mask_bit(bytes: &[u8], cpu: usize) -> bool {
    const W: usize = std::mem::size_of::<usize>();
    let Some(word) = bytes.get(cpu / (8 * W) * W..).and_then(|b| b.get(..W)) else { return false };
    let word = usize::from_ne_bytes(word.try_into().unwrap_or([0; W]));
    word >> (cpu % (8 * W)) & 1 == 1
}

/// An IPI sent (`ipi_send_cpu`, `ipi_send_cpumask`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpiSend {
    /// To whom.
    pub targets: Targets,
    /// The kernel code that sent it (`resched_curr`, `on_each_cpu_cond_mask`, …).
    pub callsite: u64,
    /// The function the target runs: 0 for a reschedule IPI, the generic
    /// call-function dispatcher for the others.
    pub callback: u64,
}

impl Tracepoint {
    /// The events that say who sent an IPI. They fire on the sender's CPU:
    /// a session records them on every CPU, filtered to sends to the
    /// measured ones.
    pub const SENDS: [Tracepoint; 3] = [Tracepoint::IpiSendCpu, Tracepoint::IpiSendCpumask, Tracepoint::CsdQueueCpu];
}

/// Who sent an IPI, as its send event says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sender {
    /// The sender's CPU.
    pub cpu: usize,
    /// Its task's thread id (0: idle, or an interrupt on an idle CPU).
    pub pid: i32,
    /// Its task's name, read when its first send was seen (None: gone by then).
    pub comm: Option<Comm>,
    /// The function the IPI ran (a call-function IPI's queued function), 0 if none.
    pub work: u64,
}

impl Sender {
    /// The sender with the function its IPI ran, when the events say:
    /// "(flush_tlb_func) from CPU 0 task X:42", else as [`Sender`]'s `Display`.
    pub fn describe(&self) -> String {
        match self.work {
            0 => self.to_string(),
            work => format!("({}) {self}", super::kallsyms::describe(work)),
        }
    }
}

impl fmt::Display for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.pid, &self.comm) {
            (0, _) => write!(f, "from CPU {} (idle)", self.cpu),
            (pid, Some(c)) => write!(f, "from CPU {} task {c}:{pid}", self.cpu),
            (pid, None) => write!(f, "from CPU {} task {pid}", self.cpu),
        }
    }
}

/// A send waits this long at most for its IPI's entry: IPIs arrive within
/// microseconds, a virtual machine's within a host's stall.
const MAX_DELAY: Nanos = Nanos::from_ms(50);
/// A queued function belongs to the send that follows it on its CPU this soon.
const CSD_TO_SEND: Nanos = Nanos::from_us(200);
/// Sends kept at most (the oldest go first).
pub const MAX_SENDS: usize = 4096;
/// Task names kept at most.
const MAX_COMMS: usize = 4096;

/// One send kept for matching: when, from which CPU and task, to whom, and its work.
#[derive(Clone, Debug)]
struct Sent {
    at: Time,
    targets: Targets,
    reschedule: bool,
    sender: Sender,
}

/// The recent sends, to name the sender of each IPI entered.
#[derive(Debug, Default)]
pub struct Senders {
    sent: VecDeque<Sent>,
    /// Per sender CPU, the last function queued: (when, target CPU, function).
    queued: HashMap<usize, (Time, u32, u64)>,
    /// Each sender's name, read from /proc when first seen (`read_comms`).
    comms: HashMap<i32, Option<Comm>>,
    read_comms: bool,
}

impl Senders {
    /// An empty matcher; `read_comms`: name each sending task from
    /// `/proc/PID/comm` as its first send is seen.
    pub fn new(read_comms: bool) -> Senders {
        Senders { read_comms, ..Default::default() }
    }

    /// Takes one event of `cpu` (the send events; others are ignored).
    pub fn event(&mut self, cpu: usize, e: &Event) {
        match &e.kind {
            EventKind::CsdQueue { cpu: to, func } => {
                self.queued.insert(cpu, (e.ts, *to, *func));
            }
            EventKind::IpiSend(s) => self.send(cpu, e, s),
            _ => {}
        }
    }

    fn send(&mut self, cpu: usize, e: &Event, s: &IpiSend) {
        let queued = self.queued.remove(&cpu);
        let reschedule = s.callback == 0;
        let work = match queued {
            Some((t, to, func)) if !reschedule && e.ts - t <= CSD_TO_SEND && s.targets.contains(to as usize) => func,
            _ => s.callback,
        };
        let comm = self.comm(e.pid);
        let sender = Sender { cpu, pid: e.pid, comm, work };
        if self.sent.len() >= MAX_SENDS {
            self.sent.pop_front();
        }
        // Events of several CPUs may come a little out of order: kept sorted by time.
        let i = self.sent.partition_point(|x| x.at <= e.ts);
        self.sent.insert(i, Sent { at: e.ts, targets: s.targets.clone(), reschedule, sender });
    }

    fn comm(&mut self, pid: i32) -> Option<Comm> {
        if !self.read_comms || pid == 0 {
            return None;
        }
        if self.comms.len() >= MAX_COMMS && !self.comms.contains_key(&pid) {
            self.comms.clear();
        }
        *self.comms.entry(pid).or_insert_with(|| {
            let text = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
            Some(Comm::new(text.strip_suffix(b"\n").unwrap_or(&text)))
        })
    }

    /// Who sent the `ipi` that `cpu` entered at `at`: the latest send to
    /// `cpu` of its kind before it (a reschedule has no function; the
    /// others do), at most [`MAX_DELAY`] before. None for irq_work (the
    /// CPU's own interrupt) and when no send was seen.
    pub fn sender_of(&self, cpu: usize, ipi: Ipi, at: Time) -> Option<&Sender> {
        let reschedule = match ipi {
            Ipi::Reschedule => true,
            Ipi::CallFunction | Ipi::CallFunctionSingle => false,
            Ipi::IrqWork => return None,
        };
        let upto = self.sent.partition_point(|s| s.at <= at);
        let recent = self.sent.range(..upto).rev().take_while(|s| at - s.at <= MAX_DELAY);
        recent.into_iter().find(|s| s.reschedule == reschedule && s.targets.contains(cpu)).map(|s| &s.sender)
    }

    /// Who sent the IPI that event `e` of `cpu` enters ([`Senders::sender_of`]);
    /// None for any other event.
    pub fn sender_of_entry(&self, cpu: usize, e: &Event) -> Option<&Sender> {
        match e.kind {
            EventKind::IpiEntry { ipi, .. } => self.sender_of(cpu, ipi, e.ts),
            _ => None,
        }
    }

    /// The sends kept (at most [`MAX_SENDS`]).
    pub fn held(&self) -> usize {
        self.sent.len()
    }

    /// Forgets the sends before `before` (what no IPI entry still to come can match).
    pub fn forget_before(&mut self, before: Time) {
        let n = self.sent.partition_point(|s| s.at < before - MAX_DELAY);
        self.sent.drain(..n);
    }
}

#[cfg(test)]
mod tests;

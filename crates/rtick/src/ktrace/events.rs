//! The kernel trace events the latency analysis reads, typed.
//!
//! [`Tracepoint`] is the one list of them (system, name, and the fields
//! read); [`Decoder`] resolves those fields in the running kernel's format
//! files once, then turns each raw record into an [`Event`] without a name
//! look-up. Strings of variable length (IRQ handler names) are interned, so
//! a million IRQ events hold a handful of names.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::format::{EventFormat, Field};
use super::page::RawRecord;
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
}

impl Tracepoint {
    /// Every event a session enables, when the kernel has it.
    pub const ALL: [Tracepoint; 13] = [
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
    ];

    /// What `rtick attach` enables: [`Tracepoint::ALL`] and the system
    /// calls' exits, where an attached thread is back in user space.
    pub const ATTACH: [Tracepoint; 14] = {
        let mut all = [Tracepoint::SysExit; 14];
        let mut i = 0;
        while i < Tracepoint::ALL.len() {
            all[i] = Tracepoint::ALL[i];
            i += 1;
        }
        all
    };

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
    const fn fields(self) -> &'static [&'static str] {
        match self {
            Tracepoint::HrtimerStart => &["hrtimer", "function", "expires", "softexpires", "mode"],
            Tracepoint::HrtimerExpireEntry => &["hrtimer", "now", "function"],
            Tracepoint::HrtimerExpireExit | Tracepoint::HrtimerCancel => &["hrtimer"],
            Tracepoint::LocalTimerEntry | Tracepoint::LocalTimerExit => &["vector"],
            Tracepoint::SchedWaking | Tracepoint::SchedWakeup => &["comm", "pid", "prio", "target_cpu"],
            Tracepoint::SchedSwitch => {
                &["prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"]
            }
            Tracepoint::IrqHandlerEntry => &["irq", "name"],
            Tracepoint::IrqHandlerExit => &["irq", "ret"],
            Tracepoint::SoftirqEntry | Tracepoint::SoftirqExit => &["vec"],
            Tracepoint::SysExit => &["id", "ret"],
        }
    }
}

impl fmt::Display for Tracepoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.full_name())
    }
}

/// A task name (`comm`): up to 16 bytes, not necessarily UTF-8.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Comm([u8; 16]);

impl Comm {
    /// From the bytes of a `comm` field (cut at 16 bytes and at the first NUL).
    pub fn new(bytes: &[u8]) -> Comm {
        let mut c = [0u8; 16];
        let n = bytes.iter().take(16).position(|&b| b == 0).unwrap_or(bytes.len().min(16));
        c[..n].copy_from_slice(&bytes[..n]);
        Comm(c)
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        &self.0[..n]
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
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
    /// A system call of the event's task returns to user space.
    SysExit {
        /// The system call's number.
        id: i64,
        /// What it returned.
        ret: i64,
    },
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

/// What became of one raw record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A typed event.
    Event(Event),
    /// A record of an event this decoder does not know (not enabled by a session).
    Unknown(u16),
    /// A record of a known event too short for its fields.
    Malformed(Tracepoint),
}

/// The fields of one event, resolved.
#[derive(Clone, Debug)]
struct Resolved {
    tp: Tracepoint,
    /// common_pid, common_flags, common_preempt_count.
    common: [Field; 3],
    /// As [`Tracepoint::fields`] lists them.
    fields: Vec<Field>,
}

/// Turns raw records into typed events, with every field resolved once.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    by_id: HashMap<u16, Resolved>,
    names: HashMap<Box<[u8]>, Arc<str>>,
}

impl Decoder {
    /// An empty decoder: every record is unknown until events are added.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Resolves `tp`'s fields in its format; `Err` names the first field
    /// the kernel's format lacks (the event then counts as missing).
    pub fn add(&mut self, tp: Tracepoint, format: &EventFormat) -> Result<(), String> {
        let get = |n: &str| format.field(n).ok_or_else(|| format!("{tp} has no field `{n}`"));
        let common = [get("common_pid")?, get("common_flags")?, get("common_preempt_count")?];
        let fields = tp.fields().iter().map(|n| get(n)).collect::<Result<Vec<_>, _>>()?;
        self.by_id.insert(format.id(), Resolved { tp, common, fields });
        Ok(())
    }

    /// The event of one record.
    pub fn decode(&mut self, rec: &RawRecord<'_>) -> Decoded {
        let Some(id) = rec.id() else { return Decoded::Unknown(0) };
        let Some(r) = self.by_id.get(&id) else { return Decoded::Unknown(id) };
        let tp = r.tp;
        match decode(r, rec.payload, &mut self.names) {
            Some((pid, flags, preempt_count, kind)) => {
                Decoded::Event(Event { ts: Time(rec.ts as i64), pid, flags, preempt_count, kind })
            }
            None => Decoded::Malformed(tp),
        }
    }
}

fn decode(r: &Resolved, p: &[u8], names: &mut HashMap<Box<[u8]>, Arc<str>>) -> Option<(i32, u8, u8, EventKind)> {
    let f = &r.fields;
    let u = |i: usize| f[i].u64(p);
    let i = |i: usize| f[i].i64(p);
    let i32_ = |n: usize| i(n).map(|v| v as i32);
    let comm = |n: usize| f[n].c_str(p).map(Comm::new);
    let kind = match r.tp {
        Tracepoint::HrtimerStart => EventKind::HrtimerStart {
            hrtimer: u(0)?,
            function: u(1)?,
            expires: Time(i(2)?),
            softexpires: Time(i(3)?),
            mode: u(4)? as u32,
        },
        Tracepoint::HrtimerExpireEntry => {
            EventKind::HrtimerExpireEntry { hrtimer: u(0)?, now: Time(i(1)?), function: u(2)? }
        }
        Tracepoint::HrtimerExpireExit => EventKind::HrtimerExpireExit { hrtimer: u(0)? },
        Tracepoint::HrtimerCancel => EventKind::HrtimerCancel { hrtimer: u(0)? },
        Tracepoint::LocalTimerEntry => EventKind::LocalTimerEntry { vector: i32_(0)? },
        Tracepoint::LocalTimerExit => EventKind::LocalTimerExit { vector: i32_(0)? },
        Tracepoint::SchedWaking | Tracepoint::SchedWakeup => {
            let w = Wakeup { comm: comm(0)?, pid: i32_(1)?, prio: i32_(2)?, target_cpu: i32_(3)? };
            if r.tp == Tracepoint::SchedWaking {
                EventKind::SchedWaking(w)
            } else {
                EventKind::SchedWakeup(w)
            }
        }
        Tracepoint::SchedSwitch => EventKind::SchedSwitch(Switch {
            prev_comm: comm(0)?,
            prev_pid: i32_(1)?,
            prev_prio: i32_(2)?,
            prev_state: i(3)?,
            next_comm: comm(4)?,
            next_pid: i32_(5)?,
            next_prio: i32_(6)?,
        }),
        Tracepoint::IrqHandlerEntry => {
            let bytes = f[1].c_str(p)?;
            let name = match names.get(bytes) {
                Some(n) => Arc::clone(n),
                None => {
                    let n: Arc<str> = String::from_utf8_lossy(bytes).into();
                    names.insert(bytes.into(), Arc::clone(&n));
                    n
                }
            };
            EventKind::IrqHandlerEntry { irq: i32_(0)?, name }
        }
        Tracepoint::IrqHandlerExit => EventKind::IrqHandlerExit { irq: i32_(0)?, ret: i32_(1)? },
        Tracepoint::SoftirqEntry => EventKind::SoftirqEntry { vec: u(0)? as u32 },
        Tracepoint::SoftirqExit => EventKind::SoftirqExit { vec: u(0)? as u32 },
        Tracepoint::SysExit => EventKind::SysExit { id: i(0)?, ret: i(1)? },
    };
    let c = &r.common;
    Some((c[0].i64(p)? as i32, c[1].u64(p)? as u8, c[2].u64(p)? as u8, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAKEUP: &str = "name: sched_wakeup\nID: 374\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\nprint fmt: \"\"\n";

    fn record() -> Vec<u8> {
        let mut p = vec![0u8; 36];
        p[0..2].copy_from_slice(&374u16.to_ne_bytes());
        p[2] = 0x0d;
        p[3] = 0x02;
        p[4..8].copy_from_slice(&17i32.to_ne_bytes());
        p[8..13].copy_from_slice(b"rtick");
        p[24..28].copy_from_slice(&4242i32.to_ne_bytes());
        p[28..32].copy_from_slice(&9i32.to_ne_bytes());
        p[32..36].copy_from_slice(&1i32.to_ne_bytes());
        p
    }

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
    fn a_record_decodes_with_its_common_fields() {
        let mut d = Decoder::new();
        d.add(Tracepoint::SchedWakeup, &EventFormat::parse("sched", WAKEUP).unwrap()).unwrap();
        let p = record();
        let Decoded::Event(e) = d.decode(&RawRecord { ts: 99, payload: &p }) else { panic!() };
        assert_eq!((e.ts, e.pid, e.flags, e.preempt_count), (Time(99), 17, 0x0d, 2));
        assert!(e.irqs_off());
        let want = Wakeup { comm: Comm::new(b"rtick"), pid: 4242, prio: 9, target_cpu: 1 };
        assert_eq!(e.kind, EventKind::SchedWakeup(want));
        assert_eq!(want.comm.to_string(), "rtick");
    }

    #[test]
    fn unknown_short_and_lacking_records_are_told_apart() {
        let mut d = Decoder::new();
        let f = EventFormat::parse("sched", WAKEUP).unwrap();
        let p = record();
        assert_eq!(d.decode(&RawRecord { ts: 0, payload: &p }), Decoded::Unknown(374));
        d.add(Tracepoint::SchedWaking, &f).unwrap();
        assert_eq!(d.decode(&RawRecord { ts: 0, payload: &p[..30] }), Decoded::Malformed(Tracepoint::SchedWaking));
        let err = d.add(Tracepoint::SchedSwitch, &f).unwrap_err();
        assert_eq!(err, "sched:sched_switch has no field `prev_comm`");
    }

    #[test]
    fn the_table_names_system_and_event() {
        assert_eq!(
            (Tracepoint::LocalTimerEntry.system(), Tracepoint::LocalTimerEntry.name()),
            ("irq_vectors", "local_timer_entry")
        );
        assert_eq!(Tracepoint::ALL.iter().filter(|t| t.system() == "timer").count(), 4);
        assert_eq!(&Tracepoint::ATTACH[..13], &Tracepoint::ALL[..]);
        assert_eq!(Tracepoint::ATTACH[13].full_name(), "raw_syscalls:sys_exit");
        assert!(!Tracepoint::ALL.contains(&Tracepoint::SysExit), "measure never traces every system call");
        assert_eq!((softirq_name(1), softirq_name(9), softirq_name(10)), ("TIMER", "RCU", "?"));
        assert_eq!(Comm::new(b"0123456789abcdefXYZ").to_string(), "0123456789abcdef");
    }
}

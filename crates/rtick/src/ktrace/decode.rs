//! Raw trace records turned into typed [`Event`]s: each event's fields
//! resolved once in the running kernel's format files, then read from every
//! record without a name look-up. IRQ handler names are interned.

use std::collections::HashMap;
use std::sync::Arc;

use super::events::{Comm, Event, EventKind, IpiSend, Switch, Targets, TickDependency, Tracepoint, Wakeup};
use super::format::{EventFormat, Field};
use super::page::RawRecord;
use super::stack::{frames, Interned};
use crate::time::Time;

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
    stacks: Interned,
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
        match decode(r, rec.payload, &mut self.names, &mut self.stacks) {
            Some((pid, flags, preempt_count, kind)) => {
                Decoded::Event(Event { ts: Time(rec.ts as i64), pid, flags, preempt_count, kind })
            }
            None => Decoded::Malformed(tp),
        }
    }
}

/// An IRQ handler's name, one copy of each.
fn interned(names: &mut HashMap<Box<[u8]>, Arc<str>>, bytes: &[u8]) -> Arc<str> {
    match names.get(bytes) {
        Some(n) => Arc::clone(n),
        None => {
            let n: Arc<str> = String::from_utf8_lossy(bytes).into();
            names.insert(bytes.into(), Arc::clone(&n));
            n
        }
    }
}

fn decode(
    r: &Resolved,
    p: &[u8],
    names: &mut HashMap<Box<[u8]>, Arc<str>>,
    stacks: &mut Interned,
) -> Option<(i32, u8, u8, EventKind)> {
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
            EventKind::IrqHandlerEntry { irq: i32_(0)?, name: interned(names, f[1].c_str(p)?) }
        }
        Tracepoint::IrqHandlerExit => EventKind::IrqHandlerExit { irq: i32_(0)?, ret: i32_(1)? },
        Tracepoint::SoftirqEntry => EventKind::SoftirqEntry { vec: u(0)? as u32 },
        Tracepoint::SoftirqExit => EventKind::SoftirqExit { vec: u(0)? as u32 },
        Tracepoint::SysExit => EventKind::SysExit { id: i(0)?, ret: i(1)? },
        Tracepoint::NmiHandler => EventKind::Nmi { delta_ns: i(0)?, handled: i32_(1)? },
        Tracepoint::TickStop => EventKind::TickStop { success: i(0)? != 0, dependency: TickDependency(u(1)? as u32) },
        Tracepoint::WorkqueueExecuteStart => EventKind::WorkStart { work: u(0)?, function: u(1)? },
        Tracepoint::WorkqueueExecuteEnd => EventKind::WorkEnd { work: u(0)? },
        Tracepoint::CpuIdle => EventKind::CpuIdle { state: u(0)? as u32 },
        Tracepoint::KernelStack => EventKind::KernelStack { frames: stacks.get(frames(&f[0], &f[1], p)?) },
        tp @ (Tracepoint::IpiSendCpu | Tracepoint::IpiSendCpumask) => {
            let targets = if tp == Tracepoint::IpiSendCpu {
                Targets::Cpu(u(0)? as u32)
            } else {
                Targets::Mask(f[0].bytes(p)?.into())
            };
            EventKind::IpiSend(IpiSend { targets, callsite: u(1)?, callback: u(2)? })
        }
        Tracepoint::CsdQueueCpu => EventKind::CsdQueue { cpu: u(0)? as u32, func: u(1)? },
        tp => match tp.ipi() {
            Some((ipi, true)) => EventKind::IpiEntry { ipi, vector: i32_(0)? },
            Some((ipi, false)) => EventKind::IpiExit { ipi, vector: i32_(0)? },
            None => return None,
        },
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

    /// This kernel's `timer:tick_stop` format, as tracefs prints it.
    const TICK_STOP: &str = "name: tick_stop\nID: 454\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:int success;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:int dependency;\toffset:12;\tsize:4;\tsigned:1;\n\nprint fmt: \"\"\n";

    #[test]
    fn a_tick_that_did_not_stop_says_what_kept_it() {
        let mut d = Decoder::new();
        d.add(Tracepoint::TickStop, &EventFormat::parse("timer", TICK_STOP).unwrap()).unwrap();
        let record = |success: i32, dep: i32| {
            let mut p = vec![0u8; 16];
            p[0..2].copy_from_slice(&454u16.to_ne_bytes());
            p[8..12].copy_from_slice(&success.to_ne_bytes());
            p[12..16].copy_from_slice(&dep.to_ne_bytes());
            p
        };
        let kind = |p: &[u8]| match d.clone().decode(&RawRecord { ts: 5, payload: p }) {
            Decoded::Event(e) => e.kind,
            other => panic!("{other:?}"),
        };
        let kept = kind(&record(0, 1 << 4));
        assert_eq!(kept, EventKind::TickStop { success: false, dependency: TickDependency(16) });
        let stopped = kind(&record(1, 0));
        assert_eq!(stopped, EventKind::TickStop { success: true, dependency: TickDependency(0) });
    }
}

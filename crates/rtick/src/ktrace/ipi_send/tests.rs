use super::*;
use crate::ktrace::events::{Decoded, Decoder};
use crate::ktrace::format::EventFormat;
use crate::ktrace::page::RawRecord;

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

/// This kernel's formats, as tracefs prints them.
fn format(name: &str, id: u16, first: &str) -> EventFormat {
    let text = format!(
        "name: {name}\nID: {id}\nformat:\n{COMMON}{first}\
\tfield:void * callsite;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:void * callback;\toffset:24;\tsize:8;\tsigned:0;\n\nprint fmt: \"\"\n"
    );
    EventFormat::parse("ipi", &text).unwrap()
}

fn header(id: u16, pid: i32, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0..2].copy_from_slice(&id.to_ne_bytes());
    p[4..8].copy_from_slice(&pid.to_ne_bytes());
    p[16..24].copy_from_slice(&0xffff_ffff_8100_0010u64.to_ne_bytes());
    p[24..32].copy_from_slice(&0xffff_ffff_8200_0000u64.to_ne_bytes());
    p
}

fn decode(d: &mut Decoder, p: &[u8]) -> Event {
    match d.decode(&RawRecord { ts: 1000, payload: p }) {
        Decoded::Event(e) => e,
        other => panic!("{other:?}"),
    }
}

#[test]
fn sends_to_one_cpu_and_to_a_mask_decode_from_their_records() {
    let mut d = Decoder::new();
    let one = format("ipi_send_cpu", 354, "\tfield:unsigned int cpu;\toffset:8;\tsize:4;\tsigned:0;\n");
    let mask =
        format("ipi_send_cpumask", 353, "\tfield:__data_loc cpumask_t cpumask;\toffset:8;\tsize:4;\tsigned:0;\n");
    d.add(Tracepoint::IpiSendCpu, &one).unwrap();
    d.add(Tracepoint::IpiSendCpumask, &mask).unwrap();
    let mut p = header(354, 1234, 32);
    p[8..12].copy_from_slice(&3u32.to_ne_bytes());
    let e = decode(&mut d, &p);
    assert_eq!(e.pid, 1234);
    let EventKind::IpiSend(s) = e.kind else { panic!("{e:?}") };
    assert_eq!(
        (s.targets.clone(), s.callsite, s.callback),
        (Targets::Cpu(3), 0xffff_ffff_8100_0010, 0xffff_ffff_8200_0000)
    );
    assert!(s.targets.contains(3) && !s.targets.contains(2));
    // The mask: 8 bytes at 32, its locator (length << 16 | offset) at 8; CPUs 1 and 65 (second word).
    let mut p = header(353, 77, 48);
    p[8..12].copy_from_slice(&((16u32 << 16) | 32).to_ne_bytes());
    p[32..40].copy_from_slice(&(1usize << 1).to_ne_bytes());
    p[40..48].copy_from_slice(&(1usize << 1).to_ne_bytes());
    let EventKind::IpiSend(s) = decode(&mut d, &p).kind else { panic!() };
    let on: Vec<usize> = (0..130).filter(|&c| s.targets.contains(c)).collect();
    assert_eq!(on, [1, 8 * std::mem::size_of::<usize>() + 1]);
    // A locator past the record's end: malformed, not a wrong mask.
    p[8..12].copy_from_slice(&((16u32 << 16) | 40).to_ne_bytes());
    assert_eq!(d.decode(&RawRecord { ts: 0, payload: &p }), Decoded::Malformed(Tracepoint::IpiSendCpumask));
}

fn ev(ts: i64, pid: i32, kind: EventKind) -> Event {
    Event { ts: Time(ts), pid, flags: 0, preempt_count: 0, kind }
}

fn send(to: u32, callback: u64) -> EventKind {
    EventKind::IpiSend(IpiSend { targets: Targets::Cpu(to), callsite: 0x10, callback })
}

#[test]
fn an_ipi_is_matched_to_the_latest_send_of_its_kind_to_its_cpu() {
    let mut s = Senders::new(false);
    // CPU 0, task 42: queues flush_tlb_func (0xf1) for CPU 1, sends a call-function IPI with the dispatcher (0xd0).
    s.event(0, &ev(1_000, 42, EventKind::CsdQueue { cpu: 1, func: 0xf1 }));
    s.event(0, &ev(1_100, 42, send(1, 0xd0)));
    // CPU 0, task 7: a reschedule IPI to CPU 1; CPU 2 sends a call-function IPI to CPU 3.
    s.event(0, &ev(2_000, 7, send(1, 0)));
    s.event(2, &ev(2_100, 9, send(3, 0xd0)));
    let call = s.sender_of(1, Ipi::CallFunctionSingle, Time(3_000)).unwrap();
    assert_eq!((call.cpu, call.pid, call.work), (0, 42, 0xf1), "the queued function, not the dispatcher");
    assert_eq!(call.to_string(), "from CPU 0 task 42");
    let resched = s.sender_of(1, Ipi::Reschedule, Time(3_000)).unwrap();
    assert_eq!((resched.pid, resched.work), (7, 0));
    assert_eq!(s.sender_of(1, Ipi::Reschedule, Time(1_999)), None, "no send before it");
    assert_eq!(s.sender_of(3, Ipi::CallFunction, Time(2_200)).map(|x| (x.cpu, x.work)), Some((2, 0xd0)));
    assert_eq!(s.sender_of(1, Ipi::IrqWork, Time(3_000)), None, "the CPU's own interrupt");
    // Too long before: not its sender.
    assert_eq!(s.sender_of(1, Ipi::Reschedule, Time(2_000) + MAX_DELAY + Nanos(1)), None);
    // A send seen late (another CPU's page read after) still takes its place in time.
    s.event(2, &ev(1_500, 5, send(1, 0)));
    assert_eq!(s.sender_of(1, Ipi::Reschedule, Time(1_600)).map(|x| x.pid), Some(5));
    s.forget_before(Time(2_050) + MAX_DELAY);
    assert_eq!(s.sender_of(1, Ipi::Reschedule, Time(3_000)), None);
    assert!(s.sender_of(3, Ipi::CallFunction, Time(3_000)).is_some());
}

#[test]
fn a_queued_function_names_only_the_send_that_follows_it_to_its_cpu() {
    let mut s = Senders::new(false);
    s.event(0, &ev(1_000, 42, EventKind::CsdQueue { cpu: 2, func: 0xf1 }));
    s.event(0, &ev(1_100, 42, send(1, 0xd0)));
    assert_eq!(s.sender_of(1, Ipi::CallFunction, Time(1_200)).unwrap().work, 0xd0, "queued for another CPU");
    s.event(0, &ev(2_000, 42, EventKind::CsdQueue { cpu: 1, func: 0xf1 }));
    s.event(0, &ev(2_000 + CSD_TO_SEND.0 + 1, 42, send(1, 0xd0)));
    assert_eq!(s.sender_of(1, Ipi::CallFunction, Time(9_000_000)).unwrap().work, 0xd0, "too long before");
}

#[test]
fn senders_are_named_from_proc() {
    let mut s = Senders::new(true);
    let me = std::process::id() as i32;
    s.event(0, &ev(1_000, me, send(1, 0)));
    let who = s.sender_of(1, Ipi::Reschedule, Time(1_000)).unwrap();
    let comm = std::fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
    assert_eq!(who.to_string(), format!("from CPU 0 task {}:{me}", comm.trim_end()));
    s.event(0, &ev(2_000, 0, send(1, 0)));
    assert_eq!(s.sender_of(1, Ipi::Reschedule, Time(2_000)).unwrap().to_string(), "from CPU 0 (idle)");
}

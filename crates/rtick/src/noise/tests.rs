//! Crafted event sequences, attributed exactly.

use std::sync::Arc;

use super::*;
use crate::ktrace::{Comm, Event, EventKind, Ipi, Switch};
use crate::time::Time;

const SPINNER: i32 = 100;

fn ev(ts: i64, kind: EventKind) -> Event {
    Event { ts: Time(ts), pid: SPINNER, flags: 0, preempt_count: 0, kind }
}

fn switch(ts: i64, prev: (i32, i32), prev_state: i64, next: (&str, i32, i32)) -> Event {
    let name = |p: i32| Comm::new(if p == SPINNER { b"rtick-noise-1" } else { b"other" });
    // Recorded in the context of the task leaving.
    let mut e = ev(
        ts,
        EventKind::SchedSwitch(Switch {
            prev_comm: name(prev.0),
            prev_pid: prev.0,
            prev_prio: prev.1,
            prev_state,
            next_comm: Comm::new(next.0.as_bytes()),
            next_pid: next.1,
            next_prio: next.2,
        }),
    );
    e.pid = prev.0;
    e
}

fn irq(ts: i64, entry: bool) -> Event {
    match entry {
        true => ev(ts, EventKind::IrqHandlerEntry { irq: 11, name: Arc::from("virtio0") }),
        false => ev(ts, EventKind::IrqHandlerExit { irq: 11, ret: 1 }),
    }
}

fn virtio() -> Source {
    Source::Irq { irq: 11, name: Arc::from("virtio0") }
}

fn tally(a: &Attributor, s: &Source) -> Option<(u64, i64)> {
    a.sources.get(s).map(|t| (t.count, t.total.as_ns()))
}

fn run(a: &mut Attributor, events: &[Event], gaps: &[(i64, i64)], known: i64) {
    events.iter().for_each(|e| a.event(e));
    gaps.iter().for_each(|&(s, e)| a.gap(Gap { start: Time(s), end: Time(e) }));
    a.settle(Time(known));
}

#[test]
fn an_irq_inside_a_softirq_is_counted_once() {
    let mut a = Attributor::new(SPINNER, 120);
    let events = [
        ev(1100, EventKind::SoftirqEntry { vec: 1 }),
        irq(1200, true),
        irq(1300, false),
        ev(1500, EventKind::SoftirqExit { vec: 1 }),
    ];
    run(&mut a, &events, &[(1000, 2000)], 5000);
    assert_eq!(tally(&a, &virtio()), Some((1, 100)));
    assert_eq!(tally(&a, &Source::Softirq(1)), Some((1, 300)), "the IRQ's 100 ns are not the softirq's");
    assert_eq!(tally(&a, &Source::AroundEvents), Some((1, 600)));
    assert_eq!(tally(&a, &Source::HardwareOrHost), None);
    let w = &a.worst[0];
    assert_eq!(w.sources[0], (Source::AroundEvents, Nanos(600)));
    assert_eq!(w.sources.iter().map(|s| s.1.as_ns()).sum::<i64>(), 1000, "a gap's sources add up to it");
}

#[test]
fn a_gap_with_no_event_is_the_hardware_or_the_host() {
    let mut a = Attributor::new(SPINNER, 120);
    // The vector lies outside the gap: it delayed the spinner by less than the threshold.
    let events =
        [ev(500, EventKind::LocalTimerEntry { vector: 236 }), ev(600, EventKind::LocalTimerExit { vector: 236 })];
    run(&mut a, &events, &[(1000, 1700)], 5000);
    assert_eq!(tally(&a, &Source::HardwareOrHost), Some((1, 700)));
    assert_eq!(a.sources.len(), 1);
    assert_eq!((a.below_threshold.count, a.below_threshold.total), (1, Nanos(100)));
}

#[test]
fn a_switch_to_another_task_is_that_task_without_its_interrupts() {
    let mut a = Attributor::new(SPINNER, 120);
    let events = [
        switch(3100, (SPINNER, 120), 0x100, ("kworker/1:1", 55, 120)),
        irq(3200, true),
        irq(3250, false),
        ev(3300, EventKind::IpiEntry { ipi: Ipi::CallFunction, vector: 251 }),
        ev(3310, EventKind::IpiExit { ipi: Ipi::CallFunction, vector: 251 }),
        switch(3900, (55, 120), 1, ("rtick-noise-1", SPINNER, 120)),
    ];
    run(&mut a, &events, &[(3000, 4000)], 5000);
    let kworker = Source::Thread { comm: Comm::new(b"kworker/1:1"), pid: 55, prio: 120 };
    assert_eq!(tally(&a, &kworker), Some((1, 800 - 50 - 10)));
    assert_eq!(a.sources[&kworker].nested, Nanos(60), "its interrupts, counted apart");
    assert_eq!(tally(&a, &virtio()), Some((1, 50)));
    assert_eq!(tally(&a, &Source::Vector(Vector::Ipi(Ipi::CallFunction))), Some((1, 10)));
    assert_eq!(tally(&a, &Source::AroundEvents), Some((1, 200)));
    assert_eq!(a.ranked()[0].0, kworker);
}

/// On a CPU whose switches out of the idle task are not recorded (this
/// VM's CPU 1): a throttled RT spinner's CPU idles; the RT period timer
/// ends the stretch (an event of the idle task's), and a thread above the
/// spinner, woken meanwhile, runs first: its switch in is inferred right
/// after the timer, so its 2 µs are its own and the stretch is 49 µs, not 51.
/// The spinner's own event after an idle stretch ends the stretch likewise.
#[test]
fn a_switch_out_of_idle_not_recorded_is_inferred_after_the_idle_tasks_last_event() {
    let in_idle = |ts: i64, kind: EventKind| Event { pid: 0, ..ev(ts, kind) };
    let mut a = Attributor::new(SPINNER, 9);
    let events = [
        switch(10_000, (SPINNER, 9), 0, ("swapper/1", 0, 120)),
        in_idle(59_000, EventKind::HrtimerExpireExit { hrtimer: 1 }),
        switch(61_000, (71, 4), 1, ("rtick-noise-1", SPINNER, 9)),
        switch(70_000, (SPINNER, 9), 0, ("swapper/1", 0, 120)),
        in_idle(80_000, EventKind::HrtimerExpireExit { hrtimer: 1 }),
        ev(81_000, EventKind::LocalTimerEntry { vector: 236 }),
        ev(81_005, EventKind::LocalTimerExit { vector: 236 }),
    ];
    run(&mut a, &events, &[(9_990, 61_010), (69_990, 81_010)], 90_000);
    assert_eq!(tally(&a, &Source::RtThrottling), Some((2, 49_000 + 10_000)));
    let busy = Source::Thread { comm: Comm::new(b"other"), pid: 71, prio: 4 };
    assert_eq!(tally(&a, &busy), Some((1, 2_000)));
}

/// The same, the spinner's clock read at the gap's end its only sign of
/// being back (no event of its in the trace before the round ends).
#[test]
fn a_gap_ends_an_idle_stretch_whose_switch_to_the_spinner_was_not_recorded() {
    let mut a = Attributor::new(SPINNER, 9);
    let events = [
        switch(10_000, (SPINNER, 9), 0, ("swapper/1", 0, 120)),
        Event { pid: 0, ..ev(59_000, EventKind::HrtimerExpireExit { hrtimer: 1 }) },
    ];
    events.iter().for_each(|e| a.event(e));
    a.spinner_read(Time(59_100));
    run(&mut a, &[], &[(9_990, 59_100)], 60_000);
    assert_eq!(tally(&a, &Source::RtThrottling), Some((1, 49_000)));
    assert_eq!(a.below_threshold.count, 0);
}

#[test]
fn a_runnable_rt_spinner_replaced_by_lower_priorities_is_rt_throttling() {
    // SCHED_FIFO 90 is kernel priority 9.
    let mut a = Attributor::new(SPINNER, 9);
    let events = [
        switch(10_000, (SPINNER, 9), 0x100, ("bash", 70, 120)),
        switch(20_000, (70, 120), 1, ("swapper/1", 0, 120)),
        switch(60_000, (0, 120), 0, ("rtick-noise-1", SPINNER, 9)),
    ];
    run(&mut a, &events, &[(9_990, 60_010)], 70_000);
    assert_eq!(tally(&a, &Source::RtThrottling), Some((1, 50_000)));
    assert!(a.sources.keys().all(|s| !matches!(s, Source::Thread { .. })), "{:?}", a.sources);
    // Throttling ends with a thread above the spinner running first: that thread's time is its own.
    let events = [
        switch(100_000, (SPINNER, 9), 0, ("bash", 70, 120)),
        switch(150_000, (70, 120), 0, ("busy", 71, 4)),
        switch(152_000, (71, 4), 1, ("rtick-noise-1", SPINNER, 9)),
    ];
    run(&mut a, &events, &[(99_990, 152_010)], 160_000);
    assert_eq!(tally(&a, &Source::RtThrottling), Some((2, 100_000)));
    assert_eq!(tally(&a, &Source::Thread { comm: Comm::new(b"busy"), pid: 71, prio: 4 }), Some((1, 2_000)));
    // A higher-priority thread preempting it is that thread.
    let mut b = Attributor::new(SPINNER, 9);
    run(
        &mut b,
        &[switch(100, (SPINNER, 9), 0x100, ("busy", 71, 4)), switch(300, (71, 4), 1, ("n", SPINNER, 9))],
        &[(90, 310)],
        400,
    );
    assert_eq!(tally(&b, &Source::Thread { comm: Comm::new(b"busy"), pid: 71, prio: 4 }), Some((1, 200)));
    // Once that thread sleeps, idle running while the spinner could is throttling again.
    let mut c = Attributor::new(SPINNER, 9);
    let events = [
        switch(100, (SPINNER, 9), 0x100, ("busy", 71, 4)),
        switch(300, (71, 4), 1, ("swapper/1", 0, 120)),
        switch(900, (0, 120), 0, ("n", SPINNER, 9)),
    ];
    run(&mut c, &events, &[(90, 910)], 1000);
    assert_eq!(tally(&c, &Source::RtThrottling), Some((1, 600)));
    // A spinner that went to sleep (a page fault's I/O) lets idle run: that is idle, not throttling.
    let mut d = Attributor::new(SPINNER, 9);
    let events = [switch(100, (SPINNER, 9), 2, ("swapper/1", 0, 120)), switch(900, (0, 120), 0, ("n", SPINNER, 9))];
    run(&mut d, &events, &[(90, 910)], 1000);
    assert_eq!(tally(&d, &Source::Thread { comm: Comm::new(b"swapper/1"), pid: 0, prio: 120 }), Some((1, 800)));
}

#[test]
fn an_nmi_is_its_own_time_inside_what_it_interrupted() {
    let mut a = Attributor::new(SPINNER, 120);
    let events = [irq(1000, true), ev(1300, EventKind::Nmi { delta_ns: 100, handled: 1 }), irq(1400, false)];
    run(&mut a, &events, &[(900, 1500)], 2000);
    assert_eq!(tally(&a, &Source::Nmi), Some((1, 100)));
    assert_eq!(tally(&a, &virtio()), Some((1, 300)));
}

#[test]
fn a_gap_still_open_keeps_its_events_until_it_ends() {
    let mut a = Attributor::new(SPINNER, 120);
    // The spinner is off the CPU: the trace is read past the switch, but
    // the spinner's last read (3000) bounds what is known.
    run(&mut a, &[switch(3100, (SPINNER, 120), 0x100, ("kworker", 55, 120))], &[], 3000);
    run(&mut a, &[switch(3900, (55, 120), 1, ("n", SPINNER, 120))], &[], 3000);
    assert!(a.sources.is_empty() && a.below_threshold.count == 0);
    run(&mut a, &[], &[(3000, 4000)], 5000);
    assert_eq!(tally(&a, &Source::Thread { comm: Comm::new(b"kworker"), pid: 55, prio: 120 }), Some((1, 800)));
    assert_eq!(a.pending_gaps(), 0);
}

#[test]
fn bad_options_are_refused_before_anything_runs() {
    let bad = |o: NoiseOptions| o.plan().unwrap_err().to_string();
    assert!(bad(NoiseOptions { threshold: Nanos::ZERO, ..Default::default() }).contains("--threshold"));
    assert!(bad(NoiseOptions { duration: Some(Nanos::ZERO), ..Default::default() }).contains("-D"));
    assert!(bad(NoiseOptions { priority: Some(100), ..Default::default() }).contains("1–99"));
    assert!(bad(NoiseOptions { cpus: Some(vec![4000]), ..Default::default() }).contains("CPU 4000"));
    let allowed = crate::info::allowed_cpus().unwrap();
    let plan = NoiseOptions::default().plan().unwrap();
    if allowed.len() >= 2 {
        assert!(!plan.cpus.contains(&0) && plan.cpus.len() == allowed.len() - allowed.contains(&0) as usize);
    } else {
        assert_eq!(plan.cpus, allowed);
    }
    assert_eq!((plan.policy, plan.kernel_prio()), (crate::rt::Policy::Other, 120));
}

#[test]
fn threads_past_the_bound_are_counted_together() {
    let mut a = Attributor::new(SPINNER, 120);
    let n = source::MAX_THREADS as i64 + 10;
    for k in 0..n {
        let t = 10_000 * (k + 1);
        let events = [
            switch(t + 100, (SPINNER, 120), 0x100, ("make", 1000 + k as i32, 120)),
            switch(t + 300, (1000 + k as i32, 120), 1, ("n", SPINNER, 120)),
        ];
        run(&mut a, &events, &[(t, t + 400)], t + 500);
    }
    let threads = a.sources.keys().filter(|s| matches!(s, Source::Thread { .. })).count();
    assert_eq!(threads, source::MAX_THREADS);
    assert_eq!(tally(&a, &Source::OtherThreads), Some((10, 2000)));
    let total: i64 = a.sources.values().map(|t| t.total.as_ns()).sum();
    assert_eq!(total, 400 * n, "every gap is still counted in full");
}

#[test]
fn tick_stops_and_refusals_are_counted_with_their_reasons() {
    use crate::ktrace::TickDependency;
    let mut a = Attributor::new(SPINNER, 120);
    let tick = |ts, success, dep| ev(ts, EventKind::TickStop { success, dependency: TickDependency(dep) });
    // Stopped once; then kept by a POSIX timer, by RCU twice (once with perf).
    let events = [tick(100, true, 0), tick(200, false, 1), tick(300, false, 1 << 4), tick(400, false, 0b10010)];
    run(&mut a, &events, &[], 500);
    assert_eq!((a.tick.stopped, a.tick.kept), (1, 3));
    assert_eq!(a.tick.reasons[0].0, "RCU");
    assert_eq!(a.tick.reasons[0].2, 2);
    assert!(a.sources.is_empty(), "a tick event is no noise of its own");
}

#[test]
fn a_thread_to_attach_to_is_checked_before_anything_runs() {
    let bad = |tid: i32, o: NoiseOptions| o.plan_attach(tid).unwrap_err().to_string();
    let own = std::process::id() as i32;
    assert!(bad(own, NoiseOptions::default()).contains("rtick's own"));
    assert!(bad(2, NoiseOptions::default()).contains("kernel thread"), "kthreadd");
    assert!(bad(i32::MAX, NoiseOptions::default()).starts_with("no process or thread"));
    assert!(bad(1, NoiseOptions { threshold: Nanos::ZERO, ..Default::default() }).contains("--threshold"));
    let init = NoiseOptions::default().plan_attach(1).unwrap();
    assert_eq!(init.thread.tid, 1);
    assert!(!init.plan.cpus.is_empty() && init.plan.cpus.iter().all(|c| init.thread.affinity.contains(c)));
}

/// Instances past the memory bound are counted apart from gaps: only
/// dropped gaps are left unattributed.
#[test]
fn dropped_instances_are_not_counted_as_dropped_gaps() {
    let mut a = Attributor::new(SPINNER, 120);
    for k in 0..(1i64 << 16) + 3 {
        a.event(&irq(1000 + 10 * k, true));
        a.event(&irq(1005 + 10 * k, false));
    }
    assert_eq!((a.dropped_instances, a.dropped_gaps), (3, 0));
    for k in 0..(1i64 << 16) + 2 {
        a.gap(Gap { start: Time(10_000_000 + 10 * k), end: Time(10_000_005 + 10 * k) });
    }
    assert_eq!((a.dropped_instances, a.dropped_gaps), (3, 2));
}

/// A thread source's cgroup is read as the thread is first named, from
/// the reader given (none without one; none for the root).
#[test]
fn a_thread_source_carries_its_cgroup() {
    let d = tempfile::tempdir().unwrap();
    for (pid, comm, cgroup) in [(55, "hog", "1:cpu:/rtick-hogs\n0::/\n"), (56, "free", "1:cpu:/\n0::/\n")] {
        let proc = d.path().join(format!("proc/{pid}"));
        std::fs::create_dir_all(&proc).unwrap();
        std::fs::write(proc.join("comm"), format!("{comm}\n")).unwrap();
        std::fs::write(proc.join("cgroup"), cgroup).unwrap();
    }
    let cgroups: &'static crate::explain::Cgroups =
        Box::leak(Box::new(crate::explain::Cgroups::new(crate::system::SysRoot::new(d.path()))));
    let events = [
        switch(3100, (SPINNER, 120), 0x100, ("hog", 55, 120)),
        switch(3500, (55, 120), 1, ("free", 56, 120)),
        switch(3900, (56, 120), 1, ("rtick-noise-1", SPINNER, 120)),
    ];
    let thread = |comm: &[u8], pid| Source::Thread { comm: Comm::new(comm), pid, prio: 120 };
    let mut a = Attributor::new(SPINNER, 120);
    a.read_cgroups(cgroups);
    run(&mut a, &events, &[(3000, 4000)], 5000);
    assert_eq!(tally(&a, &thread(b"hog", 55)), Some((1, 400)));
    assert_eq!(a.cgroups.get(&thread(b"hog", 55)).map(|p| &**p), Some("/rtick-hogs"));
    assert_eq!(a.cgroups.len(), 1, "the root names nothing: {:?}", a.cgroups);
    let mut b = Attributor::new(SPINNER, 120);
    run(&mut b, &events, &[(3000, 4000)], 5000);
    assert!(b.cgroups.is_empty() && b.sources.len() == a.sources.len(), "no reader, no cgroup");
}

#[test]
fn an_ipi_in_a_gap_is_tallied_with_its_sender_from_the_send_events() {
    use crate::ktrace::{IpiSend, Senders, Targets};
    let send = |ts: i64, pid: i32, callback: u64| Event {
        pid,
        ..ev(ts, EventKind::IpiSend(IpiSend { targets: Targets::Cpu(1), callsite: 0x10, callback }))
    };
    // CPU 0, task 42: queues 0xf1 for CPU 1 and sends three call-function IPIs; the last one's IPI is outside any gap.
    let mut senders = Senders::new(false);
    for at in [1000, 2000, 6000] {
        senders.event(0, &Event { pid: 42, ..ev(at - 50, EventKind::CsdQueue { cpu: 1, func: 0xf1 }) });
        senders.event(0, &send(at, 42, 0xd0));
    }
    let single = |ts: i64, entry: bool| {
        let (ipi, vector) = (Ipi::CallFunctionSingle, 251);
        ev(ts, if entry { EventKind::IpiEntry { ipi, vector } } else { EventKind::IpiExit { ipi, vector } })
    };
    // A reschedule IPI no send was traced for: counted, its sender unnamed.
    let resched = [
        ev(3100, EventKind::IpiEntry { ipi: Ipi::Reschedule, vector: 253 }),
        ev(3110, EventKind::IpiExit { ipi: Ipi::Reschedule, vector: 253 }),
    ];
    let events = [single(1010, true), single(1030, false), single(2010, true), single(2030, false)];
    let mut a = Attributor::new(SPINNER, 120);
    for e in events.iter().chain(&resched).chain(&[single(6010, true), single(6030, false)]) {
        a.event_from(e, senders.sender_of_entry(1, e).cloned());
    }
    [(1000, 1100), (2000, 2100), (3000, 3200)].iter().for_each(|&(s, e)| a.gap(Gap { start: Time(s), end: Time(e) }));
    a.settle(Time(9000));
    let call = Source::Vector(Vector::Ipi(Ipi::CallFunctionSingle));
    assert_eq!(tally(&a, &call), Some((2, 40)));
    let by = &a.senders[&call];
    let (top, n) = by.top().unwrap();
    assert_eq!((top.cpu, top.pid, top.work, n, by.named()), (0, 42, 0xf1, 2, 2), "the queued function, in gaps only");
    assert_eq!(tally(&a, &Source::Vector(Vector::Ipi(Ipi::Reschedule))), Some((1, 10)));
    assert!(!a.senders.contains_key(&Source::Vector(Vector::Ipi(Ipi::Reschedule))), "no send seen: no sender");
}

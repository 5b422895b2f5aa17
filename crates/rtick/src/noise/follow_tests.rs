//! `--attach`: gaps found in crafted event sequences, attributed by the
//! spinner's code.

use std::sync::Arc;

use super::follow::Follower;
use super::source::{Source, Vector};
use crate::ktrace::{Comm, Event, EventKind, Switch};
use crate::time::{Nanos, Time};

const APP: i32 = 500;
/// SCHED_FIFO 50.
const PRIO: i32 = 49;

fn ev(ts: i64, kind: EventKind) -> Event {
    Event { ts: Time(ts), pid: APP, flags: 0, preempt_count: 0, kind }
}

fn switch(ts: i64, prev: i32, prev_state: i64, next: (&str, i32, i32)) -> Event {
    let prio = |p: i32| if p == APP { PRIO } else { 120 };
    // Recorded in the context of the task leaving.
    let mut e = ev(
        ts,
        EventKind::SchedSwitch(Switch {
            prev_comm: Comm::new(if prev == APP { b"poller" } else { b"other" }),
            prev_pid: prev,
            prev_prio: prio(prev),
            prev_state,
            next_comm: Comm::new(next.0.as_bytes()),
            next_pid: next.1,
            next_prio: next.2,
        }),
    );
    e.pid = prev;
    e
}

fn follower() -> Follower {
    let mut f = Follower::new(APP, PRIO, Nanos(100), Time(0));
    f.running_at(Time(0));
    f
}

fn total(f: &Follower, s: &Source) -> Option<(u64, i64)> {
    f.attr.sources.get(s).map(|t| (t.count, t.total.as_ns()))
}

#[test]
fn a_higher_priority_thread_that_preempts_it_is_named_with_its_time() {
    let mut f = follower();
    let busy = ("busy", 77, 39);
    [switch(1_000, APP, 0x100, busy), switch(3_000, 77, 1, ("poller", APP, PRIO))].iter().for_each(|e| f.event(e));
    f.finish(Time(10_000));
    let src = Source::Thread { comm: Comm::new(b"busy"), pid: 77, prio: 39 };
    assert_eq!(total(&f, &src), Some((1, 2_000)));
    assert_eq!((f.noise, f.max_gap, f.gaps.len()), (Nanos(2_000), Nanos(2_000), 1));
    assert_eq!(f.present, Nanos(10_000), "waiting for the CPU is time on it");
    assert!(!f.attr.sources.contains_key(&Source::HardwareOrHost), "every gap here has events");
}

#[test]
fn an_interrupt_while_it_runs_is_a_gap_of_its_own_length() {
    let mut f = follower();
    let events = [
        ev(1_000, EventKind::IrqHandlerEntry { irq: 11, name: Arc::from("virtio0") }),
        ev(1_300, EventKind::IrqHandlerExit { irq: 11, ret: 1 }),
        ev(1_300, EventKind::SoftirqEntry { vec: 3 }),
        ev(1_800, EventKind::SoftirqExit { vec: 3 }),
        // Shorter than the threshold: below it.
        ev(5_000, EventKind::LocalTimerEntry { vector: 236 }),
        ev(5_050, EventKind::LocalTimerExit { vector: 236 }),
        ev(7_000, EventKind::Nmi { delta_ns: 400, handled: 1 }),
    ];
    events.iter().for_each(|e| f.event(e));
    f.finish(Time(10_000));
    assert_eq!(total(&f, &Source::Irq { irq: 11, name: Arc::from("virtio0") }), Some((1, 300)));
    assert_eq!(total(&f, &Source::Softirq(3)), Some((1, 500)));
    assert_eq!(total(&f, &Source::Nmi), Some((1, 400)));
    assert_eq!(total(&f, &Source::Vector(Vector::LocalTimer)), None);
    assert_eq!((f.attr.below_threshold.count, f.attr.below_threshold.total), (1, Nanos(50)));
    // The softirq at the IRQ's exit is a gap apart, with no time between them.
    assert_eq!((f.gaps.len(), f.noise, f.max_gap), (3, Nanos(1_200), Nanos(500)));
}

#[test]
fn what_runs_while_it_sleeps_or_runs_elsewhere_is_not_its_noise() {
    let mut f = follower();
    let events = [
        switch(1_000, APP, 1, ("swapper/1", 0, 120)),
        // In the idle task's context: the thread sleeps.
        Event { pid: 0, ..ev(1_500, EventKind::IrqHandlerEntry { irq: 11, name: Arc::from("virtio0") }) },
        Event { pid: 0, ..ev(1_900, EventKind::IrqHandlerExit { irq: 11, ret: 1 }) },
        switch(4_000, 0, 0, ("poller", APP, PRIO)),
        // Preempted by a higher priority, then switched in on another CPU at 6 000.
        switch(5_000, APP, 0, ("migration/1", 9, 0)),
    ];
    events.iter().for_each(|e| f.event(e));
    f.left(Time(6_000));
    f.event(&switch(7_000, 9, 1, ("swapper/1", 0, 120)));
    f.finish(Time(10_000));
    let migration = Source::Thread { comm: Comm::new(b"migration/1"), pid: 9, prio: 0 };
    assert_eq!(total(&f, &migration), Some((1, 1_000)), "until it ran elsewhere");
    assert_eq!(f.attr.sources.len(), 1, "{:?}", f.attr.sources);
    assert_eq!(f.attr.below_threshold.count, 0, "the IRQ while it slept is nobody's noise here");
    assert_eq!(f.present, Nanos(1_000 + 2_000), "on this CPU: 0–1 000, then 4 000–6 000");
}

#[test]
fn a_wait_still_open_keeps_its_events_until_it_ends() {
    let mut f = follower();
    f.event(&switch(1_000, APP, 0, ("migration/1", 9, 0)));
    f.settle(Time(2_000));
    assert!(f.attr.sources.is_empty() && f.attr.below_threshold.count == 0);
    f.event(&switch(3_000, 9, 1, ("poller", APP, PRIO)));
    f.settle(Time(4_000));
    assert_eq!(total(&f, &Source::Thread { comm: Comm::new(b"migration/1"), pid: 9, prio: 0 }), Some((1, 2_000)));
}

#[test]
fn rt_throttling_of_the_thread_is_named_as_for_a_spinner() {
    let mut f = follower();
    let events = [
        switch(1_000, APP, 0, ("bash", 70, 120)),
        switch(20_000, 70, 1, ("swapper/1", 0, 120)),
        switch(51_000, 0, 0, ("poller", APP, PRIO)),
    ];
    events.iter().for_each(|e| f.event(e));
    f.finish(Time(60_000));
    assert_eq!(total(&f, &Source::RtThrottling), Some((1, 50_000)));
}

#[test]
fn a_wait_under_way_at_the_end_is_charged_to_who_ran() {
    let mut f = follower();
    f.event(&switch(1_000, APP, 0, ("swapper/1", 0, 120)));
    f.finish(Time(9_000));
    assert_eq!(total(&f, &Source::RtThrottling), Some((1, 8_000)));
}

#[test]
fn an_event_fired_in_the_thread_ends_its_wait_when_the_switch_was_lost() {
    let mut f = follower();
    f.event(&switch(1_000, APP, 0, ("migration/1", 9, 0)));
    // The switch back at 2 000 was lost; a tick at 5 000 fired in the thread.
    let mut tick = ev(5_000, EventKind::LocalTimerEntry { vector: 236 });
    f.event(&tick);
    tick.kind = EventKind::LocalTimerExit { vector: 236 };
    tick.ts = Time(5_300);
    f.event(&tick);
    f.finish(Time(9_000));
    assert_eq!(f.gaps.len(), 2, "the wait until 5 000, then the tick");
    assert_eq!(total(&f, &Source::Vector(Vector::LocalTimer)), Some((1, 300)));
    let migration = Source::Thread { comm: Comm::new(b"migration/1"), pid: 9, prio: 0 };
    assert_eq!(total(&f, &migration), Some((1, 4_000)));
}

/// Asleep (its CPU idle), woken by an interrupt at 3 000, and running
/// without a recorded switch out of idle (this VM's CPU 1): its first event
/// (4 000) says it is here, since idle's last event; an interrupt then is
/// a gap of its, and its time here counts from 3 000.
#[test]
fn a_switch_in_out_of_idle_not_recorded_brings_it_back_after_idles_last_event() {
    let mut f = follower();
    let in_idle = |ts: i64, kind: EventKind| Event { pid: 0, ..ev(ts, kind) };
    let events = [
        switch(1_000, APP, 1, ("swapper/1", 0, 120)),
        in_idle(2_900, EventKind::IrqHandlerEntry { irq: 11, name: Arc::from("virtio0") }),
        in_idle(3_000, EventKind::IrqHandlerExit { irq: 11, ret: 1 }),
        ev(4_000, EventKind::IrqHandlerEntry { irq: 11, name: Arc::from("virtio0") }),
        ev(4_500, EventKind::IrqHandlerExit { irq: 11, ret: 1 }),
    ];
    events.iter().for_each(|e| f.event(e));
    assert_eq!(f.here_since(), Some(Time(3_000)));
    f.finish(Time(10_000));
    assert_eq!(total(&f, &Source::Irq { irq: 11, name: Arc::from("virtio0") }), Some((1, 500)));
    assert_eq!((f.gaps.len(), f.present), (1, Nanos(1_000 + 7_000)));
}

/// The same, but its first event back is its own switch out (it ran with
/// no other event): it was here from idle's last event to that switch.
#[test]
fn a_thread_whose_first_event_back_is_its_switch_out_was_here_until_then() {
    let mut f = follower();
    let events = [
        switch(1_000, APP, 1, ("swapper/1", 0, 120)),
        Event { pid: 0, ..ev(3_000, EventKind::IrqHandlerExit { irq: 11, ret: 1 }) },
        switch(3_500, APP, 1, ("swapper/1", 0, 120)),
    ];
    events.iter().for_each(|e| f.event(e));
    assert_eq!(f.here_since(), None, "asleep again");
    f.finish(Time(10_000));
    assert_eq!(f.present, Nanos(1_000 + 500));
}

#[test]
fn events_before_the_start_are_stale_and_ignored() {
    // Where it is at 1 000 is read from /proc: it runs here.
    let mut f = Follower::new(APP, PRIO, Nanos(100), Time(1_000));
    f.running_at(Time(1_000));
    // Read from the buffer, but from before the start: it ran elsewhere then.
    f.event(&switch(500, APP, 0, ("migration/1", 9, 0)));
    f.left(Time(600));
    f.finish(Time(3_000));
    assert_eq!((f.present, f.gaps.len()), (Nanos(2_000), 0));
}

//! Spikes made to order, as event sequences with exact times (ns), and the
//! verdict each must get.

use super::testing::{ev, preempted, switch, waking, IDLE, ME, MEE};
use super::*;
use crate::ktrace::{Event, EventKind as K};

/// The thread sleeps at 0 (armed for 10_000); `between` happens on the CPU;
/// the timer fires at `exp`, the thread is woken at `wake` and switched in
/// at `run` from `from`; it reads its clock 1 µs later.
fn scenario(between: Vec<Event>, exp: i64, wake: i64, run: i64, from: (&str, i32, i32)) -> (Vec<Event>, [Recorded; 1]) {
    let mut evs = vec![
        ev(
            0,
            ME,
            K::HrtimerStart {
                hrtimer: 0xa0,
                function: 0xf0,
                expires: Time(10_000),
                softexpires: Time(10_000),
                mode: 0,
            },
        ),
        ev(1, ME, switch(MEE, IDLE)),
    ];
    evs.extend(between);
    evs.push(ev(exp, 0, K::HrtimerExpireEntry { hrtimer: 0xa0, now: Time(exp), function: 0xf0 }));
    evs.push(ev(wake, 0, waking(ME, 9)));
    evs.push(ev(wake + 1, 0, K::HrtimerExpireExit { hrtimer: 0xa0 }));
    evs.push(ev(run, from.1, switch(from, MEE)));
    evs.sort_by_key(|e| e.ts);
    (evs, [Recorded { tid: ME, cycle: 18, planned: Time(10_000), actual: Time(run + 1_000) }])
}

fn explain(evs: &[Event], w: &[Recorded], steal: &[StealSample]) -> Spike {
    let cpus = [CpuTrace { cpu: 1, events: evs }];
    Analysis::new(&cpus, w).with_cstates(deep_states()).spike(w, 0, steal).expect("matched")
}

/// CPU 1's idle states in these tests (not this machine's): the deepest
/// exits in 500 µs, so an untraced one explains a delay of up to 1.02 ms.
fn deep_states() -> CStates {
    let c = |name: &str, us: i64| CState { name: name.into(), exit_latency: Nanos::from_us(us) };
    CStates::default().with(1, vec![c("POLL", 0), c("C1", 2), c("C6", 133), c("C10", 500)])
}

fn task(comm: &str, pid: i32, prio: i32) -> Task {
    Task { comm: comm.into(), pid, prio }
}

#[test]
fn a_late_interrupt_on_an_idle_cpu_with_steal_is_the_host() {
    let (evs, w) = scenario(vec![], 810_000, 812_000, 824_000, IDLE);
    let steal = [
        StealSample { at: Time(0), cpu: 1, steal: Nanos::from_ms(40) },
        StealSample { at: Time(900_000), cpu: 1, steal: Nanos::from_ms(40) + Nanos::from_us(790) },
        StealSample { at: Time(900_000), cpu: 0, steal: Nanos::from_ms(99) },
    ];
    let s = explain(&evs, &w, &steal);
    assert_eq!(s.phases.total(), Nanos(815_000));
    assert_eq!(s.phases.irq_delay, Nanos(800_000));
    assert_eq!(s.cause, Cause::IdleExit { steal: Some(Nanos::from_us(790)), state: None });
    assert_eq!(
        s.line(),
        "cycle 18  815.0 µs = IRQ delay 800.0 µs: CPU idle, steal +790.0 µs around it → the host held the vCPU | scheduling 12.0 µs"
    );
    // No steal sampled: it cannot tell the host from the idle state.
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::IdleExit { steal: None, state: None });
}

/// A late timer interrupt while a task ran, taken in user space (its
/// stack: the interrupt's entry and nothing of a kernel path after it):
/// interrupts were on, so the host held the vCPU, not the task; taken in
/// the kernel, the task's interrupts-off stretch.
#[test]
fn a_late_interrupt_taken_in_user_space_is_the_host() {
    let syms = crate::ktrace::kallsyms::system().ok();
    let addr = |name: &str| syms.and_then(|k| k.address(name));
    let (Some(irq), Some(entry), Some(read)) =
        (addr("hrtimer_interrupt"), addr("asm_sysvec_apic_timer_interrupt"), addr("vfs_read"))
    else {
        assert!(std::env::var_os("CI").is_none(), "/proc/kallsyms with addresses (root) under CI");
        return;
    };
    let busy = ("kworker/1:2", 300, 120);
    let (mut evs, w) = scenario(vec![ev(5_000, 0, switch(IDLE, busy))], 310_000, 311_000, 320_000, busy);
    let at = 1 + evs.iter().position(|e| matches!(e.kind, K::HrtimerExpireEntry { .. })).unwrap();
    evs.insert(at, ev(310_000, 0, K::KernelStack { frames: [irq, entry].as_slice().into() }));
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::HostInUser(task("kworker/1:2", 300, 120)));
    assert_eq!(s.cause.token(), "host");
    assert!(s.line().contains("the interrupt came in user space in kworker/1:2:300"), "{}", s.line());
    evs[at] = ev(310_000, 0, K::KernelStack { frames: [irq, entry, read].as_slice().into() });
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::IrqsOffIn(task("kworker/1:2", 300, 120)));
}

#[test]
fn a_late_interrupt_while_a_task_ran_blames_that_task() {
    let busy = ("kworker/1:2", 300, 120);
    let (evs, w) = scenario(vec![ev(5_000, 0, switch(IDLE, busy))], 310_000, 311_000, 320_000, busy);
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::IrqsOffIn(task("kworker/1:2", 300, 120)));
    assert_eq!(s.culprits[0], [(Culprit::Task(task("kworker/1:2", 300, 120)), Nanos(300_000))]);
    // The same with steal counted around it: the host, while that task ran.
    let steal = [
        StealSample { at: Time(0), cpu: 1, steal: Nanos::ZERO },
        StealSample { at: Time(400_000), cpu: 1, steal: Nanos::from_ms(10) },
    ];
    let s = explain(&evs, &w, &steal);
    assert_eq!(s.cause, Cause::HostWhile { task: task("kworker/1:2", 300, 120), steal: Nanos::from_ms(10) });
    assert!(
        s.line().contains("steal +10.00 ms around it while kworker/1:2:300 ran → the host held the vCPU"),
        "{}",
        s.line()
    );
}

#[test]
fn a_higher_priority_thread_is_named_as_the_preemptor() {
    // The timer is on time; a SCHED_FIFO 95 hog (kernel prio 4) runs from 2 µs past
    // the deadline to 512 µs, and the thread is switched in from it.
    let hog = ("hog", 4242, 4);
    let (evs, w) = scenario(vec![ev(12_000, 0, switch(IDLE, hog))], 10_500, 11_000, 512_000, hog);
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.phases.scheduling, Nanos(501_000));
    assert_eq!(s.cause, Cause::PreemptedBy(task("hog", 4242, 4)));
    assert_eq!(s.culprits[2][0], (Culprit::Task(task("hog", 4242, 4)), Nanos(500_000)));
    assert!(s.line().contains("scheduling 501.0 µs: preempted by hog:4242 (prio 4)"), "{}", s.line());
}

#[test]
fn interrupt_work_and_throttling_in_the_scheduling_delay() {
    // A TIMER softirq runs 100 µs between the wake-up and the switch.
    let soft = vec![ev(11_100, 0, K::SoftirqEntry { vec: 1 }), ev(111_100, 0, K::SoftirqExit { vec: 1 })];
    let (evs, w) = scenario(soft, 10_500, 11_000, 112_000, IDLE);
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::InterruptWork(Culprit::Softirq("TIMER")));
    // The CPU stays idle for 50 ms while the woken real-time thread waits: throttled.
    let (evs, w) = scenario(vec![], 10_500, 11_000, 50_011_000, IDLE);
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::Throttled);
    assert_eq!(phase_summary(&[s.phases])[2], ("scheduling", [Nanos(50_000_000); 3]));
    // A short idle stretch is the CPU leaving an idle state, not throttling.
    let (evs, w) = scenario(vec![], 10_500, 11_000, 40_000, IDLE);
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::IdleExit { steal: None, state: None });
}

#[test]
fn a_task_that_preempts_the_thread_after_its_wake_up_is_named() {
    // Woken and switched in on time (10_020), then preempted by a FIFO 95
    // task for 800 µs before it read its clock (at 821_020): the switch
    // back in is not its wake-up, and the preemption is the return to user's.
    let hog = ("hog", 42, 4);
    let (mut evs, mut w) = scenario(vec![], 10_005, 10_010, 10_020, IDLE);
    evs.push(ev(10_100, ME, preempted(MEE, hog)));
    evs.push(ev(810_100, 42, switch(hog, MEE)));
    w[0].actual = Time(821_020);
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.matched.switched_in, Time(10_020));
    assert_eq!(s.phases.return_to_user, Nanos(811_000));
    assert_eq!(s.cause, Cause::PreemptedBy(task("hog", 42, 4)));
    // The same task at a lower priority than the thread held it up instead.
    let low = ("hog", 42, 120);
    for e in &mut evs {
        if let K::SchedSwitch(sw) = &mut e.kind {
            if sw.next_pid == 42 {
                sw.next_prio = 120;
            }
            if sw.prev_pid == 42 {
                sw.prev_prio = 120;
            }
        }
    }
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::WaitedFor(task(low.0, low.1, low.2)));
}

#[test]
fn a_short_interrupt_in_a_long_idle_irq_delay_is_not_the_cause() {
    // 620 µs of IRQ delay on an idle CPU, 46 µs of it another hrtimer's
    // callback: the CPU was idle (or the host held it), not held by the callback.
    let other = vec![
        ev(300_000, 0, K::HrtimerExpireEntry { hrtimer: 0xb0, now: Time(300_000), function: 0xf9 }),
        ev(346_000, 0, K::HrtimerExpireExit { hrtimer: 0xb0 }),
    ];
    let (evs, w) = scenario(other.clone(), 630_000, 631_000, 640_000, IDLE);
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::IdleExit { steal: None, state: None });
    // Where it took most of the delay, it is.
    let long = vec![
        ev(30_000, 0, K::HrtimerExpireEntry { hrtimer: 0xb0, now: Time(30_000), function: 0xf9 }),
        ev(600_000, 0, K::HrtimerExpireExit { hrtimer: 0xb0 }),
    ];
    let (evs, w) = scenario(long, 630_000, 631_000, 640_000, IDLE);
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::InterruptWork(Culprit::Hrtimer { hrtimer: 0xb0, function: 0xf9 }));
}

/// Spike `w` of `evs` on CPU 1, with the idle-state table `cstates`.
fn explain_with(evs: &[Event], w: &[Recorded], cstates: CStates) -> Spike {
    let cpus = [CpuTrace { cpu: 1, events: evs }];
    let m = match_all(&cpus, w)[0].expect("matched");
    let mut tl = Timeline::build(evs, Time(w[0].actual.0 + 1));
    tl.cstates = Some(cstates);
    Spike::explain(w[0], m, &tl, &[])
}

#[test]
fn a_kworker_culprit_names_its_work_function() {
    // kworker/1:2 runs from 5 µs; its work item vmstat_update from 6 µs to
    // 300 µs with interrupts off; the timer fires at 310 µs.
    let k = crate::ktrace::kallsyms::Kallsyms::load().expect("root reads /proc/kallsyms");
    let f = k.address("vmstat_update").expect("vmstat_update in kallsyms");
    let kw = ("kworker/1:2", 300, 120);
    let work = vec![
        ev(5_000, 0, switch(IDLE, kw)),
        ev(6_000, 300, K::WorkStart { work: 0xd0, function: f }),
        ev(300_000, 300, K::WorkEnd { work: 0xd0 }),
    ];
    let (evs, w) = scenario(work, 310_000, 311_000, 320_000, kw);
    let mut s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::IrqsOffIn(task("kworker/1:2", 300, 120)));
    assert_eq!(s.work, Some(f));
    assert!(
        s.line().contains(
            "interrupts off in kworker/1:2:300 running vmstat_update (or a host stall below steal's 10 ms ticks)"
        ),
        "{}",
        s.line()
    );
    // Its cgroup follows what it ran; the hedge comes last.
    s.cgroup = Some("/system.slice/k.service".into());
    assert!(
        s.line().contains("kworker/1:2:300 running vmstat_update in /system.slice/k.service (or a host stall"),
        "{}",
        s.line()
    );
    // Another task's work item is not this culprit's.
    let mut other = evs.clone();
    for e in &mut other {
        if matches!(e.kind, K::WorkStart { .. } | K::WorkEnd { .. }) {
            e.pid = 301;
        }
    }
    assert_eq!(explain(&other, &w, &[]).work, None);
}

#[test]
fn an_idle_exit_is_told_from_the_host_by_the_state_the_cpu_was_in() {
    // Idle in state 2 from 2 µs; the timer interrupt comes 200 µs late.
    let (evs, w) = scenario(vec![ev(2_000, 0, K::CpuIdle { state: 2 })], 210_000, 211_000, 220_000, IDLE);
    let c = |name: &str, us: i64| CState { name: name.into(), exit_latency: Nanos::from_us(us) };
    // C6's 133 µs exit explains it: an idle-state exit, with the remedy.
    let table = vec![c("POLL", 0), c("C1", 2), c("C6", 133)];
    let s = explain_with(&evs, &w, CStates::default().with(1, table));
    assert_eq!(s.cause, Cause::IdleExit { steal: None, state: Some(c("C6", 133)) });
    assert_eq!(s.cause.token(), "idle_exit");
    assert!(
        s.line().contains("IRQ delay 200.0 µs: CPU idle in C6 (exit latency 133.0 µs) → idle-state exit (keep the CPU shallower: --deepest-idle-state, --dma-latency)"),
        "{}",
        s.line()
    );
    // A 2 µs state does not: the host (or firmware).
    let table = vec![c("POLL", 0), c("C1", 1), c("C1E", 2)];
    let s = explain_with(&evs, &w, CStates::default().with(1, table));
    assert_eq!(s.cause, Cause::HostIdle(c("C1E", 2)));
    assert_eq!(s.cause.token(), "host");
    assert!(
        s.line().contains(
            "CPU idle in C1E (exit latency 2.0 µs), far less than the delay → the host (or firmware) held the CPU"
        ),
        "{}",
        s.line()
    );
    // No cpuidle driver for the CPU: HLT, which exits in about a microsecond.
    let s = explain_with(&evs, &w, CStates::default());
    assert_eq!(s.cause, Cause::HostIdle(CState::halt()));
    // Left idle before the deadline: the state no longer applies.
    let (evs, w) = scenario(
        vec![
            ev(2_000, 0, K::CpuIdle { state: 2 }),
            ev(9_000, 0, K::CpuIdle { state: crate::ktrace::EventKind::IDLE_EXIT }),
        ],
        210_000,
        211_000,
        220_000,
        IDLE,
    );
    assert_eq!(explain_with(&evs, &w, deep_states()).cause, Cause::IdleExit { steal: None, state: None });
    // Whatever state it was in, none of this CPU's exits in more than 2 µs
    // (or it has no cpuidle driver: HLT): the host.
    let s = explain_with(&evs, &w, CStates::default().with(1, vec![c("POLL", 0), c("haltpoll idle", 2)]));
    assert_eq!(s.cause, Cause::HostIdleAnyState(c("haltpoll idle", 2)));
    assert_eq!((s.cause.token(), s.cause_key().as_str()), ("host", "host"));
    assert!(
        s.line().contains(
            "IRQ delay 200.0 µs: CPU idle: even its deepest state, haltpoll idle (exit latency 2.0 µs), is far less than the delay → the host (or firmware) held the CPU"
        ),
        "{}",
        s.line()
    );
    assert_eq!(explain_with(&evs, &w, CStates::default()).cause, Cause::HostIdleAnyState(CState::halt()));
    // HLT explains up to 22 µs: 30 µs is the host, 15 µs an idle exit.
    let (evs, w) = scenario(vec![], 40_000, 41_000, 50_000, IDLE);
    let halt = explain_with(&evs, &w, CStates::default());
    assert_eq!(halt.cause, Cause::HostIdleAnyState(CState::halt()));
    let (evs, w) = scenario(vec![], 25_000, 26_000, 30_000, IDLE);
    assert_eq!(explain_with(&evs, &w, CStates::default()).cause, Cause::IdleExit { steal: None, state: None });
    // 60 µs, of which 50 µs the timer's slack (the kernel fired it late on
    // purpose): 10 µs are the idle exit's, within HLT's.
    let (mut evs, w) = scenario(vec![], 70_000, 71_000, 80_000, IDLE);
    assert_eq!(explain_with(&evs, &w, CStates::default()).cause, Cause::HostIdleAnyState(CState::halt()));
    for e in &mut evs {
        if let K::HrtimerStart { expires, .. } = &mut e.kind {
            *expires = Time(60_000);
        }
    }
    assert_eq!(explain_with(&evs, &w, CStates::default()).cause, Cause::IdleExit { steal: None, state: None });
}

/// A thread still on its CPU at its own deadline blames no idle state: it
/// armed its timer after the deadline (it asked late), or the interrupt
/// was late while it ran, as while any task ran; unless another task held
/// the CPU most of the delay (it is named), or the thread slept and the
/// CPU idled (the idle verdict).
#[test]
fn a_thread_on_its_cpu_at_its_deadline_blames_no_idle_state() {
    // Switched in at 2 ns for its previous cycle (which ended at 3 ns), it
    // armed its timer at 5 µs and never left the CPU: the timer fired at
    // 300 µs, 290 µs after its deadline, and woke it where it ran.
    let (evs, w) = scenario(vec![], 300_000, 300_500, 301_000, IDLE);
    let mut evs: Vec<Event> = evs.into_iter().filter(|e| !matches!(e.kind, K::SchedSwitch(_))).collect();
    evs.iter_mut().filter(|e| matches!(e.kind, K::HrtimerStart { .. })).for_each(|e| e.ts = Time(5_000));
    evs.push(ev(2, 0, switch(IDLE, MEE)));
    let before = Recorded { tid: ME, cycle: 17, planned: Time(-990_000), actual: Time(3) };
    let w = [Recorded { actual: Time(302_000), ..w[0] }, before];
    let with = |more: Vec<Event>| {
        let mut all = evs.clone();
        all.extend(more);
        all.sort_by_key(|e| e.ts);
        explain_with(&all, &w, CStates::default())
    };
    let me = task(MEE.0, ME, 9);
    // Armed before its deadline: the interrupt was late while it ran.
    let s = with(vec![]);
    assert_eq!(s.phases.irq_delay, Nanos(290_000));
    assert_eq!(s.cause, Cause::IrqsOffIn(me.clone()));
    // Armed again at 200 µs, 190 of the 290 µs after its deadline: it asked late.
    let rearm = |at: i64| {
        let mut e = evs.iter().find(|e| matches!(e.kind, K::HrtimerStart { .. })).unwrap().clone();
        e.ts = Time(at);
        e
    };
    let s = with(vec![rearm(200_000)]);
    assert_eq!(s.cause, Cause::KernelPath(ASKED_LATE));
    assert!(s.line().contains("IRQ delay 290.0 µs: its timer armed after its deadline"), "{}", s.line());
    // Armed again at 100 µs (90 of 290 µs late): most of it is the interrupt's.
    assert_eq!(with(vec![rearm(100_000)]).cause, Cause::IrqsOffIn(me));
    // Asleep from 11 µs (switched out at once after its deadline): the CPU
    // idled through the delay, beyond what HLT explains: the host.
    let slept = vec![ev(11_000, ME, switch(MEE, IDLE)), ev(301_000, 0, switch(IDLE, MEE))];
    assert_eq!(with(slept).cause, Cause::HostIdleAnyState(CState::halt()));
    // Preempted from 20 µs to 280 µs by a task of higher priority, it armed
    // its timer at 290 µs: it asked late because that task held its CPU.
    let hog = ("hog", 42, 4);
    let held = vec![ev(20_000, ME, preempted(MEE, hog)), ev(280_000, 42, switch(hog, MEE)), rearm(290_000)];
    assert_eq!(with(held).cause, Cause::PreemptedBy(task("hog", 42, 4)));
}

#[test]
fn ipis_and_nmis_are_interrupt_work_named_by_vector() {
    use crate::ktrace::Ipi;
    // A call-function-single IPI takes 100 µs between the wake-up and the switch.
    let ipi = vec![
        ev(11_100, 0, K::IpiEntry { ipi: Ipi::CallFunctionSingle, vector: 251 }),
        ev(111_100, 0, K::IpiExit { ipi: Ipi::CallFunctionSingle, vector: 251 }),
    ];
    let (evs, w) = scenario(ipi, 10_500, 11_000, 112_000, IDLE);
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::InterruptWork(Culprit::Ipi(Ipi::CallFunctionSingle, None)));
    assert!(s.line().contains("scheduling 101.0 µs: call_function_single IPI"), "{}", s.line());
    // An NMI of 250 µs (recorded at its end) in a 300 µs IRQ delay.
    let nmi = vec![ev(300_000, 0, K::Nmi { delta_ns: 250_000, handled: 1 })];
    let (evs, w) = scenario(nmi, 310_000, 311_000, 320_000, IDLE);
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::InterruptWork(Culprit::Nmi));
    assert_eq!(s.culprits[0].iter().find(|c| c.0 == Culprit::Nmi), Some(&(Culprit::Nmi, Nanos(250_000))));
    // irq_work reads as such.
    assert_eq!(Culprit::Ipi(Ipi::IrqWork, None).to_string(), "irq_work interrupt");
}

#[test]
fn the_cause_summary_counts_each_cause_as_the_spike_lines_do() {
    // Two spikes preempted by hog:4242 (503 µs and 303 µs late), one by
    // hog:4243 (103 µs), one idle exit (815 µs).
    let hog = |pid: i32, run: i64| {
        let h = ("hog", pid, 4);
        let (evs, w) = scenario(vec![ev(12_000, 0, switch(IDLE, h))], 10_500, 11_000, run, h);
        explain(&evs, &w, &[])
    };
    let (evs, w) = scenario(vec![], 810_000, 812_000, 824_000, IDLE);
    let spikes = [hog(4242, 512_000), hog(4243, 112_000), hog(4242, 312_000), explain(&evs, &w, &[])];
    let lines: Vec<String> = spikes.iter().map(|s| s.line()).collect();
    let sum = cause_summary(&spikes);
    let got: Vec<(&str, &str, u64, Nanos, Nanos)> =
        sum.iter().map(|c| (c.cause.as_str(), c.kind, c.count, c.total, c.worst)).collect();
    assert_eq!(
        got,
        [
            ("preempted by hog:4242", "preempted", 2, Nanos(503_000 + 303_000), Nanos(503_000)),
            ("idle exit", "idle_exit", 1, Nanos(815_000), Nanos(815_000)),
            ("preempted by hog:4243", "preempted", 1, Nanos(103_000), Nanos(103_000)),
        ]
    );
    // The counts are the spike lines'.
    for c in &sum {
        let n = lines.iter().filter(|l| l.contains(&c.cause.replace("idle exit", "idle-state exit"))).count();
        assert_eq!(n as u64, c.count, "{}: {lines:?}", c.cause);
    }
    assert_eq!(sum.iter().map(|c| c.count).sum::<u64>(), spikes.len() as u64);
    // A culprit's cgroup follows it, as in its lines.
    let mut in_pod = spikes.clone();
    for i in [0, 2] {
        let s = &mut in_pod[i];
        s.cgroup = Some("/kubepods/pod1".into());
        assert!(s.line().contains("preempted by hog:4242 (prio 4) in /kubepods/pod1"), "{}", s.line());
    }
    let first = &cause_summary(&in_pod)[0];
    assert_eq!((first.cause.as_str(), first.count), ("preempted by hog:4242 in /kubepods/pod1", 2));
    // Labels: a task by comm without its pid; names beyond the bound are "other".
    assert_eq!(spikes[0].culprit_label(), ("task", "hog".to_string()));
    assert_eq!(spikes[3].culprit_label(), ("none", String::new()));
    let mut names = BoundedNames::new(2);
    let got: Vec<String> = ["a", "b", "a", "c", "b"].iter().map(|n| names.label(n.to_string())).collect();
    assert_eq!(got, ["a", "b", "a", "other", "b"]);
}

#[test]
fn a_fair_thread_held_while_its_cgroup_was_throttled_is_cfs_throttling() {
    use crate::cfs::{CfsRun, CpuStat, ThrottleSample, Throttling};
    // A SCHED_OTHER thread (kernel prio 120) is woken on time, then waits
    // 40 ms while another task of its priority runs.
    let other = ("make", 500, 120);
    let fair = |evs: Vec<Event>| -> Vec<Event> {
        evs.into_iter()
            .map(|mut e| {
                if let K::SchedSwitch(sw) = &mut e.kind {
                    if sw.next_pid == ME {
                        sw.next_prio = 120;
                    }
                }
                e
            })
            .collect()
    };
    let (evs, w) = scenario(vec![ev(11_500, 0, switch(IDLE, other))], 10_500, 11_000, 40_011_000, other);
    let (evs, rt) = (fair(evs.clone()), evs);
    let mut s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::WaitedFor(task("make", 500, 120)));
    let t = |path: &str| Throttling {
        path: path.into(),
        quota: None,
        quota_file: String::new(),
        delta: CpuStat::default(),
    };
    let at = |ns: i64, cgroup: usize, ms: i64| ThrottleSample { at: Time(ns), cgroup, throttled: Nanos::from_ms(ms) };
    let unthrottled = CfsRun { throttling: vec![t("/app")], samples: vec![at(0, 0, 5), at(100_000_000, 0, 5)] };
    s.find_cfs_throttling(&unthrottled);
    assert_eq!(s.cause, Cause::WaitedFor(task("make", 500, 120)), "no throttling counted around it");
    // Its cgroup's parent was throttled 45 ms around it: that is why it waited.
    let run = CfsRun {
        throttling: vec![t("/app"), t("/kubepods/pod1")],
        samples: vec![at(0, 0, 5), at(0, 1, 0), at(100_000_000, 0, 5), at(100_000_000, 1, 45)],
    };
    s.find_cfs_throttling(&run);
    assert_eq!(s.cause, Cause::CfsThrottled);
    assert_eq!(s.cause_key(), "CFS throttled in /kubepods/pod1");
    assert_eq!(s.cause.token(), "cfs_throttled");
    assert!(
        s.line().contains(
            "scheduling 40.00 ms: runnable while its cgroup was out of CPU quota → CFS throttling in /kubepods/pod1"
        ),
        "{}",
        s.line()
    );
    let sum = cause_summary([&s, &s]);
    assert_eq!((sum.len(), sum[0].count, sum[0].kind), (1, 2, "cfs_throttled"));
    // A real-time thread is not subject to CFS bandwidth.
    let mut r = explain(&rt, &w, &[]);
    r.find_cfs_throttling(&run);
    assert_eq!(r.cause, Cause::WaitedFor(task("make", 500, 120)));
}

//! Spikes made to order, as event sequences with exact times (ns), and the
//! verdict each must get.

use super::input::KernelEvent as K;
use super::*;

const ME: i32 = 77;

fn task(comm: &str, pid: i32, prio: i32) -> Task {
    Task { comm: comm.into(), pid, prio }
}

fn me() -> Task {
    task("rtick-m0", ME, 9)
}

fn ev(ts: i64, pid: i32, event: K) -> Stamped {
    Stamped { ts: Time(ts), cpu: 1, pid, event }
}

/// The thread sleeps at 0 (armed for 10_000), the CPU then runs `between`,
/// the timer fires at `exp`, the thread is woken at `wake` and runs at `run`;
/// it reads its clock 1 µs later.
fn scenario(between: Vec<Stamped>, exp: i64, wake: i64, run: i64) -> (Vec<Stamped>, [Recorded; 1]) {
    let mut evs = vec![
        ev(0, ME, K::HrtimerStart { hrtimer: 0xa0, softexpires: Time(10_000) }),
        ev(1, ME, K::Switch { prev: me(), prev_state: 1, next: task("swapper/1", 0, 120) }),
    ];
    evs.extend(between);
    evs.push(ev(exp, 0, K::HrtimerExpireEntry { hrtimer: 0xa0, function: 0xf0 }));
    evs.push(ev(wake, 0, K::Waking { pid: ME }));
    evs.push(ev(wake + 1, 0, K::HrtimerExpireExit { hrtimer: 0xa0 }));
    let prev = evs.iter().rev().find_map(|e| match &e.event {
        K::Switch { next, .. } => Some(next.clone()),
        _ => None,
    });
    evs.push(ev(run, 0, K::Switch { prev: prev.unwrap(), prev_state: 0, next: me() }));
    let w = Recorded { tid: ME, cpu: Some(1), cycle: 18, planned: Time(10_000), actual: Time(run + 1_000) };
    (evs, [w])
}

fn explain(evs: &[Stamped], w: &[Recorded], steal: &[StealSample]) -> Spike {
    Analysis::new(evs, w).spike(w, 0, steal).expect("matched")
}

#[test]
fn a_late_interrupt_on_an_idle_cpu_with_steal_is_the_host() {
    let (evs, w) = scenario(vec![], 810_000, 812_000, 824_000);
    let steal = [
        StealSample { at: Time(0), cpu: 1, steal: Nanos::from_ms(40) },
        StealSample { at: Time(900_000), cpu: 1, steal: Nanos::from_ms(40) + Nanos::from_us(790) },
        StealSample { at: Time(900_000), cpu: 0, steal: Nanos::from_ms(99) },
    ];
    let s = explain(&evs, &w, &steal);
    assert_eq!(s.phases.total(), Nanos(815_000));
    assert_eq!(s.phases.irq_delay, Nanos(800_000));
    assert_eq!(s.cause, Cause::IdleExit { steal: Some(Nanos::from_us(790)) });
    assert_eq!(
        s.line(),
        "cycle 18  815.0 µs = IRQ late 800.0 µs: CPU idle, steal +790.0 µs → the host held the vCPU | wake→run 12.0 µs"
    );
    // No steal sampled: it cannot tell the host from the idle state.
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::IdleExit { steal: None });
}

#[test]
fn a_late_interrupt_while_a_task_ran_blames_that_task() {
    let busy = task("kworker/1:2", 300, 120);
    let (evs, w) = scenario(
        vec![ev(5_000, 0, K::Switch { prev: task("swapper/1", 0, 120), prev_state: 0, next: busy.clone() })],
        310_000,
        311_000,
        320_000,
    );
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::IrqsOffIn(busy.clone()));
    assert_eq!(s.culprits[0], [(Culprit::Task(busy), Nanos(300_000))]);
}

#[test]
fn a_higher_priority_thread_is_named_as_the_preemptor() {
    // The timer is on time; a SCHED_FIFO 95 hog (kernel prio 4) runs 2–512 µs past the deadline.
    let hog = task("hog", 4242, 4);
    let idle = task("swapper/1", 0, 120);
    let between = vec![ev(12_000, 0, K::Switch { prev: idle, prev_state: 0, next: hog.clone() })];
    let (mut evs, w) = scenario(between, 10_500, 11_000, 512_000);
    // The hog is what the thread is switched in from.
    let last = evs.len() - 1;
    evs[last] = ev(512_000, 4242, K::Switch { prev: hog.clone(), prev_state: 1, next: me() });
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.phases.scheduling, Nanos(501_000));
    assert_eq!(s.cause, Cause::PreemptedBy(hog.clone()));
    assert_eq!(s.culprits[2][0], (Culprit::Task(hog), Nanos(500_000)));
    assert!(s.line().contains("wake→run 501.0 µs: preempted by hog:4242 (prio 4)"), "{}", s.line());
}

#[test]
fn interrupt_work_and_throttling_in_the_scheduling_delay() {
    // A TIMER softirq runs 100 µs between the wake-up and the switch.
    let soft = vec![ev(11_100, 0, K::SoftirqEntry { vec: 1 }), ev(111_100, 0, K::SoftirqExit { vec: 1 })];
    let (mut evs, w) = scenario(vec![], 10_500, 11_000, 112_000);
    evs.extend(soft);
    assert_eq!(explain(&evs, &w, &[]).cause, Cause::InterruptWork(Culprit::Softirq("TIMER")));
    // The CPU stays idle for 50 ms while the woken real-time thread waits: throttled.
    let (evs, w) = scenario(vec![], 10_500, 11_000, 50_011_000);
    let s = explain(&evs, &w, &[]);
    assert_eq!(s.cause, Cause::Throttled);
    assert_eq!(phase_summary(&[s.phases])[2], ("scheduling", [Nanos(50_000_000); 3]));
}

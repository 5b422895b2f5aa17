//! The README's promise, checked: `rtick measure` measures the loop
//! `Periodic` ships. Both run over the same scripted mock clock and must
//! produce the same ticks, tick by tick — cycles, deadlines, wake-ups —
//! and the same counts of overruns, missed periods and clock steps.

use std::sync::atomic::AtomicBool;

use rtick::measure::{self, MeasureConfig, TraceRow};
use rtick::periodic::{Periodic, Tick};
use rtick::testing::{MockScript, MockStep, MOCK};
use rtick::{ClockId, Nanos, OverrunPolicy};

const PERIOD: Nanos = Nanos(1_000_000);

/// What `rtick measure` recorded: its trace rows, overruns, missed periods, clock steps.
fn measured(script: &MockScript, clock: ClockId, policy: OverrunPolicy, n: u64) -> (Vec<TraceRow>, u64, u64, u64) {
    let cfg = MeasureConfig {
        mechanisms: vec![MOCK],
        interval: PERIOD,
        loops: Some(n),
        duration: None,
        clock,
        overrun: policy,
        waiters: Some(script.clone().source()),
        ..Default::default()
    };
    let (mut producers, mut consumers) = measure::trace_rings(1, 4096);
    let report = measure::run(&cfg, &AtomicBool::new(false), Some(&mut producers), |_| {}).unwrap();
    let r = &report.results[0];
    let mut rows = Vec::new();
    while let Ok(row) = consumers[0].pop() {
        rows.push(row);
    }
    (rows, r.overruns, r.missed, r.clock_steps)
}

/// What `Periodic` ticked: the ticks that measured a wait, and the counts.
fn ticked(script: &MockScript, clock: ClockId, policy: OverrunPolicy, n: u64) -> (Vec<Tick>, u64, u64, u64) {
    let mut p = Periodic::builder()
        .period(PERIOD)
        .clock(clock)
        .mechanism(MOCK)
        .overrun(policy)
        .waiters(script.clone().source())
        .build()
        .unwrap();
    let (mut ticks, mut steps) = (Vec::new(), 0);
    while (ticks.len() as u64) < n {
        match p.wait() {
            Ok(t) if t.clock_step != Nanos::ZERO => steps += 1,
            Ok(t) => ticks.push(t),
            Err(e) => panic!("{e}"),
        }
    }
    let s = p.telemetry().snapshot();
    (ticks, s.overruns, s.missed, steps)
}

fn same_loop(script: MockScript, clock: ClockId, policy: OverrunPolicy) {
    let n = 40;
    let (rows, m_over, m_missed, m_steps) = measured(&script, clock, policy, n);
    let (ticks, p_over, p_missed, p_steps) = ticked(&script, clock, policy, n);
    assert_eq!(rows.len(), ticks.len());
    for (k, (r, t)) in rows.iter().zip(&ticks).enumerate() {
        assert_eq!((r.cycle, r.planned, r.actual), (t.cycle, t.deadline, t.woke), "tick {k} ({policy:?}, {clock:?})");
    }
    assert_eq!((m_over, m_missed, m_steps), (p_over, p_missed, p_steps), "{policy:?}, {clock:?}");
}

#[test]
fn measure_and_periodic_tick_alike() {
    // Late, early, and 2.5-period overruns, then a quiet stretch.
    let late = MockScript { latencies: vec![120, 3_000, -400, 2_500_000, 0, 1_200_000, 7, 999_999], step: None };
    for policy in [OverrunPolicy::Skip, OverrunPolicy::CatchUp] {
        same_loop(late.clone(), ClockId::Monotonic, policy);
    }
    let (ticks, over, missed, _) = ticked(&late, ClockId::Monotonic, OverrunPolicy::Skip, 40);
    assert!(over > 0 && missed > 0, "the script must exercise overruns");
    assert!(ticks.windows(2).any(|w| w[1].cycle > w[0].cycle + 1), "and skips");
}

#[test]
fn measure_and_periodic_treat_a_clock_step_alike() {
    for by in [10_000_300_000, -5_000_000_000] {
        let step = MockScript { latencies: vec![100, 250], step: Some(MockStep { at: 5, by: Nanos(by) }) };
        same_loop(step.clone(), ClockId::Realtime, OverrunPolicy::Skip);
        let (_, _, missed, steps) = ticked(&step, ClockId::Realtime, OverrunPolicy::Skip, 40);
        assert_eq!((steps, missed), (1, 0), "a step is reported, and nothing is missed ({by})");
    }
}

//! Periodic on the mock waiter (exact numbers) and on the real clocks.

use super::*;
use crate::testing::{MockScript, MockStep, MOCK};

fn script(lat: &[i64]) -> MockScript {
    MockScript { latencies: lat.to_vec(), step: None }
}

fn mock(lat: &[i64], overrun: OverrunPolicy) -> Periodic {
    Periodic::builder()
        .period(Nanos::from_ms(1))
        .mechanism(MOCK)
        .waiters(script(lat).source())
        .overrun(overrun)
        .build()
        .unwrap()
}

#[test]
fn ticks_follow_the_grid() {
    let mut p = mock(&[100, 200], OverrunPolicy::Skip);
    let first = p.next_deadline();
    for k in 0..4 {
        let t = p.wait().unwrap();
        assert_eq!(t.cycle, k);
        assert_eq!(t.deadline, first + Nanos::from_ms(k as i64));
        assert_eq!(t.latency, Nanos(if k % 2 == 0 { 100 } else { 200 }));
        assert_eq!(t.woke, t.deadline + t.latency);
    }
    let s = p.telemetry().snapshot();
    assert_eq!((s.cycles, s.latency.min, s.latency.max), (4, 100, 200));
    assert_eq!(s.period.max, 100);
}

#[test]
fn overrun_policies() {
    let mut p = mock(&[0, 2_500_000, 0], OverrunPolicy::Skip);
    p.wait().unwrap();
    let late = p.wait().unwrap();
    assert_eq!(late.cycle, 1);
    let after = p.wait().unwrap();
    assert_eq!((after.cycle, after.missed), (4, 2));
    assert_eq!(p.telemetry().snapshot().overruns, 1);

    let mut f = mock(&[0, 2_500_000, 0], OverrunPolicy::Fail);
    f.wait().unwrap();
    assert!(matches!(f.wait(), Err(Error::Overrun { cycle: 1, latency_ns: 2_500_000, missed: 2 })));
    assert_eq!(f.wait().unwrap().cycle, 4, "the schedule skipped before reporting");

    let mut c = mock(&[2_500_000, 0, 0, 0], OverrunPolicy::CatchUp);
    let lats: Vec<i64> = (0..4).map(|_| c.wait().unwrap().latency.as_ns()).collect();
    assert_eq!(lats, [2_500_000, 1_500_000, 500_000, 0]);
}

#[test]
fn a_realtime_step_is_reported_not_counted() {
    let on = |clock: ClockId, by: i64, overrun: OverrunPolicy| {
        Periodic::builder()
            .period(Nanos::from_ms(1))
            .clock(clock)
            .mechanism(MOCK)
            .waiters(MockScript { latencies: vec![100], step: Some(MockStep { at: 2, by: Nanos(by) }) }.source())
            .overrun(overrun)
            .build()
            .unwrap()
    };
    // Forward by 10.0003 s at the third wake-up, with the strictest policy.
    let mut p = on(ClockId::Realtime, 10_000_300_000, OverrunPolicy::Fail);
    let d0 = p.next_deadline();
    let ticks: Vec<Tick> = (0..4).map(|_| p.wait().unwrap()).collect();
    assert_eq!(ticks.iter().map(|t| t.clock_step.as_ns()).collect::<Vec<_>>(), [0, 0, 10_000_300_000, 0]);
    assert_eq!(ticks[2].woke, d0 + Nanos::from_ms(2) + Nanos(100) + Nanos(10_000_300_000));
    // On with the first deadline of the grid after the step: cycle 2 + 10001.
    assert_eq!((ticks[3].cycle, ticks[3].missed, ticks[3].latency), (10_003, 0, Nanos(100)));
    assert_eq!(ticks[3].deadline, d0 + Nanos::from_ms(10_003));
    let s = p.telemetry().snapshot();
    assert_eq!((s.cycles, s.overruns, s.missed, s.latency.max), (3, 0, 0, 100), "the step's tick stays out");

    // Back by 5 s: reported, and the grid goes on where it was.
    let mut b = on(ClockId::Tai, -5_000_000_000, OverrunPolicy::Skip);
    let ticks: Vec<Tick> = (0..4).map(|_| b.wait().unwrap()).collect();
    assert_eq!(ticks[2].clock_step, Nanos(-5_000_000_000));
    assert_eq!((ticks[3].cycle, ticks[3].clock_step), (3, Nanos::ZERO));

    // CLOCK_MONOTONIC cannot be set: it is not watched, and a jump is lateness.
    let mut m = on(ClockId::Monotonic, 10_000_300_000, OverrunPolicy::Skip);
    let ticks: Vec<Tick> = (0..4).map(|_| m.wait().unwrap()).collect();
    assert!(ticks.iter().all(|t| t.clock_step == Nanos::ZERO));
    assert_eq!(ticks[3].missed, 10_000);
}

#[test]
fn the_real_realtime_clock_shows_no_false_step() {
    let mut p = Periodic::builder().period(Nanos::from_us(500)).clock(ClockId::Realtime).build().unwrap();
    for _ in 0..50 {
        let t = p.wait().unwrap();
        assert_eq!(t.clock_step, Nanos::ZERO, "{t:?}");
    }
}

#[test]
fn set_period_and_shift_move_the_grid() {
    let mut p = mock(&[0], OverrunPolicy::Skip);
    let t0 = p.wait().unwrap().deadline;
    p.set_period(Nanos::from_us(500)).unwrap();
    assert_eq!(p.wait().unwrap().deadline, t0 + Nanos::from_us(500));
    p.shift(Nanos::from_us(-3)).unwrap();
    let t2 = p.wait().unwrap().deadline;
    assert_eq!(t2, t0 + Nanos::from_us(997));
    assert_eq!(p.wait().unwrap().deadline, t2 + Nanos::from_us(500));
    assert!(p.set_period(Nanos::ZERO).is_err());
}

#[test]
fn bad_configuration_is_an_error() {
    assert!(Periodic::builder().build().is_err());
    assert!(Periodic::builder().period(Nanos::ZERO).build().is_err());
    assert!(Periodic::builder().period(Nanos(-5)).build().is_err());
    let bad = SyncConfig { kp: f64::NAN, ..Default::default() };
    assert!(Periodic::builder().period(Nanos::from_ms(1)).sync(bad).build().is_err());
}

#[test]
fn real_clock_nanosleep_loop() {
    let mut p = Periodic::builder().period(Nanos::from_us(500)).start(Start::Aligned).build().unwrap();
    assert_eq!(p.next_deadline().as_ns() % 500_000, 0);
    for _ in 0..20 {
        let t = p.wait().unwrap();
        assert!(t.latency >= Nanos::ZERO);
    }
    let s = p.telemetry().snapshot();
    assert_eq!(s.cycles, 20);
    assert_eq!(s.execution.count, 19);
}

/// `set_period` reaches every mechanism, not only those that wait for the
/// grid's deadline: on the real kernel, after a change from 10 ms to 100 µs,
/// relative sleeps plan one *new* period after the clock read before them
/// (they used to keep the 10 ms they were built with), and absolute ones
/// wait for deadlines spaced by whole new periods.
#[test]
fn set_period_reaches_every_mechanism() {
    let long = Nanos::from_ms(10);
    let short = Nanos::from_us(100);
    for m in [
        Mechanism::ClockNanosleepRel,
        Mechanism::Nanosleep,
        Mechanism::ClockNanosleep,
        Mechanism::Hybrid,
        Mechanism::Timerfd,
        Mechanism::Futex,
        Mechanism::Spin,
    ] {
        let mut p = Periodic::builder().period(long).mechanism(m).build().unwrap();
        p.wait().unwrap();
        p.set_period(short).unwrap();
        let mut prev = p.wait().unwrap();
        let mut gaps = Vec::new();
        for _ in 0..10 {
            let t = p.wait().unwrap();
            if m.info().relative {
                // planned = (clock read after the previous wake-up) + period.
                gaps.push(t.deadline - prev.woke);
            } else {
                assert_eq!(t.deadline - prev.deadline, short * (1 + t.missed as i64), "{m}: {prev:?} → {t:?}");
            }
            prev = t;
        }
        if m.info().relative {
            let min = gaps.iter().min().copied().unwrap();
            assert!(min >= short && min < Nanos::from_ms(5), "{m}: planned {min} after the previous wake-up");
        }
    }
}

/// A kernel-grid mechanism is re-armed on the new grid.
#[test]
fn set_period_and_shift_rearm_interval_timers() {
    for m in [Mechanism::PosixTimer, Mechanism::Timerfd] {
        let mut p = Periodic::builder().period(Nanos::from_ms(2)).mechanism(m).build().unwrap();
        let t0 = p.wait().unwrap();
        p.set_period(Nanos::from_us(500)).unwrap();
        p.shift(Nanos::from_us(-100)).unwrap();
        let t1 = p.wait().unwrap();
        // From the last deadline: + 500 µs − 100 µs, or whole periods later after an overrun.
        assert_eq!(t1.deadline - t0.deadline, Nanos::from_us(400) + Nanos::from_us(500) * t1.missed as i64, "{m}");
        let t2 = p.wait().unwrap();
        assert_eq!(t2.deadline - t1.deadline, Nanos::from_us(500) * (1 + t2.missed as i64), "{m}");
    }
}

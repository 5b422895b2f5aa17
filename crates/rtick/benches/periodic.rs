//! Microbenchmarks (divan): what one cycle of `Periodic` costs beyond the
//! wait itself, a clock read, and a histogram insert. Target: the loop's
//! overhead under 50 ns per cycle. Results in BENCHMARKS.md.

use divan::Bencher;
use rtick::periodic::Periodic;
use rtick::stats::LatencyStats;
use rtick::testing::{MockScript, MOCK};
use rtick::{ClockId, Nanos};

fn main() {
    divan::main();
}

/// One `wait()` with the mock waiter (manual clock, no system call): the
/// loop's own work — schedule, overrun policy, telemetry — and no wait.
#[divan::bench]
fn periodic_wait_overhead(b: Bencher) {
    let mut lp = Periodic::builder()
        .period(Nanos::from_us(100))
        .mechanism(MOCK)
        .waiters(MockScript { latencies: vec![150, 900, 2_000], step: None }.source())
        .build()
        .unwrap();
    b.bench_local(|| lp.wait().unwrap());
}

/// A vDSO CLOCK_MONOTONIC read: each real wait adds one to the loop (the
/// execution-time stamp), besides the waiter's own wake-up read.
#[divan::bench]
fn clock_monotonic_read() -> rtick::Time {
    ClockId::Monotonic.now()
}

/// One latency recorded into the measurement engine's statistics.
#[divan::bench]
fn latency_stats_record(b: Bencher) {
    let mut s = LatencyStats::new();
    let mut v = 0i64;
    b.bench_local(|| {
        v = (v + 7919) % 1_000_000;
        s.record(divan::black_box(v));
    });
}

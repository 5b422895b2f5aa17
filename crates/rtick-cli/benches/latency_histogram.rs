//! Microbenchmarks (divan) of `rtick monitor`'s latency histogram: what the
//! collector pays per wake-up it observes with the native buckets and
//! without (the fixed buckets alone, as before), and what encoding the
//! histograms costs in each exposition format. The histogram is the one the
//! monitor builds: its module is included here. Results in BENCHMARKS.md
//! (`cargo bench -p rtick-cli --bench latency_histogram`).

// Cargo builds benchmarks with cfg(test) but without the test harness:
// the module's test helpers come along here, unused.
#[path = "../src/cmd/monitor/metrics/latency.rs"]
#[allow(dead_code)]
mod latency;

use divan::Bencher;
use prometheus_client::encoding::{prometheus_protobuf, prometheus_text, text};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

fn main() {
    divan::main();
}

/// 4096 wake-up latencies, in seconds, of the shape a 1 kHz loop on a VM
/// shows: most from 5 to 60 µs, one in a hundred up to 2 ms, one in a
/// thousand early by up to 2 µs. Deterministic (xorshift), so that runs
/// compare.
fn latencies() -> Vec<f64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let log_between = |lo: f64, hi: f64, u: f64| lo * (hi / lo).powf(u);
    (0..4096)
        .map(|_| match uniform() {
            p if p < 0.001 => -log_between(5e-8, 2e-6, uniform()),
            p if p < 0.011 => log_between(6e-5, 2e-3, uniform()),
            _ => log_between(5e-6, 6e-5, uniform()),
        })
        .collect()
}

fn observe_each(b: Bencher, h: Histogram) {
    let values = latencies();
    let mut i = 0;
    b.bench_local(|| {
        h.observe(values[i % values.len()]);
        i += 1;
    });
}

/// One observation, the fixed buckets alone (the monitor before native ones).
#[divan::bench]
fn observe_fixed_buckets(b: Bencher) {
    observe_each(b, Histogram::new(latency::BUCKETS));
}

/// One observation into the monitor's histogram: fixed and native buckets.
#[divan::bench]
fn observe_fixed_and_native_buckets(b: Bencher) {
    observe_each(b, latency::histogram());
}

/// A registry of `series` latency histograms as the monitor registers
/// them, each with 20 000 wake-ups observed (every latency of
/// [`latencies`] several times).
fn registry(series: usize) -> Registry {
    let mut registry = Registry::default();
    let family = Family::<Vec<(String, String)>, Histogram>::new_with_constructor(latency::histogram);
    registry.register_with_unit("rtick_wakeup_latency", "Wake-up latency", Unit::Seconds, family.clone());
    let values = latencies();
    for s in 0..series {
        let labels = vec![("mechanism".into(), "clock_nanosleep".into()), ("cpu".into(), s.to_string())];
        let h = family.get_or_create(&labels);
        (0..20_000).for_each(|i| h.observe(values[(i * 7 + s) % values.len()]));
    }
    registry
}

/// Encoding the histograms of 1 and 16 series (one CPU; 16 CPUs or
/// mechanisms): Prometheus text, the fixed buckets.
#[divan::bench(args = [1, 16])]
fn encode_text(b: Bencher, series: usize) {
    let r = registry(series);
    b.bench_local(|| {
        let mut s = String::new();
        prometheus_text::encode(&mut s, &r).unwrap();
        s
    });
}

/// The same in OpenMetrics.
#[divan::bench(args = [1, 16])]
fn encode_openmetrics(b: Bencher, series: usize) {
    let r = registry(series);
    b.bench_local(|| {
        let mut s = String::new();
        text::encode(&mut s, &r).unwrap();
        s
    });
}

/// The same in protobuf: fixed and native buckets.
#[divan::bench(args = [1, 16])]
fn encode_protobuf(b: Bencher, series: usize) {
    let r = registry(series);
    b.bench_local(|| prometheus_protobuf::encode_to_vec(&r).unwrap());
}

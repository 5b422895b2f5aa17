//! spin_sleep on a 1 kHz absolute grid, under the same real-time setup as
//! `rtick measure` (SCHED_FIFO 90, memory locked), printing one JSON line:
//! {"p50":…,"p99":…,"p99.9":…,"max":…,"cpu_percent":…,"count":…} (ns).
//!
//! Usage: vs-spin-sleep SECONDS

use std::time::{Duration, Instant};

use rtick::rt::{MemoryLock, Policy, ThreadSetup, DEFAULT_HEAP_PREFAULT};
use rtick::stats::LatencyStats;
use rtick::Nanos;

fn main() {
    let secs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let _mem = MemoryLock::lock(DEFAULT_HEAP_PREFAULT).expect("mlockall (run as root)");
    let out = std::thread::spawn(move || {
        ThreadSetup { policy: Policy::Fifo, priority: 90, cpus: vec![], timer_slack: Some(Nanos(1)) }
            .apply()
            .expect("SCHED_FIFO 90 (run as root)");
        let sleeper = spin_sleep::SpinSleeper::default();
        let interval = Duration::from_millis(1);
        let mut stats = LatencyStats::new();
        let (cpu0, wall0) = (rtick::info::thread_cpu_time(), Instant::now());
        let start = Instant::now() + interval;
        let loops = secs * 1000;
        for k in 0..loops as u32 {
            let deadline = start + interval * k;
            sleeper.sleep_until(deadline);
            let woke = Instant::now();
            stats.record(woke.duration_since(deadline).as_nanos() as i64);
        }
        let cpu = rtick::info::thread_cpu_time() - cpu0;
        let wall = Nanos::from_std(wall0.elapsed());
        (stats.summary(), 100.0 * cpu.as_ns() as f64 / wall.as_ns() as f64)
    })
    .join()
    .expect("measuring thread");
    let (s, cpu) = out;
    println!(
        "{{\"p50\":{},\"p99\":{},\"p99.9\":{},\"max\":{},\"cpu_percent\":{:.2},\"count\":{},\"slack_ns\":{}}}",
        s.percentiles[0],
        s.percentiles[2],
        s.percentiles[3],
        s.max,
        cpu,
        s.count,
        spin_sleep::SpinSleeper::default().native_accuracy_ns()
    );
}

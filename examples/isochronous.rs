//! A sample isochronous application, done right: 1 ms period,
//! SCHED_FIFO 80 (falling back with a warning without privilege), memory
//! locked, absolute deadlines, overruns counted, statistics printed on exit
//! and on Ctrl-C.
//!
//! Usage: isochronous [--cycles N] [--period-us US]     (Ctrl-C stops)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rtick::periodic::{Periodic, Start};
use rtick::rt::{Policy, Setup};
use rtick::{Nanos, OverrunPolicy};

fn arg(name: &str) -> Option<u64> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    match args.get(i + 1).and_then(|v| v.parse().ok()) {
        Some(v) => Some(v),
        None => {
            eprintln!("isochronous: {name} needs a positive whole number");
            std::process::exit(2);
        }
    }
}

/// The real-time task: here a little computation standing for the real work.
fn real_time_task(cycle: u64) -> u64 {
    (0..100).fold(cycle, |a, x| a.wrapping_mul(31).wrapping_add(x))
}

fn main() -> Result<(), rtick::Error> {
    let cycles = arg("--cycles");
    let period = Nanos::from_us(arg("--period-us").unwrap_or(1000) as i64);
    if cycles == Some(0) || period <= Nanos::ZERO {
        eprintln!("isochronous: --cycles and --period-us must be greater than zero");
        std::process::exit(2);
    }
    rtick::wait::block_timer_signals()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).expect("signal handler");
    }

    let builder = Periodic::builder().period(period).start(Start::Aligned).overrun(OverrunPolicy::Skip);
    let rt = Setup::new().policy(Policy::Fifo, 80).lock_memory(8 << 20, 256 << 10);
    let mut lp = match builder.clone().setup(rt).build() {
        Ok(lp) => lp,
        Err(e) if e.is_permission() => {
            eprintln!("warning: {e}; running as SCHED_OTHER without locked memory");
            builder.build()?
        }
        Err(e) => return Err(e),
    };
    let telemetry = lp.telemetry();

    let mut sink = 0u64;
    let mut run = 0u64;
    while !stop.load(Ordering::Relaxed) && cycles.is_none_or(|c| run < c) {
        let tick = lp.wait()?;
        sink ^= real_time_task(tick.cycle);
        run += 1;
    }
    std::hint::black_box(sink);

    let s = telemetry.snapshot();
    println!(
        "isochronous: {} cycles of {period}; latency min {} ns, avg {:.0} ns, p99 {} ns, max {} ns; execution p99 {} ns; {} overruns, {} missed periods{}",
        s.cycles,
        s.latency.min,
        s.latency.mean,
        s.latency.percentiles[2],
        s.latency.max,
        s.execution.percentiles[2],
        s.overruns,
        s.missed,
        if stop.load(Ordering::Relaxed) { " (interrupted)" } else { "" }
    );
    Ok(())
}

//! `timers`: threads sleeping 100 µs in a loop — a stream of timer
//! interrupts, hrtimer expiries and wake-ups on the load CPUs.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::workers::{KindCounters, Workers};

/// The sleep of each round: short enough for ~10 000 wake-ups a second per
/// worker (less the timer slack of a SCHED_OTHER thread, 50 µs by default).
const SLEEP: Duration = Duration::from_micros(100);

pub fn start(w: &mut Workers, workers: usize, counters: &Arc<KindCounters>) -> Result<String> {
    for i in 0..workers {
        let cpu = w.next_cpu();
        w.spawn(format!("load-timers{i}"), cpu, counters, |ctx| {
            ctx.ready();
            while ctx.running() {
                std::thread::sleep(SLEEP);
                ctx.add(1);
            }
            Ok(())
        })?;
    }
    Ok(format!("{} µs sleeps", SLEEP.as_micros()))
}

//! `cpu`: busy work, one thread per worker, never sleeping — the load
//! that takes a CPU away from everything of lower or equal priority.

use std::sync::Arc;

use anyhow::Result;

use crate::workers::{KindCounters, Workers};

/// Iterations between looks at the stop flag and counter updates: a few µs.
const BATCH: u64 = 4096;

pub fn start(w: &mut Workers, workers: usize, counters: &Arc<KindCounters>) -> Result<String> {
    for i in 0..workers {
        let cpu = w.next_cpu();
        w.spawn(format!("load-cpu{i}"), cpu, counters, |ctx| {
            ctx.ready();
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            while ctx.running() {
                for _ in 0..BATCH {
                    // A linear congruential step the compiler cannot fold away.
                    x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                }
                ctx.add(BATCH);
            }
            Ok(())
        })?;
    }
    Ok("busy loops".into())
}

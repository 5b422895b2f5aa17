//! Following a drifting reference clock, as an EtherCAT master follows the
//! distributed clock: the reference runs 50 ppm fast and starts 300 µs out
//! of phase; each cycle the loop reads it at its deadline and
//! `Periodic::sync_to` shifts the following deadlines (PI, at most 5 µs per
//! cycle). Prints where the phase error settled.
//!
//! The loop catches up after an overrun rather than skipping: the reference
//! is read at every deadline, so a late wake-up (a stall of the host, here)
//! delays a correction but never drops one, and the controller sees the same
//! sequence of readings however late the thread runs.
//!
//! Usage: dc_sync [--cycles N] [--errors FILE]   (FILE: cycle,phase_error_ns)

use std::io::Write;

use rtick::periodic::{Periodic, Start, SyncConfig};
use rtick::{Nanos, OverrunPolicy, Time};

/// A simulated reference clock: `offset` ahead and `ppm` fast of ours from `t0`.
struct Reference {
    t0: Time,
    offset: Nanos,
    ppm: f64,
}

impl Reference {
    fn read_at(&self, t: Time) -> Time {
        let since = (t - self.t0).as_ns() as f64;
        Time(self.t0.as_ns() + (since * (1.0 + self.ppm * 1e-6)) as i64 + self.offset.as_ns())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let get = |n: &str| args.iter().position(|a| a == n).and_then(|i| args.get(i + 1)).cloned();
    let cycles: u64 = match get("--cycles").map(|v| v.parse()) {
        None => 2000,
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("dc_sync: --cycles needs a positive whole number");
            std::process::exit(2);
        }
    };
    let mut errors = get("--errors").map(std::fs::File::create).transpose()?.map(std::io::BufWriter::new);

    let period = Nanos::from_ms(1);
    let mut lp = Periodic::builder()
        .period(period)
        .start(Start::Aligned)
        .overrun(OverrunPolicy::CatchUp)
        .sync(SyncConfig::default())
        .build()?;
    // The reference's cycle boundaries are at multiples of the period on its
    // own time line, which starts 300 µs ahead of ours and runs 50 ppm fast.
    let start = lp.next_deadline();
    let reference = Reference {
        t0: Time(start.as_ns() - start.as_ns().rem_euclid(period.as_ns())),
        offset: Nanos::from_us(300),
        ppm: 50.0,
    };

    let mut history: Vec<i64> = Vec::with_capacity(cycles as usize);
    for _ in 0..cycles {
        let tick = lp.wait()?;
        let correction = lp.sync_to(reference.read_at(tick.deadline))?;
        let e = lp.phase_error().as_ns();
        if let Some(w) = errors.as_mut() {
            writeln!(w, "{},{}", tick.cycle, e)?;
        }
        history.push(e);
        if tick.cycle % 500 == 0 {
            println!("cycle {:>6}: phase error {:>8} ns, correction {:>6} ns", tick.cycle, e, correction.as_ns());
        }
    }
    // Settled: from the cycle after the last error of 1 µs or more.
    let settled = history.iter().rposition(|e| e.abs() >= 1000).map_or(0, |i| i + 1);
    if settled < history.len() {
        let worst = history[settled..].iter().map(|e| e.abs()).max().unwrap_or(0);
        println!(
            "dc_sync: {cycles} cycles; the phase error stayed within 1 µs from cycle {settled} on, at most {worst} ns"
        );
    } else {
        println!("dc_sync: {cycles} cycles; the phase error did not settle within 1 µs");
    }
    Ok(())
}

//! `rtick noise --histogram`: every step of the spinning loop per CPU, in
//! the summary format of oslat (rt-tests), so its tooling reads it: a
//! `LABEL:` column (right-aligned to 12, then a tab), then one value per CPU.
//!
//! ```text
//!         Core:     1 2
//! Counter Freq:     1000 1000 (Mhz)
//!     001 (us):     61299204 61200013
//!     …
//!     032 (us):     1856 1650 (including overflows)
//!      Minimum:     1 1 (us)
//!      Average:     1.009 1.008 (us)
//!      Maximum:     202 187 (us)
//!      Max-Min:     201 186 (us)
//!     Duration:     1.999 1.999 (sec)
//! ```
//!
//! As oslat counts them: bucket `NNN (us)` holds the steps of NNN − 1 µs to
//! just under NNN µs; the minimum, average and maximum are of each step's
//! bucket bound. rtick reads CLOCK_MONOTONIC, in nanoseconds: its counter
//! is 1000 MHz.

use std::fmt::Write;

use rtick::noise::CpuNoise;

/// One line: the label, a value per CPU, the end.
fn field(out: &mut String, label: &str, values: impl Iterator<Item = String>, end: &str) {
    let _ = write!(out, "{label:>12}:\t");
    values.for_each(|v| {
        let _ = write!(out, " {v}");
    });
    let _ = writeln!(out, "{end}");
}

/// The histogram of `cpus` in `buckets` buckets (4–1024).
pub fn render(cpus: &[CpuNoise], buckets: usize) -> String {
    let mut o = String::new();
    let folded: Vec<Vec<u64>> = cpus
        .iter()
        .map(|c| {
            let b = &c.steps_us.buckets;
            let mut v: Vec<u64> = b.iter().take(buckets - 1).copied().collect();
            v.push(b.iter().skip(buckets - 1).sum());
            v
        })
        .collect();
    field(&mut o, "Core", cpus.iter().map(|c| c.cpu.to_string()), "");
    field(&mut o, "Counter Freq", cpus.iter().map(|_| "1000".into()), " (Mhz)");
    for i in 0..buckets {
        let end = if i == buckets - 1 { " (including overflows)" } else { "" };
        field(&mut o, &format!("{:03} (us)", i + 1), folded.iter().map(|v| v[i].to_string()), end);
    }
    let min = |c: &CpuNoise| c.steps_us.buckets.iter().position(|&n| n > 0).map_or(0, |i| i as u64 + 1);
    let avg = |c: &CpuNoise| {
        let n: u64 = c.steps_us.buckets.iter().sum();
        c.steps_us.sum_upper_us as f64 / n.max(1) as f64
    };
    let max = |c: &CpuNoise| c.steps_us.max_upper_us;
    field(&mut o, "Minimum", cpus.iter().map(|c| min(c).to_string()), " (us)");
    field(&mut o, "Average", cpus.iter().map(|c| format!("{:.3}", avg(c))), " (us)");
    field(&mut o, "Maximum", cpus.iter().map(|c| max(c).to_string()), " (us)");
    field(&mut o, "Max-Min", cpus.iter().map(|c| max(c).saturating_sub(min(c)).to_string()), " (us)");
    field(&mut o, "Duration", cpus.iter().map(|c| format!("{:.3}", c.runtime.as_secs_f64())), " (sec)");
    o.push('\n');
    o
}

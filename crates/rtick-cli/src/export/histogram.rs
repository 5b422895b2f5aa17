//! cyclictest's histogram text format (`cyclictest -h`), so tools written
//! for cyclictest read rtick's histograms: one line per bucket with one
//! column per thread, then `#` summary lines. All buckets are printed (the
//! classic layout with its `# Total:` line).

use std::fmt::Write;

use rtick::measure::ThreadResult;

/// Renders the buckets of `threads` (results of one mechanism). Min/avg/max
/// are in the bucket unit (µs, or ns with -N), as cyclictest prints them.
pub fn render(threads: &[&ThreadResult], mechanism: &str) -> String {
    let mut out = String::new();
    let hs: Vec<_> = threads.iter().filter_map(|t| t.buckets.as_ref().map(|b| (*t, b))).collect();
    if hs.is_empty() {
        return out;
    }
    let unit = hs[0].1.unit_ns();
    let _ =
        writeln!(out, "# rtick {} histogram: mechanism {mechanism}, buckets of {unit} ns", env!("CARGO_PKG_VERSION"));
    out.push_str("# Histogram\n");
    let n = hs[0].1.counts().len();
    for i in 0..n {
        let _ = write!(out, "{i:06} ");
        let cols: Vec<String> = hs.iter().map(|(_, h)| format!("{:06}", h.counts()[i])).collect();
        out.push_str(&cols.join("\t"));
        out.push('\n');
    }
    let row = |label: &str, width: usize, f: &dyn Fn(&ThreadResult, &rtick::stats::BucketHistogram) -> i64| {
        let mut s = format!("# {label}:");
        for (t, h) in &hs {
            let _ = write!(s, " {:0width$}", f(t, h), width = width);
        }
        s.push('\n');
        s
    };
    let in_unit = |v: i64| v.div_euclid(unit);
    out += &row("Total", 9, &|_, h| h.counts().iter().sum::<u64>() as i64);
    out += &row("Min Latencies", 5, &|t, _| in_unit(t.latency.summary().min));
    out += &row("Avg Latencies", 5, &|t, _| in_unit(t.latency.summary().mean.round() as i64));
    out += &row("Max Latencies", 5, &|t, _| in_unit(t.latency.summary().max));
    out += &row("Histogram Overflows", 5, &|_, h| h.overflows() as i64);
    out += "# Histogram Overflow at cycle number:\n";
    for (t, h) in &hs {
        let _ = write!(out, "# Thread {}:", t.thread);
        for c in h.overflow_cycles() {
            let _ = write!(out, " {c:05}");
        }
        let others = h.overflows().saturating_sub(h.overflow_cycles().len() as u64);
        if others > 0 {
            let _ = write!(out, " # {others:05} others");
        }
        out.push('\n');
    }
    let early: u64 = hs.iter().map(|(_, h)| h.early()).sum();
    if early > 0 {
        out += &row("Early wake-ups (counted in bucket 0)", 5, &|_, h| h.early() as i64);
    }
    out
}

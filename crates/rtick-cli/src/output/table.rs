//! The results table, ranked by p99.

use super::{fmt_latency, unit};
use crate::export::json::ResultJson;

const HEAD: [&str; 15] = [
    "mechanism",
    "T",
    "CPU",
    "count",
    "min",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "p99.99",
    "max",
    "avg",
    "overruns",
    "CPU%",
    "period p99",
];

/// Renders `results` sorted by p99 (then mechanism, thread).
pub fn render(results: &[ResultJson], nsecs: bool) -> String {
    let mut rows: Vec<&ResultJson> = results.iter().collect();
    rows.sort_by(|a, b| {
        (a.percentiles_ns.p99, &a.mechanism, a.thread).cmp(&(b.percentiles_ns.p99, &b.mechanism, b.thread))
    });
    let f = |v: i64| fmt_latency(v, nsecs);
    let mut cells: Vec<Vec<String>> = vec![HEAD.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let p = &r.percentiles_ns;
        cells.push(vec![
            r.mechanism.clone(),
            r.thread.to_string(),
            r.cpu.map_or("-".into(), |c| c.to_string()),
            r.count.to_string(),
            f(r.min_ns),
            f(p.p50),
            f(p.p90),
            f(p.p99),
            f(p.p99_9),
            f(p.p99_99),
            f(r.max_ns),
            f(r.mean_ns.round() as i64),
            r.overruns.to_string(),
            format!("{:.1}", r.cpu_percent),
            f(r.period_percentiles_ns.p99),
        ]);
    }
    let widths: Vec<usize> =
        (0..HEAD.len()).map(|i| cells.iter().map(|row| row[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = format!(
        "latency in {} (actual − planned wake-up), ranked by p99; period p99: of (actual period − interval)\n",
        unit(nsecs)
    );
    for (n, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 0 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if n == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out
}

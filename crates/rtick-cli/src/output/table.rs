//! The results table, ranked by p99.

use super::{fmt_latency, unit};
use rtick_model::json::{PercentilesJson, ResultJson};

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
    rows.sort_by(|a, b| (a.p99(), &a.mechanism, a.thread).cmp(&(b.p99(), &b.mechanism, b.thread)));
    let f = |v: i64| fmt_latency(v, nsecs);
    let mut cells: Vec<Vec<String>> = vec![HEAD.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let p = r.percentiles_ns.as_ref();
        let pf = |g: fn(&PercentilesJson) -> i64| p.map_or("-".into(), |p| f(g(p)));
        cells.push(vec![
            r.mechanism.clone(),
            r.thread.to_string(),
            r.cpu.map_or("-".into(), |c| c.to_string()),
            r.count.to_string(),
            f(r.min_ns),
            pf(|p| p.p50),
            pf(|p| p.p90),
            pf(|p| p.p99),
            pf(|p| p.p99_9),
            pf(|p| p.p99_99),
            f(r.max_ns),
            f(r.mean_ns.round() as i64),
            r.overruns.map_or("-".into(), |o| o.to_string()),
            r.cpu_percent.map_or("-".into(), |c| format!("{c:.1}")),
            r.period_percentiles_ns.as_ref().map_or("-".into(), |p| f(p.p99)),
        ]);
    }
    let mut out = format!(
        "latency in {} (actual − planned wake-up), ranked by p99; period p99: of (actual period − interval)\n",
        unit(nsecs)
    );
    out.push_str(&super::columns::layout(&cells, true));
    out
}

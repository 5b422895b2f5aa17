//! Results of a `--phases` run on the terminal: one table per phase,
//! labelled, and the ratio loaded ÷ idle per percentile of each mechanism
//! and thread (computed by `rtick_model::phases`).

use rtick_model::json::{PhaseRatioJson, ResultJson};
use rtick_model::phases::{ratios, IDLE, LOADED};

use super::{columns, table};

/// The results table; with phases, one per phase and the ratios after them.
pub fn render(results: &[ResultJson], nsecs: bool) -> String {
    if results.iter().all(|r| r.phase.is_none()) {
        return table::render(results, nsecs);
    }
    let mut out = String::new();
    let mut names: Vec<&str> = Vec::new();
    for r in results {
        let name = r.phase.as_deref().unwrap_or("-");
        if !names.contains(&name) {
            names.push(name);
        }
    }
    for name in names {
        let rows: Vec<ResultJson> =
            results.iter().filter(|r| r.phase.as_deref().unwrap_or("-") == name).cloned().collect();
        let what = match name {
            IDLE => " (without the load)",
            LOADED => " (with the load)",
            _ => "",
        };
        out += &format!("phase {name}{what}: ");
        out += &table::render(&rows, nsecs);
        out.push('\n');
    }
    out += &render_ratios(&ratios(results));
    out
}

/// The ratio table.
pub fn render_ratios(ratios: &[PhaseRatioJson]) -> String {
    if ratios.is_empty() {
        return "loaded ÷ idle: no mechanism was measured in both phases\n".into();
    }
    let head = ["mechanism", "T", "p50", "p90", "p99", "p99.9", "p99.99", "max"];
    let mut cells = vec![head.map(String::from).to_vec()];
    for r in ratios {
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        cells.push(vec![
            r.mechanism.clone(),
            r.thread.to_string(),
            f(r.p50),
            f(r.p90),
            f(r.p99),
            f(r.p99_9),
            f(r.p99_99),
            f(r.max),
        ]);
    }
    String::from("loaded ÷ idle, per percentile (×; above 1: later under load)\n") + &columns::layout(&cells, true)
}

/// The rows of the last phase (all rows without phases): what a
/// recommendation or a verdict should judge — the worst case, under load.
pub fn last_phase(results: &[ResultJson]) -> Vec<ResultJson> {
    let last = results.last().and_then(|r| r.phase.clone());
    results.iter().filter(|r| r.phase == last).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick_model::json::PercentilesJson;

    fn row(m: &str, t: usize, phase: &str, p: i64) -> ResultJson {
        let mut r = rtick_model::read::row(m, t, None, &Default::default(), p, 4 * p, p as f64);
        r.count = 10;
        r.percentiles_ns =
            Some(PercentilesJson { p50: p, p90: 2 * p, p99: 3 * p, p99_9: 3 * p, p99_99: 4 * p, p99_999: 4 * p });
        r.phase = Some(phase.into());
        r
    }

    #[test]
    fn each_phase_has_its_table_and_the_ratios_follow() {
        let rows = [
            row("a", 0, IDLE, 1000),
            row("a", 1, IDLE, 2000),
            row("b", 0, IDLE, 0),
            row("a", 1, LOADED, 3000),
            row("a", 0, LOADED, 1500),
            row("b", 0, LOADED, 100),
        ];
        let text = render(&rows, false);
        assert!(text.starts_with("phase idle (without the load): latency in µs"), "{text}");
        assert!(text.contains("\nphase loaded (with the load): latency in µs"), "{text}");
        assert!(text.contains("loaded ÷ idle"), "{text}");
        assert_eq!(last_phase(&rows).len(), 3);
    }
}

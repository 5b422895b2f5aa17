//! The load phases of a `--phases` run compared: loaded ÷ idle per
//! percentile of each mechanism and thread, computed from the rows for the
//! terminal, the JSON and `rtick report` alike.

use crate::json::{PhaseRatioJson, ResultJson};

/// The phase without load.
pub const IDLE: &str = "idle";
/// The phase with it.
pub const LOADED: &str = "loaded";

/// loaded ÷ idle for every mechanism and thread measured in both phases, in
/// the order of the loaded rows.
pub fn ratios(results: &[ResultJson]) -> Vec<PhaseRatioJson> {
    let of = |phase: &'static str| results.iter().filter(move |r| r.phase.as_deref() == Some(phase));
    of(LOADED)
        .filter_map(|l| {
            let i = of(IDLE).find(|i| i.mechanism == l.mechanism && i.thread == l.thread)?;
            let q = |a: Option<i64>, b: Option<i64>| match (a, b) {
                (Some(a), Some(b)) if b != 0 => Some(a as f64 / b as f64),
                _ => None,
            };
            // Index into PERCENTILE_LABELS.
            let p = |r: &ResultJson, n: usize| r.percentiles_ns.as_ref().and_then(|p| p.get(n));
            let ratio = |n: usize| q(p(l, n), p(i, n));
            Some(PhaseRatioJson {
                mechanism: l.mechanism.clone(),
                thread: l.thread,
                p50: ratio(0),
                p90: ratio(1),
                p99: ratio(2),
                p99_9: ratio(3),
                p99_99: ratio(4),
                max: q((l.count > 0).then_some(l.max_ns), (i.count > 0).then_some(i.max_ns)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::PercentilesJson;

    fn row(m: &str, t: usize, phase: &str, p: i64) -> ResultJson {
        let mut r = crate::read::row(m, t, None, &Default::default(), p, 4 * p, p as f64);
        r.count = 10;
        r.percentiles_ns =
            Some(PercentilesJson { p50: p, p90: 2 * p, p99: 3 * p, p99_9: 3 * p, p99_99: 4 * p, p99_999: 4 * p });
        r.phase = Some(phase.into());
        r
    }

    #[test]
    fn ratios_pair_the_same_mechanism_and_thread() {
        let rows = [
            row("a", 0, IDLE, 1000),
            row("a", 1, IDLE, 2000),
            row("b", 0, IDLE, 0),
            row("a", 1, LOADED, 3000),
            row("a", 0, LOADED, 1500),
            row("b", 0, LOADED, 100),
        ];
        let r = ratios(&rows);
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].mechanism.as_str(), r[0].thread, r[0].p50, r[0].max), ("a", 1, Some(1.5), Some(1.5)));
        assert_eq!((r[1].thread, r[1].p99), (0, Some(1.5)));
        assert_eq!(r[2].p50, None, "idle 0: no ratio");
    }
}

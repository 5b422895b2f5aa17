//! `rtick report NEW --baseline OLD`: has latency regressed?
//!
//! Rows are matched by mechanism, thread and phase (when a run has phases).
//! A chosen percentile that grew by more than the allowance fails, and so
//! does a row of the baseline that the new run lacks, or a percentile either
//! side lacks: a comparison that cannot be made is not a pass. A row only
//! the new run has is reported, with nothing to compare it to.

use crate::gates::Figure;
use crate::json::ResultJson;

/// The percentiles compared without --metrics: p99 and p99.9.
pub const DEFAULT_METRICS: [usize; 2] = [2, 3];

/// The growth allowed without --max-regress, in %.
pub const DEFAULT_MAX_REGRESS: f64 = 10.0;

/// clap value parser for `--max-regress`: `10%` or `10` (percent, ≥ 0).
pub fn percent(s: &str) -> Result<f64, String> {
    let v = s.trim();
    let v = v.strip_suffix('%').unwrap_or(v).trim();
    match v.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentage ≥ 0, such as 10%")),
    }
}

/// clap value parser for one of `--metrics`: a percentile figure, as an
/// index into the percentiles.
pub fn metric(s: &str) -> Result<usize, String> {
    match Figure::parse(s.trim()) {
        Some(Figure::Percentile(i)) => Ok(i),
        _ => {
            let names: Vec<String> =
                Figure::all().into_iter().filter(|f| matches!(f, Figure::Percentile(_))).map(Figure::name).collect();
            Err(format!("'{s}' is not a percentile; one of: {}", names.join(", ")))
        }
    }
}

/// What a row is called in the table and the verdict.
fn label(r: &ResultJson) -> String {
    match &r.phase {
        Some(p) => format!("{} T{} ({p})", r.mechanism, r.thread),
        None => format!("{} T{}", r.mechanism, r.thread),
    }
}

fn same(a: &ResultJson, b: &ResultJson) -> bool {
    (&a.mechanism, a.thread, &a.phase) == (&b.mechanism, b.thread, &b.phase)
}

/// One compared percentile of a row: both sides, and whether it grew too much.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MetricChange {
    pub old: i64,
    pub new: i64,
    pub regressed: bool,
}

impl MetricChange {
    /// new ÷ old; `None` when the baseline is not above 0.
    pub fn ratio(&self) -> Option<f64> {
        (self.old > 0).then(|| self.new as f64 / self.old as f64)
    }
}

/// A row of the baseline and its match in the new run.
#[derive(Clone, Debug, PartialEq)]
pub struct RowComparison {
    /// `mechanism T0`, with ` (phase)` when the run has phases.
    pub label: String,
    /// Per metric, in the order asked; `None` when a side lacks percentiles.
    pub metrics: Vec<Option<MetricChange>>,
}

/// Why the comparison fails.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// A row of the baseline that the new run lacks.
    Missing { label: String },
    /// A metric either side lacks.
    NoPercentiles { metric: String, label: String },
    /// A metric that grew by more than the allowance.
    Regressed { metric: String, label: String, change: MetricChange },
}

/// The outcome of comparing a run with its baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The metrics' names (`p99`), in the order asked.
    pub metric_names: Vec<String>,
    /// The growth allowed, in %.
    pub max_regress: f64,
    /// The baseline's rows found in the new run, in the baseline's order.
    pub rows: Vec<RowComparison>,
    /// In the order found.
    pub failures: Vec<Failure>,
    /// Labels of the rows only the new run has (nothing to compare).
    pub only_new: Vec<String>,
}

impl Comparison {
    pub fn failed(&self) -> bool {
        !self.failures.is_empty()
    }
}

/// Compares `new` with `old` on `metrics` (indices of percentiles),
/// allowing `max_regress` % of growth.
pub fn compare(old: &[ResultJson], new: &[ResultJson], metrics: &[usize], max_regress: f64) -> Comparison {
    let metric_names: Vec<String> = metrics.iter().map(|&i| Figure::Percentile(i).name()).collect();
    let (mut rows, mut failures) = (Vec::new(), Vec::new());
    for o in old {
        let Some(n) = new.iter().find(|n| same(o, n)) else {
            failures.push(Failure::Missing { label: label(o) });
            continue;
        };
        let mut row = RowComparison { label: label(o), metrics: Vec::new() };
        for (&i, name) in metrics.iter().zip(&metric_names) {
            let at = |r: &ResultJson| r.percentiles_ns.as_ref().map(|p| p.values()[i]);
            let change = at(o).zip(at(n)).map(|(a, b)| MetricChange {
                old: a,
                new: b,
                regressed: grew_too_much(a, b, max_regress),
            });
            match change {
                None => failures.push(Failure::NoPercentiles { metric: name.clone(), label: label(o) }),
                Some(change) if change.regressed => {
                    failures.push(Failure::Regressed { metric: name.clone(), label: label(o), change })
                }
                Some(_) => {}
            }
            row.metrics.push(change);
        }
        rows.push(row);
    }
    let only_new = new.iter().filter(|n| !old.iter().any(|o| same(o, n))).map(label).collect();
    Comparison { metric_names, max_regress, rows, failures, only_new }
}

/// Whether `new` exceeds `old` by more than `pct` % of |old| (a baseline of
/// 0 allows no growth at all; equal to the limit passes).
fn grew_too_much(old: i64, new: i64, pct: f64) -> bool {
    (new as f64 - old as f64) * 100.0 > (old as f64).abs() * pct
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::PercentilesJson;

    #[test]
    fn growth_against_the_allowance() {
        assert!(!grew_too_much(50_000, 55_000, 10.0), "exactly +10 % passes");
        assert!(grew_too_much(50_000, 55_001, 10.0));
        assert!(!grew_too_much(50_000, 10_000, 10.0), "faster is fine");
        assert!(grew_too_much(0, 1, 50.0), "from 0 any growth fails");
        assert!(!grew_too_much(0, 0, 0.0));
        assert!(grew_too_much(-100, -80, 10.0), "an early wake-up getting later grows too");
    }

    fn row(m: &str, t: usize, p99: Option<i64>) -> ResultJson {
        let mut r = crate::read::row(m, t, None, &Default::default(), 0, 0, 0.0);
        r.percentiles_ns = p99.map(|v| PercentilesJson { p50: 0, p90: 0, p99: v, p99_9: v, p99_99: v, p99_999: v });
        r
    }

    #[test]
    fn rows_pair_by_mechanism_and_thread_and_every_gap_fails() {
        let old = [row("a", 0, Some(100)), row("a", 1, Some(100)), row("b", 0, None), row("c", 0, Some(5))];
        let new = [row("a", 0, Some(110)), row("a", 1, Some(111)), row("b", 0, Some(1)), row("d", 0, Some(1))];
        let c = compare(&old, &new, &[2], 10.0);
        assert_eq!(c.metric_names, ["p99"]);
        assert_eq!(c.rows.len(), 3);
        assert_eq!(c.rows[0].metrics, [Some(MetricChange { old: 100, new: 110, regressed: false })]);
        assert_eq!(c.rows[2].metrics, [None]);
        assert_eq!(
            c.failures,
            [
                Failure::Regressed {
                    metric: "p99".into(),
                    label: "a T1".into(),
                    change: MetricChange { old: 100, new: 111, regressed: true }
                },
                Failure::NoPercentiles { metric: "p99".into(), label: "b T0".into() },
                Failure::Missing { label: "c T0".into() },
            ]
        );
        assert_eq!(c.only_new, ["d T0"]);
        assert!(c.failed());
        assert!(!compare(&old[..2], &new[..2], &[2], 20.0).failed());
    }

    #[test]
    fn percent_and_metric_values() {
        assert_eq!(percent("10%"), Ok(10.0));
        assert_eq!(percent("2.5"), Ok(2.5));
        for bad in ["-1%", "ten", "", "inf"] {
            assert!(percent(bad).is_err(), "{bad}");
        }
        assert_eq!(metric("p99.9"), Ok(3));
        assert!(metric("max").unwrap_err().contains("one of: p50, p90, p99, p99.9, p99.99, p99.999"));
    }
}

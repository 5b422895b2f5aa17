//! `rtick report NEW --baseline OLD`: has latency regressed?
//!
//! Rows are matched by mechanism, thread and phase (when a run has phases).
//! A chosen percentile that grew by more than the allowance fails, and so
//! does a row of the baseline that the new run lacks, or a percentile either
//! side lacks: a comparison that cannot be made is not a pass. A row only
//! the new run has is reported, with nothing to compare it to.

use crate::export::json::ResultJson;
use crate::gates::Figure;
use crate::output::{fmt_latency, unit};

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

/// The comparison's outcome: the text for people, and whether it failed.
pub struct Verdict {
    pub text: String,
    pub failed: bool,
}

/// Compares `new` with `old` on `metrics` (indices of percentiles),
/// allowing `max_regress` % of growth.
pub fn compare(
    (old_name, old): (&str, &[ResultJson]),
    (new_name, new): (&str, &[ResultJson]),
    metrics: &[usize],
    max_regress: f64,
    nsecs: bool,
) -> Verdict {
    let names: Vec<String> = metrics.iter().map(|&i| Figure::Percentile(i).name()).collect();
    let mut text = format!(
        "baseline {old_name} → {new_name}: {} in {}, growth allowed {max_regress} % (! = more)\n",
        names.join(", "),
        unit(nsecs)
    );
    let mut cells = vec![header(&names)];
    let mut fails = Vec::new();
    for o in old {
        let Some(n) = new.iter().find(|n| same(o, n)) else {
            fails.push(format!("FAIL {}: in {old_name}, missing from {new_name}: cannot be compared", label(o)));
            continue;
        };
        let mut row = vec![label(o)];
        for (&i, name) in metrics.iter().zip(&names) {
            let pair =
                o.percentiles_ns.as_ref().map(|p| p.values()[i]).zip(n.percentiles_ns.as_ref().map(|p| p.values()[i]));
            let Some((a, b)) = pair else {
                row.extend(["-".into(), "-".into(), "-".into()]);
                fails.push(format!("FAIL {name} of {}: no percentiles on one side: cannot be compared", label(o)));
                continue;
            };
            let regressed = grew_too_much(a, b, max_regress);
            let ratio = if a > 0 { format!("{:.2}", b as f64 / a as f64) } else { "-".into() };
            row.extend([
                fmt_latency(a, nsecs),
                fmt_latency(b, nsecs),
                format!("{ratio}{}", if regressed { "!" } else { "" }),
            ]);
            if regressed {
                fails.push(format!(
                    "FAIL {name} of {}: {} {u} → {} {u} (×{ratio}), more than +{max_regress} %",
                    label(o),
                    fmt_latency(a, nsecs),
                    fmt_latency(b, nsecs),
                    u = unit(nsecs)
                ));
            }
        }
        cells.push(row);
    }
    text += &crate::output::columns::layout(&cells, false);
    for n in new.iter().filter(|n| !old.iter().any(|o| same(o, n))) {
        text += &format!("note: {} is only in {new_name}: nothing to compare it with\n", label(n));
    }
    let failed = !fails.is_empty();
    for f in fails {
        text += &f;
        text.push('\n');
    }
    if !failed {
        text += &format!("PASS no metric grew by more than {max_regress} %\n");
    }
    Verdict { text, failed }
}

/// Whether `new` exceeds `old` by more than `pct` % of |old| (a baseline of
/// 0 allows no growth at all; equal to the limit passes).
fn grew_too_much(old: i64, new: i64, pct: f64) -> bool {
    (new as f64 - old as f64) * 100.0 > (old as f64).abs() * pct
}

fn header(names: &[String]) -> Vec<String> {
    let mut h = vec!["series".to_string()];
    for n in names {
        h.extend([format!("{n} old"), format!("{n} new"), "ratio".into()]);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_against_the_allowance() {
        assert!(!grew_too_much(50_000, 55_000, 10.0), "exactly +10 % passes");
        assert!(grew_too_much(50_000, 55_001, 10.0));
        assert!(!grew_too_much(50_000, 10_000, 10.0), "faster is fine");
        assert!(grew_too_much(0, 1, 50.0), "from 0 any growth fails");
        assert!(!grew_too_much(0, 0, 0.0));
        assert!(grew_too_much(-100, -80, 10.0), "an early wake-up getting later grows too");
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

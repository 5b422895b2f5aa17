//! `rtick report NEW --baseline OLD` on the terminal: the table of the
//! compared percentiles, then the verdict (`rtick_model::baseline`
//! compares).

use rtick_model::baseline::{Comparison, Failure, MetricChange};

use super::columns;
use super::{fmt_latency, unit};

/// The comparison's outcome: the text for people, and whether it failed.
pub struct Verdict {
    pub text: String,
    pub failed: bool,
}

/// The comparison of `new_name` with its baseline `old_name`, for people.
pub fn render(old_name: &str, new_name: &str, c: &Comparison, nsecs: bool) -> Verdict {
    let max_regress = c.max_regress;
    let mut text = format!(
        "baseline {old_name} → {new_name}: {} in {}, growth allowed {max_regress} % (! = more)\n",
        c.metric_names.join(", "),
        unit(nsecs)
    );
    let mut cells = vec![header(&c.metric_names)];
    for r in &c.rows {
        let mut row = vec![r.label.clone()];
        for m in &r.metrics {
            match m {
                None => row.extend(["-".into(), "-".into(), "-".into()]),
                Some(m) => row.extend([
                    fmt_latency(m.old, nsecs),
                    fmt_latency(m.new, nsecs),
                    format!("{}{}", ratio(m), if m.regressed { "!" } else { "" }),
                ]),
            }
        }
        cells.push(row);
    }
    text += &columns::layout(&cells, false);
    for n in &c.only_new {
        text += &format!("note: {n} is only in {new_name}: nothing to compare it with\n");
    }
    for f in &c.failures {
        text += &failure(f, old_name, new_name, max_regress, nsecs);
        text.push('\n');
    }
    if !c.failed() {
        text += &format!("PASS no metric grew by more than {max_regress} %\n");
    }
    Verdict { text, failed: c.failed() }
}

fn ratio(m: &MetricChange) -> String {
    m.ratio().map_or("-".into(), |r| format!("{r:.2}"))
}

fn failure(f: &Failure, old_name: &str, new_name: &str, max_regress: f64, nsecs: bool) -> String {
    match f {
        Failure::Missing { label } => {
            format!("FAIL {label}: in {old_name}, missing from {new_name}: cannot be compared")
        }
        Failure::NoPercentiles { metric, label } => {
            format!("FAIL {metric} of {label}: no percentiles on one side: cannot be compared")
        }
        Failure::Regressed { metric, label, change } => format!(
            "FAIL {metric} of {label}: {} {u} → {} {u} (×{}), more than +{max_regress} %",
            fmt_latency(change.old, nsecs),
            fmt_latency(change.new, nsecs),
            ratio(change),
            u = unit(nsecs)
        ),
    }
}

fn header(names: &[String]) -> Vec<String> {
    let mut h = vec!["series".to_string()];
    for n in names {
        h.extend([format!("{n} old"), format!("{n} new"), "ratio".into()]);
    }
    h
}

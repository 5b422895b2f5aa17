//! `--fail-if`: pass/fail conditions for CI, checked against every result
//! row (mechanism × thread, and phase when there are phases) after a run.
//!
//! An expression is a comma-separated list of conditions `FIGURE OP VALUE`
//! (`p99.9>50us,max>200us,overruns>0`), each naming a failure. It is parsed
//! and typed by clap at startup, so a bad one is a usage error before
//! anything runs. A figure a row cannot have (percentiles of a mechanism
//! that never woke, the CPU time of an imported run) fails with the reason:
//! a gate never passes for want of a number.

use rtick::stats::PERCENTILE_LABELS;
use rtick::Nanos;

use crate::json::{AttachFile, ConditionJson, GatesJson, ResultJson, UnavailableJson, ViolationJson};
use crate::units::{fmt_latency, unit};
use crate::units::{parse_time, Plain};

/// What a condition looks at in a result row.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Figure {
    /// Index into [`PERCENTILE_LABELS`].
    Percentile(usize),
    Max,
    Min,
    Mean,
    Stddev,
    Overruns,
    Missed,
    /// CPU time of the measuring thread, % of wall time.
    Cpu,
    /// `rtick attach`: a thread's least margin before its next deadline.
    Margin,
}

/// The kind of number a figure is, which decides how its limit is written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum FigureKind {
    Time,
    Count,
    Percent,
}

impl Figure {
    /// Every figure, for parsing and for the error message's list.
    pub fn all() -> Vec<Figure> {
        let mut v: Vec<Figure> = (0..PERCENTILE_LABELS.len()).map(Figure::Percentile).collect();
        v.extend([
            Figure::Max,
            Figure::Min,
            Figure::Mean,
            Figure::Stddev,
            Figure::Overruns,
            Figure::Missed,
            Figure::Cpu,
            Figure::Margin,
        ]);
        v
    }

    pub fn name(self) -> String {
        match self {
            Figure::Percentile(i) => format!("p{}", PERCENTILE_LABELS[i]),
            Figure::Max => "max".into(),
            Figure::Min => "min".into(),
            Figure::Mean => "mean".into(),
            Figure::Stddev => "stddev".into(),
            Figure::Overruns => "overruns".into(),
            Figure::Missed => "missed".into(),
            Figure::Cpu => "cpu".into(),
            Figure::Margin => "margin".into(),
        }
    }

    fn kind(self) -> FigureKind {
        match self {
            Figure::Overruns | Figure::Missed => FigureKind::Count,
            Figure::Cpu => FigureKind::Percent,
            _ => FigureKind::Time,
        }
    }

    /// The row's value (ns, a count, or %), or why it has none.
    fn value(self, r: &ResultJson) -> Result<f64, String> {
        let latency = self.kind() == FigureKind::Time;
        if latency && r.count == 0 {
            return Err("no wake-ups measured".into());
        }
        let missing = |what: &str| format!("the run has no {what}");
        match self {
            Figure::Percentile(i) => {
                r.percentiles_ns.as_ref().map(|p| p.values()[i] as f64).ok_or_else(|| missing("percentiles"))
            }
            Figure::Max => Ok(r.max_ns as f64),
            Figure::Min => Ok(r.min_ns as f64),
            Figure::Mean => Ok(r.mean_ns),
            Figure::Stddev => r.stddev_ns.ok_or_else(|| missing("standard deviation")),
            Figure::Overruns => r.overruns.map(|n| n as f64).ok_or_else(|| missing("overrun count")),
            Figure::Missed => r.missed_periods.map(|n| n as f64).ok_or_else(|| missing("count of missed periods")),
            Figure::Cpu => r.cpu_percent.ok_or_else(|| missing("CPU time")),
            Figure::Margin => r.margin_min_ns.map(|n| n as f64).ok_or_else(|| {
                "no cycle margin: a thread's margin is rtick attach's, of a thread with a fixed period".to_string()
            }),
        }
    }

    /// Parses a figure's name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Figure> {
        Figure::all().into_iter().find(|f| f.name() == s)
    }
}

/// A comparison.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl Op {
    /// Longest first, so `>=` is not read as `>` and `=…`.
    pub(crate) const ALL: [(&'static str, Op); 6] =
        [(">=", Op::Ge), ("<=", Op::Le), ("==", Op::Eq), ("!=", Op::Ne), (">", Op::Gt), ("<", Op::Lt)];

    pub fn symbol(self) -> &'static str {
        Op::ALL.iter().find(|(_, o)| *o == self).map_or("?", |(s, _)| s)
    }

    pub(crate) fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// One condition: the run fails when `figure op limit` holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// As written (spaces removed).
    pub text: String,
    pub figure: Figure,
    pub op: Op,
    /// ns for times, a count, or %.
    pub limit: f64,
}

/// The conditions of one `--fail-if`.
#[derive(Clone, Debug, PartialEq)]
pub struct Gates(pub Vec<Condition>);

/// What the error message lists.
fn grammar() -> String {
    let times: Vec<String> = Figure::all()
        .into_iter()
        .filter(|f| f.kind() == FigureKind::Time && *f != Figure::Margin)
        .map(Figure::name)
        .collect();
    format!(
        "figures: {} (times: 50us, 1.5ms; plain numbers µs), margin (attach), overruns, missed (counts), cpu (%); operators: >, >=, <, <=, ==, !=",
        times.join(", ")
    )
}

/// clap value parser for `measure --fail-if`: [`parse`], without `margin`
/// (a figure of `rtick attach`'s threads: a measured loop has none).
pub fn parse_measure(s: &str) -> Result<Gates, String> {
    let g = parse(s)?;
    match g.0.iter().find(|c| c.figure == Figure::Margin) {
        Some(c) => Err(format!(
            "'{}': margin is a figure of rtick attach (a thread's cycle), not of a measured loop; {}",
            c.text,
            grammar()
        )),
        None => Ok(g),
    }
}

/// clap value parser for `--fail-if`.
pub fn parse(s: &str) -> Result<Gates, String> {
    let mut out = Vec::new();
    for term in s.split(',') {
        let text: String = term.split_whitespace().collect();
        if text.is_empty() {
            return Err(format!("an empty condition in '{s}': separate conditions with one comma; {}", grammar()));
        }
        // The error quotes the term as written, so it can be found in the command line.
        out.push(condition(&text).map_err(|why| format!("'{}': {why}; {}", term.trim(), grammar()))?);
    }
    Ok(Gates(out))
}

fn condition(text: &str) -> Result<Condition, String> {
    let at = text.find(['<', '>', '=', '!']).ok_or("no comparison operator")?;
    let (name, rest) = text.split_at(at);
    let (sym, op) = Op::ALL.iter().find(|(sym, _)| rest.starts_with(sym)).ok_or("unknown operator")?;
    let value = &rest[sym.len()..];
    let figure = Figure::parse(&name.to_ascii_lowercase()).ok_or_else(|| format!("unknown figure '{name}'"))?;
    if value.is_empty() {
        return Err("no value to compare with".into());
    }
    let limit = match figure.kind() {
        FigureKind::Time => {
            // Latencies are signed (an early wake-up is negative).
            let (sign, magnitude) = value.strip_prefix('-').map_or((1.0, value), |m| (-1.0, m));
            sign * parse_time(magnitude, Plain::Micros, false)?.as_ns() as f64
        }
        FigureKind::Count => value
            .replace('_', "")
            .parse::<u64>()
            .map_err(|_| format!("{} is a count: '{value}' is not a whole number", figure.name()))?
            as f64,
        FigureKind::Percent => {
            let v = value.strip_suffix('%').unwrap_or(value);
            match v.parse::<f64>() {
                Ok(p) if p.is_finite() && p >= 0.0 => p,
                _ => return Err(format!("cpu is a percentage: '{value}' is not a number ≥ 0")),
            }
        }
    };
    Ok(Condition { text: text.to_string(), figure, op: *op, limit })
}

fn unit_of(kind: FigureKind) -> &'static str {
    match kind {
        FigureKind::Time => "ns",
        FigureKind::Count => "count",
        FigureKind::Percent => "%",
    }
}

impl Gates {
    /// Checks every condition against every row; a mechanism `asked` for
    /// that has no row (unavailable, or never reached: a break stopped the
    /// run first) fails them all, and neither an interrupted run nor one whose
    /// load failed (`load_failures`, see `load::failures`) passes.
    pub fn evaluate(
        &self,
        results: &[ResultJson],
        asked: &[String],
        unavailable: &[UnavailableJson],
        interrupted: bool,
        load_failures: Vec<String>,
    ) -> GatesJson {
        let mut violations = Vec::new();
        for r in results {
            for c in &self.0 {
                let (value, reason) = match c.figure.value(r) {
                    Ok(v) if c.op.holds(v, c.limit) => (Some(v), None),
                    Ok(_) => continue,
                    Err(why) => (None, Some(why)),
                };
                violations.push(ViolationJson {
                    condition: Some(c.text.clone()),
                    mechanism: r.mechanism.clone(),
                    thread: Some(r.thread),
                    phase: r.phase.clone(),
                    value,
                    limit: Some(c.limit),
                    reason,
                });
            }
        }
        let no_row = |m: &String| {
            let why = match unavailable.iter().find(|u| &u.mechanism == m) {
                Some(u) => format!("unavailable: {}", u.reason),
                None => "not measured: the run stopped before it".into(),
            };
            ViolationJson {
                condition: None,
                mechanism: m.clone(),
                thread: None,
                phase: None,
                value: None,
                limit: None,
                reason: Some(why),
            }
        };
        violations.extend(asked.iter().filter(|m| !results.iter().any(|r| &r.mechanism == *m)).map(no_row));
        let conditions = self
            .0
            .iter()
            .map(|c| ConditionJson {
                condition: c.text.clone(),
                figure: c.figure.name(),
                op: c.op.symbol().into(),
                limit: c.limit,
                unit: unit_of(c.figure.kind()).into(),
            })
            .collect();
        let passed = violations.is_empty() && !interrupted && load_failures.is_empty();
        GatesJson { conditions, violations, interrupted, load_failures, passed }
    }

    /// The conditions checked against each thread's lateness of the attach
    /// run `f` (its `results`); without a timed wait there is no figure to
    /// check, which fails. A run stopped by Ctrl-C before its -D is partial;
    /// without -D, Ctrl-C is its end. A file of an rtick before `results`
    /// has no rows to check: its reader refuses --fail-if with it.
    pub fn evaluate_attach(&self, f: &AttachFile) -> GatesJson {
        let results = f.rows();
        let none = "timed waits".to_string();
        let (asked, unavailable) = match results.is_empty() {
            true => {
                let why = "no timed wait of the target ended in the run".to_string();
                (vec![none.clone()], vec![UnavailableJson { mechanism: none, reason: why }])
            }
            false => (Vec::new(), Vec::new()),
        };
        let partial = f.duration_ns.is_some() && f.ended_by == "interrupted";
        self.evaluate(results, &asked, &unavailable, partial, Vec::new())
    }

    /// [`Gates::render`] of the verdict `g` on the attach run `f`: its rows checked.
    pub fn render_attach(&self, g: &GatesJson, f: &AttachFile) -> String {
        self.render(g, f.rows().len(), Nanos(f.elapsed_ns), false)
    }

    /// The verdict for people: one `FAIL` line per violation (or one `PASS`
    /// line), e.g. `FAIL p99.9 of clock_nanosleep T0: 73.2 µs > 50 µs`.
    pub fn render(&self, g: &GatesJson, rows: usize, elapsed: Nanos, nsecs: bool) -> String {
        let mut out = String::new();
        for v in &g.violations {
            let c = v.condition.as_ref().and_then(|t| self.0.iter().find(|c| &c.text == t));
            let (Some(c), Some(thread)) = (c, v.thread) else {
                out += &format!(
                    "FAIL {}: {}: no figure to check\n",
                    v.mechanism,
                    v.reason.as_deref().unwrap_or("not measured")
                );
                continue;
            };
            let phase = v.phase.as_ref().map_or(String::new(), |p| format!(" ({p})"));
            let what = format!("{} of {} T{thread}{phase}", c.figure.name(), v.mechanism);
            let limit = show(c.figure.kind(), c.limit, nsecs);
            out += &match (v.value, &v.reason) {
                (Some(value), _) => {
                    format!("FAIL {what}: {} {} {limit}\n", show(c.figure.kind(), value, nsecs), c.op.symbol())
                }
                (None, why) => format!(
                    "FAIL {what}: {}, so {} {} {limit} cannot be checked\n",
                    why.as_deref().unwrap_or("no value"),
                    c.figure.name(),
                    c.op.symbol()
                ),
            };
        }
        for why in &g.load_failures {
            out += &format!("FAIL {why}: the run was not under the load asked for\n");
        }
        let list: Vec<&str> = self.0.iter().map(|c| c.text.as_str()).collect();
        if g.interrupted {
            out += &format!("FAIL the run was interrupted after {elapsed}: a partial run does not pass --fail-if\n");
        } else if g.passed {
            out += &format!("PASS no result row ({rows}) meets a --fail-if condition ({})\n", list.join(", "));
        }
        out
    }
}

/// A figure's value for people: a latency in the table's unit, a count, or %.
fn show(kind: FigureKind, v: f64, nsecs: bool) -> String {
    match kind {
        FigureKind::Time => {
            let s = fmt_latency(v.round() as i64, nsecs);
            format!("{} {}", s.strip_suffix(".0").unwrap_or(&s), unit(nsecs))
        }
        FigureKind::Count => format!("{v}"),
        FigureKind::Percent => format!("{v:.1} %"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_typed() {
        let g = parse("p99.9>50us, max >= 0.2ms,overruns>0,cpu<=5%,min==-1us,missed!=3,mean<7").unwrap();
        let got: Vec<(String, Op, f64)> = g.0.iter().map(|c| (c.figure.name(), c.op, c.limit)).collect();
        assert_eq!(
            got,
            [
                ("p99.9".into(), Op::Gt, 50_000.0),
                ("max".into(), Op::Ge, 200_000.0),
                ("overruns".into(), Op::Gt, 0.0),
                ("cpu".into(), Op::Le, 5.0),
                ("min".into(), Op::Eq, -1000.0),
                ("missed".into(), Op::Ne, 3.0),
                ("mean".into(), Op::Lt, 7000.0),
            ]
        );
        assert_eq!(g.0[1].text, "max>=0.2ms");
    }

    fn row(mechanism: &str, count: u64) -> ResultJson {
        serde_json::from_value(serde_json::json!({
            "mechanism": mechanism, "thread": 1, "cpu": null, "count": count, "min_ns": 0, "max_ns": 0,
            "mean_ns": 0.0, "percentiles_ns": null, "phase": "loaded"
        }))
        .unwrap()
    }

    #[test]
    fn a_figure_a_row_cannot_have_is_a_violation_with_the_reason() {
        let g = parse("p99>50us,overruns>0,cpu>50").unwrap();
        let asked = ["clock_nanosleep".to_string(), "timerfd".into(), "sched-deadline".into(), "spin".into()];
        let unavailable = [UnavailableJson { mechanism: "sched-deadline".into(), reason: "needs root".into() }];
        let rows = [row("clock_nanosleep", 0), row("timerfd", 10)];
        let j = g.evaluate(&rows, &asked, &unavailable, false, Vec::new());
        assert!(!j.passed);
        let reasons: Vec<(&str, Option<&str>, Option<&str>)> =
            j.violations.iter().map(|v| (v.mechanism.as_str(), v.condition.as_deref(), v.reason.as_deref())).collect();
        assert_eq!(
            reasons,
            [
                ("clock_nanosleep", Some("p99>50us"), Some("no wake-ups measured")),
                ("clock_nanosleep", Some("overruns>0"), Some("the run has no overrun count")),
                ("clock_nanosleep", Some("cpu>50"), Some("the run has no CPU time")),
                ("timerfd", Some("p99>50us"), Some("the run has no percentiles")),
                ("timerfd", Some("overruns>0"), Some("the run has no overrun count")),
                ("timerfd", Some("cpu>50"), Some("the run has no CPU time")),
                ("sched-deadline", None, Some("unavailable: needs root")),
                ("spin", None, Some("not measured: the run stopped before it")),
            ]
        );
        let text = g.render(&j, 2, Nanos::from_secs(1), false);
        assert!(
            text.contains(
                "FAIL p99 of clock_nanosleep T1 (loaded): no wake-ups measured, so p99 > 50 µs cannot be checked\n"
            ),
            "{text}"
        );
        assert!(text.contains("FAIL sched-deadline: unavailable: needs root: no figure to check\n"), "{text}");
        assert!(!text.contains("PASS"), "{text}");
    }

    /// `margin` is a thread's least cycle margin (attach's rows); a
    /// measured loop's row has none, and says why.
    #[test]
    fn margin_checks_the_cycle_s_least_margin() {
        assert!(parse_measure("p99>1ms,margin<100us")
            .unwrap_err()
            .starts_with("'margin<100us': margin is a figure of rtick attach"));
        let g = parse("margin<100us").unwrap();
        let mut tight = row("control", 10);
        tight.margin_min_ns = Some(42_000);
        let mut roomy = row("logger", 10);
        roomy.margin_min_ns = Some(900_000);
        let j = g.evaluate(&[tight, roomy, row("clock_nanosleep", 10)], &[], &[], false, Vec::new());
        let got: Vec<(&str, Option<f64>, Option<&str>)> =
            j.violations.iter().map(|v| (v.mechanism.as_str(), v.value, v.reason.as_deref())).collect();
        let why = "no cycle margin: a thread's margin is rtick attach's, of a thread with a fixed period";
        assert_eq!(got, [("control", Some(42_000.0), None), ("clock_nanosleep", None, Some(why))]);
        let text = g.render(&j, 3, Nanos::from_secs(1), false);
        assert!(text.contains("FAIL margin of control T1 (loaded): 42 µs < 100 µs\n"), "{text}");
    }

    #[test]
    fn an_interrupted_run_does_not_pass() {
        let g = parse("max>1s").unwrap();
        let mut r = row("spin", 5);
        r.percentiles_ns = None;
        let j = g.evaluate(&[r.clone()], &["spin".into()], &[], true, Vec::new());
        assert!(j.violations.is_empty() && j.interrupted && !j.passed);
        let text = g.render(&j, 1, Nanos::from_secs(2), false);
        assert_eq!(text, "FAIL the run was interrupted after 2.000 s: a partial run does not pass --fail-if\n");
        // Nor does a run whose load failed, though no row meets a condition.
        let j = g.evaluate(&[r], &["spin".into()], &[], false, vec!["load io did no work".into()]);
        assert!(j.violations.is_empty() && !j.passed);
        let text = g.render(&j, 1, Nanos::from_secs(2), false);
        assert_eq!(text, "FAIL load io did no work: the run was not under the load asked for\n");
    }

    #[test]
    fn bad_expressions_name_the_term_and_list_the_figures() {
        for (bad, why) in [
            ("p99.5>50us", "'p99.5>50us': unknown figure 'p99.5'"),
            ("p99>50parsecs", "'p99>50parsecs': '50parsecs': unknown unit"),
            ("overruns>0.5", "overruns is a count"),
            ("max=5", "'max=5': unknown operator"),
            ("max 5", "'max 5': no comparison operator"),
            ("max > 5 parsecs", "'max > 5 parsecs': '5parsecs': unknown unit"),
            ("max>", "no value"),
            ("max>1us,,min<0", "an empty condition"),
            ("cpu>lots", "cpu is a percentage"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.contains("figures: p50, p90, p99, p99.9, p99.99, p99.999, max, min, mean, stddev"), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}

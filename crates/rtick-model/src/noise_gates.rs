//! `rtick noise --fail-if`: pass/fail conditions checked against every
//! measured CPU after a run, with the operators of `measure`'s
//! [`gates`](crate::gates) and the figures of a noise run.
//!
//! `max>20us,noise>0.1%,p99>10us,source:local_timer>50us`: a time is the
//! gap's (max, p50, p99) or the noise's total; a percentage is of the
//! CPU's runtime (noise, available); `gaps` is a count. `source:NAME`
//! checks every source whose printed name begins with NAME (case and
//! spaces aside): against a time, its longest occurrence; against a
//! percentage, its total share of the runtime. A source that never struck
//! took nothing: it passes.

use crate::gates::Op;
use crate::json::{NoiseCpuJson, NoiseGatesJson, NoiseViolationJson};
use crate::units::{parse_time, Plain};

/// What a condition looks at in one CPU's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoiseFigure {
    /// The largest gap.
    Max,
    /// Gap percentiles.
    P50,
    P99,
    /// The gaps' sum: its time, or its share of the runtime.
    Noise,
    /// (runtime − noise) ÷ runtime, %.
    Available,
    /// How many gaps.
    Gaps,
    /// The sources whose printed name begins with this (lower case, no spaces).
    Source(String),
}

/// How a limit is written, which decides what is compared.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Limit {
    /// ns.
    Time(f64),
    /// % of the runtime.
    Percent(f64),
    Count(f64),
}

/// One condition: the CPU fails when `figure op limit` holds.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseCondition {
    /// As written (spaces removed).
    pub text: String,
    pub figure: NoiseFigure,
    pub op: Op,
    pub limit: Limit,
}

/// The conditions of one `--fail-if`.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseGates(pub Vec<NoiseCondition>);

const GRAMMAR: &str =
    "figures: max, p50, p99 (times: 20us, 1.5ms; plain numbers µs), noise (a time, or % of the runtime), \
available (%), gaps (a count), source:NAME (a time: its longest; a %: its share of the runtime); \
operators: >, >=, <, <=, ==, !=";

/// A key to compare source names by: lower case, no spaces.
pub fn source_key(name: &str) -> String {
    name.chars().filter(|c| !c.is_whitespace()).flat_map(char::to_lowercase).collect()
}

/// clap value parser for `rtick noise --fail-if`.
pub fn parse(s: &str) -> Result<NoiseGates, String> {
    let mut out = Vec::new();
    for term in s.split(',') {
        let text: String = term.split_whitespace().collect();
        if text.is_empty() {
            return Err(format!("an empty condition in '{s}': separate conditions with one comma; {GRAMMAR}"));
        }
        out.push(condition(&text).map_err(|why| format!("'{}': {why}; {GRAMMAR}", term.trim()))?);
    }
    Ok(NoiseGates(out))
}

fn condition(text: &str) -> Result<NoiseCondition, String> {
    let at = text.find(['<', '>', '=', '!']).ok_or("no comparison operator")?;
    let (name, rest) = text.split_at(at);
    let (sym, op) = Op::ALL.iter().find(|(sym, _)| rest.starts_with(sym)).ok_or("unknown operator")?;
    let value = &rest[sym.len()..];
    let lower = name.to_ascii_lowercase();
    let figure = match lower.as_str() {
        "max" => NoiseFigure::Max,
        "p50" => NoiseFigure::P50,
        "p99" => NoiseFigure::P99,
        "noise" => NoiseFigure::Noise,
        "available" => NoiseFigure::Available,
        "gaps" => NoiseFigure::Gaps,
        _ => match lower.strip_prefix("source:") {
            Some("") => return Err("source: needs a name, e.g. source:local_timer".into()),
            Some(s) => NoiseFigure::Source(source_key(s)),
            None => return Err(format!("unknown figure '{name}'")),
        },
    };
    if value.is_empty() {
        return Err("no value to compare with".into());
    }
    let percent = || match value.strip_suffix('%').map(str::parse::<f64>) {
        Some(Ok(p)) if p.is_finite() && p >= 0.0 => Ok(Limit::Percent(p)),
        _ => Err(format!("'{value}' is not a percentage ≥ 0")),
    };
    let time = || parse_time(value, Plain::Micros, false).map(|t| Limit::Time(t.as_ns() as f64));
    let limit = match figure {
        NoiseFigure::Max | NoiseFigure::P50 | NoiseFigure::P99 => time()?,
        NoiseFigure::Available => percent().map_err(|e| format!("available is a percentage: {e}"))?,
        NoiseFigure::Gaps => Limit::Count(
            value
                .replace('_', "")
                .parse::<u64>()
                .map_err(|_| format!("gaps is a count: '{value}' is not a whole number"))? as f64,
        ),
        NoiseFigure::Noise | NoiseFigure::Source(_) if value.ends_with('%') => percent()?,
        NoiseFigure::Noise | NoiseFigure::Source(_) => time()?,
    };
    Ok(NoiseCondition { text: text.to_string(), figure, op: *op, limit })
}

/// One condition that held on one CPU (for one source, for `source:`).
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseViolation {
    pub condition: String,
    pub cpu: usize,
    /// What was compared: "max", "noise", "source local_timer (longest)" …
    pub what: String,
    /// The value, in the limit's unit (ns, %, a count).
    pub value: f64,
    pub limit: Limit,
    pub op: Op,
}

/// The verdict of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseVerdict {
    pub violations: Vec<NoiseViolation>,
    /// A partial run does not pass.
    pub interrupted: bool,
    /// Conditions on sources of a run without attribution cannot be checked.
    pub unchecked: Vec<String>,
    pub passed: bool,
}

impl NoiseVerdict {
    /// The verdict as the run file holds it, for the conditions `g`.
    pub fn json(&self, g: &NoiseGates) -> NoiseGatesJson {
        let violations = self
            .violations
            .iter()
            .map(|v| NoiseViolationJson {
                condition: v.condition.clone(),
                cpu: v.cpu,
                what: v.what.clone(),
                value: v.value,
                op: v.op.symbol().into(),
                limit: limit_value(v.limit),
                unit: match v.limit {
                    Limit::Time(_) => "ns",
                    Limit::Percent(_) => "%",
                    Limit::Count(_) => "count",
                }
                .into(),
            })
            .collect();
        NoiseGatesJson {
            conditions: g.0.iter().map(|c| c.text.clone()).collect(),
            violations,
            unchecked: self.unchecked.clone(),
            interrupted: self.interrupted,
            passed: self.passed,
        }
    }
}

impl NoiseGates {
    /// Whether any condition needs the sources (attribution).
    pub fn needs_sources(&self) -> bool {
        self.0.iter().any(|c| matches!(c.figure, NoiseFigure::Source(_)))
    }

    /// Checks every condition against every CPU of a run (the JSON's
    /// `cpus`; `attribution` whether it has sources; `interrupted` whether it ended early).
    pub fn evaluate(&self, cpus: &[NoiseCpuJson], attribution: bool, interrupted: bool) -> NoiseVerdict {
        let mut violations = Vec::new();
        let mut unchecked = Vec::new();
        for c in &self.0 {
            if matches!(c.figure, NoiseFigure::Source(_)) && !attribution {
                unchecked.push(c.text.clone());
                continue;
            }
            for cpu in cpus {
                for (what, value) in values(&c.figure, c.limit, cpu) {
                    let limit = match c.limit {
                        Limit::Time(v) | Limit::Percent(v) | Limit::Count(v) => v,
                    };
                    if c.op.holds(value, limit) {
                        let (condition, cpu) = (c.text.clone(), cpu.cpu);
                        violations.push(NoiseViolation { condition, cpu, what, value, limit: c.limit, op: c.op });
                    }
                }
            }
        }
        let passed = violations.is_empty() && unchecked.is_empty() && !interrupted;
        NoiseVerdict { violations, interrupted, unchecked, passed }
    }

    /// The verdict, a line per violation, then PASS or why not.
    pub fn render(&self, v: &NoiseVerdict, cpus: usize) -> String {
        let mut out = String::new();
        for x in &v.violations {
            let (value, limit) = (show(x.limit, x.value), show(x.limit, limit_value(x.limit)));
            out += &format!("FAIL {} of CPU {}: {value} {} {limit} ({})\n", x.what, x.cpu, x.op.symbol(), x.condition);
        }
        for c in &v.unchecked {
            out += &format!("FAIL {c}: the run has no sources (--no-attribution), so it cannot be checked\n");
        }
        let list: Vec<&str> = self.0.iter().map(|c| c.text.as_str()).collect();
        if v.interrupted {
            out += "FAIL the run was interrupted: a partial run does not pass --fail-if\n";
        } else if v.passed {
            out += &format!("PASS no CPU ({cpus}) meets a --fail-if condition ({})\n", list.join(", "));
        }
        out
    }
}

fn limit_value(l: Limit) -> f64 {
    match l {
        Limit::Time(v) | Limit::Percent(v) | Limit::Count(v) => v,
    }
}

/// The values a figure has on one CPU, each named (a `source:` may match several).
fn values(f: &NoiseFigure, limit: Limit, c: &NoiseCpuJson) -> Vec<(String, f64)> {
    let share = |ns: i64| 100.0 * ns as f64 / c.runtime_ns.max(1) as f64;
    let percent = matches!(limit, Limit::Percent(_));
    match f {
        NoiseFigure::Max => vec![("max".into(), c.max_gap_ns as f64)],
        NoiseFigure::P50 => vec![("p50".into(), c.gap_p50_ns as f64)],
        NoiseFigure::P99 => vec![("p99".into(), c.gap_p99_ns as f64)],
        NoiseFigure::Noise if percent => vec![("noise".into(), share(c.noise_ns))],
        NoiseFigure::Noise => vec![("noise".into(), c.noise_ns as f64)],
        NoiseFigure::Available => vec![("available".into(), c.available_percent)],
        NoiseFigure::Gaps => vec![("gaps".into(), c.gaps as f64)],
        NoiseFigure::Source(key) => c
            .sources
            .iter()
            .filter(|s| source_key(&s.name).starts_with(key.as_str()))
            .map(|s| match percent {
                true => (format!("share of {}", s.name), share(s.total_ns)),
                false => (format!("longest {}", s.name), s.max_ns as f64),
            })
            .collect(),
    }
}

fn show(l: Limit, v: f64) -> String {
    match l {
        Limit::Time(_) => format!("{} µs", trim(v / 1000.0, 2)),
        Limit::Percent(_) => format!("{} %", trim(v, 4)),
        Limit::Count(_) => format!("{v}"),
    }
}

/// `v` with up to `digits` decimals, trailing zeros dropped.
fn trim(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::NoiseSourceJson;

    fn src(name: &str, total_ns: i64, max_ns: i64) -> NoiseSourceJson {
        NoiseSourceJson {
            kind: String::new(),
            name: name.into(),
            count: 1,
            total_ns,
            max_ns,
            nested_ns: 0,
            cgroup: None,
            top_sender: None,
            stack: Vec::new(),
        }
    }

    fn cpu() -> NoiseCpuJson {
        NoiseCpuJson {
            cpu: 1,
            tid: 7,
            runtime_ns: 1_000_000_000,
            noise_ns: 2_000_000,
            available_percent: 99.8,
            gaps: 300,
            max_gap_ns: 60_000,
            gap_p50_ns: 3_000,
            gap_p99_ns: 25_000,
            iterations: 1,
            resolution_min_ns: 20,
            resolution_median_ns: 30,
            sources: vec![
                src("local_timer", 1_500_000, 40_000),
                src("call_function IPI", 100_000, 9_000),
                src("call_function_single IPI", 200_000, 55_000),
                src("softirq TIMER", 200_000, 12_000),
            ],
            below_threshold: src("", 0, 0),
            unattributed_gaps: 0,
            dropped_instances: 0,
            lost_events: 0,
            steal_ns: None,
            largest_gaps: Vec::new(),
            nohz_full: false,
            tick: None,
        }
    }

    fn failed(expr: &str) -> Vec<String> {
        let v = parse(expr).unwrap().evaluate(&[cpu()], true, false);
        assert_eq!(v.passed, v.violations.is_empty());
        v.violations.into_iter().map(|x| x.what).collect()
    }

    #[test]
    fn figures_compare_in_the_unit_they_are_written_in() {
        assert_eq!(failed("max>50us"), ["max"]);
        assert!(failed("max>60us").is_empty());
        assert_eq!(failed("p99>=25,p50>2.9us"), ["p99", "p50"]);
        // 2 ms of 1 s: 0.2 %.
        assert_eq!(failed("noise>0.1%"), ["noise"]);
        assert!(failed("noise>0.3%").is_empty());
        assert_eq!(failed("noise>1ms"), ["noise"]);
        assert_eq!(failed("available<99.9%"), ["available"]);
        assert_eq!(failed("gaps>299"), ["gaps"]);
    }

    #[test]
    fn a_source_is_its_longest_against_a_time_and_its_share_against_a_percentage() {
        assert_eq!(failed("source:local_timer>30us"), ["longest local_timer"]);
        assert!(failed("source:local_timer>40us").is_empty());
        assert_eq!(failed("source:local_timer>0.1%"), ["share of local_timer"]);
        // A prefix, case and spaces aside: both call_function IPIs, or one.
        assert_eq!(
            failed("source:CALL_FUNCTION>5us"),
            ["longest call_function IPI", "longest call_function_single IPI"]
        );
        assert_eq!(failed("source:call_function IPI>5us"), ["longest call_function IPI"]);
        assert_eq!(failed("source: softirq timer >10us"), ["longest softirq TIMER"]);
        // A source that never struck took nothing.
        assert!(failed("source:NMI>0").is_empty());
    }

    #[test]
    fn sources_without_attribution_and_interrupted_runs_do_not_pass() {
        let g = parse("source:local_timer>1ms,max>1s").unwrap();
        let v = g.evaluate(&[cpu()], false, false);
        assert!(!v.passed && v.violations.is_empty());
        assert!(g.render(&v, 1).contains("cannot be checked"), "{}", g.render(&v, 1));
        let g = parse("max>1s").unwrap();
        assert!(g.evaluate(&[cpu()], true, false).passed);
        let v = g.evaluate(&[cpu()], true, true);
        assert!(!v.passed);
        assert!(g.render(&v, 1).starts_with("FAIL the run was interrupted"));
    }

    #[test]
    fn renders_each_violation_with_its_cpu_and_values() {
        let g = parse("max>20us,noise>0.1%").unwrap();
        let v = g.evaluate(&[cpu()], true, false);
        let j = v.json(&g);
        assert_eq!((j.conditions.len(), j.passed, j.violations.len()), (2, false, 2));
        let n = &j.violations[1];
        assert_eq!((n.what.as_str(), n.cpu, n.op.as_str(), n.limit, n.unit.as_str()), ("noise", 1, ">", 0.1, "%"));
        let r = g.render(&v, 1);
        assert_eq!(r, "FAIL max of CPU 1: 60 µs > 20 µs (max>20us)\nFAIL noise of CPU 1: 0.2 % > 0.1 % (noise>0.1%)\n");
    }

    #[test]
    fn bad_conditions_say_why_and_list_the_figures() {
        for (bad, why) in [
            ("max", "no comparison operator"),
            ("mx>1us", "unknown figure 'mx'"),
            ("available<99", "available is a percentage"),
            ("gaps>1.5", "gaps is a count"),
            ("source:>1us", "source: needs a name"),
            ("noise>x%", "not a percentage"),
            ("max>20us,", "an empty condition"),
            ("p99>", "no value"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why) && e.contains("figures: max, p50, p99"), "{bad}: {e}");
        }
    }
}

//! The recommendation after `--compare`: the best mechanism that sleeps, and
//! the best overall with what it costs in CPU. "Best" is the lowest p99 of
//! the worst thread; mechanisms within [`EQUIVALENT`] of it count as equally
//! precise, and the cheapest in CPU of those wins (hybrid over spin when both
//! are at a few ns).

use rtick::Nanos;

use super::{fmt_latency, unit};
use rtick_model::json::ResultJson;

/// Per mechanism, the worst thread's figures (a mechanism is as good as its worst thread).
struct Figure<'a> {
    mechanism: &'a str,
    p99: i64,
    cpu: f64,
    overruns: u64,
    slack: Option<i64>,
}

fn figures(results: &[ResultJson]) -> Vec<Figure<'_>> {
    let mut out: Vec<Figure<'_>> = Vec::new();
    for r in results.iter().filter(|r| r.count > 0 && r.percentiles_ns.is_some()) {
        let (p99, cpu, overruns) = (r.p99(), r.cpu_percent.unwrap_or(0.0), r.overruns.unwrap_or(0));
        match out.iter_mut().find(|f| f.mechanism == r.mechanism) {
            Some(f) => {
                f.p99 = f.p99.max(p99);
                f.cpu = f.cpu.max(cpu);
                f.overruns += overruns;
                f.slack = f.slack.max(r.hybrid_slack_ns);
            }
            None => out.push(Figure { mechanism: &r.mechanism, p99, cpu, overruns, slack: r.hybrid_slack_ns }),
        }
    }
    // Best first: lowest p99, then least CPU.
    out.sort_by(|a, b| a.p99.cmp(&b.p99).then(a.cpu.total_cmp(&b.cpu)));
    out
}

/// p99s within 10 % or 1 µs of the best count as equally precise.
pub const EQUIVALENT: (f64, i64) = (0.10, 1_000);

fn equivalent(p99: i64, best: i64) -> bool {
    p99 - best <= ((best as f64 * EQUIVALENT.0) as i64).max(EQUIVALENT.1)
}

/// The cheapest of those as precise as the first of `fs` (sorted best first).
fn pick<'a, 'b>(fs: impl Iterator<Item = &'b Figure<'a>>) -> Option<&'b Figure<'a>> {
    let fs: Vec<&Figure<'a>> = fs.collect();
    let best = fs.first()?.p99;
    fs.into_iter().filter(|f| equivalent(f.p99, best)).min_by(|a, b| a.cpu.total_cmp(&b.cpu))
}

fn burns_cpu(name: &str) -> bool {
    rtick::Mechanism::parse(name).is_some_and(|m| m.info().burns_cpu)
}

fn describe(f: &Figure<'_>, nsecs: bool) -> String {
    let show =
        |ns: i64| if nsecs { format!("{} {}", fmt_latency(ns, true), unit(true)) } else { Nanos(ns).to_string() };
    let slack = f.slack.map(|s| format!(" with {} slack", show(s))).unwrap_or_default();
    let over = if f.overruns > 0 { format!(", {}", rtick::text::count(f.overruns, "overrun")) } else { String::new() };
    format!("{}{slack}: p99 {} at {:.1} % CPU{over}", f.mechanism, show(f.p99), f.cpu)
}

/// Lines of the recommendation (empty when nothing was measured).
pub fn recommend(results: &[ResultJson], nsecs: bool) -> Vec<String> {
    let all = figures(results);
    let Some(best) = pick(all.iter()) else { return Vec::new() };
    let sleeping = pick(all.iter().filter(|f| !burns_cpu(f.mechanism)));
    let mut lines = vec!["recommendation for this machine (worst thread of each mechanism):".to_string()];
    match sleeping {
        Some(s) => lines.push(format!("  best sleeping mechanism: {}", describe(s, nsecs))),
        None => lines.push("  no sleeping mechanism was measured".into()),
    }
    if sleeping.is_some_and(|s| s.mechanism == best.mechanism) {
        lines.push("  it is also the best overall".into());
    } else {
        lines.push(format!("  best overall: {}", describe(best, nsecs)));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick_model::json::PercentilesJson;

    fn r(mechanism: &str, thread: usize, p99: i64, cpu: f64, slack: Option<i64>) -> ResultJson {
        let p = PercentilesJson { p50: 0, p90: 0, p99, p99_9: p99, p99_99: p99, p99_999: p99 };
        let mut r = ResultJson::with_figures(mechanism.into(), thread, 10, 0, p99, 0.0);
        r.tid = Some(1);
        r.stddev_ns = Some(0.0);
        r.percentiles_ns = Some(p.clone());
        (r.overruns, r.missed_periods, r.early_wakeups) = (Some(0), Some(0), Some(0));
        r.cpu_percent = Some(cpu);
        r.hybrid_slack_ns = slack;
        (r.period_min_ns, r.period_max_ns, r.period_percentiles_ns) = (Some(0), Some(0), Some(p));
        r
    }

    #[test]
    fn names_best_sleeper_and_best_overall_by_worst_thread() {
        let res = vec![
            r("clock_nanosleep", 0, 20_000, 0.4, None),
            r("clock_nanosleep", 1, 90_000, 0.4, None),
            r("posix-timer", 0, 30_000, 0.5, None),
            r("posix-timer", 1, 31_000, 0.5, None),
            r("hybrid", 0, 400, 9.0, Some(38_000)),
            r("spin", 0, 100, 99.0, None),
        ];
        let lines = recommend(&res, false);
        // clock_nanosleep's worst thread (90 µs) ranks it behind posix-timer (31 µs).
        assert_eq!(lines[1], "  best sleeping mechanism: posix-timer: p99 31.0 µs at 0.5 % CPU");
        // spin (100 ns) and hybrid (400 ns) are equally precise: the cheaper wins.
        assert_eq!(lines[2], "  best overall: hybrid with 38.0 µs slack: p99 400 ns at 9.0 % CPU");
    }

    #[test]
    fn a_clearly_better_spinner_wins_despite_its_cost() {
        let lines = recommend(&[r("hybrid", 0, 40_000, 3.0, Some(20_000)), r("spin", 0, 100, 99.0, None)], false);
        assert_eq!(lines[2], "  best overall: spin: p99 100 ns at 99.0 % CPU");
    }

    #[test]
    fn a_sleeper_can_be_best_overall() {
        let lines = recommend(&[r("clock_nanosleep", 0, 20_000, 0.4, None), r("spin", 0, 90_000, 99.0, None)], false);
        assert_eq!(lines[2], "  it is also the best overall");
        assert!(recommend(&[], false).is_empty());
    }
}

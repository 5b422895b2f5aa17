//! `rtick drift`: systematic error of periodic timers.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use rtick::drift::{self, DriftCase, DriftMechanism, DriftResult};
use rtick::system::SysRoot;
use rtick::Nanos;
use serde::{Deserialize, Serialize};

use crate::cli::DriftArgs;
use crate::export::atomic::AtomicFile;
use crate::Usage;

/// The default periods: 10 ms, one just off it, 1 ms, and 100 µs.
pub const DEFAULT_PERIODS_US: [i64; 4] = [10_000, 9_998, 1_000, 100];

#[derive(Debug, Serialize, Deserialize)]
pub struct DriftFile {
    pub rtick_version: String,
    /// CONFIG_HZ (null when neither the config nor /proc/timer_list tells).
    pub hz: Option<u32>,
    pub interrupted: bool,
    /// The case a stop cut short (`MECHANISM at PERIOD`), left out of the results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_case: Option<String>,
    pub results: Vec<DriftJson>,
    pub unavailable: Vec<rtick_model::json::UnavailableJson>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct DriftJson {
    pub mechanism: String,
    pub period_ns: i64,
    pub ticks: u64,
    pub expected_ticks: f64,
    pub elapsed_ns: i64,
    /// `wall`, or `cpu` for ITIMER_VIRTUAL (user) and ITIMER_PROF (user + system).
    pub time_base: String,
    /// Expirations the kernel reported merged (timerfd counts, si_overrun).
    pub overruns: u64,
    pub error_percent: f64,
    pub error_ppm: f64,
    pub explanation: String,
}

fn row(r: &DriftResult, hz: Option<u32>, work: Nanos) -> DriftJson {
    DriftJson {
        mechanism: r.mechanism.name().into(),
        period_ns: r.period.as_ns(),
        ticks: r.ticks,
        expected_ticks: (r.expected_ticks * 10.0).round() / 10.0,
        elapsed_ns: r.elapsed.as_ns(),
        time_base: if r.cpu_time { "cpu" } else { "wall" }.into(),
        overruns: r.overruns,
        error_percent: r.error_percent,
        error_ppm: r.error_ppm,
        explanation: drift::explain(r.mechanism, r.period, hz, work),
    }
}

/// A period exactly: whole µs as such (9998 µs must not read as 10.00 ms).
fn period(ns: i64) -> String {
    if ns % 1000 == 0 {
        format!("{} µs", ns / 1000)
    } else {
        format!("{ns} ns")
    }
}

/// The table's heading and the rule under it.
fn heading() -> String {
    let h = format!(
        "{:<16}{:>11}{:>9}{:>11}  {:>14}{:>12}{:>12}{:>10}",
        "mechanism", "period", "ticks", "expected", "elapsed", "error", "error ppm", "overruns"
    );
    let rule = "-".repeat(h.chars().count());
    format!("{h}\n{rule}")
}

/// One row; `overruns` is `-` where the mechanism does not report them.
fn print_row(r: &DriftJson, m: DriftMechanism) {
    let overruns = if m.reports_overruns() { r.overruns.to_string() } else { "-".into() };
    println!(
        "{:<16}{:>11}{:>9}{:>11.1}  {:>14}{:>10.2} %{:>12.0}{overruns:>10}",
        r.mechanism,
        period(r.period_ns),
        r.ticks,
        r.expected_ticks,
        format!("{}{}", Nanos(r.elapsed_ns), if r.time_base == "cpu" { " cpu" } else { "" }),
        r.error_percent,
        r.error_ppm,
    );
}

/// A total run time, roughly: whole seconds, or whole milliseconds under 1 s.
fn roughly(ns: i64) -> String {
    if ns >= 1_000_000_000 {
        format!("{} s", (ns + 500_000_000) / 1_000_000_000)
    } else {
        format!("{} ms", ((ns + 500_000) / 1_000_000).max(1))
    }
}

pub fn run(a: &DriftArgs) -> Result<()> {
    let mechanisms = mechanisms(a)?;
    let periods: Vec<Nanos> = match &a.periods {
        Some(p) => p.clone(),
        None => DEFAULT_PERIODS_US.iter().map(|&us| Nanos::from_us(us)).collect(),
    };
    if let Some(p) = periods.iter().find(|p| **p < Nanos::from_us(10)) {
        return Err(Usage(format!("--period: {p} is too short to count (at least 10us)")).into());
    }
    if let Some(p) = periods.iter().find(|p| **p > a.duration) {
        return Err(Usage(format!(
            "--period: {p} is longer than -D/--duration {}: not one tick would be counted; give a duration of at least the period",
            a.duration
        ))
        .into());
    }
    let cases = mechanisms.len() * periods.len();
    let total = i64::try_from(cases).ok().and_then(|n| a.duration.as_ns().checked_mul(n)).ok_or_else(|| {
        Usage(format!(
            "-D/--duration: {} of {} each last longer than 292 years; give a shorter duration",
            rtick::text::count(cases as u64, "case"),
            a.duration
        ))
    })?;
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    let stop = crate::stop_flag()?;
    super::cleanup::warnings(None).iter().for_each(|w| println!("warning: {w}"));
    let hz = drift::detect_hz(&SysRoot::default());
    println!(
        "rtick {} drift: {} × {}, {} each (about {}); {}",
        env!("CARGO_PKG_VERSION"),
        rtick::text::count(mechanisms.len() as u64, "mechanism"),
        rtick::text::count(periods.len() as u64, "period"),
        a.duration,
        roughly(total),
        hz.map_or("HZ unknown".into(), |h| format!(
            "CONFIG_HZ={h} (scheduler tick {})",
            Nanos(1_000_000_000 / h as i64)
        ))
    );
    println!("\n{}", heading());
    let file = run_cases(a, &mechanisms, &periods, hz, &stop);
    println!();
    print_explanations(&file.results);
    if let Some(cut) = &file.interrupted_case {
        println!("interrupted during {cut}, which is not counted: results so far");
    } else if file.interrupted {
        println!("interrupted: results so far");
    }
    if let Some(f) = json {
        f.write_json(&file)?;
        f.commit()?;
    }
    Ok(())
}

/// The mechanisms named with -m, or all of them.
fn mechanisms(a: &DriftArgs) -> Result<Vec<DriftMechanism>, Usage> {
    let Some(names) = &a.mechanisms else { return Ok(DriftMechanism::ALL.to_vec()) };
    names
        .iter()
        .map(|n| {
            DriftMechanism::parse(n.trim()).ok_or_else(|| {
                Usage(format!(
                    "-m/--mechanism: unknown periodic mechanism '{n}'; one of: {}",
                    DriftMechanism::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
                ))
            })
        })
        .collect()
}

/// Measures every mechanism at every period, printing each row as it
/// comes, until done or `stop` is set.
fn run_cases(
    a: &DriftArgs,
    mechanisms: &[DriftMechanism],
    periods: &[Nanos],
    hz: Option<u32>,
    stop: &AtomicBool,
) -> DriftFile {
    let mut file = DriftFile {
        rtick_version: env!("CARGO_PKG_VERSION").into(),
        hz,
        interrupted: false,
        interrupted_case: None,
        results: Vec::new(),
        unavailable: Vec::new(),
    };
    for &m in mechanisms {
        for &p in periods {
            if stop.load(Ordering::Relaxed) {
                file.interrupted = true;
                return file;
            }
            let case = DriftCase { mechanism: m, period: p, duration: a.duration, work: a.work };
            match drift::run_case(&case, stop) {
                Ok(None) => {
                    file.interrupted = true;
                    file.interrupted_case = Some(format!("{m} at {}", period(p.as_ns())));
                    return file;
                }
                Ok(Some(r)) => {
                    let j = row(&r, hz, a.work);
                    print_row(&j, m);
                    file.results.push(j);
                }
                Err(e) => {
                    println!("{:<16}{:>11}  unavailable: {e}", m.name(), period(p.as_ns()));
                    if !file.unavailable.iter().any(|u| u.mechanism == m.name()) {
                        file.unavailable.push(rtick_model::json::UnavailableJson {
                            mechanism: m.name().into(),
                            reason: e.to_string(),
                        });
                    }
                }
            }
        }
    }
    file
}

/// Each mechanism's explanation, once per distinct text.
fn print_explanations(results: &[DriftJson]) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for r in results {
        let key = (r.mechanism.as_str(), r.explanation.as_str());
        if !seen.contains(&key) {
            println!("{}: {}", r.mechanism, r.explanation);
            seen.push(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::roughly;

    #[test]
    fn the_total_is_rounded_to_whole_units() {
        assert_eq!(roughly(56_000_000_000), "56 s");
        assert_eq!(roughly(2_600_000_000), "3 s");
        assert_eq!(roughly(500_000_000), "500 ms");
        assert_eq!(roughly(999_600_000), "1000 ms");
    }
}

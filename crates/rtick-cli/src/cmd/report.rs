//! `rtick report`: tables, comparisons, distributions and pictures of saved runs.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::report_runs;
use crate::cli::ReportArgs;
use crate::export::atomic::AtomicFile;
use crate::output::{self, fmt_latency, header, phases, unit};
use crate::plot;
use crate::Usage;
use rtick_model::baseline;
use rtick_model::json::ExplainJson;
use rtick_model::json::ResultJson;
use rtick_model::read::{self, analysis, HistUnit, Input};

/// `report --json`: the measure `results` schema, each row with its source.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReportFile {
    pub rtick_version: String,
    pub schema_version: u32,
    pub command: String,
    pub inputs: Vec<InputJson>,
    pub results: Vec<ResultJson>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct InputJson {
    pub file: String,
    pub kind: String,
    /// The file's `explain` object (measure --explain --json), as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<ExplainJson>,
}

pub fn run(a: &ReportArgs) -> Result<ExitCode> {
    if a.baseline.is_none() && (a.max_regress.is_some() || a.metrics.is_some()) {
        return Err(Usage("--max-regress and --metrics go with --baseline OLD.json".into()).into());
    }
    if a.baseline.is_some() && a.files.len() != 1 {
        return Err(Usage(format!("--baseline compares one run with it: give one FILE, not {}", a.files.len())).into());
    }
    if let Some(w) = a.buckets {
        if w <= rtick::Nanos::ZERO {
            return Err(Usage("--buckets: the width must be greater than zero".into()).into());
        }
    }
    let outputs = [("--json", a.json.as_deref()), ("--plot", a.plot.as_deref()), ("--hdr-log", a.hdr_log.as_deref())];
    crate::export::distinct::check(&outputs)?;
    let plot_file = plot::PlotFile::create_opt("--plot", a.plot.as_deref())?;
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    let hdr = AtomicFile::create_opt("--hdr-log", a.hdr_log.as_deref())?;
    let unit_of_hist = if a.hist_ns { HistUnit::Nanos } else { HistUnit::Micros };
    let inputs: Vec<Input> = a
        .files
        .iter()
        .map(|f| read::load(f, unit_of_hist))
        .collect::<Result<_, String>>()
        // The file named is not one report reads: the user's to fix, like an option's value.
        .map_err(Usage)?;
    let baseline = a.baseline.as_ref().map(|b| read::load(b, unit_of_hist)).transpose().map_err(Usage)?;
    let run_gates = report_runs::check(a, &inputs, baseline.as_ref())?;
    if let Some(kind) = a.plot_kind {
        plot::check_kind(&inputs, kind).map_err(Usage)?;
    }

    print_inputs(&inputs, a.nsecs);
    if let Some(c) = comparison(&inputs, a.nsecs) {
        println!("{c}");
    }
    if let Some(width) = a.buckets {
        print_buckets(&inputs, width, a.nsecs)?;
    }
    if let (Some(f), Some(p)) = (plot_file, &a.plot) {
        if inputs[0].run.is_some() {
            let note = report_runs::plot(f, &inputs[0])?;
            println!("plot: {}{}", p.display(), note.map_or(String::new(), |n| format!(" ({n})")));
        } else {
            let kind = a.plot_kind.unwrap_or_else(|| plot::default_kind(&inputs));
            f.write(&inputs, kind)?;
            println!("plot: {} ({kind:?})", p.display());
        }
    }
    if let Some(f) = json {
        f.write_json(&report_file(&inputs))?;
        f.commit()?;
    }
    if let Some(f) = hdr {
        let mut w = std::io::BufWriter::new(f.file());
        crate::export::hdrlog::write(&mut w, &inputs)?;
        std::io::Write::flush(&mut w).context("writing the HdrHistogram log")?;
        drop(w);
        f.commit()?;
    }
    let failed = match (&baseline, &run_gates) {
        (Some(old), _) => against_baseline(a, old, &inputs[0]),
        (None, Some(g)) => report_runs::verdict(g, &inputs),
        (None, None) => false,
    };
    Ok(if failed { ExitCode::from(crate::EXIT_FAIL) } else { ExitCode::SUCCESS })
}

/// Each input: a measurement's table (and load, and phases), or the summary
/// of an attach or noise run.
fn print_inputs(inputs: &[Input], nsecs: bool) {
    for input in inputs {
        println!("== {} ({})", input.path.display(), input.kind.name());
        if let Some(run) = &input.run {
            println!("{}", report_runs::summary(run));
            continue;
        }
        let rows: Vec<ResultJson> = input.series.iter().map(|s| s.result.clone()).collect();
        if let Some(l) = &input.load {
            println!("load: {}", header::load_line(l));
        }
        print!("{}", phases::render(&rows, nsecs));
        if let Some(l) = &input.load {
            print!("{}", header::load_summary(l));
        }
        if let Some(b) = &input.breakdown {
            print!("{}", crate::output::explain::render(b, nsecs, None));
        }
        println!();
    }
}

/// Prints the comparison with the baseline; true when it fails.
fn against_baseline(a: &ReportArgs, old: &Input, new: &Input) -> bool {
    let rows = |i: &Input| i.series.iter().map(|s| s.result.clone()).collect::<Vec<_>>();
    let metrics = a.metrics.clone().unwrap_or(baseline::DEFAULT_METRICS.to_vec());
    let max_regress = a.max_regress.unwrap_or(baseline::DEFAULT_MAX_REGRESS);
    let c = baseline::compare(&rows(old), &rows(new), &metrics, max_regress);
    let v = output::baseline::render(&old.name(), &new.name(), &c, a.nsecs);
    print!("{}", v.text);
    v.failed
}

/// The distribution table (bucket, count, rate) of every series, in buckets of `width`.
fn print_buckets(inputs: &[Input], width: rtick::Nanos, nsecs: bool) -> Result<()> {
    for input in inputs {
        for s in &input.series {
            let Some(d) = &s.dist else {
                println!(
                    "== {}: {} T{}: no distribution to bucket (cyclictest JSON needs -h)\n",
                    input.name(),
                    s.result.mechanism,
                    s.result.thread
                );
                continue;
            };
            if width.as_ns() < d.resolution_ns {
                return Err(Usage(format!(
                    "--buckets: {width} is finer than {}'s {} buckets",
                    input.name(),
                    rtick::Nanos(d.resolution_ns)
                ))
                .into());
            }
            let rows = analysis::buckets(d, width.as_ns());
            let total: u64 = rows.iter().map(|r| r.1).sum();
            println!("== {}: {} T{}, buckets of {width}", input.name(), s.result.mechanism, s.result.thread);
            println!("{:>14}  {:>10}  {:>12}", format!("bucket ({})", unit(nsecs)), "count", "rate");
            for (b, c) in rows {
                let b = b.map_or("overflow".to_string(), |b| fmt_latency(b, nsecs));
                println!("{b:>14}  {c:>10}  {:>12.6e}", c as f64 / total.max(1) as f64);
            }
            println!();
        }
    }
    Ok(())
}

/// `report --json`: every input's rows, each with its source.
fn report_file(inputs: &[Input]) -> ReportFile {
    ReportFile {
        rtick_version: env!("CARGO_PKG_VERSION").into(),
        schema_version: rtick_model::json::SCHEMA_VERSION,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        inputs: inputs
            .iter()
            .map(|i| InputJson {
                file: i.path.display().to_string(),
                kind: i.kind.name().into(),
                explain: i.breakdown.as_ref().and_then(|b| b.explain.clone()),
            })
            .collect(),
        results: inputs
            .iter()
            .flat_map(|i| {
                i.series
                    .iter()
                    .map(move |s| ResultJson { source: Some(i.path.display().to_string()), ..s.result.clone() })
            })
            .collect(),
    }
}

/// Several inputs side by side, or why they are not: a file without rows
/// (an attach file of an older rtick, or of a run without a timed wait).
/// Runs of rtick noise have no latency rows to set side by side.
fn comparison(inputs: &[Input], nsecs: bool) -> Option<String> {
    if inputs.len() < 2 || inputs[0].kind == read::InputKind::NoiseJson {
        return None;
    }
    let rowless: Vec<String> =
        inputs.iter().filter(|i| i.series.is_empty()).map(|i| i.path.display().to_string()).collect();
    Some(match rowless.is_empty() {
        true => compare(inputs, nsecs),
        false => format!(
            "note: no comparison: {} {} no lateness rows (written by an older rtick, or no timed wait ended in the run)\n",
            rowless.join(", "),
            if rowless.len() == 1 { "holds" } else { "hold" }
        ),
    })
}

/// Side by side, with ratios against the first input's matching series
/// (same mechanism and thread, else its first series).
fn compare(inputs: &[Input], nsecs: bool) -> String {
    let base_of = |r: &ResultJson| {
        let first = &inputs[0].series;
        first
            .iter()
            .find(|s| s.result.mechanism == r.mechanism && s.result.thread == r.thread)
            .or_else(|| first.iter().find(|s| s.result.thread == r.thread))
            .or(first.first())
            .map(|s| s.result.clone())
    };
    // The percentiles shown (labels of PERCENTILE_LABELS), then the max.
    const SHOWN: [&str; 3] = ["50", "99", "99.9"];
    let get = |r: &ResultJson, i: usize| -> Option<i64> {
        match SHOWN.get(i) {
            Some(l) => r.percentiles_ns.as_ref().and_then(|p| p.at(l)),
            None => Some(r.max_ns),
        }
    };
    let label = |r: &ResultJson, i: &Input| format!("{} T{} ({})", r.mechanism, r.thread, i.name());
    let w = inputs
        .iter()
        .flat_map(|i| i.series.iter().map(move |s| label(&s.result, i).chars().count()))
        .max()
        .unwrap_or(6)
        + 2;
    let mut out = format!("comparison ({}), ratios against {}\n", unit(nsecs), inputs[0].name());
    out += &format!(
        "{:<w$}{:>10}{:>10}{:>10}{:>10}{:>8}{:>8}{:>8}{:>8}\n",
        "series", "p50", "p99", "p99.9", "max", "p50×", "p99×", "p99.9×", "max×"
    );
    for input in inputs {
        for s in &input.series {
            let r = &s.result;
            let name = label(r, input);
            let base = base_of(r);
            let mut line = format!("{name:<w$}");
            for i in 0..4 {
                line += &format!("{:>10}", get(r, i).map_or("-".into(), |v| fmt_latency(v, nsecs)));
            }
            for i in 0..4 {
                let ratio = match (get(r, i), base.as_ref().and_then(|b| get(b, i))) {
                    (Some(v), Some(b)) if b != 0 => format!("{:.2}", v as f64 / b as f64),
                    _ => "-".into(),
                };
                line += &format!("{ratio:>8}");
            }
            out += line.trim_end();
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attach files of which one holds no rows: a note says why there is
    /// no comparison, rather than none at all.
    #[test]
    fn a_file_without_rows_is_named_instead_of_compared() {
        let older = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report/attach-older.json");
        let input = || read::load(std::path::Path::new(older), HistUnit::Micros).unwrap();
        let mut with_rows = input();
        with_rows.series =
            read::from_measure(&[ResultJson::with_figures("a".into(), 1, 10, 1, 9, 5.0)], None).unwrap().series;
        let note = comparison(&[with_rows, input()], false).expect("a note");
        assert!(note.starts_with(&format!("note: no comparison: {older} holds no lateness rows")), "{note}");
        assert_eq!(comparison(&[input()], false), None);
    }
}

//! `rtick report` of `rtick attach` and `rtick noise` --json files: the
//! summary each command prints at its end, rendered by the same function
//! from the file; their `--fail-if` checked as the command checks it; the
//! command's picture drawn from the file.

use std::fmt::Write;

use anyhow::Result;
use rtick::system::format_cpu_list;
use rtick::Nanos;
use rtick_model::gates::Gates;
use rtick_model::noise_gates::NoiseGates;
use rtick_model::read::{Input, RunFile};

use crate::cli::ReportArgs;
use crate::plot::attach::AttachPlot;
use crate::plot::noise::{GapPoints, NoisePlot};
use crate::plot::PlotFile;
use crate::Usage;

/// `--fail-if` as the inputs' command reads it.
#[derive(Debug)]
pub enum RunGates {
    Attach(Gates),
    Noise(NoiseGates),
}

/// The inputs are of one kind (latency measurements, attach or noise
/// files), the options given are those their kind has, and `--fail-if`,
/// parsed in its command's grammar: else a usage error.
pub fn check(a: &ReportArgs, inputs: &[Input], baseline: Option<&Input>) -> Result<Option<RunGates>, Usage> {
    let first = &inputs[0];
    let family = first.kind.family();
    if let Some(other) = inputs.iter().chain(baseline).find(|i| i.kind.family() != family) {
        return Err(Usage(format!(
            "{} holds {} and {} {}: report files of one kind at a time",
            first.path.display(),
            family,
            other.path.display(),
            other.kind.family()
        )));
    }
    if first.run.is_none() {
        return match a.fail_if {
            Some(_) => Err(Usage(
                "--fail-if checks rtick attach and noise files: for measure results, use measure --fail-if or report --baseline OLD.json"
                    .into(),
            )),
            None => Ok(None),
        };
    }
    let unread = [
        ("--buckets", a.buckets.is_some()),
        ("--hdr-log", a.hdr_log.is_some()),
        ("--baseline", a.baseline.is_some()),
        ("--plot-kind", a.plot_kind.is_some()),
    ];
    if let Some((option, _)) = unread.iter().find(|o| o.1) {
        return Err(Usage(format!(
            "{option} reads latency distributions, which {family} files do not hold: drop it (report prints their summary, --plot draws their picture)"
        )));
    }
    if a.plot.is_some() && inputs.len() > 1 {
        return Err(Usage(format!("--plot draws one {family} run: give one FILE, not {}", inputs.len())));
    }
    let Some(expr) = &a.fail_if else { return Ok(None) };
    let bad = |e: String| Usage(format!("--fail-if: {e}"));
    let rowless = |i: &&Input| matches!(i.run.as_deref(), Some(RunFile::Attach(f)) if f.results.is_none());
    if let Some(old) = inputs.iter().find(rowless) {
        return Err(bad(format!(
            "{} was written by an older rtick: it holds no result rows to check; re-run rtick attach --json",
            old.path.display()
        )));
    }
    Ok(Some(match first.run.as_deref() {
        Some(RunFile::Noise(_)) => RunGates::Noise(rtick_model::noise_gates::parse(expr).map_err(bad)?),
        _ => RunGates::Attach(rtick_model::gates::parse(expr).map_err(bad)?),
    }))
}

/// What the run's command printed at its end, after a line saying what ran.
pub fn summary(run: &RunFile) -> String {
    let mut o = String::new();
    match run {
        RunFile::Attach(f) => {
            let _ = writeln!(
                o,
                "attach: pid {} ({}) | {} | traced {} on CPUs {} | started {}\n",
                f.target.pid,
                f.target.comm,
                rtick::text::count(f.threads.len() as u64, "thread"),
                Nanos(f.elapsed_ns),
                format_cpu_list(&f.cpus),
                f.started_at
            );
            o += &crate::output::attach::render(f);
        }
        RunFile::Noise(f) => {
            let cpus: Vec<usize> = f.cpus.iter().map(|c| c.cpu).collect();
            let who = match &f.attached {
                Some(t) => format!("thread {} (tid {}), {}", t.comm, t.tid, t.policy),
                None => match f.priority {
                    0 => format!("spinners {}", f.policy),
                    p => format!("spinners {} {p}", f.policy),
                },
            };
            let _ = writeln!(
                o,
                "noise: CPUs {} | threshold {} | {who} | started {}\n",
                format_cpu_list(&cpus),
                Nanos(f.threshold_ns),
                f.started_at
            );
            o += &crate::output::noise::render(f);
        }
    }
    o
}

/// Each input's verdict under `g`, printed as its command prints it; true when one fails.
pub fn verdict(g: &RunGates, inputs: &[Input]) -> bool {
    let mut failed = false;
    for input in inputs {
        if inputs.len() > 1 {
            println!("--fail-if of {}:", input.path.display());
        }
        let (text, passed) = match (g, input.run.as_deref()) {
            (RunGates::Attach(g), Some(RunFile::Attach(f))) => {
                let v = g.evaluate_attach(f);
                (g.render_attach(&v, f), v.passed)
            }
            (RunGates::Noise(g), Some(RunFile::Noise(f))) => {
                let v = g.evaluate(&f.cpus, f.attribution, f.ended_by == "interrupted");
                (g.render(&v, f.cpus.len()), v.passed)
            }
            _ => continue,
        };
        print!("{text}");
        failed |= !passed;
    }
    failed
}

/// The picture of `input`'s run into `f`; a note of what it lacks, if anything.
pub fn plot(f: PlotFile, input: &Input) -> Result<Option<String>> {
    match input.run.as_deref() {
        Some(RunFile::Attach(a)) => {
            f.write_picture(&AttachPlot::of(a))?;
            let none = a.threads.iter().any(|t| t.timed_waits > 0) && a.threads.iter().all(|t| t.over_time.is_none());
            Ok(none.then(|| {
                "the file holds no lateness over time (written by an older rtick): only its figures are drawn".into()
            }))
        }
        Some(RunFile::Noise(n)) => {
            f.write_picture(&NoisePlot { file: n, points: &GapPoints::of_file(n) })?;
            Ok(Some(
                "the timeline shows each CPU's largest gaps, all the file keeps; rtick noise --plot draws every gap"
                    .into(),
            ))
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use rtick_model::json::{AttachFile, ResultJson};

    /// The verdict counts the rows it checked: one thread without a timed
    /// wait has none.
    #[test]
    fn the_attach_verdict_counts_rows_not_threads() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/report/attach-older.json")).unwrap();
        let mut idle = v["threads"][0].clone();
        idle["tid"] = 4242.into();
        idle["timed_waits"] = 0.into();
        v["threads"].as_array_mut().unwrap().push(idle);
        let mut f: AttachFile = serde_json::from_value(v).unwrap();
        let row = ResultJson::with_figures("overrun".into(), 2980, 1550, 10_000, 483_900, 70_000.0);
        f.results = Some(vec![row]);
        let g = rtick_model::gates::parse("max>1h").unwrap();
        let verdict = g.evaluate_attach(&f);
        assert!(verdict.passed);
        assert_eq!(g.render_attach(&verdict, &f), "PASS no result row (1) meets a --fail-if condition (max>1h)\n");
    }
}

//! `rtick noise`: OS noise for busy-polling threads. Glue: the options
//! checked and the output files created (usage errors before anything
//! runs), the library's run (spinners, or the thread of --attach) with
//! every gap streamed to --trace and collected for --plot, its figures rendered, the files written whole
//! (also after Ctrl-C), and --fail-if's verdict.

use std::io::Write;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use rtick::noise::{run_attached, run_observed, AttachPlan, GapRecord, NoiseOptions, Plan};
use rtick::system::SystemInfo;
use rtick::ClockId;
use rtick_model::json::NoiseFile;

use super::plan::{cpu_list, Cpus};
use crate::cli::NoiseArgs;
use crate::export::atomic::AtomicFile;
use crate::export::{gaps::GapTrace, oslat};
use crate::plot::noise::{GapPoints, NoisePlot};
use crate::plot::PlotFile;
use crate::Usage;

/// The options checked, before anything runs: the plan, and with
/// --attach the thread followed.
fn checked(a: &NoiseArgs) -> Result<(NoiseOptions, Plan, Option<AttachPlan>)> {
    if a.attach.is_some() && a.histogram.is_some() {
        return Err(Usage(
            "--histogram counts the steps of rtick's spinning loop, which --attach does not run: \
             use --trace or --plot for the thread's gaps"
                .into(),
        )
        .into());
    }
    if a.no_attribution && a.fail_if.as_ref().is_some_and(|g| g.needs_sources()) {
        return Err(Usage("--fail-if source:… needs the sources of the gaps: drop --no-attribution".into()).into());
    }
    let cpus = match &a.affinity {
        Some(set) => Some(cpu_list("-a", set, &Cpus::detect()?)?),
        None => None,
    };
    let opts = NoiseOptions {
        cpus,
        duration: a.duration,
        threshold: a.threshold,
        priority: a.priority,
        tracefs: a.tracefs.clone(),
        attribution: !a.no_attribution,
        stacks: true,
    };
    let attach = a.attach.map(|tid| opts.plan_attach(tid)).transpose().map_err(|e| Usage(e.to_string()))?;
    let plan = match &attach {
        Some(at) => at.plan.clone(),
        None => opts.plan().map_err(|e| Usage(e.to_string()))?,
    };
    Ok((opts, plan, attach))
}

/// Runs `rtick noise`.
pub fn run(a: &NoiseArgs) -> Result<ExitCode> {
    let (opts, plan, attach) = checked(a)?;
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    let trace = AtomicFile::create_opt("--trace", a.trace.as_deref())?;
    let histogram = AtomicFile::create_opt("--histogram", a.histogram.as_deref())?;
    let plot = PlotFile::create_opt("--plot", a.plot.as_deref())?;
    let stop = crate::stop_flag()?;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let mut rows = trace.as_ref().map(|t| t.try_clone().and_then(GapTrace::new)).transpose()?;
    let t0 = ClockId::Monotonic.now();
    let mut points = plot.as_ref().map(|_| GapPoints::new(t0));
    let mut observe = |cpu: usize, g: &GapRecord| {
        if let Some(t) = rows.as_mut() {
            t.row(cpu, g);
        }
        if let Some(p) = points.as_mut() {
            p.add(cpu, g);
        }
    };
    let r = match &attach {
        Some(at) => run_attached(at, &opts, &stop, &mut observe).context("noise --attach")?,
        None => run_observed(&plan, &opts, &stop, &mut observe).context("noise")?,
    };
    let system = super::measure::run_file::system_json(&SystemInfo::read());
    let mut file = NoiseFile::of(&r, &plan, system, (started_at, t0));
    // --fail-if's verdict, in the file too.
    let verdict =
        a.fail_if.as_ref().map(|g| (g, g.evaluate(&file.cpus, file.attribution, file.ended_by == "interrupted")));
    file.gates = verdict.as_ref().map(|(g, v)| v.json(g));
    let mut out = String::new();
    if !a.quiet {
        out += &crate::output::noise::header(&r, &plan, &file);
    }
    out += &crate::output::noise::render(&file);
    print!("{out}");
    if let Some(j) = json {
        j.write_json(&file)?;
        j.commit()?;
    }
    if let (Some(t), Some(rows)) = (trace, rows) {
        rows.finish()?;
        t.commit()?;
    }
    if let Some(h) = histogram {
        h.file()
            .write_all(oslat::render(&r.cpus, a.histogram_buckets.into()).as_bytes())
            .context("writing the histogram")?;
        h.commit()?;
    }
    if let (Some(p), Some(points)) = (plot, points) {
        p.write_picture(&NoisePlot { file: &file, points: &points })?;
    }
    // The verdict printed last: exit 3 unless it passed.
    let Some((gates, v)) = verdict else { return Ok(ExitCode::SUCCESS) };
    print!("{}", gates.render(&v, file.cpus.len()));
    Ok(match v.passed {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(crate::EXIT_FAIL),
    })
}

//! `rtick noise`: OS noise for busy-polling threads. Glue: the options
//! checked (usage errors before anything runs), the library's run, its
//! figures rendered and written to --json.

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use rtick::noise::{run as noise_run, NoiseOptions};
use rtick::system::SystemInfo;
use rtick_model::json::NoiseFile;

use super::plan::{cpu_list, Cpus};
use crate::cli::NoiseArgs;
use crate::export::atomic::AtomicFile;
use crate::Usage;

/// Runs `rtick noise`.
pub fn run(a: &NoiseArgs) -> Result<ExitCode> {
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
    };
    let attach = a.attach.map(|tid| opts.plan_attach(tid)).transpose().map_err(|e| Usage(e.to_string()))?;
    let plan = match &attach {
        Some(at) => at.plan.clone(),
        None => opts.plan().map_err(|e| Usage(e.to_string()))?,
    };
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    let stop = crate::stop_flag()?;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let r = match &attach {
        Some(at) => rtick::noise::run_attached(at, &opts, &stop).context("noise --attach")?,
        None => noise_run(&plan, &opts, &stop).context("noise")?,
    };
    let system = super::measure::run_file::system_json(&SystemInfo::read());
    let file = NoiseFile::of(&r, &plan, system, started_at);
    let mut out = String::new();
    if !a.quiet {
        out += &crate::output::noise::header(&r, &plan, &file);
    }
    out += &crate::output::noise::render(&r);
    print!("{out}");
    if let Some(j) = json {
        j.write_json(&file)?;
        j.commit()?;
    }
    Ok(ExitCode::SUCCESS)
}

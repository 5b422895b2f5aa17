//! The loads on the command line and in the run file: `--load`,
//! `--load-cpus` and `--load-cmd` into a [`LoadSpec`] (usage errors of one
//! line), and what the loads did into the JSON `load` object.

use anyhow::Result;
use rtick::system::SysRoot;
use rtick_load::{signal_name, CommandOutcome, CpuBusy, Kinds, LoadSpec, Outcome, Running, SpecError};

use super::plan::{cpu_list, Cpus};
use crate::cli::MeasureArgs;
use crate::Usage;
use rtick_model::json::{CpuBusyJson, LoadCommandJson, LoadJson, LoadKindJson};

/// A mistake in the loads, after the option it is in.
fn usage(e: SpecError) -> Usage {
    let option = if e == SpecError::EmptyCommand { "--load-cmd" } else { "--load" };
    Usage(format!("{option}: {e}"))
}

/// `--load`'s kinds.
fn kinds(s: &str) -> Result<Kinds, Usage> {
    s.parse().map_err(usage)
}

/// The loads of `--load`, `--load-cpus` and `--load-cmd`; `None` without a load.
pub fn spec(a: &MeasureArgs, cpus: &Cpus) -> Result<Option<LoadSpec>, Usage> {
    let load_cpus = match &a.load_cpus {
        Some(set) => cpu_list("--load-cpus", set, cpus)?,
        None => cpus.allowed.clone(),
    };
    if a.load.is_none() && a.load_cmd.is_none() {
        if a.load_cpus.is_some() {
            return Err(Usage("--load-cpus: confines a load; give --load or --load-cmd too".into()));
        }
        return Ok(None);
    }
    if load_cpus.is_empty() {
        return Err(Usage("--load-cpus: no CPU is allowed to this process (see taskset -p)".into()));
    }
    let asked = match &a.load {
        Some(s) => kinds(s)?,
        None => Kinds(Vec::new()),
    };
    let root = a.sysfs_root.as_ref().map_or_else(SysRoot::default, SysRoot::new);
    LoadSpec::new(&asked, load_cpus, a.load_cmd.as_deref(), &root).map(Some).map_err(usage)
}

/// Starts the loads; says so when the command cannot have a cgroup of its own.
pub fn start(spec: &LoadSpec) -> Result<Running> {
    let running = Running::start(spec)?;
    if let Some(why) = running.command_uncontained() {
        println!(
            "warning: --load-cmd runs in a process group only, not a cgroup of its own ({why}): \
             should rtick be killed with SIGKILL, what the command started may go on running"
        );
    }
    Ok(running)
}

/// The `load` object of what the loads of `spec` did (`measured`: the
/// CPUs the measuring threads are pinned to, empty when one is not).
pub fn json(spec: &LoadSpec, measured: &[usize], outcome: Outcome) -> LoadJson {
    let kinds = outcome
        .kinds
        .into_iter()
        .map(|k| LoadKindJson {
            kind: k.kind.name().into(),
            workers: k.workers,
            threads: k.threads,
            unit: k.kind.unit().into(),
            work: k.work,
            rate_per_s: k.rate_per_s,
            cpu_time_ns: k.cpu_time_ns,
            detail: k.detail,
            error: k.error,
        })
        .collect();
    LoadJson {
        cpus: spec.cpus.clone(),
        shares_measured_cpus: spec.shares_cpus_with(measured),
        kinds,
        command: outcome.command.map(command_json),
        ran_ns: outcome.ran_ns,
        cpu_busy: cpu_busy(outcome.cpu_busy),
    }
}

/// The `load` object before the run: what will run, no figures yet.
pub fn planned_json(spec: &LoadSpec, measured: &[usize]) -> LoadJson {
    json(spec, measured, Outcome::planned(spec))
}

fn command_json(c: CommandOutcome) -> LoadCommandJson {
    LoadCommandJson {
        command: c.command,
        pid: c.pid,
        cgroup: c.cgroup.map(|p| p.display().to_string()),
        ran_ns: c.ran_ns,
        exited_early_after_ns: c.exited_early_after_ns,
        stopped_with: c.stopped_with,
        exit_code: c.exit_code,
        exit_signal: c.exit_signal,
    }
}

/// CPUs' busy shares, as in the JSON.
pub fn cpu_busy(busy: Vec<CpuBusy>) -> Vec<CpuBusyJson> {
    busy.into_iter()
        .map(|b| CpuBusyJson { cpu: b.cpu, busy_percent: b.busy_percent, iowait_percent: b.iowait_percent })
        .collect()
}

/// Why the run was not under the load asked for: a kind whose worker
/// failed or that did no work, a command that exited by itself. Empty for a
/// load that never started (the run stopped before: that is the interruption's).
/// With --fail-if each is a violation; without, the run exits 1 after its outputs.
pub fn failures(l: &LoadJson) -> Vec<String> {
    if l.ran_ns == 0 && l.command.as_ref().is_none_or(|c| c.pid.is_none()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for k in &l.kinds {
        match &k.error {
            Some(e) => out.push(format!("load {} failed: {e}", k.kind)),
            None if k.work == 0 => out.push(format!("load {} did no work", k.kind)),
            None => {}
        }
    }
    if let Some(c) = &l.command {
        if let Some(t) = c.exited_early_after_ns {
            let how = match (c.exit_code, c.exit_signal) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(sig)) => signal_name(sig),
                (None, None) => "unknown status".into(),
            };
            out.push(format!("the load command exited by itself ({how}) after {}", rtick::Nanos(t)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_loads_are_one_line_usage_errors() {
        for (bad, says) in [
            ("gpu", "unknown load 'gpu'; one of: cpu, memory, io, net, sched, timers"),
            ("cpu:0", "cpu:0: give at least 1 worker"),
            ("cpu:x", "'x' is not a number of workers"),
            ("cpu:-1", "'-1' is not a number of workers"),
            ("cpu:300", "more than 256 workers"),
            ("cpu,cpu:2", "cpu is given twice"),
            ("cpu,", "an empty load"),
            ("", "an empty load"),
        ] {
            let e = kinds(bad).expect_err(bad).0;
            assert!(e.starts_with("--load: ") && e.contains(says), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
    }
}

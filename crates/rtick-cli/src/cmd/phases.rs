//! The measurement with its loads: without `--phases`, the loads (if any)
//! start just before the run and stop right after it; with `--phases
//! idle,loaded`, the same mechanisms are measured first without the load,
//! then — the loads started between the phases — with it, under one setup
//! (memory locked, cpu_dma_latency held once). Each phase is a run of the
//! library's engine; their results are joined, each row labelled with its
//! phase.
//!
//! The loads are stopped on every way out: the end, Ctrl-C or SIGTERM (the
//! engine returns early, and the loaded phase is not started after an
//! interrupted idle one), and errors (`Running` stops them when dropped).

use std::sync::Arc;

use anyhow::Result;
use rtick::measure::{self, MeasureConfig, MeasureReport, Progress, TraceProducer};
use rtick::wait::WaiterSource;
use rtick::Nanos;

use super::load;
use super::plan::Cpus;
use crate::cli::MeasureArgs;
use crate::Usage;
use rtick_load::{usage, LoadSpec, Running};
use rtick_model::json::{LoadJson, LoadPhaseJson, RunFile};
use rtick_model::phases::{ratios, IDLE, LOADED};

/// One phase: its name and, when given, its own duration per mechanism.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    pub name: &'static str,
    pub duration: Option<Nanos>,
}

/// How the run goes: its loads and its phases.
#[derive(Debug)]
pub struct Runs {
    load: Option<LoadSpec>,
    /// Empty without --phases.
    phases: Vec<Phase>,
    /// The CPUs the measuring threads are pinned to (empty: some are not pinned).
    measured: Vec<usize>,
    /// The waiters of the loaded phase when not the run's (test builds:
    /// the mock's latencies in the loaded phase).
    loaded_waiters: Option<Arc<dyn WaiterSource>>,
}

/// What the phases and the loads did, for the run file.
#[derive(Debug)]
pub struct Ran {
    /// Each phase's label and how many result rows it gave, in order.
    rows: Vec<(&'static str, usize)>,
    phases: Vec<LoadPhaseJson>,
    load: Option<LoadJson>,
}

impl Runs {
    /// Checks --load, --load-cpus, --load-cmd and --phases: usage errors only, nothing started.
    pub fn plan(a: &MeasureArgs, cfg: &MeasureConfig, cpus: &Cpus) -> Result<Runs, Usage> {
        let load = load::spec(a, cpus)?;
        let phases = match &a.phases {
            None => Vec::new(),
            Some(_) if load.is_none() => {
                return Err(Usage("--phases: needs a load to compare with: give --load KIND or --load-cmd CMD".into()))
            }
            Some(s) => parse(s)?,
        };
        // Empty when a thread is unpinned: the load then shares its CPUs.
        let measured = cfg.pinned_cpus().unwrap_or_default();
        Ok(Runs { load, phases, measured, loaded_waiters: a.mock.loaded_waiters(cfg.waiters.as_ref()) })
    }

    /// The configuration of one phase: the run's, with the phase's duration.
    fn phase_cfg(&self, cfg: &MeasureConfig, phase: &Phase) -> MeasureConfig {
        let mut c = MeasureConfig { duration: phase.duration.or(cfg.duration), ..cfg.clone() };
        if let (LOADED, Some(w)) = (phase.name, &self.loaded_waiters) {
            c.waiters = Some(Arc::clone(w));
        }
        c
    }

    /// Wall time of the whole run, when bounded by durations.
    pub fn expected_duration(&self, cfg: &MeasureConfig) -> Option<Nanos> {
        if self.phases.is_empty() {
            return cfg.expected_duration();
        }
        self.phases.iter().try_fold(Nanos::ZERO, |sum, p| Some(sum + self.phase_cfg(cfg, p).expected_duration()?))
    }

    /// Before the run: the load and phases as planned, for the header and the JSON.
    pub fn describe(&self, file: &mut RunFile, cfg: &MeasureConfig) {
        file.load = self.load.as_ref().map(|l| load::planned_json(l, &self.measured));
        file.phases = self.phases.iter().map(|p| self.planned_phase(cfg, p)).collect();
    }

    fn planned_phase(&self, cfg: &MeasureConfig, p: &Phase) -> LoadPhaseJson {
        let c = self.phase_cfg(cfg, p);
        LoadPhaseJson {
            name: p.name.into(),
            duration_ns: c.duration.map(|d| d.as_ns()),
            loops: c.loops,
            elapsed_ns: 0,
            interrupted: false,
            cpu_busy: Vec::new(),
        }
    }

    /// Measures, with the loads and in the phases planned. `observe` sees
    /// the elapsed time of the whole run.
    pub fn run(
        &self,
        cfg: &MeasureConfig,
        stop: &std::sync::atomic::AtomicBool,
        mut traces: Option<&mut [TraceProducer]>,
        mut observe: impl FnMut(&Progress<'_>),
    ) -> Result<(MeasureReport, Ran)> {
        let Some(plan) = &self.load else {
            let report = measure::run(cfg, stop, traces, observe)?;
            return Ok((report, Ran { rows: Vec::new(), phases: Vec::new(), load: None }));
        };
        if self.phases.is_empty() {
            let running = load::start(plan)?;
            let report = measure::run(cfg, stop, traces, observe);
            // Stopped before the report is looked at: an error stops them too.
            let load = load::json(plan, &self.measured, running.stop());
            return Ok((report?, Ran { rows: Vec::new(), phases: Vec::new(), load: Some(load) }));
        }
        let mut ran = Ran { rows: Vec::new(), phases: Vec::new(), load: None };
        let mut joined: Option<MeasureReport> = None;
        let mut running: Option<Running> = None;
        let mut offset = Nanos::ZERO;
        for phase in &self.phases {
            let mut json = self.planned_phase(cfg, phase);
            let stopped = joined.as_ref().is_some_and(|j| j.interrupted || j.breaktrace.is_some());
            if !stopped {
                match (phase.name == LOADED, running.is_some()) {
                    (true, false) => running = Some(load::start(plan)?),
                    (false, true) => ran.load = running.take().map(|r| load::json(plan, &self.measured, r.stop())),
                    _ => {}
                }
                let before = usage::now();
                let report = measure::run(&self.phase_cfg(cfg, phase), stop, traces.as_deref_mut(), |p| {
                    observe(&Progress { elapsed: p.elapsed + offset, ..*p })
                })?;
                if let (Some(b), Some(a)) = (before, usage::now()) {
                    json.cpu_busy = load::cpu_busy(usage::busy(&b, &a));
                }
                offset = offset + report.elapsed;
                json.elapsed_ns = report.elapsed.as_ns();
                json.interrupted = report.interrupted || report.breaktrace.is_some();
                ran.rows.push((phase.name, report.results.len()));
                joined = Some(join(joined, report));
            }
            ran.phases.push(json);
        }
        if let Some(r) = running.take() {
            ran.load = Some(load::json(plan, &self.measured, r.stop()));
        }
        ran.load = ran.load.or_else(|| Some(load::planned_json(plan, &self.measured)));
        let report = joined.expect("--phases has at least one phase");
        Ok((report, ran))
    }
}

impl Ran {
    /// Puts the phases, their labels on the result rows, the ratios and the
    /// load into the run file (after the results are in it).
    pub fn record(self, file: &mut RunFile) {
        let mut rows = file.results.iter_mut();
        for (name, n) in &self.rows {
            for r in rows.by_ref().take(*n) {
                r.phase = Some(name.to_string());
            }
        }
        if !self.phases.is_empty() {
            file.phase_ratios = ratios(&file.results);
            file.phases = self.phases;
        }
        if self.load.is_some() {
            file.load = self.load;
        }
    }
}

/// Two runs' reports as one: results in run order, the first stop.
fn join(first: Option<MeasureReport>, next: MeasureReport) -> MeasureReport {
    let Some(mut j) = first else { return next };
    j.results.extend(next.results);
    for u in next.unavailable {
        if !j.unavailable.iter().any(|x| x.mechanism == u.mechanism) {
            j.unavailable.push(u);
        }
    }
    j.interrupted |= next.interrupted;
    j.breaktrace = j.breaktrace.or(next.breaktrace);
    j.elapsed = j.elapsed + next.elapsed;
    j
}

/// `idle[=TIME],loaded[=TIME]`: both phases, in this order.
pub fn parse(s: &str) -> Result<Vec<Phase>, Usage> {
    let bad = |why: String| {
        Usage(format!("--phases: {why}; give idle,loaded or idle=TIME,loaded=TIME (e.g. idle=60s,loaded=5m)"))
    };
    let mut phases = Vec::new();
    for item in s.split(',').map(str::trim) {
        let (name, time) = match item.split_once('=') {
            Some((n, t)) => (n.trim(), Some(t)),
            None => (item, None),
        };
        let name =
            [IDLE, LOADED].into_iter().find(|&n| n == name).ok_or_else(|| bad(format!("unknown phase '{name}'")))?;
        let duration = time.map(|t| crate::units::duration(t).map_err(|e| bad(format!("{name}: {e}")))).transpose()?;
        phases.push(Phase { name, duration });
    }
    let names: Vec<&str> = phases.iter().map(|p| p.name).collect();
    if names != [IDLE, LOADED] {
        return Err(bad(format!("'{s}' is not the two phases idle then loaded")));
    }
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_with_and_without_durations() {
        assert_eq!(
            parse("idle,loaded").unwrap(),
            [Phase { name: IDLE, duration: None }, Phase { name: LOADED, duration: None }]
        );
        let p = parse("idle=60s, loaded=5m").unwrap();
        assert_eq!((p[0].duration, p[1].duration), (Some(Nanos::from_secs(60)), Some(Nanos::from_secs(300))));
        assert_eq!(parse("idle=2,loaded").unwrap()[0].duration, Some(Nanos::from_secs(2)), "plain seconds, as -D");
    }

    #[test]
    fn bad_phases_are_one_line_usage_errors() {
        for (bad, says) in [
            ("loaded,idle", "not the two phases idle then loaded"),
            ("idle", "not the two phases"),
            ("idle,loaded,idle", "not the two phases"),
            ("idle,busy", "unknown phase 'busy'"),
            ("idle=soon,loaded", "idle: 'soon' is not a number"),
            ("idle=0,loaded", "must be greater than zero"),
            ("", "unknown phase ''"),
        ] {
            let e = parse(bad).expect_err(bad).0;
            assert!(e.starts_with("--phases: ") && e.contains(says), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
    }
}

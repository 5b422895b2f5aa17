//! The run file (`--json`'s content, what the header and the tables show):
//! before the run from the configuration and the system, after it from the
//! report.

use std::time::SystemTime;

use rtick::measure::{MeasureConfig, MeasureReport};
use rtick::session::Session;
use rtick::system::SystemInfo;
use rtick::wait::HybridSlack;
use rtick::Nanos;
use rtick_model::json::{self, BreakJson, ConfigJson, RunFile, SystemJson};

/// The run file before the run: what the header shows and the JSON keeps.
pub fn run_file(cfg: &MeasureConfig, sys: &SystemInfo, held: &Session, warnings: Vec<String>) -> RunFile {
    RunFile {
        rtick_version: env!("CARGO_PKG_VERSION").into(),
        schema_version: json::SCHEMA_VERSION,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        elapsed_ns: 0,
        interrupted: false,
        breaktrace: None,
        system: system_json(sys),
        config: config_json(cfg, held.memory().is_some(), held.dma_asked, held.dma_system),
        warnings,
        results: Vec::new(),
        unavailable: Vec::new(),
        explain: None,
        gates: None,
        load: None,
        phases: Vec::new(),
        phase_ratios: Vec::new(),
    }
}

/// Puts what the run measured into the run file.
pub fn record_report(file: &mut RunFile, report: &MeasureReport) {
    file.results = json::results(report);
    file.unavailable = report
        .unavailable
        .iter()
        .map(|u| json::UnavailableJson { mechanism: u.mechanism.name().into(), reason: u.reason.clone() })
        .collect();
    file.elapsed_ns = report.elapsed.as_ns();
    file.interrupted = report.interrupted;
    file.breaktrace = report.breaktrace.map(|b| BreakJson {
        mechanism: b.mechanism.name().into(),
        thread: b.thread,
        cycle: b.cycle,
        latency_ns: b.latency.as_ns(),
        marked: b.marked,
    });
}

/// The system's part of a results file (measure's and attach's).
pub(crate) fn system_json(s: &SystemInfo) -> SystemJson {
    SystemJson {
        kernel: s.kernel_release.clone(),
        kernel_version: s.kernel_version.clone(),
        clocksource: s.clocksource.clone(),
        hres_active: s.hres_active(),
        preempt: s.preempt.to_string(),
        cpus: s.cpus,
        hypervisor: s.hypervisor().map(|h| h.to_string()),
        sched_rt_runtime_us: s.rt_runtime_us,
    }
}

fn config_json(cfg: &MeasureConfig, mlock: bool, dma: Option<i32>, dma_system: Option<i32>) -> ConfigJson {
    let t0 = &cfg.threads[0];
    ConfigJson {
        mechanisms: cfg.mechanisms.iter().map(|m| m.name().to_string()).collect(),
        interval_ns: cfg.interval.as_ns(),
        loops: cfg.loops,
        duration_ns: cfg.duration.map(|d| d.as_ns()),
        threads: cfg.threads.len(),
        affinity: cfg.threads.iter().map(|t| t.cpus.clone()).collect(),
        policy: t0.policy.kernel_name().into(),
        priority: t0.priority,
        clock: cfg.clock.name().into(),
        mlock,
        dma_latency_us: dma,
        dma_latency_system_us: dma_system,
        timer_slack_ns: t0.timer_slack.map_or(0, |s| s.as_ns()),
        overrun: cfg.overrun.name().into(),
        hybrid_slack: match cfg.hybrid_slack {
            HybridSlack::Auto => "auto".into(),
            HybridSlack::Fixed(n) => n.as_ns().to_string(),
        },
        breaktrace_ns: cfg.breaktrace.map(|b| b.as_ns()),
        tracemark: cfg.tracemark.as_ref().map(|t| t.dir().display().to_string()),
        // The slice the run was cut into (the whole run when shorter than
        // --slice); the one asked for when unbounded (monitor).
        interleave_ns: cfg
            .interleave
            .map(|asked| cfg.slices().first().and_then(|s| s.duration).map_or(asked, |used| used.min(asked)).as_ns()),
        warm_up_ns: (cfg.warm_up > Nanos::ZERO).then_some(cfg.warm_up.as_ns()),
        deepest_idle_state: None,
        cpuidle: None,
    }
}

//! The warnings `rtick measure` prints: before the run, about the system
//! and the settings (and the audit findings that bear on them); after it,
//! about what the run saw (overruns, dropped trace rows, clock steps).

use rtick::measure::{MeasureConfig, MeasureReport};
use rtick::system::SystemInfo;
use rtick::wait::HybridSlack;
use rtick::{Mechanism, Nanos};

pub fn static_warnings(cfg: &MeasureConfig, sys: &SystemInfo) -> Vec<String> {
    let mut w = Vec::new();
    let policy = cfg.threads[0].policy;
    if let Some(h) = sys.hypervisor() {
        w.push(format!(
            "running under a hypervisor ({h}): latency tails of hundreds of µs come from the host; compare mechanisms within one run"
        ));
    }
    if sys.hres_active() == Some(false) {
        w.push("high-resolution timers are not active: sleeps are rounded up to the scheduler tick (check CONFIG_HIGH_RES_TIMERS and highres=)".into());
    }
    if let Some(res) = cfg.clock.resolution() {
        if res > cfg.interval {
            w.push(format!(
                "{} resolution is {res}, coarser than the {} interval",
                cfg.clock.kernel_name(),
                cfg.interval
            ));
        }
    }
    let spinning: Vec<&str> = cfg.mechanisms.iter().filter(|m| m.info().burns_cpu).map(|m| m.name()).collect();
    if !spinning.is_empty() && policy.is_realtime() {
        if let (true, Some(rt), Some(period)) = (sys.rt_throttled(), sys.rt_runtime_us, sys.rt_period_us) {
            let budget = rt as f64 / period.max(1) as f64;
            let throttled: Vec<&str> = cfg
                .mechanisms
                .iter()
                .filter(|m| m.spin_share(cfg.interval, cfg.hybrid_slack) >= budget)
                .map(|m| m.name())
                .collect();
            if !throttled.is_empty() {
                w.push(format!(
                    "{} under {policy} with kernel.sched_rt_runtime_us={rt} (of {period}): a thread that never sleeps is throttled for {} ms every {} ms, seen as latencies of that size; `sysctl kernel.sched_rt_runtime_us=-1` lifts it (at the risk of starving the CPU)",
                    throttled.join(", "),
                    (period - rt) / 1000,
                    period / 1000
                ));
            }
        }
        if cfg.threads.len() >= sys.cpus.max(1) && cfg.mechanisms.contains(&Mechanism::Spin) {
            w.push(format!(
                "spin: {} on {}: nothing else runs on them, rtick's own main thread included",
                rtick::text::count(cfg.threads.len() as u64, "real-time spinning thread"),
                rtick::text::count(sys.cpus as u64, "CPU")
            ));
        }
    }
    if cfg.overrun == rtick::OverrunPolicy::CatchUp {
        for m in cfg.mechanisms.iter().filter(|m| m.info().kernel_grid) {
            w.push(format!(
                "{m}: the kernel keeps this timer's grid and merges missed expirations, so its overruns always skip"
            ));
        }
    }
    if let HybridSlack::Fixed(s) = cfg.hybrid_slack {
        if cfg.mechanisms.contains(&Mechanism::Hybrid) && s * 2 > cfg.interval {
            w.push(format!("hybrid slack {s} is more than half the interval: hybrid spins most of the time"));
        }
    }
    w
}

/// Audit findings that bear on these results, as header warnings. RT
/// throttling, virtualisation and permissions have warnings of their own.
pub fn audit_warnings(cfg: &MeasureConfig, findings: &[rtick::audit::Finding]) -> Vec<String> {
    const ALWAYS: &[&str] = &[
        "timers.hres_active",
        "timers.resolution",
        "clocksource.current",
        "clocksource.tsc_stability",
        "kernel.high_res_timers",
        "kernel.debug_options",
        "kernel.preempt_model",
        "sched.smt",
        "sched.numa_balancing",
        "noise.irq_affinity",
        "noise.nmi_watchdog",
    ];
    const SLEEPING: &[&str] = &["power.cstates", "power.cpufreq"];
    let sleeps = cfg.mechanisms.iter().any(|m| m != &Mechanism::Spin);
    findings
        .iter()
        .filter(|f| matches!(f.status, rtick::audit::Status::Warn | rtick::audit::Status::Fail))
        .filter(|f| ALWAYS.contains(&f.id.as_str()) || (sleeps && SLEEPING.contains(&f.id.as_str())))
        .map(|f| format!("{} ({}): {} — {}", f.title, f.id, f.impact, f.remedy))
        .collect()
}

pub fn run_warnings(cfg: &MeasureConfig, report: &MeasureReport) -> Vec<String> {
    let mut w = Vec::new();
    for r in &report.results {
        let s = r.latency.summary();
        if s.count > 0 && r.overruns * 100 > s.count {
            w.push(format!(
                "{} T{}: {} of {} {} overran ({:.1} %): a {} interval is shorter than what {} reaches here (p99 {})",
                r.mechanism,
                r.thread,
                r.overruns,
                s.count,
                rtick::text::noun(s.count, "wake-up"),
                100.0 * r.overruns as f64 / s.count as f64,
                cfg.interval,
                r.mechanism,
                Nanos(s.percentiles[2])
            ));
        }
        if r.clock_steps > 0 {
            w.push(format!(
                "{} T{}: {} stepped {}, by {} in all (settimeofday, an NTP step): those wake-ups were not recorded and the grid restarted after each; measure on monotonic to avoid it",
                r.mechanism,
                r.thread,
                cfg.clock.kernel_name(),
                rtick::text::count(r.clock_steps, "time"),
                r.clock_stepped
            ));
        }
        if r.trace_dropped > 0 {
            w.push(format!(
                "{} T{}: {} trace rows dropped because the writer fell behind (raise --trace-buffer)",
                r.mechanism, r.thread, r.trace_dropped
            ));
        }
    }
    w
}

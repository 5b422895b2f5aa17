//! C-states, the PM QoS CPU latency request, cpufreq and turbo (a
//! week-long latency hunt can end at C-states).

use super::read::Context;
use super::{Finding, Status};
use crate::rt::DmaLatencyLimit;

/// Exit latency above which a C-state shows in wake-up latency (µs).
pub const CSTATE_WARN_US: u64 = 10;

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let qos = DmaLatencyLimit::read(ctx.root);
    out.push(cstates(ctx, qos));
    out.push(pm_qos(qos));
    out.push(cpufreq(ctx));
    out.push(turbo(ctx));
}

/// The deepest enabled C-state and its exit latency, over every CPU.
fn cstates(ctx: &Context<'_>, qos: Option<DmaLatencyLimit>) -> Finding {
    let cpus = ctx.cpus().unwrap_or_default();
    let mut worst: Option<(usize, String, u64)> = None;
    let mut listed = 0;
    for &cpu in &cpus {
        for s in 0..16 {
            let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{s}");
            let Some(name) = ctx.read(&format!("{base}/name")) else { break };
            listed += 1;
            let disabled = ctx.read(&format!("{base}/disable")).as_deref() == Some("1");
            let lat: u64 = ctx.read(&format!("{base}/latency")).and_then(|v| v.parse().ok()).unwrap_or(0);
            if !disabled && worst.as_ref().is_none_or(|w| lat > w.2) {
                worst = Some((cpu, name, lat));
            }
        }
    }
    let driver = ctx.read("/sys/devices/system/cpu/cpuidle/current_driver").unwrap_or_else(|| "none".into());
    let held = qos.is_some_and(|q| q.us() >= 0 && worst.as_ref().is_some_and(|w| (q.us() as u64) < w.2));
    match worst {
        None => Finding::new("power.cstates", Status::Info, format!("no cpuidle states are exposed (driver: {driver})"))
            .evidence("/sys/devices/system/cpu/cpu*/cpuidle: none")
            .impact("idle is handled by the firmware or the hypervisor, out of the kernel's sight"),
        Some((cpu, name, lat)) if lat > CSTATE_WARN_US && !held => Finding::new(
            "power.cstates",
            Status::Warn,
            format!("deep C-state {name} is enabled: {lat} µs exit latency"),
        )
        .evidence(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle: deepest enabled state {name}, latency {lat} µs ({listed} states listed, driver {driver})"))
        .impact("a CPU that slept in it takes that long to wake: it adds to every sleeping mechanism's latency")
        .remedy("hold /dev/cpu_dma_latency at 0 while timing (rtick measure --dma-latency 0; tuned-adm profile realtime), or boot with intel_idle.max_cstate=1 processor.max_cstate=1"),
        Some((cpu, name, lat)) if lat > CSTATE_WARN_US => Finding::new(
            "power.cstates",
            Status::Ok,
            format!("deep C-state {name} ({lat} µs) is enabled, but a PM QoS request of {} µs keeps the CPUs out of it", qos.map_or(0, DmaLatencyLimit::us)),
        )
        .evidence(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle: deepest enabled {name}, latency {lat} µs; /dev/cpu_dma_latency {}", qos.map_or(0, DmaLatencyLimit::us))),
        Some((cpu, name, lat)) => Finding::new("power.cstates", Status::Ok, format!("the deepest enabled C-state, {name}, exits in {lat} µs"))
            .evidence(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle: {listed} states listed, driver {driver}")),
    }
}

fn pm_qos(qos: Option<DmaLatencyLimit>) -> Finding {
    match qos {
        None => Finding::unreadable("power.pm_qos", "the PM QoS CPU latency", &["/dev/cpu_dma_latency"])
            .remedy("run as root to read it"),
        Some(v) if v.is_unconstrained() => {
            Finding::new("power.pm_qos", Status::Info, "no PM QoS CPU latency request is held")
                .evidence(format!("/dev/cpu_dma_latency: {} µs (the default: no constraint)", v.us()))
                .impact("the CPUs may enter any C-state")
                .remedy("rtick measure --dma-latency 0, or keep /dev/cpu_dma_latency open with 0 written while timing")
        }
        Some(v) => Finding::new(
            "power.pm_qos",
            Status::Ok,
            format!("a PM QoS request holds CPU wake-up latency at {} µs", v.us()),
        )
        .evidence(format!("/dev/cpu_dma_latency: {}", v.us())),
    }
}

/// cpufreq: driver, governor and limits of CPU 0 (others usually match).
fn cpufreq(ctx: &Context<'_>) -> Finding {
    let base = "/sys/devices/system/cpu/cpu0/cpufreq";
    let Some(gov) = ctx.read(&format!("{base}/scaling_governor")) else {
        return Finding::new(
            "power.cpufreq",
            Status::Info,
            "no cpufreq: the CPU frequency is not under the kernel's control",
        )
        .evidence(format!("{base}: absent"));
    };
    let drv = ctx.read(&format!("{base}/scaling_driver")).unwrap_or_default();
    let (min, max) = (
        ctx.read(&format!("{base}/scaling_min_freq")).unwrap_or_default(),
        ctx.read(&format!("{base}/scaling_max_freq")).unwrap_or_default(),
    );
    let ev = format!("{base}: driver {drv}, governor {gov}, min {min} kHz, max {max} kHz");
    if gov == "performance" {
        Finding::new("power.cpufreq", Status::Ok, "cpufreq governor: performance").evidence(ev)
    } else {
        Finding::new("power.cpufreq", Status::Warn, format!("cpufreq governor: {gov}"))
            .evidence(ev)
            .impact("the CPU clocks down when idle and needs time to clock up after a wake-up: latency and execution time vary")
            .remedy("cpupower frequency-set -g performance (or: echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)")
    }
}

fn turbo(ctx: &Context<'_>) -> Finding {
    let boost = ctx
        .read("/sys/devices/system/cpu/cpufreq/boost")
        .map(|v| (v == "1", "/sys/devices/system/cpu/cpufreq/boost"))
        .or_else(|| {
            ctx.read("/sys/devices/system/cpu/intel_pstate/no_turbo")
                .map(|v| (v == "0", "/sys/devices/system/cpu/intel_pstate/no_turbo"))
        });
    match boost {
        None => Finding::new("power.turbo", Status::Info, "turbo/boost: not exposed")
            .evidence("no cpufreq boost or intel_pstate/no_turbo"),
        Some((true, path)) => Finding::new("power.turbo", Status::Info, "turbo/boost is enabled")
            .evidence(path)
            .impact("execution time varies with temperature and the other cores' load")
            .remedy(if path.ends_with("no_turbo") {
                "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"
            } else {
                "echo 0 > /sys/devices/system/cpu/cpufreq/boost"
            }),
        Some((false, path)) => Finding::new("power.turbo", Status::Ok, "turbo/boost is disabled").evidence(path),
    }
}

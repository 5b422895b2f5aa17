//! Boot parameters that shape timing, and whether they agree with each other.

use super::read::{strip_isolcpus_flags, Context};
use super::{Finding, Status};
use crate::system::{format_cpu_list, parse_cpu_list};

const PARAMS: &[&str] = &[
    "isolcpus",
    "nohz_full",
    "rcu_nocbs",
    "irqaffinity",
    "idle",
    "intel_idle.max_cstate",
    "processor.max_cstate",
    "skew_tick",
    "tsc",
    "threadirqs",
    "nosoftlockup",
    "nohz",
    "preempt",
    "nosmt",
    "mitigations",
];

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(cmdline) = &ctx.cmdline else {
        out.push(Finding::unreadable("boot.parameters", "the boot parameters", &["/proc/cmdline"]));
        return;
    };
    out.push(parameters(ctx, cmdline));
    let sets = CpuSets::read(ctx);
    out.push(isolcpus(ctx, &sets));
    if !sets.nohz_full.is_empty() {
        out.push(nohz_full(&sets));
    }
    out.push(cstate_limits(ctx));
    out.push(rt_tuning(ctx, cmdline));
}

fn parameters(ctx: &Context<'_>, cmdline: &str) -> Finding {
    let set: Vec<String> = PARAMS
        .iter()
        .filter_map(|p| ctx.param(p).map(|v| if v.is_empty() { p.to_string() } else { format!("{p}={v}") }))
        .collect();
    Finding::new(
        "boot.parameters",
        Status::Info,
        if set.is_empty() {
            "no timing-related boot parameter is set".to_string()
        } else {
            format!("timing-related boot parameters: {}", set.join(" "))
        },
    )
    .evidence(format!("/proc/cmdline: {cmdline}"))
}

/// The online CPUs and the CPU lists of the isolation parameters.
struct CpuSets {
    cpus: Vec<usize>,
    iso: Vec<usize>,
    nohz_full: Vec<usize>,
    rcu_nocbs: Vec<usize>,
}

impl CpuSets {
    fn read(ctx: &Context<'_>) -> CpuSets {
        CpuSets {
            cpus: ctx.cpus().unwrap_or_default(),
            iso: ctx
                .param("isolcpus")
                .map(|v| parse_cpu_list(strip_isolcpus_flags(&v)).unwrap_or_default())
                .unwrap_or_default(),
            nohz_full: ctx.param("nohz_full").and_then(|v| parse_cpu_list(&v)).unwrap_or_default(),
            rcu_nocbs: ctx.param("rcu_nocbs").and_then(|v| parse_cpu_list(&v)).unwrap_or_default(),
        }
    }
}

fn isolcpus(ctx: &Context<'_>, sets: &CpuSets) -> Finding {
    let (cpus, iso) = (&sets.cpus, &sets.iso);
    if iso.is_empty() {
        Finding::new("boot.isolcpus", Status::Info, "no CPU is isolated")
            .evidence("/proc/cmdline: no isolcpus=")
            .impact("timing threads share their CPU with everything else: other tasks, kernel threads and interrupts")
            .remedy(if cpus.len() > 1 { format!("boot with isolcpus=managed_irq,domain,{0} nohz_full={0} rcu_nocbs={0} and pin timing threads there (-a {0})", cpus.len() - 1) } else { String::new() })
    } else if !cpus.is_empty() && cpus.iter().all(|c| iso.contains(c)) {
        Finding::new("boot.isolcpus", Status::Fail, "every CPU is isolated: no housekeeping CPU is left")
            .evidence(format!("isolcpus={}", ctx.param("isolcpus").unwrap_or_default()))
            .impact("the kernel's housekeeping work and every unpinned task crowd onto isolated CPUs")
            .remedy("leave at least CPU 0 out of isolcpus= and nohz_full=")
    } else {
        Finding::new("boot.isolcpus", Status::Ok, format!("isolated CPUs: {iso:?}"))
            .evidence(format!("isolcpus={}", ctx.param("isolcpus").unwrap_or_default()))
    }
}

fn nohz_full(sets: &CpuSets) -> Finding {
    let CpuSets { cpus, iso, nohz_full, rcu_nocbs } = sets;
    let not_isolated: Vec<usize> = nohz_full.iter().copied().filter(|c| !iso.contains(c)).collect();
    let no_cbs: Vec<usize> = nohz_full.iter().copied().filter(|c| !rcu_nocbs.contains(c)).collect();
    let housekeeping_missing = !cpus.is_empty() && cpus.iter().all(|c| nohz_full.contains(c));
    let ev = format!(
        "nohz_full={} isolcpus={} rcu_nocbs={}",
        format_cpu_list(nohz_full),
        format_cpu_list(iso),
        format_cpu_list(rcu_nocbs)
    );
    if housekeeping_missing {
        Finding::new("boot.nohz_full", Status::Fail, "nohz_full covers every CPU: no housekeeping CPU keeps the tick")
            .evidence(ev)
            .impact("the kernel needs at least one CPU with a tick for timekeeping; it will take one back")
            .remedy("leave CPU 0 out of nohz_full=")
    } else if !not_isolated.is_empty() || !no_cbs.is_empty() {
        Finding::new("boot.nohz_full", Status::Warn, "nohz_full CPUs are not isolated or still run RCU callbacks")
            .evidence(format!("{ev}; not in isolcpus: {not_isolated:?}; not in rcu_nocbs: {no_cbs:?}"))
            .impact("other tasks or RCU callbacks on those CPUs bring the tick back and interrupt the timing thread")
            .remedy("give nohz_full=, isolcpus= and rcu_nocbs= the same CPU list")
    } else {
        Finding::new("boot.nohz_full", Status::Ok, "nohz_full CPUs are isolated and offloaded from RCU").evidence(ev)
    }
}

fn cstate_limits(ctx: &Context<'_>) -> Finding {
    let cstate = [ctx.param("intel_idle.max_cstate"), ctx.param("processor.max_cstate"), ctx.param("idle")];
    if cstate.iter().any(Option::is_some) {
        Finding::new("boot.cstate_limits", Status::Ok, "C-states are limited on the command line").evidence(format!(
            "intel_idle.max_cstate={} processor.max_cstate={} idle={}",
            cstate[0].as_deref().unwrap_or("-"),
            cstate[1].as_deref().unwrap_or("-"),
            cstate[2].as_deref().unwrap_or("-")
        ))
    } else {
        Finding::new("boot.cstate_limits", Status::Info, "C-states are not limited on the command line")
            .evidence("/proc/cmdline: no intel_idle.max_cstate, processor.max_cstate or idle=")
            .remedy("hold /dev/cpu_dma_latency at 0 while timing (rtick measure --dma-latency 0), or boot with intel_idle.max_cstate=1 processor.max_cstate=1")
    }
}

fn rt_tuning(ctx: &Context<'_>, cmdline: &str) -> Finding {
    let extras: Vec<(&str, &str, &str)> = vec![
        ("skew_tick", "1", "staggers the per-CPU ticks so they do not contend for the same locks"),
        ("threadirqs", "", "runs interrupt handlers as threads whose priority can be set below timing threads"),
        ("nosoftlockup", "", "removes the soft-lockup watchdog's periodic timer"),
    ];
    let missing: Vec<&str> = extras
        .iter()
        .filter(|(p, _, _)| ctx.param(p).is_none())
        .map(|(p, v, _)| if v.is_empty() { *p } else { "skew_tick=1" })
        .collect();
    if missing.is_empty() {
        Finding::new("boot.rt_tuning", Status::Ok, "skew_tick=1, threadirqs and nosoftlockup are set")
    } else {
        Finding::new(
            "boot.rt_tuning",
            Status::Info,
            format!("common real-time boot parameters not set: {}", missing.join(" ")),
        )
        .impact(extras.iter().map(|(p, _, why)| format!("{p} {why}")).collect::<Vec<_>>().join("; "))
        .remedy(format!("add to the kernel command line: {}", missing.join(" ")))
    }
    .evidence(format!("/proc/cmdline: {cmdline}"))
}

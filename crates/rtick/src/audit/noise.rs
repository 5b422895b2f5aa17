//! Sources of interference: irqbalance, IRQs on isolated CPUs, watchdogs,
//! NIC interrupt coalescing; whether this is a virtual machine, and the tuned
//! profile.

use std::process::Command;

use super::read::Context;
use super::{Finding, Status};
use crate::system::{format_cpu_list, parse_cpu_list};

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let isolated = ctx.isolated();

    // irqbalance: a process whose comm is irqbalance.
    let comms: Option<Vec<String>> = std::fs::read_dir(ctx.root.path("/proc")).ok().map(|d| {
        d.filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
            .collect()
    });
    let Some(comms) = comms.filter(|c| !c.is_empty()) else {
        out.push(Finding::unreadable("noise.irqbalance", "running processes", &["/proc/*/comm"]));
        return noise_rest(ctx, out);
    };
    let running = comms.iter().any(|c| c.trim() == "irqbalance");
    out.push(match (running, isolated.is_empty()) {
        (true, false) => Finding::new("noise.irqbalance", Status::Warn, "irqbalance is running beside isolated CPUs")
            .evidence("/proc/*/comm: irqbalance")
            .impact("it moves interrupts around; without IRQBALANCE_BANNED_CPULIST it may put them on isolated CPUs")
            .remedy(format!(
                "systemctl stop irqbalance, or set IRQBALANCE_BANNED_CPULIST={} in /etc/default/irqbalance",
                format_cpu_list(&isolated)
            )),
        (true, true) => Finding::new("noise.irqbalance", Status::Info, "irqbalance is running")
            .evidence("/proc/*/comm: irqbalance")
            .impact("interrupts move between CPUs, including a timing thread's"),
        (false, _) => Finding::new("noise.irqbalance", Status::Ok, "irqbalance is not running")
            .evidence("/proc/*/comm: no irqbalance"),
    });

    // IRQs whose affinity includes isolated CPUs.
    if !isolated.is_empty() {
        let mut hits = Vec::new();
        if let Ok(d) = std::fs::read_dir(ctx.root.path("/proc/irq")) {
            for e in d.filter_map(|e| e.ok()) {
                let name = e.file_name().to_string_lossy().into_owned();
                if !name.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                let aff =
                    std::fs::read_to_string(e.path().join("smp_affinity_list")).ok().and_then(|s| parse_cpu_list(&s));
                if aff.is_some_and(|a| a.iter().any(|c| isolated.contains(c))) {
                    hits.push(name);
                }
            }
        }
        hits.sort_by_key(|h| h.parse::<u32>().unwrap_or(0));
        out.push(if hits.is_empty() {
            Finding::new("noise.irq_affinity", Status::Ok, "no IRQ may run on the isolated CPUs").evidence(format!("/proc/irq/*/smp_affinity_list vs isolated {}", format_cpu_list(&isolated)))
        } else {
            Finding::new("noise.irq_affinity", Status::Warn, format!("{} IRQs may run on isolated CPUs", hits.len()))
                .evidence(format!("/proc/irq/{{{}}}/smp_affinity_list include {}", hits.join(","), format_cpu_list(&isolated)))
                .impact("their handlers interrupt the timing thread")
                .remedy("boot with irqaffinity=<housekeeping CPUs> and isolcpus=managed_irq,…; or write housekeeping CPUs to each /proc/irq/N/smp_affinity_list")
        });
    }

    noise_rest(ctx, out);
}

fn noise_rest(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    out.push(match ctx.read("/proc/sys/kernel/nmi_watchdog").as_deref() {
        None => Finding::new("noise.nmi_watchdog", Status::Info, "NMI watchdog: not present")
            .evidence("/proc/sys/kernel/nmi_watchdog: absent"),
        Some("0") => {
            Finding::new("noise.nmi_watchdog", Status::Ok, "NMI watchdog is off").evidence("kernel.nmi_watchdog = 0")
        }
        Some(v) => Finding::new("noise.nmi_watchdog", Status::Warn, "NMI watchdog is on")
            .evidence(format!("kernel.nmi_watchdog = {v}"))
            .impact("a periodic non-maskable interrupt (perf counter overflow) hits every CPU")
            .remedy("sysctl kernel.nmi_watchdog=0 (or boot with nmi_watchdog=0)"),
    });
    let soft = ctx.read("/proc/sys/kernel/soft_watchdog").or_else(|| ctx.read("/proc/sys/kernel/watchdog"));
    out.push(match soft.as_deref() {
        None => Finding::new("noise.softlockup_watchdog", Status::Info, "soft-lockup watchdog: not present")
            .evidence("/proc/sys/kernel/soft_watchdog: absent"),
        Some("0") => Finding::new("noise.softlockup_watchdog", Status::Ok, "soft-lockup watchdog is off")
            .evidence("kernel.soft_watchdog = 0"),
        Some(v) => Finding::new("noise.softlockup_watchdog", Status::Info, "soft-lockup watchdog is on")
            .evidence(format!("kernel.soft_watchdog = {v}"))
            .impact("an hrtimer and a per-CPU stopper thread run every few seconds on every CPU")
            .remedy("sysctl kernel.soft_watchdog=0 (or boot with nosoftlockup)"),
    });

    nic_coalescing(ctx, out);
    virtualisation(ctx, out);
}

fn nic_coalescing(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let nics: Vec<String> = std::fs::read_dir(ctx.root.path("/sys/class/net"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "lo")
                .collect()
        })
        .unwrap_or_default();
    if nics.is_empty() {
        out.push(
            Finding::new("noise.nic_coalescing", Status::Info, "no network interface besides lo")
                .evidence("/sys/class/net"),
        );
        return;
    }
    if !ctx.opts.run_commands {
        out.push(
            Finding::new(
                "noise.nic_coalescing",
                Status::Info,
                format!("NIC interrupt coalescing not checked for {}", nics.join(", ")),
            )
            .evidence("commands are not run under --sysroot"),
        );
        return;
    }
    let mut lines = Vec::new();
    for nic in &nics {
        match Command::new("ethtool").args(["-c", nic]).output() {
            Err(_) => {
                out.push(
                    Finding::new(
                        "noise.nic_coalescing",
                        Status::Info,
                        "NIC interrupt coalescing: ethtool is not installed",
                    )
                    .evidence(format!("ethtool not found on PATH; interfaces: {}", nics.join(", ")))
                    .remedy("apt-get install ethtool, then ethtool -c <nic>"),
                );
                return;
            }
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let get = |k: &str| text.lines().find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()));
                lines.push(format!(
                    "{nic}: adaptive-rx {}, rx-usecs {}",
                    get("Adaptive RX:").unwrap_or_else(|| "?".into()),
                    get("rx-usecs:").unwrap_or_else(|| "?".into())
                ));
            }
            Ok(_) => lines.push(format!("{nic}: coalescing not supported")),
        }
    }
    out.push(
        Finding::new("noise.nic_coalescing", Status::Info, "NIC interrupt coalescing (for network-driven loops)")
            .evidence(format!("ethtool -c: {}", lines.join("; ")))
            .impact("coalescing delays receive interrupts by rx-usecs to batch them")
            .remedy("ethtool -C <nic> adaptive-rx off rx-usecs 0 for the lowest receive latency"),
    );
}

fn virtualisation(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    use crate::system::{VirtSigns, Virtualization};
    let signs = VirtSigns::read(ctx.root);
    let ev = format!(
        "CPU hypervisor flag: {}; /sys/hypervisor/type: {}; DMI: {}",
        match signs.cpu_flag {
            Some(true) => "set",
            Some(false) => "not set",
            None => "unreadable",
        },
        signs.hypervisor_type.as_deref().unwrap_or("absent"),
        if signs.dmi.is_empty() { "unreadable".to_string() } else { signs.dmi.join(" / ") }
    );
    out.push(match signs.virtualization() {
        Virtualization::Guest(_) => Finding::new("environment.virtualization", Status::Warn, "this is a virtual machine")
            .evidence(ev)
            .impact("the host preempts the guest's CPUs at will: latency tails of hundreds of µs come from the host and no guest setting removes them")
            .remedy("measure on bare metal for real-time figures; in a VM, pin vCPUs on the host and give them isolated host CPUs"),
        Virtualization::Unknown => Finding::unreadable("environment.virtualization", "the CPU flags", &["/proc/cpuinfo"]),
        Virtualization::BareMetal => {
            Finding::new("environment.virtualization", Status::Ok, "bare metal (no hypervisor detected)").evidence(ev)
        }
    });
    out.push(tuned(ctx));
}

/// tuned applies a profile of the settings this audit checks, and re-applies
/// it: a setting changed by hand may be reverted by it.
fn tuned(ctx: &Context<'_>) -> Finding {
    const ID: &str = "environment.tuned";
    const LATENCY: &[&str] = &[
        "latency-performance",
        "network-latency",
        "realtime",
        "realtime-virtual-guest",
        "realtime-virtual-host",
        "cpu-partitioning",
    ];
    let Some(active) = ctx.read("/etc/tuned/active_profile").filter(|p| !p.is_empty()) else {
        return Finding::new(ID, Status::Info, "tuned: no active profile")
            .evidence("/etc/tuned/active_profile: absent or empty")
            .impact("settings are as set by hand or by boot parameters");
    };
    let ev = format!("/etc/tuned/active_profile = {active}");
    if active.split_whitespace().any(|p| LATENCY.contains(&p)) {
        Finding::new(ID, Status::Ok, format!("tuned profile {active}: tuned for latency")).evidence(ev)
    } else {
        Finding::new(ID, Status::Warn, format!("tuned profile {active} is not a latency profile"))
            .evidence(ev)
            .impact("tuned keeps power-saving settings and re-applies them: a fix made by hand may be reverted")
            .remedy("tuned-adm profile latency-performance (or realtime, with isolated CPUs in /etc/tuned/realtime-variables.conf)")
    }
}

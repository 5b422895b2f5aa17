//! What this process may do: real-time priorities, memory locking, and
//! /dev/cpu_dma_latency. Read from /proc/self (status, limits).

use std::os::unix::fs::MetadataExt;

use super::read::Context;
use super::{Finding, Status};

const CAP_DAC_OVERRIDE: u32 = 1;
const CAP_SYS_NICE: u32 = 23;

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let nice = ctx.has_cap(CAP_SYS_NICE);
    let rtprio = ctx.limit("Max realtime priority");
    // The privilege may be there and the cgroup still refuse (sched.rt_group fails then).
    let refused = ctx.cpu_cgroup.as_ref().filter(|c| c.refuses_realtime());
    let but = refused.map(|c| format!("; but cgroup {} refuses them (see sched.rt_group)", c.path)).unwrap_or_default();
    out.push(match (nice, rtprio) {
        (None, None) => Finding::unreadable(
            "permissions.realtime",
            "this process's privileges",
            &["/proc/self/status", "/proc/self/limits"],
        ),
        (Some(true), _) => Finding::new(
            "permissions.realtime",
            Status::Ok,
            format!("real-time policies are allowed (CAP_SYS_NICE){but}"),
        )
        .evidence("/proc/self/status: CapEff includes CAP_SYS_NICE"),
        (_, Some(None)) => Finding::new(
            "permissions.realtime",
            Status::Ok,
            format!("real-time policies are allowed (RLIMIT_RTPRIO unlimited){but}"),
        )
        .evidence("/proc/self/limits: Max realtime priority unlimited"),
        (_, Some(Some(p))) if p > 0 => Finding::new(
            "permissions.realtime",
            Status::Warn,
            format!("real-time priorities up to {p} only (RLIMIT_RTPRIO)"),
        )
        .evidence(format!("/proc/self/limits: Max realtime priority {p}; no CAP_SYS_NICE"))
        .impact("SCHED_FIFO/RR above that priority fails")
        .remedy("raise rtprio in /etc/security/limits.conf (e.g. @realtime - rtprio 99), or grant CAP_SYS_NICE"),
        _ => Finding::new(
            "permissions.realtime",
            Status::Fail,
            "real-time scheduling is not allowed: no CAP_SYS_NICE, RLIMIT_RTPRIO 0",
        )
        .evidence(format!(
            "/proc/self/status CapEff without CAP_SYS_NICE; /proc/self/limits Max realtime priority {}",
            rtprio.flatten().unwrap_or(0)
        ))
        .impact("timing threads run as SCHED_OTHER: wake-ups are delayed by every other task on the CPU")
        .remedy("run as root, setcap cap_sys_nice+ep on the program, or set rtprio 99 in /etc/security/limits.conf"),
    });

    let dev = ctx.root.path("/dev/cpu_dma_latency");
    out.push(match std::fs::metadata(&dev) {
        Err(_) => Finding::new("permissions.dma_latency", Status::Info, "/dev/cpu_dma_latency does not exist")
            .evidence(format!("{}: missing", dev.display()))
            .impact("C-states cannot be limited from user space on this system"),
        Ok(m) => {
            let mode = m.mode() & 0o777;
            let euid = ctx.euid();
            let writable = mode & 0o002 != 0
                || (mode & 0o200 != 0 && euid == Some(m.uid()))
                || euid == Some(0)
                || ctx.has_cap(CAP_DAC_OVERRIDE) == Some(true);
            let ev = format!("/dev/cpu_dma_latency: mode {mode:o}, owner uid {}; this process: uid {}", m.uid(), euid.map_or("?".into(), |u| u.to_string()));
            if writable {
                Finding::new("permissions.dma_latency", Status::Ok, "/dev/cpu_dma_latency can be written").evidence(ev)
            } else {
                Finding::new("permissions.dma_latency", Status::Warn, "/dev/cpu_dma_latency cannot be written by this user")
                    .evidence(ev)
                    .impact("this process cannot keep the CPUs out of deep C-states while it runs")
                    .remedy("run as root, or give a group write access with a udev rule (KERNEL==\"cpu_dma_latency\", GROUP=\"realtime\", MODE=\"0660\")")
            }
        }
    });
}

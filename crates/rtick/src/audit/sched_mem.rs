//! Scheduler settings (RT throttling, timer migration, SMT, NUMA balancing)
//! and memory (RLIMIT_MEMLOCK, swap, transparent huge pages, KSM).

use super::read::Context;
use super::{Finding, Status};

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    out.extend([rt_throttling(ctx), timer_migration(ctx), smt(ctx), numa_balancing(ctx)]);
    out.extend([memlock(ctx), swap(ctx), thp(ctx), ksm(ctx)]);
}

fn rt_throttling(ctx: &Context<'_>) -> Finding {
    let rt = ctx.read("/proc/sys/kernel/sched_rt_runtime_us");
    let period = ctx.read("/proc/sys/kernel/sched_rt_period_us");
    match (rt.as_deref().and_then(|v| v.parse::<i64>().ok()), period.as_deref().and_then(|v| v.parse::<i64>().ok())) {
        (None, _) => {
            Finding::unreadable("sched.rt_throttling", "RT throttling", &["/proc/sys/kernel/sched_rt_runtime_us"])
        }
        (Some(-1), _) => Finding::new("sched.rt_throttling", Status::Ok, "RT throttling is off")
            .evidence("kernel.sched_rt_runtime_us = -1"),
        (Some(r), p) => {
            let p = p.unwrap_or(1_000_000);
            Finding::new(
                "sched.rt_throttling",
                Status::Warn,
                format!("RT throttling: real-time threads get {} ms of every {} ms", r / 1000, p / 1000),
            )
            .evidence(format!("kernel.sched_rt_runtime_us = {r}, kernel.sched_rt_period_us = {p}"))
            .impact(format!(
                "a SCHED_FIFO/RR thread that spins (spin, hybrid with a large slack) is stopped for {} ms every {} ms",
                (p - r) / 1000,
                p / 1000
            ))
            .remedy("sysctl kernel.sched_rt_runtime_us=-1 (only with a housekeeping CPU left for everything else)")
        }
    }
}

fn timer_migration(ctx: &Context<'_>) -> Finding {
    match ctx.read("/proc/sys/kernel/timer_migration").as_deref() {
        None => Finding::unreadable("sched.timer_migration", "timer migration", &["/proc/sys/kernel/timer_migration"]),
        Some("0") => Finding::new("sched.timer_migration", Status::Ok, "timer migration is off")
            .evidence("kernel.timer_migration = 0"),
        Some(v) => Finding::new("sched.timer_migration", Status::Info, "timer migration is on")
            .evidence(format!("kernel.timer_migration = {v}"))
            .impact("timers of idle CPUs move to busy ones, which then expire others' timers")
            .remedy("sysctl kernel.timer_migration=0"),
    }
}

fn smt(ctx: &Context<'_>) -> Finding {
    match ctx.read("/sys/devices/system/cpu/smt/active").as_deref() {
        None => Finding::unreadable("sched.smt", "SMT state", &["/sys/devices/system/cpu/smt/active"]),
        Some("1") => Finding::new("sched.smt", Status::Warn, "SMT (hyper-threading) is active")
            .evidence("/sys/devices/system/cpu/smt/active = 1")
            .impact(
                "a timing thread shares its core's execution units with its sibling: execution time and latency vary",
            )
            .remedy("echo off > /sys/devices/system/cpu/smt/control (or boot with nosmt), or keep the sibling idle"),
        Some(v) => Finding::new("sched.smt", Status::Ok, "SMT is not active")
            .evidence(format!("/sys/devices/system/cpu/smt/active = {v}")),
    }
}

fn numa_balancing(ctx: &Context<'_>) -> Finding {
    match ctx.read("/proc/sys/kernel/numa_balancing").as_deref() {
        None => {
            Finding::new("sched.numa_balancing", Status::Info, "NUMA balancing: not present (single node or not built)")
                .evidence("/proc/sys/kernel/numa_balancing: absent")
        }
        Some("0") => Finding::new("sched.numa_balancing", Status::Ok, "NUMA balancing is off")
            .evidence("kernel.numa_balancing = 0"),
        Some(v) => Finding::new("sched.numa_balancing", Status::Warn, "automatic NUMA balancing is on")
            .evidence(format!("kernel.numa_balancing = {v}"))
            .impact("the kernel unmaps pages to sample their use: a timing thread takes page faults at random")
            .remedy("sysctl kernel.numa_balancing=0"),
    }
}

fn memlock(ctx: &Context<'_>) -> Finding {
    let Some(lim) = ctx.limit("Max locked memory") else {
        return Finding::unreadable("memory.memlock", "RLIMIT_MEMLOCK", &["/proc/self/limits"]);
    };
    let cap = ctx.has_cap(14).unwrap_or(false);
    let ev = format!(
        "/proc/self/limits: Max locked memory {}; CAP_IPC_LOCK {}",
        lim.map_or("unlimited".into(), |b| format!("{b} bytes")),
        if cap { "held" } else { "not held" }
    );
    if cap || lim.is_none() {
        Finding::new("memory.memlock", Status::Ok, "memory can be locked (mlockall)").evidence(ev)
    } else {
        Finding::new(
            "memory.memlock",
            Status::Warn,
            format!("RLIMIT_MEMLOCK is {} KiB: mlockall of a real program fails", lim.unwrap_or(0) / 1024),
        )
        .evidence(ev)
        .impact("without locked memory, page faults show up as latency")
        .remedy("ulimit -l unlimited (or memlock in /etc/security/limits.conf), or grant CAP_IPC_LOCK")
    }
}

fn swap(ctx: &Context<'_>) -> Finding {
    match ctx.read("/proc/swaps") {
        None => Finding::unreadable("memory.swap", "swap", &["/proc/swaps"]),
        Some(s) => {
            let devs: Vec<&str> = s.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
            if devs.is_empty() {
                Finding::new("memory.swap", Status::Ok, "no swap").evidence("/proc/swaps: empty")
            } else {
                Finding::new("memory.swap", Status::Info, format!("swap is on: {}", devs.join(", ")))
                    .evidence("/proc/swaps")
                    .impact("unlocked pages of a timing program can be swapped out and fault back in slowly")
                    .remedy("lock memory (rtick does with --mlock), or swapoff -a")
            }
        }
    }
}

fn thp(ctx: &Context<'_>) -> Finding {
    let thp = ctx.read("/sys/kernel/mm/transparent_hugepage/enabled");
    let defrag = ctx.read("/sys/kernel/mm/transparent_hugepage/defrag");
    let sel =
        |s: &Option<String>| s.as_deref().and_then(|v| v.split('[').nth(1)?.split(']').next().map(str::to_string));
    match (sel(&thp), sel(&defrag)) {
        (None, _) => Finding::unreadable(
            "memory.thp",
            "transparent huge pages",
            &["/sys/kernel/mm/transparent_hugepage/enabled"],
        ),
        (Some(e), d) => {
            let d = d.unwrap_or_else(|| "?".into());
            let ev = format!("transparent_hugepage: enabled [{e}], defrag [{d}]");
            if e == "always" || d == "always" {
                Finding::new("memory.thp", Status::Warn, format!("transparent huge pages: enabled {e}, defrag {d}"))
                    .evidence(ev)
                    .impact("khugepaged and direct compaction stall threads that fault or allocate memory")
                    .remedy("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled; echo defer > /sys/kernel/mm/transparent_hugepage/defrag (or never)")
            } else {
                Finding::new("memory.thp", Status::Ok, format!("transparent huge pages: enabled {e}, defrag {d}"))
                    .evidence(ev)
            }
        }
    }
}

fn ksm(ctx: &Context<'_>) -> Finding {
    match ctx.read("/sys/kernel/mm/ksm/run").as_deref() {
        None => Finding::new("memory.ksm", Status::Info, "KSM: not present").evidence("/sys/kernel/mm/ksm/run: absent"),
        Some("1") => Finding::new("memory.ksm", Status::Warn, "KSM page merging is running")
            .evidence("/sys/kernel/mm/ksm/run = 1")
            .impact("ksmd scans and merges pages; a write to a merged page is a copy-on-write fault")
            .remedy("echo 0 > /sys/kernel/mm/ksm/run"),
        Some(v) => {
            Finding::new("memory.ksm", Status::Ok, "KSM is off").evidence(format!("/sys/kernel/mm/ksm/run = {v}"))
        }
    }
}

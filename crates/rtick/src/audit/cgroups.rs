//! What the cgroups and the affinity of this process allow: a real-time
//! budget of its cpu cgroup (RT group scheduling), and the CPUs it may use.

use super::read::Context;
use super::{Finding, Status};
use crate::cgroup::cpuset;

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    out.push(rt_group(ctx));
    out.push(cpus_allowed(ctx));
}

fn rt_group(ctx: &Context<'_>) -> Finding {
    const ID: &str = "sched.rt_group";
    let built = ctx.config.as_ref().map(|c| c.is_y("CONFIG_RT_GROUP_SCHED"));
    let Some(cg) = &ctx.cpu_cgroup else {
        return if built == Some(false) {
            Finding::new(ID, Status::Ok, "no per-cgroup real-time budgets (RT group scheduling is not built)")
                .evidence("CONFIG_RT_GROUP_SCHED is not set")
        } else {
            Finding::unreadable(ID, "this process's cpu cgroup", &["/proc/self/cgroup", "/proc/self/mountinfo"])
        };
    };
    let file = format!("{}/cpu.rt_runtime_us", cg.dir);
    let period = cg.rt_period_us.unwrap_or(1_000_000);
    match cg.rt_runtime_us {
        None => Finding::new(ID, Status::Ok, format!("cgroup {}: no per-cgroup real-time budget", cg.path))
            .evidence(format!("{file}: absent (RT group scheduling not in use on this hierarchy)")),
        Some(0) => Finding::new(
            ID,
            Status::Fail,
            format!("cgroup {} has no real-time budget: SCHED_FIFO/RR fails with EPERM, even as root", cg.path),
        )
        .evidence(format!("{file} = 0"))
        .impact("timing threads cannot get a real-time policy here; they run as SCHED_OTHER")
        .remedy(cg.remedy()),
        Some(r) if r < 0 || cg.is_root() => {
            Finding::new(ID, Status::Ok, format!("cgroup {}: real-time threads allowed", cg.path)).evidence(format!(
                "{file} = {r}{}",
                if cg.is_root() { " (the root: the sysctl budget applies)" } else { "" }
            ))
        }
        Some(r) => Finding::new(
            ID,
            Status::Info,
            format!("cgroup {} gives real-time threads {} ms of every {} ms", cg.path, r / 1000, period / 1000),
        )
        .evidence(format!("{file} = {r}, cpu.rt_period_us = {period}"))
        .impact("real-time threads of this cgroup together are throttled beyond that budget")
        .remedy(format!("raise it if a loop spins: echo {} > {file} (within its parent's budget)", period * 95 / 100)),
    }
}

fn cpus_allowed(ctx: &Context<'_>) -> Finding {
    const ID: &str = "sched.cpus_allowed";
    let Some(online) = ctx.cpus() else {
        return Finding::unreadable(ID, "the online CPUs", &["/sys/devices/system/cpu/online"]);
    };
    // The inherited affinity (isolcpus= narrows it) is not a limit: threads
    // may widen it. The cpuset is the limit.
    let affinity =
        ctx.status_field("Cpus_allowed_list").map(|a| format!("; inherited affinity {a}")).unwrap_or_default();
    let Some(set) = cpuset(ctx.root) else {
        return Finding::new(
            ID,
            Status::Ok,
            format!("no cpuset limits this process: every online CPU ({})", online.len()),
        )
        .evidence(format!("no cpuset files for this process (/proc/self/cgroup){affinity}"));
    };
    let ev = format!("{} = {}{affinity}", set.file, list(&set.cpus));
    let isolated = ctx.isolated();
    let outside: Vec<usize> = isolated.iter().copied().filter(|c| !set.cpus.contains(c)).collect();
    if !outside.is_empty() {
        Finding::new(
            ID,
            Status::Warn,
            format!("isolated CPUs {} are outside this process's cpuset {}", list(&outside), set.path),
        )
        .evidence(format!("{ev}; isolated {}", list(&isolated)))
        .impact("a timing thread cannot be pinned to the CPUs set aside for it: -a on them fails with EINVAL")
        .remedy(format!("add them to the cpuset ({}), or start from a cgroup whose cpuset includes them", set.file))
    } else if online.iter().all(|c| set.cpus.contains(c)) {
        Finding::new(ID, Status::Ok, format!("the cpuset {} allows every online CPU ({})", set.path, online.len()))
            .evidence(ev)
    } else {
        Finding::new(
            ID,
            Status::Info,
            format!("the cpuset {} allows {} of {} online CPUs", set.path, set.cpus.len(), online.len()),
        )
        .evidence(ev)
        .impact("threads can be pinned (-a) only to these")
    }
}

fn list(cpus: &[usize]) -> String {
    crate::system::format_cpu_list(cpus)
}

//! The RT-group trap beyond this process: with RT group scheduling on
//! (`cpu.rt_runtime_us` in the v1 cpu hierarchy, `CONFIG_RT_GROUP_SCHED`),
//! every new cpu cgroup starts with a real-time budget of 0, and a program
//! started in one (a service, a container) cannot make a thread real-time:
//! `sched_setscheduler` fails with EPERM, even for root. This process's own
//! cgroup is `sched.rt_group`; this names the other populated ones.

use std::collections::VecDeque;

use super::read::Context;
use super::{Finding, Status};

const ID: &str = "sched.rt_group_others";
/// Directories of the hierarchy looked at, at most (a host of thousands of
/// containers is not walked whole).
const LOOKED_AT: usize = 2000;
/// Cgroups named in the finding; the others are counted.
const NAMED: usize = 5;

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(cg) = ctx.cpu_cgroup.as_ref().filter(|c| !c.v2 && c.rt_runtime_us.is_some()) else {
        return; // No RT group scheduling in a v1 hierarchy: sched.rt_group says so.
    };
    let (found, looked) = budgetless(ctx, &cg.mount, &cg.path);
    let more = if looked >= LOOKED_AT { format!(" (the first {LOOKED_AT} looked at)") } else { String::new() };
    if found.is_empty() {
        out.push(
            Finding::new(ID, Status::Ok, "no other cpu cgroup with tasks lacks a real-time budget").evidence(format!(
                "{looked} cgroups under {}{more}: cpu.rt_runtime_us > 0 wherever tasks run",
                cg.mount
            )),
        );
        return;
    }
    let mut found = found;
    found.sort_unstable();
    let names: Vec<&str> = found.iter().take(NAMED).map(String::as_str).collect();
    let rest = found.len() - names.len();
    let rest = if rest > 0 { format!(" and {rest} more") } else { String::new() };
    out.push(
        Finding::new(
            ID,
            Status::Warn,
            format!(
                "{} with tasks {} no real-time budget: {}{rest}",
                crate::text::count(found.len() as u64, "cpu cgroup"),
                if found.len() == 1 { "has" } else { "have" },
                names.join(", ")
            ),
        )
        .evidence(format!("cpu.rt_runtime_us = 0 in each, under {}{more}", cg.mount))
        .impact(
            "a program started there cannot make a thread real-time: SCHED_FIFO/RR fails with EPERM, even as root",
        )
        .remedy(format!(
            "give the one that runs real-time threads a budget, its parents first: echo 950000 > {}{}/cpu.rt_runtime_us; \
             or start it from the root cgroup; for Docker, --cpu-rt-runtime=950000",
            cg.mount.trim_end_matches('/'),
            names[0]
        )),
    );
}

/// The cgroups below `mount` (paths in the hierarchy, as `/proc/PID/cgroup`
/// gives them) with a real-time budget of 0 and tasks, other than `own`;
/// and how many directories were looked at.
fn budgetless(ctx: &Context<'_>, mount: &str, own: &str) -> (Vec<String>, usize) {
    let mut found = Vec::new();
    let mut queue = VecDeque::from([String::new()]);
    let mut looked = 0;
    while let Some(rel) = queue.pop_front() {
        looked += 1;
        let dir = format!("{}{rel}", mount.trim_end_matches('/'));
        let populated = ctx.read(&format!("{dir}/tasks")).is_some_and(|t| !t.is_empty());
        if !rel.is_empty()
            && rel != own
            && populated
            && ctx.read(&format!("{dir}/cpu.rt_runtime_us")).as_deref() == Some("0")
        {
            found.push(rel.clone());
        }
        let Ok(entries) = std::fs::read_dir(ctx.root.path(&dir)) else { continue };
        for e in entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            if looked + queue.len() < LOOKED_AT {
                queue.push_back(format!("{rel}/{}", e.file_name().to_string_lossy()));
            }
        }
    }
    (found, looked)
}

#[cfg(test)]
mod tests {
    use super::super::{read::Context, Options};
    use crate::system::SysRoot;

    #[test]
    fn populated_cgroups_without_budget_are_named_and_the_list_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let file = |p: &str, c: &str| {
            let p = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        };
        file("/proc/self/cgroup", "2:cpu,cpuacct:/me\n0::/\n");
        file("/proc/self/mountinfo", "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n");
        let cpu = "/sys/fs/cgroup/cpu";
        file(&format!("{cpu}/cpu.rt_runtime_us"), "950000");
        file(&format!("{cpu}/tasks"), "1\n2\n");
        // Ours (sched.rt_group's), an empty one, one with a budget: none named.
        for (name, budget, tasks) in [("me", "0", "7"), ("empty", "0", ""), ("rt", "500000", "8")] {
            file(&format!("{cpu}/{name}/cpu.rt_runtime_us"), budget);
            file(&format!("{cpu}/{name}/tasks"), tasks);
        }
        let root = SysRoot::new(d.path());
        let opts = Options { run_commands: false };
        let mut out = Vec::new();
        super::check(&Context::new(&root, &opts), &mut out);
        assert_eq!((out.len(), out[0].status), (1, super::Status::Ok), "{out:?}");
        // Seven services with tasks and no budget, one nested: five named, two counted.
        for i in 0..6 {
            file(&format!("{cpu}/system.slice/s{i}.service/cpu.rt_runtime_us"), "0");
            file(&format!("{cpu}/system.slice/s{i}.service/tasks"), "100");
        }
        file(&format!("{cpu}/docker/cpu.rt_runtime_us"), "0");
        file(&format!("{cpu}/docker/tasks"), "200");
        let mut out = Vec::new();
        super::check(&Context::new(&root, &opts), &mut out);
        let f = &out[0];
        assert_eq!(f.status, super::Status::Warn);
        assert!(
            f.title.starts_with("7 cpu cgroups with tasks have no real-time budget: /docker, /system.slice/s0.service"),
            "{}",
            f.title
        );
        assert!(f.title.ends_with(" and 2 more"), "{}", f.title);
        assert!(f.remedy.contains("echo 950000 > /sys/fs/cgroup/cpu/docker/cpu.rt_runtime_us"), "{}", f.remedy);
        assert!(!f.title.contains("/me") && !f.title.contains("/empty") && !f.title.contains("/rt,"), "{}", f.title);
    }
}

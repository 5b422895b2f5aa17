//! DAMON, the kernel's data-access monitor: kdamond threads that sample
//! memory access and act on it (pageout, LRU sorting). Cloud VMs run it to
//! hand cold memory back to the host.

use super::read::Context;
use super::{Finding, Status};

const ADMIN: &str = "/sys/kernel/mm/damon/admin/kdamonds";
const MODULES: [&str; 2] = ["damon_reclaim", "damon_lru_sort"];

pub(crate) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    const ID: &str = "noise.damon";
    let count: Option<usize> = ctx.read(&format!("{ADMIN}/nr_kdamonds")).and_then(|n| n.parse().ok());
    let modules: Vec<&str> = MODULES
        .iter()
        .copied()
        .filter(|m| ctx.read(&format!("/sys/module/{m}/parameters/enabled")).as_deref() == Some("Y"))
        .collect();
    let (mut running, mut evidence, mut pids) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..count.unwrap_or(0) {
        if ctx.read(&format!("{ADMIN}/{k}/state")).as_deref() != Some("on") {
            continue;
        }
        let actions = actions(ctx, k);
        let pid = ctx.read(&format!("{ADMIN}/{k}/pid")).unwrap_or_else(|| "?".into());
        let what = if actions.is_empty() { "monitoring only".to_string() } else { actions.join(", ") };
        running.push(format!("kdamond {k} (pid {pid}): {what}"));
        evidence.push(format!("{ADMIN}/{k}/state = on, pid {pid}, scheme actions: {what}"));
        pids.push(pid);
    }
    for m in &modules {
        running.push(format!("{m} enabled"));
        evidence.push(format!("/sys/module/{m}/parameters/enabled = Y"));
    }
    out.push(match (running.is_empty(), count) {
        (true, None) => Finding::new(ID, Status::Info, "DAMON: not present")
            .evidence(format!("{ADMIN}: absent; damon_reclaim, damon_lru_sort: not enabled")),
        (true, Some(n)) => Finding::new(ID, Status::Ok, "DAMON: no kdamond running")
            .evidence(format!("{ADMIN}/nr_kdamonds = {n}, none on")),
        (false, _) => Finding::new(ID, Status::Info, format!("DAMON is running: {}", running.join("; ")))
            .evidence(evidence.join("; "))
            .impact("kdamond samples memory access on the CPUs it may use and reclaims what it finds cold: memory not locked can fault back in")
            .remedy(format!(
                "lock the timing program's memory (rtick does); keep kdamond off isolated CPUs (taskset -pc HOUSEKEEPING_CPUS {}); or, where the platform does not rely on it, echo off > {ADMIN}/N/state",
                if pids.is_empty() { "PID".to_string() } else { pids.join(" ") }
            )),
    });
}

/// The scheme actions of kdamond `k`, e.g. `pageout`.
fn actions(ctx: &Context<'_>, k: usize) -> Vec<String> {
    let base = format!("{ADMIN}/{k}/contexts");
    let n = |p: &str| ctx.read(p).and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
    let mut out = Vec::new();
    for c in 0..n(&format!("{base}/nr_contexts")) {
        for s in 0..n(&format!("{base}/{c}/schemes/nr_schemes")) {
            if let Some(a) = ctx.read(&format!("{base}/{c}/schemes/{s}/action")) {
                out.push(a);
            }
        }
    }
    out
}

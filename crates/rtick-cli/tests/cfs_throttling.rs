//! CFS bandwidth throttling of the measured thread's own cgroup: a
//! SCHED_OTHER `measure --explain` run in a cgroup made for the test, whose
//! CPU quota a busy loop beside it uses up, names CFS throttling in that
//! cgroup as the cause of its spikes and gives the cgroup's `cpu.stat`
//! counts over the run. The cgroup is removed on every path (its tasks
//! killed first). Root, tracefs and CFS bandwidth control needed; under CI a
//! skip is a failure.

mod common;
use common::cgroup::ChildCgroup;
use common::*;

use std::process::Command;

/// A cgroup of ours with a CPU quota: 10 ms of CPU every 100 ms.
fn quota_cgroup() -> Option<ChildCgroup> {
    let cg = ChildCgroup::create("rtick-cfs-test").map_err(|why| skip(&why, false)).ok()?;
    let set = if cg.v2 {
        std::fs::write(cg.dir.join("cpu.max"), "10000 100000")
    } else {
        std::fs::write(cg.dir.join("cpu.cfs_period_us"), "100000")
            .and_then(|_| std::fs::write(cg.dir.join("cpu.cfs_quota_us"), "10000"))
    };
    if let Err(e) = set {
        // v2 without the cpu controller enabled for our children, or no CONFIG_CFS_BANDWIDTH.
        skip(&format!("cannot set a CPU quota in {}: {e}", cg.dir.display()), false);
        return None;
    }
    Some(cg)
}

#[test]
fn a_thread_in_a_cgroup_out_of_quota_is_cfs_throttled() {
    if !is_root() {
        return skip("needs root to make a cgroup", false);
    }
    if !common::tracee::ready() {
        return;
    }
    let Some(cg) = quota_cgroup() else { return };
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let cpu = rtick::info::allowed_cpus().unwrap().last().unwrap().to_string();
    // The shell moves itself into the cgroup, starts a busy loop there that
    // uses up the quota, and becomes rtick.
    let script = format!(
        "echo $$ > {}/{} || exit 77; (while :; do :; done) </dev/null >/dev/null 2>&1 & exec \"$0\" \"$@\"",
        cg.dir.display(),
        cg.procs
    );
    let args = ["measure", "-m", "clock_nanosleep", "-i", "1ms", "-l", "300", "--policy", "other", "-a", &cpu];
    let o = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_rtick"))
        .args(args)
        .args(["-q", "--explain", "--json", path_str(&j)])
        .output()
        .unwrap();
    if o.status.code() == Some(77) {
        return skip(&format!("cannot move a process into {}: {}", cg.dir.display(), stderr(&o)), false);
    }
    ok(&o);
    let out = stdout(&o);
    let e = &json(&j)["explain"];
    // The cgroup's counts over the run: throttled, with its quota.
    let cfs = &e["cfs"][0];
    assert_eq!(cfs["cgroup"].as_str(), Some(cg.path.as_str()), "{e}");
    assert_eq!((cfs["quota_us"].as_i64(), cfs["period_us"].as_i64()), (Some(10_000), Some(100_000)), "{cfs}");
    let (periods, throttled) = (cfs["nr_periods"].as_u64().unwrap(), cfs["nr_throttled"].as_u64().unwrap());
    assert!(throttled > 0 && throttled <= periods, "{cfs}");
    assert!(cfs["throttled_ns"].as_i64().unwrap() > 0, "{cfs}");
    let note = format!("note: CFS bandwidth: cgroup {} has a CPU quota of 10.00 ms every 100.00 ms", cg.path);
    assert!(out.contains(&note), "{out}");
    // The worst spikes: the thread waited for the next period.
    let key = format!("CFS throttled in {}", cg.path);
    let causes = e["causes"].as_array().unwrap();
    let c = causes.iter().find(|c| c["cause"] == key.as_str()).unwrap_or_else(|| panic!("{key} in {e}"));
    assert_eq!(c["kind"], "cfs_throttled");
    let spikes = e["results"][0]["spikes"].as_array().unwrap();
    let named = spikes
        .iter()
        .filter(|s| s["cgroup"] == cg.path.as_str() && s["line"].as_str().unwrap().contains("CFS throttling in"));
    assert_eq!(named.count() as u64, c["count"].as_u64().unwrap(), "{e}");
    let summary = out.find("causes of the spikes above").expect("the cause summary");
    assert!(out[summary..].contains(&key), "{out}");
}

//! Privilege paths, made real by dropping capabilities with setpriv and
//! zeroing RLIMIT_RTPRIO / RLIMIT_MEMLOCK with prlimit (root only; skips
//! otherwise, and fails instead under CI, which runs as root): the default
//! falls back and says so, an explicit request fails with the fix on one line.

mod common;
use common::cgroup::ChildCgroup;
use common::support;
use common::*;

use std::path::Path;
use std::process::{Command, Output};

/// Runs rtick without CAP_SYS_NICE / CAP_IPC_LOCK and with no real-time or
/// lockable-memory allowance; `None` (after `skip`) where that cannot be done.
fn unprivileged(args: &[&str]) -> Option<Output> {
    if !is_root() {
        skip("needs root to drop privileges with setpriv", false);
        return None;
    }
    let o = Command::new("prlimit")
        .args([
            "--rtprio=0",
            "--memlock=65536",
            "setpriv",
            "--inh-caps=-all",
            "--bounding-set=-sys_nice,-ipc_lock",
            "--",
        ])
        .arg(env!("CARGO_BIN_EXE_rtick"))
        .args(args)
        .output();
    match o {
        Ok(o) if !stderr(&o).contains("prlimit:") && !stderr(&o).contains("setpriv:") => Some(o),
        Ok(o) => {
            skip(&format!("prlimit/setpriv cannot drop privileges here: {}", stderr(&o).trim()), false);
            None
        }
        Err(e) => {
            skip(&format!("prlimit is not installed (util-linux; scripts/setup installs it): {e}"), false);
            None
        }
    }
}

#[test]
fn default_policy_falls_back_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let Some(o) = unprivileged(&["measure", "-l", "20", "-q", "--json", path_str(&j)]) else { return };
    ok(&o);
    assert!(stdout(&o).contains("cannot use SCHED_FIFO 90"), "{}", stdout(&o));
    assert!(stdout(&o).contains("mlockall"), "mlock failure is a warning by default: {}", stdout(&o));
    let j = json(&j);
    assert_eq!(j["config"]["policy"], "SCHED_OTHER");
    assert_eq!(j["config"]["mlock"], false);
    assert_eq!(j["results"][0]["count"], 20);
}

#[test]
fn explicit_policy_fails_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let Some(o) = unprivileged(&["measure", "-p", "80", "-l", "20", "--json", path_str(&j)]) else { return };
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("sched_setscheduler(SCHED_FIFO, 80)") && err.contains("CAP_SYS_NICE"), "{err}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "no output file");
}

#[test]
fn explicit_mlock_fails_with_the_fix() {
    let Some(o) = unprivileged(&["measure", "--policy", "other", "--mlock", "-l", "20"]) else { return };
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("mlockall") && err.contains("CAP_IPC_LOCK"), "{err}");
}

/// tracefs mounted but not this user's (its root is root's, mode 0700 on
/// recent kernels; its files 0640): `--tracemark` says so, not that it is
/// not mounted.
#[test]
fn tracemark_without_access_to_tracefs_names_the_permission() {
    if !is_root() {
        skip("needs root to run rtick as nobody", false);
        return;
    }
    if let Err((why, kernel_lacks_it)) = support::tracefs() {
        skip(why, kernel_lacks_it);
        return;
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--"])
        .arg(env!("CARGO_BIN_EXE_rtick"))
        .args(["measure", "-b", "10", "--tracemark", "-l", "20", "--policy", "other", "--no-mlock"])
        .output();
    let o = match o {
        Ok(o) if !stderr(&o).contains("setpriv:") => o,
        Ok(o) => return skip(&format!("setpriv cannot run as nobody here: {}", stderr(&o).trim()), false),
        Err(e) => return skip(&format!("setpriv is not installed (util-linux): {e}"), false),
    };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Permission denied") && err.contains("CAP_DAC_OVERRIDE"), "{err}");
    assert!(!err.contains("not mounted") && !err.contains("mount -t"), "tracefs is mounted: {err}");
}

/// A cgroup of ours, which RT group scheduling starts without a
/// real-time budget.
fn budgetless_cgroup() -> Option<ChildCgroup> {
    if !is_root() {
        skip("needs root to create a cgroup", false);
        return None;
    }
    let cg = ChildCgroup::create("rtick-test").map_err(|why| skip(&why, false)).ok()?;
    let Ok(budget) = std::fs::read_to_string(cg.dir.join("cpu.rt_runtime_us")) else {
        // cgroup v2, or a kernel without CONFIG_RT_GROUP_SCHED: no budgets to lack.
        skip("no RT group scheduling here (no cpu.rt_runtime_us)", true);
        return None;
    };
    // The kernel starts every child cgroup with no real-time budget.
    assert_eq!(budget.trim(), "0", "a new cgroup's cpu.rt_runtime_us");
    Some(cg)
}

/// Runs rtick with `args` inside `cg`; `None` (after `skip`) when the shell
/// cannot move itself there (exit 77).
fn run_in(cg: &ChildCgroup, args: &[&str]) -> Option<Output> {
    let o = cg.command(Path::new(env!("CARGO_BIN_EXE_rtick")), args).output().unwrap();
    if o.status.code() == Some(77) {
        skip(&format!("cannot move a process into {}: {}", cg.dir.display(), stderr(&o)), false);
        return None;
    }
    Some(o)
}

#[test]
fn cgroup_without_rt_budget_is_named_as_the_cause() {
    let Some(cg) = budgetless_cgroup() else { return };
    let Some(o) = run_in(&cg, &["measure", "-p", "80", "-l", "20"]) else { return };
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("has no real-time budget") && err.contains("cpu.rt_runtime_us"), "{err}");
    assert!(!err.contains("CAP_SYS_NICE"), "root already has it: {err}");
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("a.json");
    let Some(a) = run_in(&cg, &["audit", "--json", path_str(&j)]) else { return };
    let j = json(&j);
    let finding = j["findings"].as_array().and_then(|f| f.iter().find(|x| x["id"] == "sched.rt_group").cloned());
    assert_eq!(finding.as_ref().map(|f| f["status"].clone()), Some("fail".into()), "{}", stdout(&a));
    assert_eq!(a.status.code(), Some(3));
}

/// `audit` run elsewhere names another cgroup with tasks and no real-time
/// budget (a service's, a container's): a program started there cannot
/// make a thread real-time.
#[test]
fn audit_names_another_populated_cgroup_without_rt_budget() {
    let Some(cg) = budgetless_cgroup() else { return };
    let mut sleeper = cg.command(Path::new("sleep"), &["60"]).spawn().unwrap();
    let tasks = cg.dir.join(cg.procs);
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&tasks).unwrap_or_default().trim().is_empty() {
        assert!(t0.elapsed().as_secs() < 60, "the sleeper never entered {}", cg.dir.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("a.json");
    let a = rtick(&["audit", "--json", path_str(&j)]);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let j = json(&j);
    let f = j["findings"].as_array().and_then(|f| f.iter().find(|x| x["id"] == "sched.rt_group_others").cloned());
    let f = f.unwrap_or_else(|| panic!("no sched.rt_group_others finding: {}", stdout(&a)));
    assert_eq!(f["status"], "warn", "{f}");
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("no real-time budget") && title.contains(&cg.path), "{f}");
    assert!(f["remedy"].as_str().unwrap().contains("cpu.rt_runtime_us"), "{f}");
}

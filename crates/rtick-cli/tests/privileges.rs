//! Privilege paths, made real by dropping capabilities with setpriv and
//! zeroing RLIMIT_RTPRIO / RLIMIT_MEMLOCK with prlimit (root only; skips
//! otherwise): the default falls back and says so, an explicit request
//! fails with the fix on one line.

mod common;
use common::*;

use std::process::{Command, Output};

fn unprivileged(args: &[&str]) -> Option<Output> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: needs root to drop privileges with setpriv");
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
        _ => {
            eprintln!("SKIPPED: prlimit/setpriv unavailable");
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

/// A child cgroup of ours, which RT group scheduling starts without a
/// real-time budget; removed when dropped.
struct BudgetlessCgroup {
    dir: std::path::PathBuf,
    tasks: &'static str,
}

impl BudgetlessCgroup {
    fn create() -> Option<BudgetlessCgroup> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIPPED: needs root to create a cgroup");
            return None;
        }
        let cg = rtick::cgroup::cpu_cgroup(&rtick::system::SysRoot::default())?;
        if cg.rt_runtime_us.is_none() {
            eprintln!("SKIPPED: no RT group scheduling here (no cpu.rt_runtime_us)");
            return None;
        }
        let dir = std::path::PathBuf::from(&cg.dir).join(format!("rtick-test-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let this = BudgetlessCgroup { dir, tasks: if cg.v2 { "cgroup.procs" } else { "tasks" } };
        let budget = std::fs::read_to_string(this.dir.join("cpu.rt_runtime_us")).unwrap_or_default();
        (budget.trim() == "0").then_some(this)
    }

    /// Runs rtick with `args` inside the cgroup; `None` when the shell
    /// cannot move itself there (exit 77).
    fn run(&self, args: &[&str]) -> Option<Output> {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("echo $$ > {}/{} || exit 77; exec \"$0\" \"$@\"", self.dir.display(), self.tasks))
            .arg(env!("CARGO_BIN_EXE_rtick"))
            .args(args)
            .output()
            .unwrap();
        if o.status.code() == Some(77) {
            eprintln!("SKIPPED: cannot move a process into {}: {}", self.dir.display(), stderr(&o));
            return None;
        }
        Some(o)
    }
}

impl Drop for BudgetlessCgroup {
    fn drop(&mut self) {
        // The processes run in it have exited; an empty cgroup can be removed.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn cgroup_without_rt_budget_is_named_as_the_cause() {
    let Some(cg) = BudgetlessCgroup::create() else { return };
    let Some(o) = cg.run(&["measure", "-p", "80", "-l", "20"]) else { return };
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("has no real-time budget") && err.contains("cpu.rt_runtime_us"), "{err}");
    assert!(!err.contains("CAP_SYS_NICE"), "root already has it: {err}");
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("a.json");
    let a = cg.run(&["audit", "--json", path_str(&j)]).unwrap();
    let j = json(&j);
    let finding = j["findings"].as_array().and_then(|f| f.iter().find(|x| x["id"] == "sched.rt_group").cloned());
    assert_eq!(finding.as_ref().map(|f| f["status"].clone()), Some("fail".into()), "{}", stdout(&a));
    assert_eq!(a.status.code(), Some(3));
}

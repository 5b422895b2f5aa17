//! What an rtick killed with SIGKILL leaves — its tracefs instance, its
//! `--load-cmd` (in a cgroup of rtick's own), its temporary output file — is
//! named by the next command that measures and removed by `rtick cleanup`
//! (a temporary file also by the next write into its directory). Root,
//! tracefs and a cgroup v2 hierarchy needed; under CI a skip is a failure.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::support;
use support::TRACEFS;

/// One test at a time: each runs `rtick cleanup`, which ends the others' leftovers.
static SERIAL: Mutex<()> = Mutex::new(());

fn start(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("rtick starts")
}

fn rtick_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtick")).args(args).current_dir(dir).output().expect("rtick runs")
}

/// Waits (generously: a loaded VM) until `found` gives something.
fn wait_for<T>(what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(t) = found() {
            return t;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILL, and reaped.
fn kill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A quick command that measures (and so warns): `rtick clocks`, in `dir`.
fn clocks(dir: &Path, more: &[&str]) -> String {
    let o = rtick_in(dir, &[&["clocks", "--batches", "2", "--reads", "10", "--rounds", "1"], more].concat());
    ok(&o);
    stdout(&o)
}

fn v2_mount() -> Option<PathBuf> {
    rtick::cgroup::v2_mount(&rtick::system::SysRoot::default()).map(PathBuf::from)
}

fn ready() -> bool {
    if let Err((why, lacks)) = support::tracefs() {
        skip(why, lacks);
        return false;
    }
    if v2_mount().is_none() {
        skip("no cgroup2 hierarchy is mounted", false);
        return false;
    }
    true
}

#[test]
fn a_killed_explain_run_is_named_and_cleanup_removes_its_instance() {
    if !ready() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cwd = tempfile::tempdir().unwrap();
    let cpu = rtick::info::allowed_cpus().unwrap().last().unwrap().to_string();
    let child = start(&["measure", "-a", &cpu, "-m", "clock_nanosleep", "-D", "120s", "-q", "--explain"], cwd.path());
    let pid = child.id();
    let inst = Path::new(TRACEFS).join("instances").join(format!("rtick-{pid}"));
    wait_for("the run's tracefs instance", || inst.join("tracing_on").exists().then_some(()));
    kill(child);
    assert!(inst.exists(), "SIGKILL leaves the instance");
    let out = clocks(cwd.path(), &[]);
    let warning = format!("warning: {} was left by an rtick that no longer runs", inst.display());
    let line = out.lines().find(|l| l.starts_with(&warning)).unwrap_or_else(|| panic!("not named:\n{out}"));
    assert!(line.contains("`rtick cleanup` removes it"), "{line}");
    // The warning and cleanup call the leftover by the same words.
    let what = "a tracefs instance, still tracing";
    assert!(line.contains(what), "{line}");
    let o = rtick_in(cwd.path(), &["cleanup"]);
    ok(&o);
    let removed = format!("removed {} (rtick {}): {what}", inst.display(), pid);
    assert!(stdout(&o).contains(&removed), "{}", stdout(&o));
    assert!(!inst.exists(), "cleanup removes the instance");
    assert!(!clocks(cwd.path(), &[]).contains(&inst.display().to_string()), "named no more");
}

#[test]
fn a_killed_runs_temporary_file_is_named_then_removed_by_the_next_write() {
    if !ready() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cwd = tempfile::tempdir().unwrap();
    let child = start(&["measure", "-D", "120s", "-q", "--json", "out.json"], cwd.path());
    let prefix = format!(".out.json.{}.", child.id());
    let tmp = wait_for("the run's temporary output file", || {
        std::fs::read_dir(cwd.path()).unwrap().flatten().map(|e| e.path()).find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&prefix) && name.ends_with(".rtick-tmp")
        })
    });
    kill(child);
    assert!(tmp.exists(), "SIGKILL leaves the temporary file");
    let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
    let out = clocks(cwd.path(), &[]);
    assert!(out.lines().any(|l| l.starts_with("warning: ") && l.contains(&name)), "not named:\n{out}");
    // The next write into the directory removes it.
    clocks(cwd.path(), &["--json", "out.json"]);
    let left: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out.json")]);
}

/// The pids in the cgroup `rtick-<pid>` of the v2 hierarchy, once `sleep` is among them.
fn cgroup_with_sleep(rtick: u32) -> (PathBuf, Vec<i32>) {
    let dir = v2_mount().unwrap().join(format!("rtick-{rtick}"));
    let pids = wait_for("the --load-cmd's sleep in rtick's cgroup", || {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).ok()?;
        let pids: Vec<i32> = procs.lines().filter_map(|l| l.parse().ok()).collect();
        let comm = |p: &i32| std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        pids.iter().any(|p| comm(p).trim() == "sleep").then_some(pids)
    });
    (dir, pids)
}

#[test]
fn a_load_cmd_ends_with_rtick_and_with_a_killed_rtick_in_its_named_cgroup() {
    if !ready() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cwd = tempfile::tempdir().unwrap();
    // A normal exit: everything of the command is dead when rtick is.
    let child = start(&["measure", "-D", "3s", "-q", "--load-cmd", "sleep 79", "--json", "o.json"], cwd.path());
    let (dir, pids) = cgroup_with_sleep(child.id());
    let status = child.wait_with_output().unwrap().status;
    assert!(status.success(), "{status:?}");
    assert!(pids.iter().all(|&p| !running(p)), "still running after rtick's exit: {pids:?}");
    assert!(!dir.exists(), "{} is removed", dir.display());
    assert_eq!(json(&cwd.path().join("o.json"))["load"]["command"]["cgroup"], dir.display().to_string());

    // SIGKILL: the sleep outlives rtick, in the cgroup the next run names.
    let child = start(&["measure", "-D", "120s", "-q", "--load-cmd", "sleep 79"], cwd.path());
    let pid = child.id();
    let (dir, pids) = cgroup_with_sleep(pid);
    kill(child);
    let out = clocks(cwd.path(), &[]);
    let warning = format!("warning: {} was left by an rtick that no longer runs (pid {pid})", dir.display());
    let line = out.lines().find(|l| l.starts_with(&warning)).unwrap_or_else(|| panic!("not named:\n{out}"));
    assert!(line.contains("(sleep)") && line.contains("`rtick cleanup` ends it"), "{line}");
    ok(&rtick_in(cwd.path(), &["cleanup"]));
    let gone = || pids.iter().all(|&p| !running(p)).then_some(());
    wait_for("the sleep to die after rtick cleanup", gone);
    assert!(!dir.exists(), "{} is removed", dir.display());
}

#[test]
fn cleanup_refuses_bad_input_in_one_line_and_touches_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    // A dead rtick's temporary file: a run of cleanup would remove it.
    let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    let dead = (1..1000).map(|k| max - k).find(|p| !Path::new(&format!("/proc/{p}")).exists()).unwrap();
    let stray = cwd.path().join(format!(".r.json.{dead}.aaaaaa.rtick-tmp"));
    std::fs::write(&stray, "x").unwrap();
    let file = cwd.path().join("r.json");
    std::fs::write(&file, "x").unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["cleanup", "/nonexistent-rtick-dir"], "/nonexistent-rtick-dir is not a directory"),
        (&["cleanup", "r.json"], "r.json is not a directory"),
        (&["cleanup", "--frobnicate"], "--frobnicate"),
    ];
    for (args, says) in cases {
        let o = rtick_in(cwd.path(), args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says) && stdout(&o).is_empty(), "{args:?}: {err}");
    }
    // A refused command removes nothing.
    assert!(stray.exists() && file.exists());
}

/// Not root: no cgroup v2 hierarchy is writable, so the command runs in its
/// process group only, and rtick says so; it still ends with rtick.
#[test]
fn without_a_writable_cgroup_hierarchy_the_load_cmd_falls_back_and_says_so() {
    if !ready() {
        return;
    }
    if !is_root() {
        skip("needs root to run rtick as another user", false);
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_rtick")])
        .args(["measure", "-D", "1s", "-q", "--load-cmd", "sleep 79.25"])
        .current_dir(cwd.path())
        .output()
        .expect("setpriv runs");
    ok(&o);
    let out = stdout(&o);
    let said = "warning: --load-cmd runs in a process group only, not a cgroup of its own";
    assert!(out.lines().any(|l| l.starts_with(said) && l.contains("SIGKILL")), "{out}");
    assert!(out.contains("ended by SIGTERM"), "{out}");
    let left = Command::new("pgrep").args(["-f", "^sleep 79.25$"]).output().unwrap();
    assert!(stdout(&left).trim().is_empty(), "the command outlived rtick: {}", stdout(&left));
}

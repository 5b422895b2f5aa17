//! CFS bandwidth throttling of the measured thread's own cgroup: a
//! SCHED_OTHER thread in a cgroup made for the test, whose CPU quota a busy
//! loop beside it uses up — `measure --explain`'s, `monitor --explain`'s, or
//! a program's that `rtick attach` follows — has CFS throttling in that
//! cgroup named as the cause of its spikes, and (measure, attach) the
//! cgroup's `cpu.stat` counts over the run. The cgroup is removed on every
//! path (its tasks killed first). Root, tracefs and CFS bandwidth control
//! needed; under CI a skip is a failure.

mod common;
use common::cgroup::ChildCgroup;
use common::*;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

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

/// `program ARGS…` in `cg` beside a busy loop started there that uses up
/// the quota (exit 77: the shell could not move into it).
fn beside_a_busy_loop(cg: &ChildCgroup, program: &Path, args: &[&str]) -> Command {
    cg.shell("(while :; do :; done) </dev/null >/dev/null 2>&1 & exec \"$0\" \"$@\"", program, args)
}

/// This test's rtick.
fn rtick_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_rtick"))
}

/// Root (to make a cgroup) and tracefs: a skip otherwise.
fn ready() -> bool {
    if !is_root() {
        skip("needs root to make a cgroup", false);
        return false;
    }
    common::tracee::ready()
}

/// Whether the program run [`beside_a_busy_loop`] moved into `cg` (its
/// shell exits 77 when it cannot: a skip).
fn moved_in(o: &std::process::Output, cg: &ChildCgroup) -> bool {
    if o.status.code() == Some(77) {
        skip(&format!("cannot move a process into {}: {}", cg.dir.display(), stderr(o)), false);
        return false;
    }
    true
}

/// The cause summary's entry for CFS throttling in `cg` (JSON `causes`),
/// of kind `cfs_throttled`, and the text's summary under `heading` naming it.
fn cfs_cause<'a>(causes: &'a [serde_json::Value], cg: &ChildCgroup, out: &str, heading: &str) -> &'a serde_json::Value {
    let key = format!("CFS throttled in {}", cg.path);
    let c = causes.iter().find(|c| c["cause"] == key.as_str()).unwrap_or_else(|| panic!("{key} in {causes:?}"));
    assert_eq!(c["kind"], "cfs_throttled");
    let summary = out.find(heading).expect("the cause summary");
    assert!(out[summary..].contains(&key), "{out}");
    c
}

#[test]
fn a_thread_in_a_cgroup_out_of_quota_is_cfs_throttled() {
    if !ready() {
        return;
    }
    let Some(cg) = quota_cgroup() else { return };
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let cpu = rtick::info::allowed_cpus().unwrap().last().unwrap().to_string();
    // The shell moves itself into the cgroup, starts a busy loop there that
    // uses up the quota, and becomes rtick.
    let args = ["measure", "-m", "clock_nanosleep", "-i", "1ms", "-l", "300", "--policy", "other", "-a", &cpu];
    let o =
        beside_a_busy_loop(&cg, rtick_bin(), &args).args(["-q", "--explain", "--json", path_str(&j)]).output().unwrap();
    if !moved_in(&o, &cg) {
        return;
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
    let c = cfs_cause(e["causes"].as_array().unwrap(), &cg, &out, "causes of the spikes above");
    let spikes = e["results"][0]["spikes"].as_array().unwrap();
    let named = spikes
        .iter()
        .filter(|s| s["cgroup"] == cg.path.as_str() && s["line"].as_str().unwrap().contains("CFS throttling in"));
    assert_eq!(named.count() as u64, c["count"].as_u64().unwrap(), "{e}");
}

/// `rtick attach` (itself outside the cgroup) to a SCHED_OTHER periodic
/// program in the quota cgroup beside a busy loop: the program's late
/// waits name CFS throttling in that cgroup, the cause summary (text and
/// JSON) counts them as the lines do, and the cgroup's counts and the note
/// with its quota and fix are given as measure gives them.
#[test]
fn attach_names_the_throttling_of_the_followed_threads_cgroup() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::tracee::periodic(dir.path(), "rtick-quota") else { return };
    let Some(cg) = quota_cgroup() else { return };
    let out_file = dir.path().join("waits.txt");
    let mut prog =
        beside_a_busy_loop(&cg, &exe, &[path_str(&out_file), "20000", "1000", "other", "abs"]).spawn().unwrap();
    // In the cgroup and waiting (its first wait is due 300 ms after its start).
    std::thread::sleep(Duration::from_millis(400));
    assert!(prog.try_wait().unwrap().is_none(), "the program runs (or could not move into {})", cg.dir.display());
    let j = dir.path().join("a.json");
    let pid = prog.id().to_string();
    let a = common::tracee::spawn("attach", &[&pid, "-D", "3", "--explain-top", "10", "--json", path_str(&j)]);
    let o = common::tracee::finish(a);
    let _ = prog.kill();
    let _ = prog.wait();
    ok(&o);
    let out = stdout(&o);
    let run = json(&j);
    let cfs = &run["cfs"][0];
    assert_eq!(cfs["cgroup"].as_str(), Some(cg.path.as_str()), "{run}");
    assert!(cfs["nr_throttled"].as_u64().unwrap() > 0, "{cfs}");
    let note = format!("note: CFS bandwidth: cgroup {} has a CPU quota of 10.00 ms every 100.00 ms", cg.path);
    assert!(out.contains(&note) && out.contains("raise or remove the quota"), "{out}");
    let causes = run["causes"].as_array().unwrap_or_else(|| panic!("causes: {run}"));
    let c = cfs_cause(causes, &cg, &out, "causes of the waits above");
    let spikes = run["threads"][0]["spikes"].as_array().unwrap();
    let named: Vec<_> = spikes.iter().filter(|s| s["cause_kind"] == "cfs_throttled").collect();
    for s in &named {
        assert_eq!(s["cgroup"].as_str(), Some(cg.path.as_str()), "{s}");
        assert!(s["line"].as_str().unwrap().contains(&format!("CFS throttling in {}", cg.path)), "{s}");
    }
    assert!(!named.is_empty() && named.len() as u64 == c["count"].as_u64().unwrap(), "{causes:?} {spikes:?}");
}

/// `rtick monitor --explain` measuring in the quota cgroup beside a busy
/// loop: /spikes explains spikes by CFS throttling in that cgroup, and
/// /metrics counts them with cause="cfs_throttled".
#[test]
fn monitor_names_the_throttling_of_its_cgroup() {
    use common::prometheus::{free_port, get};
    if !ready() {
        return;
    }
    let Some(cg) = quota_cgroup() else { return };
    let cpu = rtick::info::allowed_cpus().unwrap().last().unwrap().to_string();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    // SCHED_OTHER whatever the host allows (CFS throttles only that).
    let args = [
        "monitor",
        "--listen",
        &listen,
        "-a",
        &cpu,
        "-i",
        "1ms",
        "--policy",
        "other",
        "--spike",
        "5000",
        "--explain",
        "-q",
    ];
    let mut m = beside_a_busy_loop(&cg, rtick_bin(), &args)
        .args(["-D", "60"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = |p: &str| format!("http://{listen}{p}");
    // Up (slowly: it shares 10 % of a CPU with the busy loop), then a few
    // throttled periods measured.
    let started = std::time::Instant::now();
    while get(&url("/metrics")).is_err() {
        assert!(m.try_wait().unwrap().is_none(), "the monitor exited");
        assert!(started.elapsed() < Duration::from_secs(30), "the monitor did not answer in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let key = format!("CFS throttling in {}", cg.path);
    let (mut spikes, mut metrics) = (String::new(), String::new());
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(500));
        (spikes, metrics) = (get(&url("/spikes")).unwrap().1, get(&url("/metrics")).unwrap().1);
        if spikes.contains(&key) && metrics.contains("cause=\"cfs_throttled\"") {
            break;
        }
    }
    // SIGTERM: its trace instance removed before the cgroup's tasks are killed.
    let pid = rustix::process::Pid::from_raw(m.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert!(m.wait().unwrap().success());
    let v: serde_json::Value = serde_json::from_str(&spikes).unwrap();
    let list = v["spikes"].as_array().unwrap();
    let named: Vec<_> =
        list.iter().filter(|s| s["explain"]["line"].as_str().is_some_and(|l| l.contains(&key))).collect();
    assert!(!named.is_empty(), "a spike explained by {key}: {spikes}");
    for s in &named {
        assert_eq!(s["explain"]["cgroup"].as_str(), Some(cg.path.as_str()), "{s}");
    }
    let counted =
        metrics.lines().filter(|l| l.starts_with("rtick_spikes_total{") && l.contains("cause=\"cfs_throttled\""));
    assert!(counted.count() > 0, "{metrics}");
}

/// `rtick noise`'s SCHED_OTHER spinner in the quota cgroup beside a busy
/// loop: the stretches it waited, runnable, for the cgroup's next period
/// are CFS throttling in that cgroup, not the idle task's or the loop's
/// noise. On CPU 0, whose switches out of the idle task this VM's kernel
/// records (on the others they are inferred: ktrace::IdleWatch).
#[test]
fn noise_names_the_cfs_throttling_of_its_spinner_s_cgroup() {
    if !ready() {
        return;
    }
    let Some(cg) = quota_cgroup() else { return };
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("n.json");
    let o = beside_a_busy_loop(&cg, rtick_bin(), &["noise", "-a", "0", "-D", "2", "-q", "--json", path_str(&j)])
        .output()
        .unwrap();
    if !moved_in(&o, &cg) {
        return;
    }
    ok(&o);
    let run = json(&j);
    let sources = run["cpus"][0]["sources"].as_array().expect("sources");
    let name = format!("CFS throttling in {}", cg.path);
    let cfs = sources.iter().find(|s| s["kind"] == "cfs_throttling").unwrap_or_else(|| panic!("{name}: {sources:#?}"));
    assert_eq!(cfs["name"].as_str(), Some(name.as_str()), "{cfs}");
    // 10 ms of CPU a 100 ms period, shared with the loop: most of 2 s.
    let total = cfs["total_ns"].as_i64().unwrap();
    assert!(total >= 500_000_000, "{total} ns of CFS throttling in 2 s: {sources:#?}");
    assert!(stdout(&o).contains(&name), "{}", stdout(&o));
}

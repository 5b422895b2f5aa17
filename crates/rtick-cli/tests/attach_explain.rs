//! `rtick attach` on real programs, as it reads its trace while they run:
//! its memory stays flat through a long run of a 10 kHz loop, and a
//! SCHED_FIFO thread that preempts the attached loop at known times is
//! named as the cause of its worst wake-ups. Root, tracefs, a C compiler
//! and python3 needed; under CI a skip is a failure.

mod common;
use common::cgroup::ChildCgroup;
use common::tracee::{compile, finish, periodic, ready, spawn, wait_for_instance};
use common::*;
use rtick::cgroup::task_path;

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The CPU the explained spikes' test pins its programs to: the last one
/// (rtick then reads its trace on the others). The memory test's 10 kHz
/// loop runs on the first: its trace, on a CPU the other does not trace,
/// does not crowd the other's.
fn test_cpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) - 1
}

/// The loop pinned to `cpu`: `cycles` of `period_us`, SCHED_FIFO 50.
fn start_loop(cpu: usize, exe: &Path, out: &Path, cycles: u32, period_us: u32) -> Child {
    let (cycles, period) = (cycles.to_string(), period_us.to_string());
    let args = ["-c", &cpu.to_string(), path_str(exe), path_str(out), &cycles, &period, "fifo"];
    Command::new("taskset").args(args).spawn().expect("taskset starts the loop")
}

fn attach(args: &[&str]) -> Child {
    spawn("attach", args)
}

/// Held by the tests that run a SCHED_FIFO 80 busy thread on
/// [`test_cpu`]: one's bursts would be the other's culprits.
static BURSTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Resident memory of `pid`, KiB (`None` once it has exited).
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()
}

/// rtick's RSS (KiB) every 200 ms, seconds from now, while process `pid`
/// runs (a minute at most).
fn rss_while_running(pid: u32) -> Vec<(f64, u64)> {
    let started = Instant::now();
    let mut rss = Vec::new();
    while let Some(kib) = rss_kib(pid).filter(|_| started.elapsed() < Duration::from_secs(60)) {
        rss.push((started.elapsed().as_secs_f64(), kib));
        std::thread::sleep(Duration::from_millis(200));
    }
    rss
}

/// The largest RSS sampled in `late` is at most 6 MiB above the largest in
/// `early` (`what`: the run's figures, for the message).
fn assert_flat(rss: &[(f64, u64)], early: std::ops::Range<f64>, late: std::ops::Range<f64>, what: &str) {
    let most = |r: &std::ops::Range<f64>| rss.iter().filter(|(t, _)| r.contains(t)).map(|&(_, k)| k).max().unwrap();
    let (e, l) = (most(&early), most(&late));
    eprintln!("rtick's RSS: {e} KiB at {early:?} s, {l} KiB at {late:?} s; {what}; {rss:?}");
    assert!(l <= e + 6 * 1024, "RSS grew by {} KiB from {early:?} to {late:?} s: {rss:?}", l.saturating_sub(e));
}

/// A 10 kHz loop attached for 9 s: each wake-up brings about ten events,
/// 100 000 a second. rtick kept every one until the run ended (80 bytes
/// each: 8 MB a second); it reads them as they come and keeps a window
/// bounded in time and count, so its memory stops growing once the window
/// is full (2 s), JSON file and all.
#[test]
fn memory_stays_flat_through_a_long_run_of_a_10_khz_loop() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = periodic(dir.path(), "rtick-fast") else { return };
    let mut prog = start_loop(0, &exe, &dir.path().join("fast.txt"), 130_000, 100);
    std::thread::sleep(Duration::from_millis(400));
    let j = dir.path().join("fast.json");
    let a = attach(&[&prog.id().to_string(), "-D", "9", "-q", "--json", path_str(&j), "--fail-if", "max>1h"]);
    let rss = rss_while_running(a.id());
    let o = finish(a);
    ok(&o);
    let _ = prog.kill();
    let _ = prog.wait();
    let run = json(&j);
    assert_eq!(run["gates"]["passed"], true, "no wait was an hour late");
    assert!(stdout(&o).contains("PASS no result row (1) meets a --fail-if condition (max>1h)"), "{}", stdout(&o));
    let waits = run["threads"][0]["timed_waits"].as_u64().unwrap();
    // A busy trace (this VM may be loaded: the loop does not always keep 10 kHz).
    assert!(waits >= 20_000, "a 10 kHz loop: {waits} timed waits in 9 s");
    assert_flat(&rss, 3.0..4.5, 7.5..9.0, &format!("{waits} waits"));
}

/// A program whose threads come and go, thousands a second, attached for
/// 8 s: each exited thread is let go once its events are read, its figures
/// pooled into one "exited threads" row, so rtick's memory and its rows
/// stay bounded by the threads alive at once (8 and the main one), not
/// by every thread that ever lived.
#[test]
fn threads_that_come_and_go_keep_memory_and_rows_bounded() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path(), "churn", "rtick-churn") else { return };
    let mut prog = Command::new("taskset").arg("-c").arg("0").arg(&exe).spawn().expect("taskset starts churn");
    std::thread::sleep(Duration::from_millis(300));
    let j = dir.path().join("churn.json");
    let a = attach(&[&prog.id().to_string(), "-D", "8", "-q", "--json", path_str(&j)]);
    let rss = rss_while_running(a.id());
    let o = finish(a);
    let _ = prog.kill();
    let _ = prog.wait();
    ok(&o);
    let run = json(&j);
    let rows = run["threads"].as_array().unwrap();
    let names: Vec<String> = rows.iter().map(|t| format!("{} {}", t["tid"], t["comm"])).collect();
    // The main thread, the up to 8 alive at the end, the exited threads' row.
    assert!(rows.len() <= 10, "{} thread rows: {names:?}", rows.len());
    let exited = rows.iter().find(|t| t["tid"] == 0).unwrap_or_else(|| panic!("an exited threads' row: {names:?}"));
    let comm = exited["comm"].as_str().unwrap();
    assert!(comm.ends_with("exited threads"), "{comm}");
    let count: u64 = comm.split(' ').next().unwrap().parse().unwrap();
    assert!(count >= 50, "{comm}: thousands a second, even on a loaded VM");
    assert!(exited["timed_waits"].as_u64().unwrap() > 0, "{exited}");
    assert_flat(&rss, 3.0..4.5, 6.5..8.0, comm);
}

/// A loop pinned to CPU 0, moved by sched_setaffinity onto every CPU as
/// rtick traces CPU 0: the run notes the CPUs it does not trace.
#[test]
fn a_thread_moved_onto_an_untraced_cpu_is_noted() {
    if !ready() {
        return;
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(n >= 2, "this test needs two CPUs");
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = periodic(dir.path(), "rtick-moved") else { return };
    let mut prog = start_loop(0, &exe, &dir.path().join("moved.txt"), 20_000, 1000);
    std::thread::sleep(Duration::from_millis(300));
    let j = dir.path().join("moved.json");
    let a = attach(&[&prog.id().to_string(), "-D", "4", "-q", "--json", path_str(&j)]);
    wait_for_instance(&a);
    std::thread::sleep(Duration::from_millis(500));
    let all = format!("0-{}", n - 1);
    let moved = Command::new("taskset").args(["-apc", &all, &prog.id().to_string()]).output().unwrap();
    assert!(moved.status.success(), "{moved:?}");
    let o = finish(a);
    let _ = prog.kill();
    let _ = prog.wait();
    ok(&o);
    let run = json(&j);
    assert_eq!(run["cpus"], serde_json::json!([0]), "{}", run["cpus"]);
    let notes: Vec<&str> = run["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let untraced = if n == 2 { "CPU 1,".to_string() } else { format!("CPU 1-{},", n - 1) };
    assert!(notes.iter().any(|n| n.contains(&untraced) && n.contains("which rtick does not trace")), "{notes:?}");
}

/// The real python3 (not a shim that would run at SCHED_FIFO 80 first), or
/// `None` (skipped) without one.
fn python() -> Option<String> {
    let out = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8(o.stdout).unwrap().trim().to_string()),
        _ => {
            skip("no python3: scripts/setup installs it", false);
            None
        }
    }
}

/// Started once rtick's trace instance exists: pins itself to CPU `cpu`,
/// takes SCHED_FIFO 80, then from 1 s on (rtick traces by then) runs busy
/// for 3 ms every 350 ms, four times.
const HOG: &str = "import os, sys, time\n\
os.sched_setaffinity(0, {int(sys.argv[1])})\n\
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(80))\n\
time.sleep(1.0)\n\
for _ in range(4):\n    t = time.monotonic()\n    while time.monotonic() - t < 0.003: pass\n    time.sleep(0.35)\n";

/// The C loop at SCHED_FIFO 50, pinned to a CPU at 1 kHz, and a SCHED_FIFO
/// 80 thread pinned to the same CPU, busy for 3 ms four times: each burst
/// holds the woken loop off the CPU, and the explained worst waits name
/// the burst's thread (its pid, its kernel priority 19, its cgroup: one of
/// the test's own) as preempting it; the summary of their causes counts
/// them as the lines do.
#[test]
fn a_higher_priority_thread_busy_at_known_times_is_named_as_the_spikes_cause() {
    let _one = BURSTS.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = periodic(dir.path(), "rtick-victim") else { return };
    let Some(py) = python() else { return };
    let mut prog = start_loop(test_cpu(), &exe, &dir.path().join("victim.txt"), 6000, 1000);
    std::thread::sleep(Duration::from_millis(100));
    let (j, csv) = (dir.path().join("victim.json"), dir.path().join("victim.csv"));
    let png = dir.path().join("victim.png");
    let args = [
        "-D",
        "3.5",
        "--explain-top",
        "10",
        "--json",
        path_str(&j),
        "--trace",
        path_str(&csv),
        "--fail-if",
        "max>1ms",
        "--plot",
        path_str(&png),
    ];
    let a = attach(&[&[prog.id().to_string().as_str()][..], &args].concat());
    // The bursts come while rtick traces, however long it took to start.
    wait_for_instance(&a);
    let cgroup = ChildCgroup::for_culprits("rtick-test-hog");
    let hog_args = ["-c", HOG, &test_cpu().to_string()];
    let mut hog = match &cgroup {
        Some(cg) => cg.command(Path::new(&py), &hog_args).spawn(),
        None => Command::new(&py).args(hog_args).spawn(),
    }
    .expect("python3 starts");
    // Without a v1 cpu hierarchy, the cgroup it was born in.
    let in_cgroup = match &cgroup {
        Some(cg) => Some(cg.path.clone()),
        None => std::fs::read_to_string(format!("/proc/{}/cgroup", hog.id())).ok().and_then(|t| task_path(&t)),
    };
    let o = finish(a);
    assert!(hog.wait().unwrap().success(), "the busy thread ran");
    let _ = prog.kill();
    let _ = prog.wait();
    // Its spikes of ms fail --fail-if max>1ms: exit 3, the thread named, the outputs written.
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let run = json(&j);
    let tid = run["threads"][0]["tid"].as_i64().unwrap();
    assert!(stdout(&o).contains(&format!("FAIL max of rtick-victim T{tid}: ")), "{}", stdout(&o));
    assert_eq!(run["gates"]["passed"], false);
    let spikes = run["threads"][0]["spikes"].as_array().unwrap();
    let pid = hog.id() as i64;
    let named: Vec<&serde_json::Value> = spikes
        .iter()
        .filter(|s| s["cause_kind"] == "preempted" && s["culprit"]["kind"] == "task" && s["culprit"]["pid"] == pid)
        .collect();
    let lines: Vec<&str> = spikes.iter().map(|s| s["line"].as_str().unwrap()).collect();
    for s in &named {
        assert_eq!(s["culprit"]["prio"], 19, "SCHED_FIFO 80 is the kernel's priority 19: {s}");
        // Woken, then held off the CPU (or, woken just before a burst,
        // preempted on its way back to user space).
        let phase = s["largest_phase"].as_str().unwrap();
        assert!(phase == "scheduling" || phase == "return_to_user", "{s}");
        let phases: i64 = s["phases_ns"].as_array().unwrap().iter().map(|p| p.as_i64().unwrap()).sum();
        let taken = s["slack_taken_ns"].as_i64().unwrap();
        assert_eq!(taken + phases, s["lateness_ns"].as_i64().unwrap(), "slack taken + phases = lateness: {s}");
        assert!(s["lateness_ns"].as_i64().unwrap() >= 1_000_000, "a burst of 3 ms makes it late by ms: {s}");
        let line = s["line"].as_str().unwrap();
        assert!(line.contains("preempted by ") && line.contains(&format!(":{pid} (prio 19)")), "{line}");
        assert_eq!(s["cgroup"].as_str(), in_cgroup.as_deref(), "{s}");
        if let Some(path) = &in_cgroup {
            assert!(line.contains(&format!(":{pid} (prio 19) in {path}")), "{line}");
        }
        // The stack where it was due, taken from the first late wait on
        // (none from this VM's kernel when its agent's thread held the CPU).
        let stack = s["stack"].as_array().is_some_and(|f| !f.is_empty());
        let missing = s["stack_missing"].as_str().is_some_and(|m| m.starts_with("not taken"));
        assert!(stack || missing || due_where_no_stack_is_taken(s), "{s}");
    }
    // Each burst once: a catch-up wait after it is not explained again.
    let mut at: Vec<i64> = named.iter().map(|s| s["requested_ns"].as_i64().unwrap()).collect();
    at.sort_unstable();
    let bursts = 1 + at.windows(2).filter(|w| w[1] - w[0] > 200_000_000).count();
    assert!(
        named.len() >= 3 && bursts >= 3,
        "{} spikes name the busy thread, in {bursts} bursts: {lines:#?}",
        named.len()
    );
    // Set by the second burst at the latest (the first is a new worst, or
    // the list was still filling) and kept (a burst every 350 ms): the
    // bursts from the third on have their stack taken.
    let later: Vec<_> = named.iter().filter(|s| s["requested_ns"].as_i64().unwrap() > at[0] + 500_000_000).collect();
    assert!(later.iter().all(|s| s.get("stack_missing").is_none()), "{later:#?}");
    assert!(later.iter().any(|s| s["stack"].as_array().is_some_and(|f| !f.is_empty())), "{later:#?}");
    assert!(run["stacks_armed_ns"].as_i64().unwrap() > 0, "{run}");
    check_causes(&run, spikes, &stdout(&o), &named);
    let out = stdout(&o);
    assert!(
        out.contains("worst timed waits explained:")
            || out.contains("worst timed wait explained:") && out.contains(&format!(":{pid} (prio 19)")),
        "{out}"
    );
    check_trace(&csv, &run);
    let picture = std::fs::read(&png).expect("the --plot file, written though --fail-if failed");
    assert!(picture.starts_with(b"\x89PNG") && picture.len() > 10_000, "{} bytes", picture.len());
    // The catch-ups after a burst asked for deadlines already past: their
    // overruns are the burst's, named through the late wait before them.
    let cycle = &run["threads"][0]["cycle"];
    let overruns = cycle["worst_overruns"].as_array().unwrap();
    let by_hog = |o: &&serde_json::Value| o["cause_kind"] == "late_wake" && o["culprit"]["pid"] == pid;
    assert!(overruns.iter().any(|o| by_hog(&o)), "{cycle}");
    // One a stall: a burst's later catch-ups (a period apart) are only counted.
    let mut at: Vec<i64> = overruns.iter().map(|o| o["requested_ns"].as_i64().unwrap()).collect();
    at.sort_unstable();
    assert!(at.windows(2).all(|w| w[1] - w[0] > 1_500_000), "{cycle}");
    assert!(out.contains("overran by ") && out.contains("the wait before was late: "), "{out}");
}

/// The summary of the explained waits' causes, in the JSON and after the
/// lines: as many as the lines, the busy thread's as many as name it.
fn check_causes(run: &serde_json::Value, spikes: &[serde_json::Value], out: &str, named: &[&serde_json::Value]) {
    let causes = run["causes"].as_array().unwrap_or_else(|| panic!("causes: {run}"));
    let count = |c: &serde_json::Value| c["count"].as_u64().unwrap();
    let explained = spikes.iter().filter(|s| s["cause"].is_string()).count() as u64;
    assert_eq!(causes.iter().map(count).sum::<u64>(), explained, "{causes:?}");
    let (comm, pid) = (named[0]["culprit"]["name"].as_str().unwrap(), named[0]["culprit"]["pid"].as_i64().unwrap());
    // Its cgroup (one made for the test) after it, as after its lines' name.
    let key = match named[0]["cgroup"].as_str() {
        Some(cg) => format!("preempted by {comm}:{pid} in {cg}"),
        None => format!("preempted by {comm}:{pid}"),
    };
    let hog = causes.iter().find(|c| c["cause"] == key);
    let hog = hog.unwrap_or_else(|| panic!("the busy thread's cause: {causes:?}"));
    assert_eq!((count(hog), hog["kind"].as_str()), (named.len() as u64, Some("preempted")), "{hog}");
    let summary = out.split("causes of the waits above (waits, total, worst latency, µs):\n").nth(1);
    let summary = summary.unwrap_or_else(|| panic!("no summary: {out}"));
    let rows: Vec<&str> = summary.lines().take_while(|l| l.starts_with("  ")).collect();
    assert_eq!(rows.len(), causes.len(), "{summary}");
    let row = rows.iter().find(|r| r.ends_with(&format!("  {key}"))).expect("its row");
    assert_eq!(row.split_whitespace().next(), Some(named.len().to_string().as_str()), "{row}");
}

/// The --trace file: a row per timed wait the JSON file counts, in the
/// order they ended, each with phases that add up to its lateness; its
/// worst waits among them.
fn check_trace(csv: &Path, run: &serde_json::Value) {
    let text = std::fs::read_to_string(csv).expect("the --trace file");
    let mut lines = text.lines();
    let header = "tid,kind,requested_ns,exit_ns,lateness_ns,slack_ns,slack_taken_ns,irq_delay_ns,wakeup_path_ns,scheduling_ns,return_to_user_ns,woken_ns,waker,armed_ns,blocked_ns,overrun_ns";
    assert_eq!(lines.next(), Some(header));
    let timed: Vec<Vec<i64>> = lines
        .map(|l| l.split(',').collect::<Vec<&str>>())
        .filter(|f| f[1] == "timed")
        .map(|f| f[..11].iter().filter(|v| **v != "timed").map(|v| v.parse().unwrap()).collect())
        .collect();
    let thread = &run["threads"][0];
    assert_eq!(timed.len() as u64, thread["timed_waits"].as_u64().unwrap(), "a row per timed wait");
    assert!(thread.get("wake_ups").is_none(), "the JSON file holds no row per wait");
    let tid = thread["tid"].as_i64().unwrap();
    for r in &timed {
        // tid, requested, exit, lateness, slack, slack taken, the four phases.
        assert_eq!((r[0], r[2] - r[1]), (tid, r[3]), "lateness = exit − requested: {r:?}");
        assert_eq!(r[5..10].iter().sum::<i64>(), r[3], "slack taken and the phases add up: {r:?}");
    }
    assert!(timed.windows(2).all(|w| w[0][2] <= w[1][2]), "in the order they ended");
    for s in thread["spikes"].as_array().unwrap() {
        let (at, late) = (s["requested_ns"].as_i64().unwrap(), s["lateness_ns"].as_i64().unwrap());
        assert!(timed.iter().any(|r| (r[1], r[3]) == (at, late)), "a worst wait is a row: {s}");
    }
}

/// A bad --explain-top, --fail-if or --trace is a usage error: one line,
/// exit 2, nothing traced or written.
#[test]
fn a_bad_explain_top_fail_if_or_trace_is_one_line_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    for n in ["-1", "five", ""] {
        let o = rtick(&["attach", "1", "--explain-top", n, "--json", path_str(&j)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--explain-top {n:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "--explain-top {n:?}: {err}");
        assert!(err.contains("--explain-top"), "--explain-top {n:?}: {err}");
        assert!(!j.exists(), "--explain-top {n:?} wrote its file");
    }
    let o = rtick(&["attach", "1", "--fail-if", "p99>>5us", "--json", path_str(&j)]);
    let err = stderr(&o);
    assert_eq!((o.status.code(), err.trim().lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("--fail-if") && err.contains("'p99>>5us'"), "{err}");
    assert!(!j.exists(), "a bad --fail-if wrote its file");
    // A --plot that is no picture, or cannot be written: named, nothing written.
    for (plot, want) in [("p.txt", "must end in .png or .svg"), ("/nonexistent/p.png", "--plot: cannot create")] {
        let p = if plot.starts_with('/') { plot.into() } else { dir.path().join(plot) };
        let o = rtick(&["attach", "1", "--plot", path_str(&p), "--json", path_str(&j)]);
        let err = stderr(&o);
        assert_eq!((o.status.code(), err.trim().lines().count()), (Some(2), 1), "{err}");
        assert!(err.contains("--plot") && err.contains(want), "{err}");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "--plot {plot}: no file");
    }
    // An unwritable --trace: named, before anything is traced, and the JSON file not begun.
    let o = rtick(&["attach", "1", "--trace", "/nonexistent/t.csv", "--json", path_str(&j)]);
    let err = stderr(&o);
    assert_eq!((o.status.code(), err.trim().lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("--trace: cannot create /nonexistent/t.csv"), "{err}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "no file, not even a temporary one");
}

/// The JSON file says what the text says: a thread still in its timed wait
/// when tracing stopped, and the kernel function it was blocked in; the
/// notes (none here) and where rtick read the trace.
#[test]
fn the_json_file_names_a_wait_in_progress_and_where_it_is_blocked() {
    if !ready() {
        return;
    }
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let prog = "import time\nfor _ in range(30): time.sleep(0.05)\ntime.sleep(100)\n";
    let mut target = Command::new(&py).args(["-c", prog]).spawn().expect("python3 starts");
    let j = dir.path().join("w.json");
    let o = finish(attach(&[&target.id().to_string(), "-D", "3", "-q", "--json", path_str(&j)]));
    let _ = target.kill();
    let _ = target.wait();
    ok(&o);
    let run = json(&j);
    let t = &run["threads"][0];
    assert!(t["timed_waits"].as_u64().unwrap() >= 5, "its short sleeps: {t}");
    assert_eq!(t["in_progress"], true, "the long sleep began while traced: {t}");
    assert_eq!(t["blocked_in"], "hrtimer_nanosleep", "{t}");
    assert_eq!(run["notes"], serde_json::json!([]));
    assert!(run["reader_cpus"].is_array() || run["reader_cpus"].is_null(), "{run}");
}

/// Whether a thread of pid 1 (this VM's agent), or the idle task of this
/// non-boot CPU, held the CPU when the wait `s` was due (its IRQ delay's
/// first culprit, `comm:tid (prio P)` or `idle`: a burst that began in the
/// same timer interrupt): the kernel takes no stack in an interrupt on
/// those (ktrace/stack.rs).
fn due_where_no_stack_is_taken(s: &serde_json::Value) -> bool {
    let culprit = s["culprits"][0][0][0].as_str().unwrap_or_default();
    if culprit == "idle" {
        return true;
    }
    let tid = culprit.rsplit(':').next().and_then(|t| t.split(' ').next()).and_then(|t| t.parse::<i32>().ok());
    let status = tid.and_then(|t| std::fs::read_to_string(format!("/proc/{t}/status")).ok()).unwrap_or_default();
    status.lines().any(|l| l == "Tgid:\t1")
}

/// A 1 kHz SCHED_FIFO 50 loop computing 600 µs of CPU time each cycle
/// (tests/c/overrun.c), pinned beside a SCHED_FIFO 80 thread busy 3 ms
/// every 100.3 ms (tests/c/busy.c: each burst 0.3 ms later in the loop's
/// cycle than the one before, so most come while it computes): such a
/// burst stretches that cycle's compute phase to 3.6 ms, an overrun its
/// own work did not cause. Its cause is the preemption: ran about 600 µs
/// (of a 1 ms interval), preempted about 3 ms by the busy thread, named.
/// Such overruns (by ~2.6 ms: the periodic timerfd read after three
/// expiries) are the largest (a burst that comes while the loop sleeps
/// makes a late wake, and the timer's next expiry is the next one to come,
/// overrun by the 0.6 ms of work at most), so the five kept are of them.
#[test]
fn an_overrun_whose_compute_phase_was_preempted_names_the_preemptor() {
    let _one = BURSTS.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(victim) = compile(dir.path(), "overrun", "rtick-computes") else { return };
    let Some(busy) = compile(dir.path(), "busy", "rtick-burst") else { return };
    let cpu = test_cpu().to_string();
    let mut prog = Command::new("taskset").args(["-c", &cpu, path_str(&victim), "3000", "1", "600"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let j = dir.path().join("o.json");
    let a = attach(&[&prog.id().to_string(), "-D", "2", "--json", path_str(&j)]);
    wait_for_instance(&a);
    let hog = Command::new(&busy).args([&cpu, "fifo", "80", "3000", "100300", "12"]).output().unwrap();
    assert!(hog.status.success(), "{}", stderr(&hog));
    let hog_tid: i64 =
        stdout(&hog).split_whitespace().next().and_then(|t| t.parse().ok()).expect("busy prints its tid");
    let o = finish(a);
    let _ = prog.kill();
    let _ = prog.wait();
    ok(&o);
    let run = json(&j);
    let cycle = &run["threads"][0]["cycle"];
    let kept = cycle["worst_overruns"].as_array().unwrap();
    let preempted: Vec<_> = kept.iter().filter(|o| o["cause_kind"] == "preempted").collect();
    assert!(preempted.len() >= 3, "{cycle:#}");
    for o in preempted {
        assert_eq!((o["culprit"]["pid"].as_i64(), o["culprit"]["prio"].as_i64()), (Some(hog_tid), Some(19)), "{o}");
        let [ran, off, blocked, waking] = serde_json::from_value::<[i64; 4]>(o["compute_split_ns"].clone()).unwrap();
        // It computes 600 µs of CPU time; "ran" is its time on the CPU by
        // the trace, which a host stall in it stretches.
        assert!((550_000..1_500_000).contains(&ran) && off >= 2_000_000 && ran < off, "{o}");
        let cause = o["cause"].as_str().unwrap();
        let held = format!("preempted {}; its CPU held by rtick-burst:{hog_tid} (prio 19)", rtick::Nanos(off));
        assert!(cause.contains(&held), "{o}");
        assert!(blocked + waking < 100_000, "{o}");
    }
    assert!(stdout(&o).contains("; its CPU held by rtick-burst:"), "{}", stdout(&o));
}

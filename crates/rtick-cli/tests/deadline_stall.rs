//! A sched-deadline thread that the kernel leaves throttled inside its
//! `sched_yield` (seen on loaded VMs: the run hung, unkillable) is released
//! by its watchdog, and `rtick measure` goes on with the other mechanisms,
//! naming the cause. The stall is made to happen with `chrt`: once the
//! measuring thread is SCHED_DEADLINE, its period becomes 4 s (the kernel's
//! longest by default), far beyond the watchdog's 1 s for the 1 ms asked.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The threads of `pid` that are SCHED_DEADLINE now (policy 6 in their `sched`).
fn deadline_threads(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter(|t| {
            let sched = std::fs::read_to_string(t.path().join("sched")).unwrap_or_default();
            sched.lines().any(|l| l.starts_with("policy") && l.split(':').nth(1).map(str::trim) == Some("6"))
        })
        .map(|t| t.file_name().to_string_lossy().into_owned())
        .collect()
}

fn chrt(args: &[&str]) -> bool {
    Command::new("chrt").args(args).status().is_ok_and(|s| s.success())
}

#[test]
fn a_stalled_sched_deadline_thread_is_released_and_the_run_goes_on() {
    if !is_root() {
        return skip("SCHED_DEADLINE needs root", false);
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let args =
        ["measure", "--compare", "-m", "sched-deadline,clock_nanosleep", "-i", "1ms", "-D", "3s", "--slice", "3s"];
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(args)
        .args(["--json", path_str(&j)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // sched-deadline's one slice comes first and lasts 3 s: its thread is found within it.
    let start = Instant::now();
    let tid = loop {
        if let Some(t) = deadline_threads(pid).pop() {
            break t;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no SCHED_DEADLINE thread in rtick");
        std::thread::sleep(Duration::from_millis(10));
    };
    // A second into the slice, with wake-ups measured: the run has data of
    // sched-deadline when the stall comes.
    std::thread::sleep(Duration::from_secs(1));
    assert!(deadline_threads(pid).contains(&tid), "thread {tid} left SCHED_DEADLINE within 1 s of a 3 s slice");
    let stalled = chrt(&["-d", "-T", "100000", "-P", "4000000000", "-D", "4000000000", "-p", "0", &tid]);
    // Whatever happens, the run ends: after 60 s its deadline threads are let go.
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let hung = child.try_wait().unwrap().is_none();
    if hung {
        for t in deadline_threads(pid) {
            chrt(&["-o", "-p", "0", &t]);
        }
        child.kill().unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(stalled, "chrt could not give the thread a 4 s period (is util-linux installed?)");
    assert!(!hung, "rtick hung with a stalled sched-deadline thread");
    ok(&o);
    let out = stdout(&o);
    // Stopped with wake-ups counted: none of its results is kept.
    let why = "sched-deadline: stopped mid-run, its results dropped (its wake-ups until then stay in the trace): \
               the kernel did not replenish the thread's runtime for ";
    assert!(out.contains(&format!("unavailable: {why}")), "{out}");
    assert!(out.contains("use another mechanism or a longer period"), "{out}");
    let j = json(&j);
    let unavailable = j["unavailable"].as_array().unwrap();
    assert_eq!(unavailable.len(), 1, "{unavailable:?}");
    assert_eq!(unavailable[0]["mechanism"], "sched-deadline");
    assert!(unavailable[0]["reason"].as_str().unwrap().starts_with(&why["sched-deadline: ".len()..]));
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "clock_nanosleep alone has results: {results:?}");
    assert_eq!(results[0]["mechanism"], "clock_nanosleep");
    assert!(results[0]["count"].as_u64().unwrap() > 0, "{:?}", results[0]);
}

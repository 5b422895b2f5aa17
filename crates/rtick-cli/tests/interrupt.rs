//! Ctrl-C and SIGTERM: the summary so far is printed, output files are
//! complete, and settings are restored.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn interrupt_with(signal: libc::c_int) {
    let dir = tempfile::tempdir().unwrap();
    let (j, t, h) = (dir.path().join("r.json"), dir.path().join("t.csv"), dir.path().join("h.txt"));
    let child = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(["measure", "-m", "clock_nanosleep,posix-timer", "-t", "2", "-D", "60", "-q"])
        .args(["--json", path_str(&j), "--trace", path_str(&t), "--histogram", path_str(&h)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let o = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "stops promptly");
    ok(&o);
    assert!(stdout(&o).contains("interrupted after"), "{}", stdout(&o));
    assert!(stdout(&o).contains("clock_nanosleep"), "summary so far printed");
    let j = json(&j);
    assert_eq!(j["interrupted"], true);
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "only the first mechanism ran, on 2 threads");
    let rows = trace(&t);
    let total: u64 = results.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert!(total > 100);
    assert_eq!(rows.len() as u64, total, "trace rows = count");
    let hist = std::fs::read_to_string(&h).unwrap();
    assert!(hist.contains("# Max Latencies:"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".rtick-tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn sigint_writes_complete_files() {
    interrupt_with(libc::SIGINT);
}

#[test]
fn sigterm_writes_complete_files() {
    interrupt_with(libc::SIGTERM);
}

#[test]
fn dma_latency_is_released_at_exit() {
    let before = rtick::rt::DmaLatency::current();
    let Some(before) = before else {
        eprintln!("SKIPPED: /dev/cpu_dma_latency is not readable here");
        return;
    };
    let o = rtick(&["measure", "-l", "50", "--dma-latency", "0", "--no-mlock", "--policy", "other", "-q"]);
    if o.status.code() == Some(1) && stderr(&o).contains("cpu_dma_latency") {
        eprintln!("SKIPPED: no permission to write /dev/cpu_dma_latency");
        return;
    }
    ok(&o);
    assert_eq!(rtick::rt::DmaLatency::current(), Some(before), "the request ends with the process");
}

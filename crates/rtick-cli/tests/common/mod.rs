//! Helpers shared by the integration tests: run the real `rtick` binary.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub mod cgroup;
pub mod gaps;
pub mod monitor;
pub mod prometheus;
pub mod stacks;
pub mod tracee;

#[path = "../../../rtick/tests/support/tracefs.rs"]
pub mod support;

#[path = "../../../rtick/tests/support/skip.rs"]
mod skip;
#[allow(unused_imports)]
pub use skip::{kernel_lacks, skip};

pub fn rtick(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtick")).args(args).output().expect("rtick runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn ok(o: &Output) {
    assert!(o.status.success(), "rtick failed ({:?}):\n{}\n{}", o.status.code(), stdout(o), stderr(o));
}

pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("json file exists")).expect("valid JSON")
}

/// A trace row: (thread, mechanism, cycle, planned, actual, latency).
pub type TraceRow = (u64, String, u64, i64, i64, i64);

/// The rows of a trace file.
pub fn trace(path: &Path) -> Vec<TraceRow> {
    trace_rows(&std::fs::read_to_string(path).expect("trace file exists"))
}

/// The rows of a trace's text, after checking its header.
pub fn trace_rows(text: &str) -> Vec<TraceRow> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("thread,mechanism,cycle,planned_ns,actual_ns,latency_ns"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 6, "{l}");
            (
                f[0].parse().unwrap(),
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
                f[5].parse().unwrap(),
            )
        })
        .collect()
}

/// Settings that run without privileges and without touching the system,
/// for tests whose subject is not the real-time setup.
pub const PLAIN: [&str; 4] = ["--policy", "other", "--no-mlock", "-q"];

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Whether this test runs with effective user id 0 (the `Uid:` line of
/// `/proc/self/status`: real, effective, saved, filesystem).
pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:")).expect("a Uid: line");
    uid.split_whitespace().nth(1) == Some("0")
}

/// Whether `pid` runs: it exists and is not a zombie (exited, not yet
/// waited for).
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with('Z')))
}

/// Starts a program the test has just copied: while another test's thread
/// forks, its child holds the copy's descriptor until it execs, and exec of
/// the copy fails with ETXTBSY meanwhile: tried again.
pub fn spawn_copied(exe: &Path, args: &[&str]) -> std::process::Child {
    for _ in 0..100 {
        match Command::new(exe).args(args).spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r.unwrap(),
        }
    }
    panic!("{} stayed busy", exe.display())
}

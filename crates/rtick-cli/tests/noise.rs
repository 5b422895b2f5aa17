//! `rtick noise` on this machine: a SCHED_FIFO thread of higher priority
//! than the spinner, busy to order on the measured CPU (tests/c/busy.c),
//! is named with the time its own schedstat says it ran; a FIFO spinner
//! under RT throttling sees its ~50 ms gaps named as throttling; Ctrl-C
//! ends a run with its summary and complete file; bad input is a one-line
//! usage error. Root, tracefs, two CPUs and a C compiler needed; under CI
//! a skip is a failure. The runs take turns: two spinners on one CPU would
//! measure each other.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[path = "../../rtick/tests/support/tracefs.rs"]
mod support;
use support::TRACEFS;

/// The measured CPU.
const CPU: &str = "1";

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn ready() -> bool {
    if rtick::info::allowed_cpus().map_or(true, |c| !c.contains(&0) || !c.contains(&1)) {
        skip("these tests measure CPU 1 with CPU 0 left for the rest: they need two CPUs", false);
        return false;
    }
    support::tracefs().map_err(|(why, kernel_lacks_it)| skip(why, kernel_lacks_it)).is_ok()
}

/// tests/c/busy.c compiled into `dir` (its name is the thread's comm).
fn busy(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/busy.c");
    let exe = dir.join("noise_busy");
    match Command::new("cc").args(["-O2", "-o"]).arg(&exe).arg(&src).status() {
        Ok(s) if s.success() => Some(exe),
        Ok(s) => panic!("cc failed on {}: {s}", src.display()),
        Err(e) => {
            skip(&format!("no C compiler (cc: {e}); scripts/setup installs gcc"), false);
            None
        }
    }
}

fn noise(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_rtick"))
        .arg("noise")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtick starts")
}

/// Waits until rtick's spinner runs (its thread is named for its CPU).
fn spinning(c: &Child) {
    let tasks = PathBuf::from(format!("/proc/{}/task", c.id()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let names = std::fs::read_dir(&tasks).into_iter().flatten().flatten();
        if names
            .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
            .any(|n| n.trim() == "rtick-noise-1")
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("rtick's spinner did not start within 30 s");
}

fn finish(c: Child) -> std::process::Output {
    let pid = c.id();
    let o = c.wait_with_output().unwrap();
    assert!(!Path::new(TRACEFS).join(format!("instances/rtick-{pid}")).exists(), "rtick's instance is removed");
    o
}

/// The sources of the one CPU of a run file.
fn sources(j: &serde_json::Value) -> Vec<serde_json::Value> {
    j["cpus"][0]["sources"].as_array().expect("sources").clone()
}

#[test]
fn a_higher_priority_thread_is_named_with_the_time_it_ran() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = busy(dir.path()).filter(|_| ready()) else { return };
    let out = dir.path().join("r.json");
    let rtick = noise(&["-a", CPU, "-p", "50", "-D", "5", "--json", path_str(&out)]);
    spinning(&rtick);
    // 2 ms of every 100 ms, 15 times, at FIFO 60: above the spinner's 50.
    let b = Command::new(&exe).args([CPU, "fifo", "60", "2000", "100000", "15"]).output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let o = finish(rtick);
    ok(&o);
    let text = String::from_utf8_lossy(&b.stdout);
    let (tid, ran) = text.trim().split_once(' ').expect("tid and runtime");
    let (tid, ran): (i64, i64) = (tid.parse().unwrap(), ran.parse().unwrap());
    assert!(ran > 10_000_000, "the helper ran {ran} ns");
    let j = json(&out);
    assert_eq!(j["ended_by"], "duration");
    let name = format!("thread noise_busy (pid {tid}, prio 39)");
    let src = sources(&j);
    let mine = src.iter().find(|s| s["name"] == name.as_str()).unwrap_or_else(|| panic!("{name} in {src:#?}"));
    assert_eq!(mine["kind"], "thread");
    // Without IRQ_TIME_ACCOUNTING (this VM) its schedstat counts the
    // interrupts inside its run as its own; rtick counts them apart, in nested_ns.
    let (net, nested) = (mine["total_ns"].as_i64().unwrap(), mine["nested_ns"].as_i64().unwrap());
    let kconfig = rtick::system::KernelConfig::read(&rtick::system::SysRoot::default());
    let irq_time_apart = kconfig.is_some_and(|k| k.is_y("CONFIG_IRQ_TIME_ACCOUNTING"));
    let held = if irq_time_apart { net } else { net + nested };
    assert!((held - ran).abs() * 10 <= ran, "attributed {net} + {nested} ns, the thread's schedstat says {ran} ns");
    assert!(nested >= 0 && net > 0, "{mine:#?}");
    assert!(stdout(&o).contains(&name), "{}", stdout(&o));
}

#[test]
fn an_rt_spinner_s_throttled_time_is_named_rt_throttling() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = busy(dir.path()).filter(|_| ready()) else { return };
    let rt_runtime = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_default();
    if rt_runtime.trim() == "-1" {
        skip("RT throttling is off here (sched_rt_runtime_us = -1)", false);
        return;
    }
    // A normal task that always wants CPU 1: throttling gives it the CPU
    // (with or without the kernel's fair server).
    let mut hog =
        Command::new(&exe).args([CPU, "other", "0", "100000", "100000", "100"]).stdout(Stdio::null()).spawn().unwrap();
    let out = dir.path().join("r.json");
    let o = finish(noise(&["-a", CPU, "-p", "50", "-D", "2.5", "--json", path_str(&out)]));
    let _ = hog.kill();
    let _ = hog.wait();
    ok(&o);
    let j = json(&out);
    let src = sources(&j);
    let throttled = src.iter().find(|s| s["kind"] == "rt_throttling").unwrap_or_else(|| panic!("{src:#?}"));
    // sched_rt_runtime_us 950000 of 1 s: 50 ms a second go to the others.
    assert!(throttled["total_ns"].as_i64().unwrap() >= 20_000_000, "{throttled:#?}");
    let largest = &j["cpus"][0]["largest_gaps"][0];
    assert!(largest["length_ns"].as_i64().unwrap() >= 10_000_000, "{largest:#?}");
    assert_eq!(largest["sources"][0][0], "RT throttling", "{largest:#?}");
    assert!(src.iter().all(|s| s["kind"] != "thread" || s["max_ns"].as_i64().unwrap() < 10_000_000), "{src:#?}");
}

#[test]
fn ctrl_c_ends_the_run_with_its_summary_and_a_complete_file() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let rtick = noise(&["-a", CPU, "--json", path_str(&out)]);
    spinning(&rtick);
    std::thread::sleep(Duration::from_millis(500));
    Command::new("kill").args(["-INT", &rtick.id().to_string()]).status().unwrap();
    let o = finish(rtick);
    ok(&o);
    let j = json(&out);
    assert_eq!(j["ended_by"], "interrupted");
    assert!(j["cpus"][0]["runtime_ns"].as_i64().unwrap() > 0);
    assert!(stdout(&o).contains("note: interrupted"), "{}", stdout(&o));
}

/// Bad input: exit 2, one line, no file, no trace instance.
#[test]
fn bad_input_is_one_line_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let online = rtick::info::online_cpus();
    let offline = online.to_string();
    for args in [
        vec!["--threshold", "0"],
        vec!["-D", "0"],
        vec!["-p", "0"],
        vec!["-p", "100"],
        vec!["-a", &offline],
        vec!["-a", "1-0x"],
    ] {
        let c = noise(&[&args[..], &["--json", path_str(&out)]].concat());
        let o = finish(c);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: no file");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    // A CPU that exists but is not allowed to rtick.
    let o = Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_rtick"), "noise", "-a", "1", "--json", path_str(&out)])
        .output()
        .expect("taskset runs (util-linux)");
    let err = stderr(&o);
    assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("CPU 1 is not allowed"), "{err}");
    assert!(!out.exists());
}

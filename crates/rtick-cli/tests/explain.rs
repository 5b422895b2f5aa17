//! `rtick measure --explain`: the phases and spikes on the real kernel, the
//! tracefs instance gone afterwards (also after Ctrl-C), and a one-line
//! error with the fix when tracefs is not there. Root and tracefs needed
//! (mounted here when missing); under CI a skip is a failure.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../rtick/tests/support/tracefs.rs"]
mod support;
use support::TRACEFS;

#[path = "common/breakdown.rs"]
mod breakdown_check;

fn ready() -> bool {
    support::tracefs().map_err(|(why, kernel_lacks_it)| skip(why, kernel_lacks_it)).is_ok()
}

fn instance(pid: u32) -> PathBuf {
    Path::new(TRACEFS).join("instances").join(format!("rtick-{pid}"))
}

/// The last CPU this process may use (the tests pin rtick there).
fn cpu() -> String {
    rtick::info::allowed_cpus().unwrap().last().unwrap().to_string()
}

#[test]
fn explain_splits_every_wake_up_and_names_the_spikes() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let t = dir.path().join("t.csv");
    let cpu = cpu();
    let args = [
        "measure",
        "-m",
        "clock_nanosleep,spin",
        "-l",
        "400",
        "-a",
        &cpu,
        "-q",
        "--explain",
        "--json",
        j.to_str().unwrap(),
        "--trace",
        t.to_str().unwrap(),
    ];
    let o = rtick(&args);
    ok(&o);
    let out = stdout(&o);
    assert!(out.contains("where the latency went (kernel phases"), "{out}");
    assert!(out.contains("spikes of clock_nanosleep T0:"), "{out}");
    assert!(out.contains("spin") && out.contains("no phases: it ends its waits by spinning"), "{out}");
    let j = json(&j);
    let e = &j["explain"];
    assert_eq!(e["lost_events"], 0, "{e}");
    let cn = &e["results"][0];
    assert_eq!((cn["mechanism"].as_str(), cn["wakeups"].as_u64()), (Some("clock_nanosleep"), Some(400)));
    let unslept: u64 = cn["unmatched"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u[0].as_str().unwrap().contains("without sleeping"))
        .map(|u| u[1].as_u64().unwrap())
        .sum();
    assert!(cn["matched"].as_u64().unwrap() * 100 >= (400 - unslept) * 99, "{cn}");
    // The five worst (the default), each with phases that add up to its latency.
    let spikes = cn["spikes"].as_array().unwrap();
    assert_eq!(spikes.len(), 5);
    for s in spikes {
        let sum: i64 = s["phases_ns"].as_array().unwrap().iter().map(|p| p[1].as_i64().unwrap()).sum();
        assert_eq!(sum, s["latency_ns"].as_i64().unwrap(), "{s}");
        assert!(!s["cause"].as_str().unwrap().is_empty());
    }
    assert!(spikes.windows(2).all(|w| w[0]["latency_ns"].as_i64() >= w[1]["latency_ns"].as_i64()), "worst first");
    assert_eq!(e["results"][1]["mechanism"], "spin");
    assert!(e["results"][1]["not_timer_woken"].is_string());
    // The trace rows carry each wake-up's phases, which add up to its latency;
    // spin's rows have none. `rtick report` reads the trace back.
    let text = std::fs::read_to_string(&t).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("thread,mechanism,cycle,planned_ns,actual_ns,latency_ns,irq_delay_ns,wakeup_path_ns,scheduling_ns,return_to_user_ns")
    );
    let (mut with, mut spin_rows) = (0, 0);
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 10, "{l}");
        if f[1] == "spin" {
            assert!(f[6..].iter().all(|x| x.is_empty()), "{l}");
            spin_rows += 1;
        } else if !f[6].is_empty() {
            let sum: i64 = f[6..].iter().map(|x| x.parse::<i64>().unwrap()).sum();
            assert_eq!(sum, f[5].parse::<i64>().unwrap(), "{l}");
            with += 1;
        }
    }
    assert_eq!((spin_rows, with as u64), (400, cn["matched"].as_u64().unwrap()));
    ok(&rtick(&["report", t.to_str().unwrap()]));
}

#[test]
fn ctrl_c_removes_the_instance_and_prints_the_explanation_so_far() {
    if !ready() {
        return;
    }
    let cpu = cpu();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(["measure", "-D", "60", "-a", &cpu, "--explain"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // The instance exists once the run has started (a bounded wait for that, not a guess).
    let start = Instant::now();
    while !instance(pid).exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "no instance rtick-{pid} appeared");
        assert!(child.try_wait().unwrap().is_none(), "rtick exited before tracing");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Another rtick's instance is its own: a second one runs and leaves ours alone.
    let other = rtick(&["measure", "-l", "50", "-a", &cpu, "-q", "--explain"]);
    ok(&other);
    assert!(instance(pid).exists(), "the second rtick removed the first one's instance");
    Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("interrupted after") && text.contains("where the latency went"), "{text}");
    assert!(!instance(pid).exists(), "the instance is removed after Ctrl-C");
}

#[test]
fn no_tracefs_is_one_line_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let o = rtick(&["measure", "-l", "10", "-q", "--explain", "--tracefs", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("mount -t tracefs nodev"), "{err}");
}

#[test]
fn report_reads_the_explanation_back_and_draws_it() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (j, t, m) = (dir.path().join("r.json"), dir.path().join("t.csv"), dir.path().join("m.png"));
    let cpu = cpu();
    let o = rtick(&[
        "measure",
        "-m",
        "clock_nanosleep,timerfd",
        "--compare",
        "-l",
        "300",
        "-a",
        &cpu,
        "-q",
        "-N",
        "--explain",
        "--explain-top",
        "3",
        "--json",
        path_str(&j),
        "--trace",
        path_str(&t),
        "--plot",
        path_str(&m),
    ]);
    ok(&o);
    // What measure printed is what its JSON holds, and what report prints from either file.
    let want = breakdown_check::rows_of_json(&json(&j));
    assert_eq!(breakdown_check::phase_rows(&stdout(&o)), want, "{}", stdout(&o));
    breakdown_check::report_prints_the_json(&j, &t);
    // measure --plot draws the breakdown; report draws it from both files.
    let (w, _) = breakdown_check::png_size(&std::fs::read(&m).unwrap());
    assert_eq!(w, 1200);
    breakdown_check::draws_whole_pictures(&[&j, &t], dir.path());
}

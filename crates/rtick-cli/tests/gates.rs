//! Gates for CI: `measure --fail-if` and `--warm-up` with exact numbers
//! from the mock mechanism, `report --baseline` on crafted JSON files, and
//! `--deepest-idle-state` on a fake sysfs tree (written, restored, also
//! after SIGTERM) and on this machine.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A mock run with --json (and --trace) in a fresh directory.
fn mock(lat: &str, extra: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (j, t) = (dir.path().join("r.json"), dir.path().join("t.csv"));
    let lat = format!("--mock-latencies={lat}");
    let mut args = vec!["measure", "-m", "mock", &lat, "-i", "1ms"];
    args.extend_from_slice(&PLAIN);
    args.extend_from_slice(&["--json", path_str(&j), "--trace", path_str(&t)]);
    args.extend_from_slice(extra);
    (rtick(&args), dir)
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

#[test]
fn every_operator_at_and_across_its_limit() {
    // 8 wake-ups: min 1 µs, p50 2 µs, mean 2.5 µs, max 4 µs, no overrun.
    for (expr, want) in [
        ("max>4us", 0),
        ("max>3999ns", 3),
        ("max>=4us", 3),
        ("max>=4001ns", 0),
        ("min<1us", 0),
        ("min<1001ns", 3),
        ("min<=1us", 3),
        ("min<=999ns", 0),
        ("p50==2us", 3),
        ("p50==2001ns", 0),
        ("p50!=2us", 0),
        ("p50!=2.001us", 3),
        ("mean>2.5us", 0),
        ("mean>2499ns", 3),
        ("max>0.004ms", 0),
        ("max>0.0039ms", 3),
        ("max>4", 0),
        ("max>3.9", 3),
        ("max>4µs", 0),
        ("overruns>0", 0),
        ("overruns>=0", 3),
        ("missed!=0", 0),
        ("max>1s,p99.999>=4us", 3),
    ] {
        let (o, dir) = mock("1000,2000,3000,4000", &["-l", "8", "--fail-if", expr]);
        assert_eq!(code(&o), want, "{expr}:\n{}{}", stdout(&o), stderr(&o));
        let g = &json(&dir.path().join("r.json"))["gates"];
        assert_eq!(g["passed"], want == 0, "{expr}: {g}");
        let out = stdout(&o);
        assert_eq!(out.contains("\nPASS "), want == 0, "{expr}: {out}");
        assert_eq!(out.contains("\nFAIL "), want == 3, "{expr}: {out}");
    }
}

#[test]
fn a_violation_names_figure_row_value_and_limit_and_the_json_has_it() {
    let (o, dir) = mock("1000,2000,3000,4000", &["-l", "8", "--fail-if", "max >= 4us, overruns>0"]);
    assert_eq!(code(&o), 3);
    let out = stdout(&o);
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails, ["FAIL max of mock T0: 4 µs >= 4 µs"]);
    let g = &json(&dir.path().join("r.json"))["gates"];
    assert_eq!(g["conditions"][0]["condition"], "max>=4us");
    assert_eq!((g["conditions"][0]["limit"].as_f64(), g["conditions"][0]["unit"].as_str()), (Some(4000.0), Some("ns")));
    assert_eq!(g["conditions"][1]["unit"], "count");
    let v = &g["violations"];
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!((v[0]["mechanism"].as_str(), v[0]["thread"].as_u64()), (Some("mock"), Some(0)));
    assert_eq!((v[0]["value"].as_f64(), v[0]["reason"].as_str()), (Some(4000.0), None));
    assert_eq!((g["interrupted"].as_bool(), g["passed"].as_bool()), (Some(false), Some(false)));
    // The trace, written before the verdict, is complete.
    assert_eq!(trace(&dir.path().join("t.csv")).len(), 8);
}

#[test]
fn overrun_and_missed_counts_are_exact() {
    // Every second wake-up is 2.5 periods late: 2 overruns, 4 missed periods.
    for (expr, want) in [("overruns>1", 3), ("overruns>2", 0), ("missed>=4", 3), ("missed>4", 0)] {
        let (o, _dir) = mock("0,2500000", &["-l", "4", "--fail-if", expr]);
        assert_eq!(code(&o), want, "{expr}: {}", stdout(&o));
    }
}

#[test]
fn bad_expressions_are_one_line_usage_errors_and_nothing_is_written() {
    for (bad, names) in [
        ("p99.5>3us", "unknown figure 'p99.5'"),
        ("max>>1us", "'max>>1us'"),
        ("overruns>1us", "overruns is a count"),
        ("max>", "no value"),
        ("p99>50parsecs", "unknown unit"),
        ("max=5", "unknown operator"),
        ("", "an empty condition"),
        ("margin<100us", "margin is a figure of rtick attach"),
    ] {
        let (o, dir) = mock("1000", &["-l", "2", "--fail-if", bad]);
        assert_eq!(code(&o), 2, "{bad}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{bad}: {err}");
        assert!(err.contains(names) && err.contains("figures: p50, p90"), "{bad}: {err}");
        assert!(!dir.path().join("r.json").exists(), "{bad}: no output file");
        assert!(stdout(&o).is_empty(), "{bad}: nothing ran");
    }
}

#[test]
fn a_mechanism_the_run_never_reached_fails_every_condition() {
    // The break at mock's first wake-up stops the run before clock_nanosleep.
    let (o, dir) = mock("5000", &["-m", "mock,clock_nanosleep", "-l", "3", "-b", "1us", "--fail-if", "max>1s"]);
    assert_eq!(code(&o), 3, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("FAIL clock_nanosleep: not measured: the run stopped before it: no figure to check"),
        "{}",
        stdout(&o)
    );
    let v = &json(&dir.path().join("r.json"))["gates"]["violations"];
    assert_eq!((v[0]["mechanism"].as_str(), v[0]["condition"].as_str()), (Some("clock_nanosleep"), None));
}

#[test]
fn warm_up_wake_ups_are_counted_and_left_out_of_everything() {
    let lat = "100,200,300,400,500,600,700,800";
    // Deadlines first, +1 ms, +2 ms fall in a 3 ms warm-up; 5 loops follow.
    for bound in [["-l", "5"], ["-D", "5ms"]] {
        let (o, dir) = mock(lat, &[bound[0], bound[1], "--warm-up", "3ms", "--fail-if", "min<400ns"]);
        assert_eq!(code(&o), 0, "{bound:?}: {}{}", stdout(&o), stderr(&o));
        let j = json(&dir.path().join("r.json"));
        let r = &j["results"][0];
        assert_eq!(
            (r["count"].as_u64(), r["min_ns"].as_i64(), r["max_ns"].as_i64(), r["mean_ns"].as_f64()),
            (Some(5), Some(400), Some(800), Some(600.0)),
            "{bound:?}"
        );
        assert_eq!(r["warm_up_discarded"], 3);
        assert_eq!(r["percentiles_ns"]["50"], 600);
        assert_eq!(j["config"]["warm_up_ns"], 3_000_000);
        let rows = trace(&dir.path().join("t.csv"));
        assert_eq!(rows.iter().map(|r| r.2).collect::<Vec<_>>(), [3, 4, 5, 6, 7], "not in the trace");
        assert_eq!(rows.iter().map(|r| r.5).collect::<Vec<_>>(), [400, 500, 600, 700, 800]);
    }
    // The header (not printed with -q) says so.
    let noisy = rtick(&[
        "measure",
        "-m",
        "mock",
        "--mock-latencies=100",
        "-i",
        "1ms",
        "-l",
        "2",
        "--warm-up",
        "3ms",
        "--policy",
        "other",
        "--no-mlock",
    ]);
    assert!(
        stdout(&noisy).contains("warm-up       3.00 ms per mechanism and thread before its measurement, discarded"),
        "{}",
        stdout(&noisy)
    );
}

#[test]
fn warm_up_with_compare_is_once_at_the_first_slice() {
    // Slices of 2 ms, 4 ms in all: the first slice is 3 ms longer and that
    // stretch is discarded; the second slice is measured whole.
    let (o, dir) = mock(
        "100,200,300,400,500,600,700",
        &["-m", "mock,clock_nanosleep", "--compare", "--slice", "2ms", "-D", "4ms", "--warm-up", "3ms"],
    );
    ok(&o);
    let r = &json(&dir.path().join("r.json"))["results"][0];
    assert_eq!((r["count"].as_u64(), r["warm_up_discarded"].as_u64()), (Some(4), Some(3)));
    assert_eq!((r["min_ns"].as_i64(), r["max_ns"].as_i64()), (Some(400), Some(700)));
}

// ---- report --baseline ----

/// A base run whose every percentile is exact: p50 20 µs, p90…p99.999 40 µs.
fn base_run(dir: &Path) -> serde_json::Value {
    let j = dir.join("base.json");
    let o = rtick(&[
        "measure",
        "-m",
        "mock",
        "--mock-latencies=10000,20000,30000,40000",
        "-i",
        "1ms",
        "-l",
        "4",
        "--policy",
        "other",
        "--no-mlock",
        "-q",
        "--json",
        path_str(&j),
    ]);
    ok(&o);
    json(&j)
}

fn write(dir: &Path, name: &str, v: &serde_json::Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
    p
}

fn report(new: &Path, old: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["report", path_str(new), "--baseline", path_str(old)];
    args.extend_from_slice(extra);
    rtick(&args)
}

#[test]
fn baseline_fails_only_above_the_allowance() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_run(dir.path());
    assert_eq!(base["results"][0]["percentiles_ns"]["99.9"], 40_000);
    let old = write(dir.path(), "old.json", &base);
    let with = |p999: i64| {
        let mut v = base.clone();
        v["results"][0]["percentiles_ns"]["99.9"] = p999.into();
        write(dir.path(), "new.json", &v)
    };
    let same = report(&old, &old, &[]);
    assert_eq!(code(&same), 0, "{}", stdout(&same));
    assert!(stdout(&same).contains("baseline old.json → old.json: p99, p99.9 in µs, growth allowed 10 %"));
    assert!(stdout(&same).contains("PASS no metric grew by more than 10 %"));

    let at_limit = report(&with(44_000), &old, &[]);
    assert_eq!(code(&at_limit), 0, "+10 % exactly passes: {}", stdout(&at_limit));
    let over = report(&with(44_001), &old, &[]);
    assert_eq!(code(&over), 3, "{}", stdout(&over));
    let out = stdout(&over);
    let row = out.lines().find(|l| l.starts_with("mock T0")).expect("a row");
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["mock", "T0", "40.0", "40.0", "1.00", "40.0", "44.0", "1.10!"]
    );
    assert!(out.contains("FAIL p99.9 of mock T0: 40.0 µs → 44.0 µs (×1.10), more than +10 %"), "{out}");

    for (extra, want) in [
        (&["--max-regress", "20%"][..], 0),
        (&["--max-regress", "10.01"][..], 0),
        (&["--metrics", "p50,p99"][..], 0),
        (&["--metrics", "p99.9"][..], 3),
        (&["--max-regress", "0%", "--metrics", "p99"][..], 0),
    ] {
        let o = report(&with(44_001), &old, extra);
        assert_eq!(code(&o), want, "{extra:?}: {}", stdout(&o));
    }
    let faster = report(&with(20_000), &old, &["--max-regress", "0"]);
    assert_eq!(code(&faster), 0, "{}", stdout(&faster));
}

#[test]
fn baseline_matches_rows_by_mechanism_thread_and_phase_and_reports_the_unmatched() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_run(dir.path());
    let row = base["results"][0].clone();
    let phased = |loaded_p99: i64| {
        let mut v = base.clone();
        let (mut idle, mut loaded) = (row.clone(), row.clone());
        idle["phase"] = "idle".into();
        loaded["phase"] = "loaded".into();
        loaded["percentiles_ns"]["99"] = loaded_p99.into();
        v["results"] = serde_json::json!([idle, loaded]);
        v
    };
    let old = write(dir.path(), "old.json", &phased(40_000));
    let new = write(dir.path(), "new.json", &phased(60_000));
    let o = report(&new, &old, &[]);
    assert_eq!(code(&o), 3);
    let fails: Vec<String> = stdout(&o).lines().filter(|l| l.starts_with("FAIL")).map(str::to_string).collect();
    assert_eq!(fails, ["FAIL p99 of mock T0 (loaded): 40.0 µs → 60.0 µs (×1.50), more than +10 %"]);

    // Only in the new run: reported, nothing to compare. Only in the old: fails.
    let mut extra = base.clone();
    let mut other = row.clone();
    other["mechanism"] = "timerfd".into();
    extra["results"] = serde_json::json!([row, other]);
    let more = write(dir.path(), "more.json", &extra);
    let old = write(dir.path(), "old.json", &base);
    let o = report(&more, &old, &[]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("note: timerfd T0 is only in more.json: nothing to compare it with"));
    let o = report(&old, &more, &[]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    assert!(stdout(&o).contains("FAIL timerfd T0: in more.json, missing from old.json: cannot be compared"));
}

#[test]
fn baseline_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let old = write(dir.path(), "old.json", &base_run(dir.path()));
    let o = old.to_str().unwrap();
    for (args, says) in [
        (vec!["report", o, "--baseline", o, "--max-regress", "ten"], "not a percentage"),
        (vec!["report", o, "--baseline", o, "--max-regress", "-5%"], "not a percentage"),
        (vec!["report", o, "--baseline", o, "--metrics", "p99,max"], "'max' is not a percentile"),
        (vec!["report", o, "--max-regress", "5%"], "--max-regress and --metrics go with --baseline"),
        (vec!["report", o, "--metrics", "p99"], "--max-regress and --metrics go with --baseline"),
        (vec!["report", o, o, "--baseline", o], "give one FILE, not 2"),
    ] {
        let out = rtick(&args);
        assert_eq!(code(&out), 2, "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

// ---- --deepest-idle-state ----

/// A fake sysfs tree: CPUs 0 and 1, states POLL, C1, C1E, C6; CPU 0's C1E
/// disabled already.
fn idle_tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for cpu in 0..2 {
        for (k, (name, lat)) in [("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 133)].iter().enumerate() {
            let s = d.path().join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}"));
            std::fs::create_dir_all(&s).unwrap();
            std::fs::write(s.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(s.join("latency"), format!("{lat}\n")).unwrap();
            std::fs::write(s.join("disable"), if (cpu, k) == (0, 2) { "1\n" } else { "0\n" }).unwrap();
        }
    }
    d
}

/// The `disable` values of both CPUs, state 0 to 3.
fn disabled(root: &Path) -> [[u8; 4]; 2] {
    let mut v = [[0; 4]; 2];
    for (cpu, states) in v.iter_mut().enumerate() {
        for (k, d) in states.iter_mut().enumerate() {
            let f = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}/disable"));
            // rtick rewrites the file (truncate, then write) while a test
            // polls it: an empty read is that moment, read again.
            let mut text = String::new();
            for _ in 0..1000 {
                text = std::fs::read_to_string(&f).unwrap().trim().to_string();
                if !text.is_empty() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            *d = text.parse().unwrap_or_else(|e| panic!("{}: {text:?}: {e}", f.display()));
        }
    }
    v
}

const BEFORE: [[u8; 4]; 2] = [[0, 0, 1, 0], [0, 0, 0, 0]];

#[test]
fn idle_states_are_limited_on_the_measured_cpu_and_restored() {
    let tree = idle_tree();
    let root = path_str(tree.path());
    let (o, dir) = mock("1000", &["-l", "3", "-a", "1", "--deepest-idle-state", "1", "--sysfs-root", root]);
    ok(&o);
    let j = json(&dir.path().join("r.json"));
    assert_eq!(j["config"]["deepest_idle_state"], 1);
    assert_eq!(j["config"]["cpuidle"], "states deeper than C1 (exit latency ≤ 2 µs) disabled on CPU 1");
    assert_eq!(disabled(tree.path()), BEFORE, "every file back to its value");
    // An error after the states were written restores them too: no
    // mechanism can run (sched-deadline refuses a pinned thread).
    let o = rtick(&[
        "measure",
        "-m",
        "sched-deadline",
        "-a",
        "0",
        "-l",
        "3",
        "--policy",
        "other",
        "--no-mlock",
        "-q",
        "--deepest-idle-state",
        "0",
        "--sysfs-root",
        root,
    ]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("no mechanism could run here"), "{}", stderr(&o));
    assert_eq!(disabled(tree.path()), BEFORE);
}

/// Runs clock_nanosleep on CPU 0 for an hour with the fake tree, waits
/// until the states are written, sends `signal`, and returns the output.
fn signalled(tree: &Path, signal: &str, json: &Path) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(["measure", "-m", "clock_nanosleep", "-a", "0", "-D", "1h", "--policy", "other", "--no-mlock", "-q"])
        .args(["--deepest-idle-state", "0", "--sysfs-root", path_str(tree), "--json", path_str(json)])
        .args(["--fail-if", "max>1h"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The signal handler is installed before the states are written.
    let start = Instant::now();
    while disabled(tree)[0] != [0, 1, 1, 1] {
        assert!(start.elapsed() < Duration::from_secs(120), "the states were never written");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(disabled(tree)[1], [0; 4], "only the measured CPU");
    let pid = child.id().to_string();
    let kill = Command::new("sh").args(["-c", "kill -s \"$1\" \"$2\"", "sh", signal, &pid]).status().unwrap();
    assert!(kill.success(), "kill -s {signal} {pid}");
    child.wait_with_output().unwrap()
}

#[test]
fn idle_states_are_restored_after_sigterm_and_sigint() {
    for signal in ["TERM", "INT"] {
        let tree = idle_tree();
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("r.json");
        let o = signalled(tree.path(), signal, &j);
        assert_eq!(disabled(tree.path()), BEFORE, "signal {signal}");
        // An interrupted run does not pass its gates: exit 3, said so, in the JSON too.
        assert_eq!(code(&o), 3, "signal {signal}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("FAIL the run was interrupted after"), "{}", stdout(&o));
        let g = &json(&j)["gates"];
        assert_eq!((g["interrupted"].as_bool(), g["passed"].as_bool()), (Some(true), Some(false)));
    }
}

#[test]
fn idle_states_on_this_machine() {
    let cpu0 = Path::new("/sys/devices/system/cpu/cpu0/cpuidle/state0");
    let states = |k: usize| std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cpuidle/state{k}/disable"));
    let before: Vec<_> = (0..16).map_while(|k| states(k).ok()).collect();
    if cpu0.exists() && !is_root() {
        skip("--deepest-idle-state writes root-only sysfs files: run as root", false);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let args = ["measure", "-m", "clock_nanosleep", "-a", "0", "-l", "3", "--policy", "other", "--no-mlock", "-q"];
    let o = Command::new(env!("CARGO_BIN_EXE_rtick"))
        .args(args)
        .args(["--deepest-idle-state", "0", "--json", path_str(&j)])
        .output()
        .unwrap();
    if !cpu0.exists() {
        // No cpuidle (this VM): one line naming why, exit 1, nothing written.
        assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--deepest-idle-state: no cpuidle states on this kernel/VM"), "{err}");
        assert!(!j.exists() && stdout(&o).is_empty());
        return;
    }
    // A machine with cpuidle: the real files come back to their values.
    ok(&o);
    assert_eq!((0..16).map_while(|k| states(k).ok()).collect::<Vec<_>>(), before);
}

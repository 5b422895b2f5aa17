//! Exact numbers through the whole pipeline: the `mock` mechanism wakes at
//! deadline + a scripted latency on a manual clock, so the statistics, the
//! overrun policy, the table and every output file can be checked exactly.

mod common;
use common::*;

fn mock(lat: &str, extra: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let t = dir.path().join("t.csv");
    let h = dir.path().join("h.txt");
    let lat = format!("--mock-latencies={lat}");
    let mut args = vec!["measure", "-m", "mock", &lat, "-i", "1ms"];
    args.extend_from_slice(&PLAIN);
    args.extend_from_slice(&["--json", path_str(&j), "--trace", path_str(&t), "--histogram", path_str(&h)]);
    args.extend_from_slice(extra);
    (rtick(&args), dir)
}

#[test]
fn statistics_are_exact() {
    let (o, dir) = mock("1000,2000,3000,4000", &["-l", "8"]);
    ok(&o);
    let j = json(&dir.path().join("r.json"));
    let r = &j["results"][0];
    assert_eq!(r["mechanism"], "mock");
    assert_eq!(r["count"], 8);
    assert_eq!(r["min_ns"], 1000);
    assert_eq!(r["max_ns"], 4000);
    assert_eq!(r["mean_ns"], 2500.0);
    assert_eq!(r["stddev_ns"].as_f64().unwrap(), 1250f64.sqrt() * 1000f64.sqrt());
    assert_eq!(r["percentiles_ns"]["50"], 2000);
    assert_eq!(r["percentiles_ns"]["90"], 4000);
    assert_eq!(r["percentiles_ns"]["99.999"], 4000);
    assert_eq!(r["overruns"], 0);
    // Period deviation: consecutive wakes differ by interval ± 1000/3000 ns.
    assert_eq!(r["period_min_ns"], -3000);
    assert_eq!(r["period_max_ns"], 1000);
    // The table shows the same numbers in µs.
    let out = stdout(&o);
    let row = out.lines().find(|l| l.starts_with("mock")).expect("table row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[3..13], ["8", "1.0", "2.0", "4.0", "4.0", "4.0", "4.0", "4.0", "2.5", "0"]);
}

#[test]
fn nsecs_table() {
    let (o, _dir) = mock("1234", &["-l", "3", "-N"]);
    ok(&o);
    let out = stdout(&o);
    assert!(out.contains("latency in ns"));
    let row = out.lines().find(|l| l.starts_with("mock")).unwrap();
    assert_eq!(row.split_whitespace().nth(4), Some("1234"));
}

#[test]
fn trace_rows_match_the_grid() {
    let (o, dir) = mock("100,200", &["-l", "6"]);
    ok(&o);
    let rows = trace(&dir.path().join("t.csv"));
    assert_eq!(rows.len(), 6);
    let first = rows[0].3;
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.2, i as u64);
        assert_eq!(r.3 - first, i as i64 * 1_000_000, "planned on the grid");
        assert_eq!(r.5, r.4 - r.3);
        assert_eq!(r.5, if i % 2 == 0 { 100 } else { 200 });
    }
}

#[test]
fn skip_policy_jumps_and_counts_missed_periods() {
    // Every second wake-up is 2.5 periods late: the next two deadlines are skipped.
    let (o, dir) = mock("0,2500000", &["-l", "4", "--overrun", "skip"]);
    ok(&o);
    let r = &json(&dir.path().join("r.json"))["results"][0];
    assert_eq!(
        (r["count"].as_u64(), r["overruns"].as_u64(), r["missed_periods"].as_u64()),
        (Some(4), Some(2), Some(4))
    );
    let cycles: Vec<u64> = trace(&dir.path().join("t.csv")).iter().map(|r| r.2).collect();
    assert_eq!(cycles, [0, 1, 4, 5]);
}

#[test]
fn catch_up_policy_serves_every_deadline() {
    let (o, dir) = mock("2500000,0,0,0", &["-l", "4", "--overrun", "catch-up"]);
    ok(&o);
    let rows = trace(&dir.path().join("t.csv"));
    let lat: Vec<i64> = rows.iter().map(|r| r.5).collect();
    assert_eq!(lat, [2_500_000, 1_500_000, 500_000, 0]);
    assert_eq!(rows.iter().map(|r| r.2).collect::<Vec<_>>(), [0, 1, 2, 3]);
    let r = &json(&dir.path().join("r.json"))["results"][0];
    assert_eq!((r["overruns"].as_u64(), r["missed_periods"].as_u64()), (Some(2), Some(0)));
}

#[test]
fn one_overrun_is_said_in_the_singular() {
    // One wake-up of six is 1.5 periods late: exactly one overrun, which the
    // --compare recommendation names ("1 overrun", never "1 overruns");
    // spin beside it is no sleeping mechanism, so the mock is the best one.
    let (o, dir) = mock("0,0,1500000,0,0,0", &["-m", "mock,spin", "-l", "6", "--compare", "--slice", "20ms"]);
    ok(&o);
    let r = &json(&dir.path().join("r.json"))["results"][0];
    assert_eq!(r["overruns"].as_u64(), Some(1));
    let out = stdout(&o);
    let line = out.lines().find(|l| l.contains("best sleeping mechanism: mock")).expect("a recommendation");
    assert!(line.ends_with(", 1 overrun"), "{line}");
}

#[test]
fn early_wakeups_are_counted_not_clamped() {
    let (o, dir) = mock("-500,1000", &["-l", "4"]);
    ok(&o);
    let r = &json(&dir.path().join("r.json"))["results"][0];
    assert_eq!(r["min_ns"], -500);
    assert_eq!(r["early_wakeups"], 2);
    assert_eq!(r["percentiles_ns"]["50"], -500);
    let h = std::fs::read_to_string(dir.path().join("h.txt")).unwrap();
    assert!(h.contains("# Early wake-ups (counted in bucket 0): 00002"), "{h}");
}

#[test]
fn histogram_file_in_cyclictest_format() {
    let (o, dir) = mock("1500,2500,2600,1200000", &["-l", "4", "--histogram-max", "10"]);
    ok(&o);
    let h = std::fs::read_to_string(dir.path().join("h.txt")).unwrap();
    let lines: Vec<&str> = h.lines().collect();
    assert!(lines.contains(&"# Histogram"));
    assert!(lines.contains(&"000001 000001"));
    assert!(lines.contains(&"000002 000002"));
    assert!(lines.contains(&"000009 000000"));
    assert!(!lines.iter().any(|l| l.starts_with("000010 ")));
    assert!(lines.contains(&"# Total: 000000003"));
    assert!(lines.contains(&"# Min Latencies: 00001"));
    assert!(lines.contains(&"# Max Latencies: 01200"));
    assert!(lines.contains(&"# Histogram Overflows: 00001"));
    assert!(lines.contains(&"# Thread 0: 00003"));
}

#[test]
fn duration_bounds_the_grid() {
    let (o, dir) = mock("10", &["-D", "10ms"]);
    ok(&o);
    assert_eq!(json(&dir.path().join("r.json"))["results"][0]["count"], 10);
}

#[test]
fn breaktrace_stops_and_reports_cycle_and_value() {
    let (o, dir) = mock("1000,1000,9000,1000", &["-l", "100", "-b", "5"]);
    ok(&o);
    let j = json(&dir.path().join("r.json"));
    assert_eq!(j["breaktrace"]["cycle"], 2);
    assert_eq!(j["breaktrace"]["latency_ns"], 9000);
    assert_eq!(j["results"][0]["count"], 3);
    assert_eq!(j["interrupted"], false);
    assert!(stdout(&o).contains("breaktrace: mock T0 cycle 2: latency 9.0 µs"), "{}", stdout(&o));
}

/// A directory of plain files standing in for tracefs.
fn fake_tracefs() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("trace_marker"), "").unwrap();
    std::fs::write(d.path().join("tracing_on"), "1\n").unwrap();
    d
}

fn rtick_with_tracefs(tracefs: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rtick")).env("RTICK_TRACEFS", tracefs).args(args).output().unwrap()
}

#[test]
fn tracemark_marks_the_trace_and_stops_tracing_at_the_break() {
    let fs = fake_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let args = ["measure", "-m", "mock", "--mock-latencies=1000,9000", "-l", "100", "-b", "5", "--tracemark"];
    let o = rtick_with_tracefs(fs.path(), &[&args[..], &PLAIN, &["--json", path_str(&j)]].concat());
    ok(&o);
    let mark = std::fs::read_to_string(fs.path().join("trace_marker")).unwrap();
    assert_eq!(mark, "rtick: hit latency threshold (9000 > 5000 ns): mock T0 cycle 1\n");
    assert!(std::fs::read_to_string(fs.path().join("tracing_on")).unwrap().starts_with('0'));
    let j = json(&j);
    assert_eq!(j["breaktrace"]["marked"], true);
    assert_eq!(j["config"]["tracemark"], path_str(fs.path()));
    assert!(stdout(&o).contains("tracing stopped"), "{}", stdout(&o));

    // Tracing already off: a warning says the mark has no trace before it.
    std::fs::write(fs.path().join("tracing_on"), "0\n").unwrap();
    let o = rtick_with_tracefs(fs.path(), &[&args[..], &PLAIN].concat());
    ok(&o);
    assert!(stdout(&o).contains("warning: tracing is off"), "{}", stdout(&o));
}

#[test]
fn tracemark_failures() {
    // Without -b it is a usage error.
    let o = rtick(&["measure", "-m", "mock", "--mock-latencies=1000", "-l", "5", "--tracemark"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // No tracefs there: one line naming it, exit 1, no output file.
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let missing = dir.path().join("no-tracefs");
    let args = ["measure", "-m", "mock", "--mock-latencies=1000", "-l", "5", "-b", "5", "--tracemark"];
    let o = rtick_with_tracefs(&missing, &[&args[..], &["--json", path_str(&j)]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    // The one tracefs lookup (#18) names the missing tracefs and how to mount it.
    assert!(stderr(&o).contains("no-tracefs") && stderr(&o).contains("mount -t tracefs"), "{}", stderr(&o));
    assert!(!j.exists());
}

#[test]
fn several_threads_and_mechanisms_share_the_table() {
    let (o, dir) = mock("3000", &["-l", "5", "-t", "2"]);
    ok(&o);
    let j = json(&dir.path().join("r.json"));
    let threads: Vec<u64> = j["results"].as_array().unwrap().iter().map(|r| r["thread"].as_u64().unwrap()).collect();
    assert_eq!(threads.len(), 2);
    assert!(threads.contains(&0) && threads.contains(&1));
    let rows = trace(&dir.path().join("t.csv"));
    assert_eq!(rows.len(), 10);
    let h = std::fs::read_to_string(dir.path().join("h.txt")).unwrap();
    assert!(h.lines().any(|l| l == "000003 000005\t000005"), "{h}");
}

#[test]
fn json_schema_fields() {
    let (o, dir) = mock("1000", &["-l", "2"]);
    ok(&o);
    let j = json(&dir.path().join("r.json"));
    for k in ["rtick_version", "schema_version", "command", "started_at", "system", "config", "results", "warnings"] {
        assert!(j.get(k).is_some(), "missing {k}");
    }
    for k in ["kernel", "clocksource", "hres_active", "preempt", "cpus"] {
        assert!(j["system"].get(k).is_some(), "missing system.{k}");
    }
    let r = &j["results"][0];
    for k in [
        "mechanism",
        "thread",
        "cpu",
        "count",
        "min_ns",
        "max_ns",
        "mean_ns",
        "stddev_ns",
        "percentiles_ns",
        "overruns",
        "cpu_percent",
        "trace_rows_dropped",
    ] {
        assert!(r.get(k).is_some(), "missing results[].{k}");
    }
    let keys: Vec<&String> = r["percentiles_ns"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["50", "90", "99", "99.9", "99.99", "99.999"]);
    assert_eq!(j["config"]["policy"], "SCHED_OTHER");
    assert_eq!(j["config"]["interval_ns"], 1_000_000);
}

#[test]
fn compare_interleaves_in_slices_on_one_grid() {
    // mock (manual clock) beside a real mechanism: 3 rounds of 10 ms slices.
    let dir = tempfile::tempdir().unwrap();
    let (j, t) = (dir.path().join("r.json"), dir.path().join("t.csv"));
    let o = rtick(&[
        "measure",
        "--compare",
        "-m",
        "mock,clock_nanosleep",
        "--mock-latencies=700",
        "-i",
        "1ms",
        "-D",
        "30ms",
        "--slice",
        "10ms",
        "--policy",
        "other",
        "--no-mlock",
        "-q",
        "--json",
        path_str(&j),
        "--trace",
        path_str(&t),
    ]);
    ok(&o);
    let rows = trace(&t);
    // The trace of one thread is in wake-up order: blocks of 10 alternate.
    let mut blocks: Vec<(String, usize)> = Vec::new();
    for r in &rows {
        match blocks.last_mut() {
            Some((m, n)) if *m == r.1 => *n += 1,
            _ => blocks.push((r.1.clone(), 1)),
        }
    }
    let names: Vec<&str> = blocks.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(names, ["mock", "clock_nanosleep", "mock", "clock_nanosleep", "mock", "clock_nanosleep"]);
    assert!(blocks.iter().filter(|(m, _)| m == "mock").all(|(_, n)| *n == 10), "{blocks:?}");
    // Every mock wake-up stays on one grid across slices, and cycles say where.
    let mock: Vec<_> = rows.iter().filter(|r| r.1 == "mock").collect();
    for r in &mock {
        assert_eq!(r.3 - mock[0].3, (r.2 - mock[0].2) as i64 * 1_000_000);
        assert_eq!(r.5, 700);
    }
    let j = json(&j);
    assert_eq!(j["config"]["interleave_ns"], 10_000_000);
    assert_eq!(j["results"].as_array().unwrap().len(), 2);
    let out = stdout(&o);
    assert!(out.contains("recommendation for this machine"), "{out}");
    assert!(out.contains("best sleeping mechanism: mock: p99 700 ns"), "{out}");
}

/// The header's timer slack: the value set under SCHED_OTHER; none under
/// a real-time policy, whose threads the kernel gives no slack.
#[test]
fn the_header_says_real_time_threads_have_no_timer_slack() {
    for (policy, want) in [
        ("other", "timer slack 1 ns on measuring threads"),
        ("fifo", "timer slack: none (real-time threads have no slack)"),
        ("rr", "timer slack: none (real-time threads have no slack)"),
    ] {
        let o = rtick(&["measure", "-m", "mock", "--mock-latencies=1000", "-i", "1ms", "-l", "4", "--policy", policy]);
        ok(&o);
        let out = stdout(&o);
        let line = out.lines().find(|l| l.trim_start().starts_with("scheduling")).expect(&out);
        assert!(line.ends_with(want), "{policy}: {line}");
    }
}

/// A run shorter than --slice is one slice of the whole run each: the
/// header and the JSON say the slice used, not the one asked for.
#[test]
fn compare_shorter_than_a_slice_reports_the_slice_used() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = rtick(&[
        "measure",
        "--compare",
        "-m",
        "mock,clock_nanosleep",
        "--mock-latencies=700",
        "-i",
        "1ms",
        "-D",
        "20ms",
        "--slice",
        "1s",
        "--policy",
        "other",
        "--no-mlock",
        "--json",
        path_str(&j),
    ]);
    ok(&o);
    assert_eq!(json(&j)["config"]["interleave_ns"], 20_000_000);
    let out = stdout(&o);
    assert!(out.contains("20.00 ms per mechanism | interleaved in 20.00 ms slices"), "{out}");
}

#[test]
fn realtime_clock_steps_are_detected_not_recorded() {
    for (step, label) in [("5:1000000000", "1.000 s"), ("3:-500000000", "-500.00 ms")] {
        let (o, dir) = mock("1000", &["-l", "10", "--clock", "realtime", "--mock-step", step]);
        ok(&o);
        let r = &json(&dir.path().join("r.json"))["results"][0];
        assert_eq!(r["count"], 10, "ten real wake-ups are recorded");
        assert_eq!((r["min_ns"].as_i64(), r["max_ns"].as_i64()), (Some(1000), Some(1000)), "the step is no latency");
        assert_eq!(r["clock_steps"], 1);
        let out = stdout(&o);
        assert!(out.contains(&format!("CLOCK_REALTIME stepped 1 time, by {label}")), "{out}");
        // The trace holds only recorded wake-ups; each is on time.
        let rows = trace(&dir.path().join("t.csv"));
        assert_eq!(rows.len(), 10);
        assert!(rows.iter().all(|r| r.5 == 1000));
    }
}

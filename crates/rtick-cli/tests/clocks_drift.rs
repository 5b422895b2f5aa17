//! `rtick clocks` and `rtick drift`: schemas and invariants, no absolute timings.

mod common;
use common::*;

#[test]
fn clocks_json_and_invariants() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("c.json");
    let o = rtick(&["clocks", "--batches", "20", "--reads", "200", "--rounds", "500", "--json", path_str(&j)]);
    ok(&o);
    let j = json(&j);
    assert!(j["rtick_version"].is_string());
    assert!(j["clocksource"].is_string());
    let clocks = j["clocks"].as_array().unwrap();
    let names: Vec<&str> = clocks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    for n in [
        "CLOCK_MONOTONIC",
        "CLOCK_MONOTONIC_RAW",
        "CLOCK_MONOTONIC_COARSE",
        "CLOCK_REALTIME",
        "CLOCK_REALTIME_COARSE",
        "CLOCK_BOOTTIME",
        "CLOCK_TAI",
        "CLOCK_PROCESS_CPUTIME_ID",
        "CLOCK_THREAD_CPUTIME_ID",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    for c in clocks {
        let (m, p) = (c["cost_ns_median"].as_f64().unwrap(), c["cost_ns_p99"].as_f64().unwrap());
        assert!(m > 0.0 && p >= m, "{c}");
        assert!(c["vdso"].is_boolean());
        assert!(c.get("resolution_ns").is_some() && c.get("granularity_ns").is_some());
    }
    let get = |n: &str| clocks.iter().find(|c| c["name"] == n).unwrap();
    // A coarse clock ticks: its resolution is coarser than the fine clock's.
    assert!(get("CLOCK_MONOTONIC_COARSE")["resolution_ns"].as_i64() > get("CLOCK_MONOTONIC")["resolution_ns"].as_i64());
    // The CPU-time clocks need the kernel.
    assert_eq!(get("CLOCK_THREAD_CPUTIME_ID")["vdso"], false);
    let cc = &j["cross_cpu"];
    let n = rtick::info::allowed_cpus().unwrap().len();
    assert_eq!(cc["pairs_tested"].as_u64().unwrap() as usize, n * (n - 1));
    // The text says what is counted: ordered pairs, each pair both ways.
    let pairs = rtick::text::count((n * (n - 1)) as u64, "ordered CPU pair");
    assert!(stdout(&o).contains(&format!("cross-CPU: {pairs} (each pair both ways)")), "{}", stdout(&o));
    let backwards_ns = cc["max_backwards_ns"].as_f64().unwrap();
    match cc["clock"].as_str().unwrap() {
        // The TSC in ticks, and in ns at the calibrated frequency.
        "rdtsc" => {
            let ticks = cc["max_backwards_ticks"].as_i64().unwrap() as f64;
            let hz = j["tsc"]["frequency_hz"].as_f64().unwrap();
            assert!((backwards_ns - ticks * 1e9 / hz).abs() < 1e-6, "{cc}");
        }
        // The kernel keeps CLOCK_MONOTONIC_RAW monotonic across CPUs.
        "CLOCK_MONOTONIC_RAW" => assert_eq!((backwards_ns, cc["max_backwards_ticks"].is_null()), (0.0, true), "{cc}"),
        other => panic!("cross-CPU check on {other}"),
    }
    assert!(j["tsc"]["present"].is_boolean());
    if j["tsc"]["present"] == true {
        assert!(j["tsc"]["frequency_hz"].as_f64().unwrap() > 1e8);
        assert!(names.contains(&"rdtsc"));
    }
    assert!(stdout(&o).contains("CLOCK_MONOTONIC "));
}

#[test]
fn drift_json_and_invariants() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("d.json");
    let o = rtick(&["drift", "-D", "250ms", "--period", "1000,10000", "--json", path_str(&j)]);
    ok(&o);
    let j = json(&j);
    assert!(j["rtick_version"].is_string());
    let hz = j["hz"].as_u64();
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 7 * 2);
    for r in results {
        let (ticks, expected) = (r["ticks"].as_u64().unwrap() as f64, r["expected_ticks"].as_f64().unwrap());
        let (period, elapsed) = (r["period_ns"].as_i64().unwrap() as f64, r["elapsed_ns"].as_i64().unwrap() as f64);
        let mech = r["mechanism"].as_str().unwrap();
        let cpu_time = mech.starts_with("itimer-v") || mech == "itimer-prof";
        assert_eq!(r["time_base"], if cpu_time { "cpu" } else { "wall" });
        // No wall-clock timer delivers more ticks than the time covered
        // allows (plus the one in flight). CPU-time timers get no such
        // bound: the kernel charges their time a whole scheduler tick at a
        // time to the thread a tick interrupts, which on a loaded machine
        // strays by ticks from the precise CPU time measured as `elapsed`.
        if !cpu_time {
            assert!(ticks <= (elapsed / period).floor() + 1.0, "{r}");
        }
        // The error is what the counts say, in sign and size.
        let err = (ticks - elapsed / period) / (elapsed / period) * 100.0;
        assert!((r["error_percent"].as_f64().unwrap() - err).abs() < 0.05, "{r}");
        assert!((r["error_ppm"].as_f64().unwrap() - err * 1e4).abs() < 500.0, "{r}");
        assert!((expected - elapsed / period).abs() < 0.1, "{r}");
        assert!(!r["explanation"].as_str().unwrap().is_empty());
        // CPU-time timers fire at most once per scheduler tick: with a
        // period of half a tick or less they lose ticks, whatever the
        // accounting's noise (it would take twice the CPU time to hide).
        if let (Some(hz), true) = (hz, cpu_time) {
            if period <= 1e9 / hz as f64 / 2.0 {
                assert!(r["error_percent"].as_f64().unwrap() < 0.0, "{r}");
            }
        }
    }
    let out = stdout(&o);
    assert!(out.contains("1000 µs") && out.contains("itimer-prof:"), "{out}");
    // The header counts in words and rounds the total; a rule follows the
    // column heading; overruns are `-` where the kernel does not report them.
    assert!(out.contains("drift: 7 mechanisms × 2 periods, 250.00 ms each (about 4 s)"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let head = lines.iter().position(|l| l.starts_with("mechanism")).expect(&out);
    assert!(lines[head].ends_with("  overruns"), "{out}");
    assert!(!lines[head + 1].is_empty() && lines[head + 1].chars().all(|c| c == '-'), "{out}");
    assert_eq!(lines[head + 1].chars().count(), lines[head].chars().count(), "{out}");
    for r in results {
        let mech = r["mechanism"].as_str().unwrap();
        let us = (r["period_ns"].as_i64().unwrap() / 1000).to_string();
        let row = lines.iter().find(|l| l.split_whitespace().take(3).eq([mech, us.as_str(), "µs"])).expect(&out);
        let shown = row.split_whitespace().last().unwrap();
        if mech == "timerfd" || mech == "posix-timer" {
            assert_eq!(shown, r["overruns"].to_string(), "{row}");
        } else {
            assert_eq!(shown, "-", "{row}");
        }
        assert_eq!(row.chars().count(), lines[head].chars().count(), "right-aligned under the heading: {row}");
    }
}

/// Each case exits 2 with one line naming the option (and the bound it
/// passes), before any output file is made.
#[test]
fn drift_bad_input_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["drift", "--period", "0"], "--period"),
        (&["drift", "--period", "-5"], "--period"),
        (&["drift", "--period", "abc"], "--period"),
        (&["drift", "--period", "5us"], "--period"),
        (&["drift", "-D", "0"], "--duration"),
        (&["drift", "-m", "sundial"], "--mechanism"),
        (&["drift", "--period", "1h", "-m", "timerfd", "-D", "1"], "longer than -D/--duration 1.000 s"),
        (&["drift", "--period", "4s", "-m", "itimer-real", "-D", "1"], "longer than -D/--duration"),
        (&["drift", "--period", "1ms,2s", "-D", "1500ms"], "--period: 2.000 s is longer"),
        (&["clocks", "--batches", "0"], "--batches"),
        (&["clocks", "--batches", "99999999999"], "--batches <N>': 99999999999 must be from 2 to 1000000"),
        (&["clocks", "--batches", "18446744073709551615"], "must be from 2 to 1000000"),
        (&["clocks", "--batches", "1"], "--batches <N>': 1 must be from 2 to 1000000"),
        (&["clocks", "--batches", "many"], "--batches <N>': 'many' is not a whole number from 2 to 1000000"),
        (
            &["clocks", "--reads", "18446744073709551615"],
            "--reads <N>': 18446744073709551615 must be from 1 to 1000000",
        ),
        (
            &["clocks", "--rounds", "18446744073709551615"],
            "--rounds <N>': 18446744073709551615 must be from 1 to 10000000",
        ),
        (&["clocks", "--rounds", "0"], "--rounds"),
        (&["clocks", "--batches", "1000000", "--reads", "101"], "--batches × --reads: 1000000 × 101"),
    ];
    for (args, names) in cases {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("out.json");
        let o = rtick(&[args, &["--json", path_str(&j)][..]].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: should say {names}: {err}");
        assert!(!j.exists(), "{args:?}: wrote {}", j.display());
    }
    for args in [&["drift", "--json", "/nonexistent-dir/d.json"][..], &["clocks", "--json", "/nonexistent-dir/c.json"]]
    {
        let o = rtick(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
}

/// SIGINT or SIGTERM during a case of a 4 s period ends `drift` well
/// before the period, for every mechanism; the output says which case was
/// cut short, and the JSON is written, marked interrupted, without it.
#[test]
fn a_signal_ends_drift_within_its_period() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let signals = [rustix::process::Signal::INT, rustix::process::Signal::TERM];
    for (i, m) in
        ["timerfd", "itimer-real", "itimer-virtual", "itimer-prof", "posix-timer", "relative-loop", "absolute-loop"]
            .into_iter()
            .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("d.json");
        let mut child = Command::new(env!("CARGO_BIN_EXE_rtick"))
            .args(["drift", "-m", m, "--period", "4s", "-D", "5", "--json", path_str(&j)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // The header comes once the signal handlers are in place.
        let header = lines.next().expect("no header").unwrap();
        assert!(header.starts_with("rtick ") && header.contains(" drift: "), "{header}");
        std::thread::sleep(Duration::from_millis(500));
        let pid = rustix::process::Pid::from_child(&child);
        let sent = Instant::now();
        rustix::process::kill_process(pid, signals[i % 2]).expect("drift is our child");
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        let status = child.wait().unwrap();
        let took = sent.elapsed();
        // Generous for a loaded VM, and far under the 4 s period.
        assert!(took < Duration::from_millis(2500), "{m}: ended {took:?} after the signal");
        assert_eq!(status.code(), Some(0), "{m}: {status:?}");
        let text = rest.join("\n");
        assert!(text.contains(&format!("interrupted during {m} at 4000000 µs")), "{m}: {text}");
        let json = json(&j);
        assert_eq!(json["interrupted"], true, "{m}: {json}");
        assert_eq!(json["results"].as_array().map(Vec::len), Some(0), "{m}: {json}");
    }
}

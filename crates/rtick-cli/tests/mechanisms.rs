//! Every mechanism, briefly, on the real kernel: invariants only, never
//! absolute latencies (this may be a noisy VM).

mod common;
use common::*;

use rtick::wait::KINDS;

const INTERVAL_NS: i64 = 500_000;

fn check_run(mechanisms: &str, threads: &str, loops: u64) {
    let dir = tempfile::tempdir().unwrap();
    let (j, t) = (dir.path().join("r.json"), dir.path().join("t.csv"));
    let l = loops.to_string();
    let o = rtick(&[
        "measure",
        "-m",
        mechanisms,
        "-t",
        threads,
        "-i",
        "500us",
        "-l",
        &l,
        "-q",
        "--json",
        path_str(&j),
        "--trace",
        path_str(&t),
    ]);
    ok(&o);
    let j = json(&j);
    let rows = trace(&t);
    let results = j["results"].as_array().unwrap();
    // A mechanism this machine cannot run (sched-deadline without root) is
    // reported unavailable, with its reason, and the others still run.
    let unavailable = j["unavailable"].as_array().unwrap();
    for u in unavailable {
        let (name, reason) = (u["mechanism"].as_str().unwrap(), u["reason"].as_str().unwrap());
        assert!(!reason.is_empty());
        skip(&format!("{name}: {reason}"), kernel_lacks(name));
    }
    let expected = (mechanisms.split(',').count() - unavailable.len()) * threads.parse::<usize>().unwrap();
    assert_eq!(results.len(), expected);
    for r in results {
        let mech = r["mechanism"].as_str().unwrap();
        let thread = r["thread"].as_u64().unwrap();
        let count = r["count"].as_u64().unwrap();
        assert_eq!(count, loops, "{mech}: every loop is counted");
        let p = &r["percentiles_ns"];
        let seq: Vec<i64> =
            ["50", "90", "99", "99.9", "99.99", "99.999"].iter().map(|k| p[*k].as_i64().unwrap()).collect();
        let (min, max) = (r["min_ns"].as_i64().unwrap(), r["max_ns"].as_i64().unwrap());
        assert!(
            min <= seq[0] && seq.windows(2).all(|w| w[0] <= w[1]) && seq[5] <= max,
            "{mech}: monotone {min} {seq:?} {max}"
        );
        let mean = r["mean_ns"].as_f64().unwrap();
        assert!(min as f64 <= mean && mean <= max as f64);
        let cpu = r["cpu_percent"].as_f64().unwrap();
        assert!((0.0..=105.0).contains(&cpu), "{mech}: cpu {cpu}");
        assert_eq!(r["trace_rows_dropped"], 0);

        let mine: Vec<_> = rows.iter().filter(|x| x.1 == mech && x.0 == thread).collect();
        assert_eq!(mine.len() as u64, count, "{mech}: trace rows = count");
        let info = rtick::Mechanism::parse(mech).unwrap().info();
        let (c0, p0) = (mine[0].2, mine[0].3);
        let mut lat_sum = 0i128;
        for (i, x) in mine.iter().enumerate() {
            assert_eq!(x.5, x.4 - x.3, "latency = actual − planned");
            lat_sum += x.5 as i128;
            if info.relative {
                assert_eq!(x.2, i as u64, "{mech}: relative cycles are consecutive");
            } else {
                assert_eq!(x.3 - p0, (x.2 - c0) as i64 * INTERVAL_NS, "{mech}: planned on the grid");
            }
            if !info.estimated_grid {
                assert!(x.5 >= 0, "{mech}: a wait never returns before its planned time");
            }
        }
        assert_eq!(rows.iter().filter(|x| x.1 == mech && x.0 == thread).map(|x| x.5).min().unwrap(), min);
        assert!(((lat_sum as f64 / count as f64) - mean).abs() < 1.0, "{mech}: trace mean = JSON mean");
    }
}

#[test]
fn every_mechanism_alone() {
    for k in KINDS.iter().filter(|k| !k.hidden) {
        check_run(k.name, "1", 200);
    }
}

#[test]
fn threads_with_several_mechanisms() {
    let names: Vec<&str> =
        KINDS.iter().filter(|k| !k.hidden && !k.per_process && !k.burns_cpu).map(|k| k.name).collect();
    check_run(&names.join(","), "2", 100);
}

#[test]
fn mechanisms_list_names_every_public_mechanism() {
    let o = rtick(&["mechanisms"]);
    ok(&o);
    for k in KINDS {
        assert_eq!(stdout(&o).contains(k.name), !k.hidden, "{}", k.name);
    }
}

/// A period the kernel refuses for SCHED_DEADLINE (below
/// `kernel.sched_deadline_period_min_us`, 100 µs by default) makes that
/// mechanism unavailable when its loop is first armed; the others are still
/// measured (it used to abort the whole run).
#[test]
fn a_refused_sched_deadline_period_leaves_the_other_mechanisms() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = rtick(&[
        "measure",
        "-m",
        "sched-deadline,clock_nanosleep",
        "-i",
        "50us",
        "-l",
        "50",
        "-q",
        "--json",
        path_str(&j),
    ]);
    ok(&o);
    let j = json(&j);
    let measured: Vec<&str> =
        j["results"].as_array().unwrap().iter().map(|r| r["mechanism"].as_str().unwrap()).collect();
    assert_eq!(measured, ["clock_nanosleep"]);
    let u = &j["unavailable"][0];
    assert_eq!(u["mechanism"], "sched-deadline");
    // As root the period is what is refused; without privilege, SCHED_DEADLINE itself.
    let reason = u["reason"].as_str().unwrap();
    assert!(reason.contains(if is_root() { "period" } else { "CAP_SYS_NICE" }), "{reason}");
}

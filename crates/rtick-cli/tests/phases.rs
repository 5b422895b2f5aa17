//! `measure --phases` with exact numbers: the `mock` mechanism has one
//! script of latencies for the idle phase and another for the loaded one,
//! so the labels, each phase's figures and the ratios loaded ÷ idle are
//! checked exactly, through the table, the JSON and `rtick report`.

mod common;
use common::*;

fn phased(extra: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let args = [
        &["measure", "-m", "mock", "--mock-latencies=500,1000", "--mock-loaded-latencies=1500,2000"][..],
        &["-l", "10", "-t", "2", "--phases", "idle,loaded", "--load", "timers:1"],
        &PLAIN,
        &["--json", path_str(&j)],
        extra,
    ]
    .concat();
    (rtick(&args), dir)
}

#[test]
fn two_result_sets_with_exact_labels_numbers_and_ratios() {
    let (o, dir) = phased(&["-N"]);
    ok(&o);
    let j = json(&dir.path().join("r.json"));
    let rows: Vec<_> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let p = &r["percentiles_ns"];
            let key = (r["phase"].as_str().unwrap(), r["thread"].as_u64().unwrap(), r["count"].as_u64().unwrap());
            (key, [r["min_ns"].as_i64(), r["max_ns"].as_i64(), p["50"].as_i64(), p["99"].as_i64()])
        })
        .collect();
    // (Below 2048 ns the histogram is exact at its 3 significant digits.)
    let (i, l) = ([Some(500), Some(1000), Some(500), Some(1000)], [Some(1500), Some(2000), Some(1500), Some(2000)]);
    assert_eq!(rows, [(("idle", 0, 10), i), (("idle", 1, 10), i), (("loaded", 0, 10), l), (("loaded", 1, 10), l)]);
    let names: Vec<&str> = j["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["idle", "loaded"]);
    assert_eq!((j["phases"][0]["loops"].as_u64(), j["phases"][1]["duration_ns"].as_i64()), (Some(10), None));
    let ratios = j["phase_ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 2);
    for (t, r) in ratios.iter().enumerate() {
        assert_eq!((r["mechanism"].as_str(), r["thread"].as_u64()), (Some("mock"), Some(t as u64)));
        assert_eq!(r["50"].as_f64(), Some(3.0), "{r}");
        for p in ["90", "99", "99.9", "99.99", "max"] {
            assert_eq!(r[p].as_f64(), Some(2.0), "{p}: {r}");
        }
    }
    // The table: one per phase, labelled, then the ratios.
    let out = stdout(&o);
    let idle = out.find("phase idle (without the load): latency in ns").expect(&out);
    let loaded = out.find("phase loaded (with the load): latency in ns").expect(&out);
    let ratio = out.find("loaded ÷ idle, per percentile").expect(&out);
    assert!(idle < loaded && loaded < ratio, "{out}");
    let cells = |from: usize, t: &str| -> Vec<String> {
        let line = out[from..].lines().find(|l| l.starts_with("mock") && l.split_whitespace().nth(1) == Some(t));
        line.unwrap().split_whitespace().map(String::from).collect()
    };
    assert_eq!(cells(idle, "0")[3..8], ["10", "500", "500", "1000", "1000"]);
    assert_eq!(cells(loaded, "1")[3..8], ["10", "1500", "1500", "2000", "2000"]);
    assert_eq!(cells(ratio, "1")[2..], ["3.00", "2.00", "2.00", "2.00", "2.00", "2.00"]);
    assert!(out.contains("load: timers 1 worker: "), "{out}");
}

#[test]
fn report_shows_the_load_and_the_phase_tables() {
    let (o, dir) = phased(&[]);
    ok(&o);
    let r = rtick(&["report", path_str(&dir.path().join("r.json"))]);
    ok(&r);
    let out = stdout(&r);
    assert!(out.contains("\nload: timers:1 (SCHED_OTHER) on CPU"), "{out}");
    assert!(out.contains("phase idle (without the load): ") && out.contains("phase loaded (with the load): "), "{out}");
    let ratio = out.find("loaded ÷ idle").expect(&out);
    let row = out[ratio..].lines().find(|l| l.starts_with("mock")).unwrap();
    assert_eq!(row.split_whitespace().collect::<Vec<_>>()[2..], ["3.00", "2.00", "2.00", "2.00", "2.00", "2.00"]);
    assert!(out.contains("load: timers 1 worker: "), "{out}");
}

#[test]
fn without_phases_every_row_has_a_null_phase_and_no_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = rtick(
        &[&["measure", "-m", "mock", "--mock-latencies=1000", "-l", "5", "--json", path_str(&j)][..], &PLAIN].concat(),
    );
    ok(&o);
    let j = json(&j);
    assert_eq!(j["results"][0]["phase"], serde_json::Value::Null);
    assert_eq!((j["load"].is_null(), j["phases"].as_array().unwrap().len()), (true, 0));
    assert_eq!(j["phase_ratios"].as_array().unwrap().len(), 0);
    assert!(!stdout(&o).contains("phase "), "{}", stdout(&o));
}

/// A machine whose last-level cache is 300 MiB (a fake sysfs): the default
/// memory load (a worker per CPU, twice the cache each) would be beyond the
/// loads' 1 GiB cap; its buffers shrink to fit, the header says so, and
/// the run goes on under the load.
#[test]
fn a_default_memory_load_fits_the_cap_of_a_machine_with_a_large_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("sys/devices/system/cpu/cpu0/cache/index3");
    std::fs::create_dir_all(&cache).unwrap();
    for (f, v) in [("level", "3"), ("type", "Unified"), ("size", "307200K")] {
        std::fs::write(cache.join(f), format!("{v}\n")).unwrap();
    }
    let j = dir.path().join("r.json");
    let o = rtick(&[
        "measure",
        "-m",
        "mock",
        "--mock-latencies=500",
        "-l",
        "10",
        "--policy",
        "other",
        "--no-mlock",
        "--sysfs-root",
        path_str(dir.path()),
        "--load",
        "memory",
        "--phases",
        "idle,loaded",
        "--json",
        path_str(&j),
    ]);
    ok(&o);
    let workers = std::thread::available_parallelism().unwrap().get().min(256);
    // The cap less the workers' 128 KiB stacks, shared, in whole MiB.
    let each = (((1usize << 30) - workers * (128 << 10)) / workers) >> 20;
    let said = match each {
        600.. => "600 MiB buffer per worker (L3 cache 300 MiB × 2)".to_string(),
        _ => format!("{each} MiB buffer per worker (L3 cache 300 MiB × 2, capped to fit 1024 MiB for all loads)"),
    };
    let out = stdout(&o);
    assert!(out.contains(&format!("  load memory   {said}\n")), "{out}");
    let k = &json(&j)["load"]["kinds"][0];
    assert_eq!(k["kind"], "memory");
    assert_eq!(k["workers"], workers);
    assert_eq!(k["error"], serde_json::Value::Null, "{k}");
    assert!(k["work"].as_u64().unwrap() > 0, "{k}");
}

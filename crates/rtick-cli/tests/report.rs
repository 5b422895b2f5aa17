//! `rtick report`: round trips from `rtick measure`, cyclictest imports with
//! known percentiles, bad input, plots and the HdrHistogram log.

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report").join(name)
}

fn report_json(args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let mut full = vec!["report"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--json", path_str(&j)]);
    let o = rtick(&full);
    ok(&o);
    (json(&j), stdout(&o))
}

fn measure_mock(dir: &Path) -> (PathBuf, PathBuf) {
    let (j, t) = (dir.join("m.json"), dir.join("m.csv"));
    ok(&rtick(&[
        "measure",
        "-m",
        "mock",
        "--mock-latencies=900,1200,1500,-300,2000000",
        "-l",
        "25",
        "-t",
        "2",
        "-i",
        "1ms",
        "--policy",
        "other",
        "--no-mlock",
        "-q",
        "--json",
        path_str(&j),
        "--trace",
        path_str(&t),
    ]));
    (j, t)
}

#[test]
fn round_trip_from_measure() {
    let dir = tempfile::tempdir().unwrap();
    let (j, t) = measure_mock(dir.path());
    let measured = json(&j)["results"].clone();
    for input in [&j, &t] {
        let (r, out) = report_json(&[path_str(input)]);
        let got = r["results"].as_array().unwrap();
        assert_eq!(got.len(), 2);
        for (a, b) in measured.as_array().unwrap().iter().zip(got) {
            for k in ["mechanism", "thread", "count", "min_ns", "max_ns", "mean_ns", "percentiles_ns", "overruns"] {
                assert_eq!(a[k], b[k], "{k} from {}", input.display());
            }
        }
        assert!(out.contains("mock"), "{out}");
    }
    // The trace knows the period jitter too.
    let (r, _) = report_json(&[path_str(&t)]);
    assert_eq!(r["results"][0]["period_percentiles_ns"], measured[0]["period_percentiles_ns"]);
}

#[test]
fn cyclictest_histogram_with_known_percentiles() {
    let (r, out) = report_json(&[path_str(&fixture("known-percentiles.txt")), "--buckets", "1"]);
    let x = &r["results"][0];
    assert_eq!(x["mechanism"], "cyclictest");
    assert_eq!((x["count"].as_u64(), x["min_ns"].as_i64(), x["max_ns"].as_i64()), (Some(100), Some(1000), Some(9000)));
    let p = &x["percentiles_ns"];
    assert_eq!(
        (p["50"].as_i64(), p["90"].as_i64(), p["99"].as_i64(), p["99.9"].as_i64()),
        (Some(1000), Some(2000), Some(5000), Some(9000))
    );
    assert!(x["overruns"].is_null() && x["cpu_percent"].is_null(), "unknown, not zero");
    assert!(out.contains("buckets of 1.0 µs"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["1.0", "50", "5.000000e-1"]), "{out}");
}

#[test]
fn both_histogram_layouts_give_the_same_numbers() {
    let (a, _) = report_json(&[path_str(&fixture("cyclictest-hist-classic.txt"))]);
    let (b, _) = report_json(&[path_str(&fixture("cyclictest-hist-compact.txt"))]);
    assert_eq!(a["results"].as_array().unwrap().len(), 2);
    for (x, y) in a["results"].as_array().unwrap().iter().zip(b["results"].as_array().unwrap()) {
        for k in ["count", "min_ns", "max_ns", "mean_ns", "percentiles_ns"] {
            assert_eq!(x[k], y[k], "{k}");
        }
    }
    // The overflowed sample of thread 1 counts at its maximum.
    let t1 = &a["results"][1];
    assert_eq!(t1["count"], 2000);
    assert_eq!(t1["percentiles_ns"]["99.999"], t1["max_ns"]);
}

#[test]
fn cyclictest_json_and_ns_buckets() {
    let (r, _) =
        report_json(&[path_str(&fixture("cyclictest-hist.json")), path_str(&fixture("cyclictest-nohist.json"))]);
    let rows = r["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["count"], 1500);
    // Nearest rank over thread 0's histogram (µs: count), worked by hand:
    // 2: 810 holds rank 750 (p50); 3: 383, 4: 140, 5: 41 reach 1374 ≥ 1350
    // (p90); … 13: 24, 14: 17 reach 1485 (p99); 33 µs is rank 1499 (p99.9).
    let p = &rows[0]["percentiles_ns"];
    assert_eq!(
        (p["50"].as_i64(), p["90"].as_i64(), p["99"].as_i64(), p["99.9"].as_i64()),
        (Some(2000), Some(5000), Some(14_000), Some(33_000))
    );
    assert_eq!((rows[0]["min_ns"].as_i64(), rows[0]["max_ns"].as_i64()), (Some(2000), Some(38_000)));
    assert!(rows[2]["percentiles_ns"].is_null(), "no -h, no percentiles");
    assert_eq!(rows[2]["count"], 1000);
    let (n, _) = report_json(&[path_str(&fixture("cyclictest-hist-ns.txt")), "--hist-ns"]);
    assert_eq!(n["results"][0]["min_ns"], 2210);
    assert_eq!(n["results"][0]["count"], 1000);
}

#[test]
fn comparison_has_ratio_columns() {
    let o = rtick(&[
        "report",
        path_str(&fixture("cyclictest-hist-classic.txt")),
        path_str(&fixture("known-percentiles.txt")),
    ]);
    ok(&o);
    let out = stdout(&o);
    assert!(out.contains("ratios against cyclictest-hist-classic.txt"), "{out}");
    let line = out.lines().find(|l| l.starts_with("cyclictest T0 (known-percentiles.txt)")).expect(&out);
    // p50 1 µs against the classic file's 3 µs.
    assert!(line.split_whitespace().any(|c| c == "0.33"), "{line}");
}

/// `text` (pretty JSON) with its top-level `field` set to `value` (removed when empty).
fn versioned(text: &str, field: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    match value {
        "" => v.as_object_mut().unwrap().remove(field),
        _ => v.as_object_mut().unwrap().insert(field.into(), serde_json::from_str(value).unwrap()),
    };
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn bad_input_exits_1_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, content: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    };
    let classic = std::fs::read_to_string(fixture("cyclictest-hist-classic.txt")).unwrap();
    let cjson = std::fs::read_to_string(fixture("cyclictest-hist.json")).unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let (mj, mt) = measure_mock(dir2.path());
    let trace = std::fs::read_to_string(&mt).unwrap();
    let mjson = std::fs::read_to_string(&mj).unwrap();
    // A malformed load is an error like a malformed explain, with its line.
    let mut v: serde_json::Value = serde_json::from_str(&mjson).unwrap();
    v["load"] = serde_json::json!({ "cpus": "all" });
    let bad_load = serde_json::to_string_pretty(&v).unwrap();
    let load_line = bad_load[..bad_load.find("\"cpus\": \"all\"").unwrap()].lines().count();
    let load_want = format!(":{load_line}: the \"load\" object does not match");
    let cases: Vec<(PathBuf, &str)> = vec![
        (w("trunc.json", &mjson.as_bytes()[..mjson.len() / 2]), "invalid or truncated JSON"),
        (w("bad-load.json", bad_load.as_bytes()), &load_want),
        (w("ctrunc.json", &cjson.as_bytes()[..cjson.len() / 3]), "invalid or truncated JSON"),
        (w("chist-tail.txt", classic.lines().take(150).collect::<Vec<_>>().join("\n").as_bytes()), "truncated"),
        (
            w(
                "chist-row.txt",
                classic.lines().filter(|l| !l.starts_with("000003 ")).collect::<Vec<_>>().join("\n").as_bytes(),
            ),
            "truncated file?",
        ),
        (w("trace-cut.csv", &trace.as_bytes()[..trace.len() * 2 / 3]), ": "),
        (
            w("chist-bad.txt", classic.replacen("000003 ", "00x003 ", 1).as_bytes()),
            ":6: '00x003' is not a bucket number",
        ),
        (w("trace-bad.csv", trace.replacen(",mock,", ",mock,x,", 1).as_bytes()), ":2: 7 fields"),
        (
            w(
                "trace-lie.csv",
                format!("{}\n0,mock,0,100,250,99\n", "thread,mechanism,cycle,planned_ns,actual_ns,latency_ns")
                    .as_bytes(),
            ),
            ":2: latency_ns is not",
        ),
        // Negative counts and buckets are not dropped: the file is damaged.
        (
            w("chist-neg-overflow.txt", classic.replace("Overflows: 00000 00001", "Overflows: 00000 -0001").as_bytes()),
            ":207: '# Histogram Overflows:' '-0001' is not a count ≥ 0",
        ),
        (w("chist-neg-bucket.txt", classic.replacen("000003 ", "-00003 ", 1).as_bytes()), ":6: bucket -3 is negative"),
        (
            w("cjson-neg-count.json", cjson.replacen("\"3\": 383", "\"3\": -383", 1).as_bytes()),
            "count -383 of bucket 3",
        ),
        (w("cjson-neg-bucket.json", cjson.replacen("\"3\": 383", "\"-3\": 383", 1).as_bytes()), "bucket '-3' is not"),
        // A format version this rtick does not know is refused, naming the field and the one it reads.
        (w("v99.json", versioned(&mjson, "schema_version", "99").as_bytes()), "\"schema_version\" is 99, a version"),
        (w("vone.json", versioned(&mjson, "schema_version", "\"one\"").as_bytes()), "\"schema_version\" is \"one\""),
        (
            w("vnone.json", versioned(&mjson, "schema_version", "").as_bytes()),
            "no \"schema_version\"; this rtick reads rtick measure --json files of schema_version 1",
        ),
        (w("cv99.json", versioned(&cjson, "file_version", "99").as_bytes()), "\"file_version\" is 99, a version"),
        (w("unknown.txt", b"hello world\nthis is not a run\n"), "unknown content"),
        (w("empty.txt", b""), "unknown content"),
        (w("other.json", b"{\"answer\": 42}"), "neither rtick measure results nor cyclictest"),
        (w("audit.json", b"{\"rtick_version\": \"0.1.0\", \"verdict\": \"x\", \"findings\": []}"), "audit file"),
        (w("binary.bin", &[0xff, 0xfe, 0x00, 0x80]), "not a text file"),
        // What cannot be read says why and what to do, in words.
        (dir.path().join("missing.json"), "missing.json: no such file: check the path"),
        (dir.path().to_path_buf(), ": a directory: give a file"),
    ];
    for (path, want) in cases {
        let o = rtick(&["report", path_str(&path)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", path.display());
        assert_eq!(err.lines().count(), 1, "{}: {err}", path.display());
        assert!(err.contains(path_str(&path)) && err.contains(want), "{}: want '{want}': {err}", path.display());
        assert!(!err.contains("panicked"));
    }
    // A baseline is read by the same rules.
    let old = w("base99.json", versioned(&mjson, "schema_version", "99").as_bytes());
    let o = rtick(&["report", path_str(&mj), "--baseline", path_str(&old)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(path_str(&old)) && err.contains("\"schema_version\" is 99"), "{err}");
}

/// rtick's own --histogram file, one histogram per mechanism, each named
/// in its header with its buckets' width (here ns, from -N).
#[test]
fn rtick_histogram_of_two_mechanisms_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("h.txt");
    let mut args = vec!["measure", "-m", "mock,clock_nanosleep", "--mock-latencies=1000,3000", "-l", "20", "-N"];
    args.extend_from_slice(&PLAIN);
    args.extend_from_slice(&["--histogram", path_str(&h), "--histogram-max", "100ms"]);
    ok(&rtick(&args));
    let (j, out) = report_json(&[path_str(&h)]);
    assert_eq!(j["inputs"][0]["kind"], "rtick histogram", "{j}");
    assert!(out.contains("(rtick histogram)"), "{out}");
    let rows = j["results"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["mechanism"].as_str().unwrap()).collect();
    assert_eq!(names, ["mock", "clock_nanosleep"]);
    assert!(rows.iter().all(|r| r["count"] == 20), "{j}");
    // The mock's exact latencies, in ns buckets as the header says.
    assert_eq!((rows[0]["min_ns"].as_i64(), rows[0]["max_ns"].as_i64()), (Some(1000), Some(3000)), "{j}");
    assert_eq!(rows[0]["percentiles_ns"]["99"], 3000, "{j}");
}

/// A trace of two mechanisms (two series, each with its timeline) plots as
/// the timeline by default, not as percentiles.
#[test]
fn a_two_mechanism_trace_plots_its_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("two.csv");
    let mut csv = String::from("thread,mechanism,cycle,planned_ns,actual_ns,latency_ns\n");
    for (thread, mechanism, lat) in [(0, "mock", 500), (1, "clock_nanosleep", 30_000)] {
        for cycle in 0..20u64 {
            let planned = 1_000_000_000 + cycle * 1_000_000;
            csv.push_str(&format!("{thread},{mechanism},{cycle},{planned},{},{lat}\n", planned + lat));
        }
    }
    std::fs::write(&t, csv).unwrap();
    let png = dir.path().join("x.png");
    let o = rtick(&["report", path_str(&t), "--plot", path_str(&png)]);
    ok(&o);
    let out = stdout(&o);
    assert!(out.contains("clock_nanosleep") && out.contains("mock"), "{out}");
    assert!(out.contains(&format!("plot: {} (Timeline)", png.display())), "{out}");
    assert_eq!(png_size(&png), (1200, 720));
}

fn png_size(p: &Path) -> (u32, u32) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&b[12..16], b"IHDR");
    (u32::from_be_bytes(b[16..20].try_into().unwrap()), u32::from_be_bytes(b[20..24].try_into().unwrap()))
}

#[test]
fn plots_are_images_of_the_expected_size() {
    let dir = tempfile::tempdir().unwrap();
    let (j, t) = measure_mock(dir.path());
    let ct = fixture("cyclictest-hist-classic.txt");
    for (kind, inputs) in [("histogram", vec![&ct, &j]), ("percentiles", vec![&j, &ct]), ("timeline", vec![&t])] {
        for ext in ["png", "svg"] {
            let out = dir.path().join(format!("{kind}.{ext}"));
            let mut args = vec!["report"];
            args.extend(inputs.iter().map(|p| path_str(p)));
            args.extend_from_slice(&["--plot", path_str(&out), "--plot-kind", kind]);
            ok(&rtick(&args));
            if ext == "png" {
                assert_eq!(png_size(&out), (1200, 720), "{kind}");
            } else {
                let svg = std::fs::read_to_string(&out).unwrap();
                assert!(
                    svg.starts_with("<svg") && svg.contains("width=\"1200\"") && svg.contains("height=\"720\""),
                    "{kind}"
                );
                assert!(svg.contains("latency"), "axis label in {kind}");
            }
        }
    }
    // The default kind follows the input; measure --plot draws too.
    let d = dir.path().join("default.png");
    ok(&rtick(&["report", path_str(&t), "--plot", path_str(&d)]));
    assert_eq!(png_size(&d), (1200, 720));
    let m = dir.path().join("measure.png");
    ok(&rtick(&[
        "measure",
        "-m",
        "mock",
        "--mock-latencies=500",
        "-l",
        "20",
        "--policy",
        "other",
        "--no-mlock",
        "-q",
        "--plot",
        path_str(&m),
    ]));
    assert_eq!(png_size(&m), (1200, 720));
    // A kind the input cannot support is a usage error before the report, not an empty picture.
    let o = rtick(&["report", path_str(&ct), "--plot", path_str(&dir.path().join("x.png")), "--plot-kind", "timeline"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs an rtick --trace file"));
    assert!(!dir.path().join("x.png").exists());
    for bad in [
        &["report", path_str(&ct), "--plot", "x.gif"][..],
        &["measure", "--plot", "x.jpg", "-l", "1"],
        &["report", path_str(&ct), "--buckets", "0"],
    ] {
        let o = rtick(bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
    let o = rtick(&["report", path_str(&ct), "--buckets", "1ns"]);
    assert_eq!(o.status.code(), Some(2), "finer than the source's µs buckets");
}

#[test]
fn hdr_interval_log_reads_back() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let dir = tempfile::tempdir().unwrap();
    let (_, t) = measure_mock(dir.path());
    let log = dir.path().join("run.hlog");
    ok(&rtick(&["report", path_str(&t), path_str(&fixture("known-percentiles.txt")), "--hdr-log", path_str(&log)]));
    let bytes = std::fs::read(&log).unwrap();
    let mut total = 0u64;
    let mut tags = Vec::new();
    for e in IntervalLogIterator::new(&bytes) {
        if let Ok(LogEntry::Interval(h)) = e {
            tags.push(h.tag().map(|t| t.to_string()).unwrap_or_default());
            let raw = base64_decode(h.encoded_histogram());
            let hist: hdrhistogram::Histogram<u64> = Deserializer::new().deserialize(&mut raw.as_slice()).unwrap();
            total += hist.len();
        }
    }
    assert_eq!(total, 25 * 2 + 100, "every sample of every series is in the log");
    assert!(tags.iter().any(|t| t.starts_with("mock/T0")) && tags.iter().any(|t| t.starts_with("cyclictest/T0")));
    assert!(String::from_utf8_lossy(&bytes).contains("early wake-ups"));
}

#[test]
fn hdr_log_clamps_what_it_cannot_hold_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("huge.txt");
    std::fs::write(
        &h,
        "# Histogram\n000000 000001\n999999999999 000005\n# Total: 000000006\n# Min Latencies: 00000\n# Avg Latencies: 00001\n# Max Latencies: 999999999999\n",
    )
    .unwrap();
    let log = dir.path().join("huge.hlog");
    ok(&rtick(&["report", path_str(&h), "--hdr-log", path_str(&log)]));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("cyclictest/T0: 5 latencies beyond an hour logged as an hour"), "{text}");
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| *c != b'=').map(val).collect();
    bytes
        .chunks(4)
        .flat_map(|c| {
            let n = c.iter().enumerate().fold(0u32, |a, (i, v)| a | (u32::from(*v) << (18 - 6 * i)));
            let k = c.len() * 6 / 8;
            (0..k).map(move |i| (n >> (16 - 8 * i)) as u8)
        })
        .collect()
}

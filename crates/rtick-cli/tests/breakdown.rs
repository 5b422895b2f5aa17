//! `rtick report` on a run made with `measure --explain`, from committed
//! files of a real run (tests/fixtures/explain: the mock mechanism has no
//! kernel events): the phase table and spike lines, the breakdown plot,
//! `report --json`, and bad files refused in one line.

mod common;
use common::*;

#[path = "common/breakdown.rs"]
mod breakdown_check;
use breakdown_check::*;

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/explain").join(name)
}

/// Nearest rank, computed here rather than with rtick's own code.
fn nearest_rank(sorted: &[i64], q: f64) -> i64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[test]
fn report_prints_the_fixture_run_as_measure_did() {
    report_prints_the_json(&fixture("run.json"), &fixture("run.csv"));
}

#[test]
fn the_breakdown_of_a_trace_is_its_columns_percentiles() {
    let text = std::fs::read_to_string(fixture("run.csv")).unwrap();
    let mut phases: [Vec<i64>; 4] = Default::default();
    let (mut rows, mut matched) = (0, 0);
    for l in text.lines().skip(1).filter(|l| l.contains(",timerfd,")) {
        let f: Vec<&str> = l.split(',').collect();
        rows += 1;
        if f[6].is_empty() {
            continue;
        }
        matched += 1;
        for (k, p) in phases.iter_mut().enumerate() {
            p.push(f[6 + k].parse().unwrap());
        }
    }
    let want: [[i64; 3]; 4] = std::array::from_fn(|k| {
        let mut v = phases[k].clone();
        v.sort_unstable();
        [nearest_rank(&v, 0.5), nearest_rank(&v, 0.99), *v.last().unwrap()]
    });
    let o = rtick(&["report", "-N", path_str(&fixture("run.csv"))]);
    ok(&o);
    let got = phase_rows(&stdout(&o));
    let t = got.iter().find(|r| r.0 == "timerfd").expect("a timerfd row");
    assert_eq!((t.2.as_str(), t.3), (format!("{matched}/{rows}").as_str(), want));
    // The same figures measure wrote into the JSON.
    let run = json(&fixture("run.json"));
    assert_eq!(rows_of_json(&run).iter().find(|r| r.0 == "timerfd").unwrap().3, want);
    // A trace has no culprits: its worst wake-ups, with their phases.
    assert!(stdout(&o).contains("worst wake-ups of timerfd T0 (a trace has the phases, not the culprits):"));
}

#[test]
fn the_breakdown_is_drawn_from_json_trace_or_both() {
    for inputs in [vec![fixture("run.json")], vec![fixture("run.csv")], vec![fixture("run.json"), fixture("run.csv")]] {
        let dir = tempfile::tempdir().unwrap();
        let refs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
        draws_whole_pictures(&refs, dir.path());
    }
    // A run without phases cannot draw one: a usage error before the report, and no file.
    let dir = tempfile::tempdir().unwrap();
    let ct = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/cyclictest-hist-classic.txt");
    let out = dir.path().join("b.png");
    let o = rtick(&["report", path_str(&ct), "--plot", path_str(&out), "--plot-kind", "breakdown"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("needs the kernel phases of a run"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(!out.exists());
    no_temporaries(dir.path());
}

#[test]
fn report_json_carries_the_explain_object() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    ok(&rtick(&["report", path_str(&fixture("run.json")), path_str(&fixture("run.csv")), "--json", path_str(&out)]));
    let r = json(&out);
    assert_eq!(r["inputs"][0]["explain"], json(&fixture("run.json"))["explain"]);
    assert!(r["inputs"][1].get("explain").is_none(), "a trace has no explain object: {}", r["inputs"][1]);
}

#[test]
fn bad_explain_files_are_one_line_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let json_text = std::fs::read_to_string(fixture("run.json")).unwrap();
    let trace_text = std::fs::read_to_string(fixture("run.csv")).unwrap();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    // The first result's "matched" removed: serde names the field and the line the object ends on.
    let mut v: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    v["explain"]["results"][0].as_object_mut().unwrap().remove("matched");
    let missing = serde_json::to_string_pretty(&v).unwrap();
    let end_of_object = {
        // The line of the closing brace of explain.results[0]: after its "spikes".
        let start = missing.find("\"explain\"").unwrap();
        let first = start + missing[start..].find("\"mechanism\": \"clock_nanosleep\"").unwrap();
        let close = first + missing[first..].find("\n      }").unwrap() + 1;
        missing[..close].lines().count() + 1
    };
    let mut rows: Vec<String> = trace_text.lines().map(str::to_string).collect();
    rows[3] = rows[3].rsplitn(3, ',').nth(2).unwrap().to_string(); // 8 fields on line 4
    let eight = rows.join("\n");
    let mut rows: Vec<String> = trace_text.lines().map(str::to_string).collect();
    // Phases that do not add up, on line 3: one more ns of return to user.
    let (head, last) = rows[2].rsplit_once(',').unwrap();
    rows[2] = format!("{head},{}", last.parse::<i64>().unwrap() + 1);
    let wrong_sum = rows.join("\n");
    let cases = [
        (
            write("missing.json", missing),
            format!(":{end_of_object}: the \"explain\" object"),
            "missing field `matched`",
        ),
        (write("eight.csv", eight), ":4: 8 fields".to_string(), "expected thread,mechanism"),
        (write("sum.csv", wrong_sum), ":3: the phases add up to".to_string(), "not to latency_ns"),
    ];
    for (path, at, what) in cases {
        let (png, js) = (dir.path().join("x.png"), dir.path().join("x.json"));
        let o = rtick(&["report", path_str(&path), "--plot", path_str(&png), "--json", path_str(&js)]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", path.display());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{}{at}", path.display())), "want '{at}': {err}");
        assert!(err.contains(what), "want '{what}': {err}");
        assert!(!png.exists() && !js.exists(), "no output file after a bad input");
    }
    no_temporaries(dir.path());
}

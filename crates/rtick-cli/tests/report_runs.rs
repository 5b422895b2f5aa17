//! `rtick report` of real `rtick attach` and `rtick noise` --json files,
//! made here by short runs: it prints the summary the command printed at
//! its end (the same text), checks the command's --fail-if with the same
//! verdict and exit status, draws the command's picture, and refuses a mix
//! of kinds in one line. Root, tracefs and a C compiler needed; under CI a
//! skip is a failure.

mod common;
use common::*;

use std::path::Path;
use std::process::{Command, Output};

use common::tracee::{periodic, ready};

/// The live output less its --fail-if verdict (its last line).
fn summary_of(live: &str) -> &str {
    let body = live.trim_end_matches('\n');
    &body[..body.rfind('\n').expect("a verdict line") + 1]
}

/// The verdict: the last line.
fn verdict_of(out: &str) -> &str {
    out.trim_end().lines().last().unwrap_or_default()
}

/// Report of `file` with `args`: the same summary as `live` printed, and
/// --fail-if's verdict and status as the live run's.
fn same_as_live(file: &Path, live: &Output, fail_if: &str) -> Output {
    let rep = rtick(&["report", path_str(file), "--fail-if", fail_if]);
    let (live_out, rep_out) = (stdout(live), stdout(&rep));
    assert!(rep_out.contains(summary_of(&live_out)), "report:\n{rep_out}\nlive:\n{live_out}\n{}", stderr(&rep));
    assert_eq!(verdict_of(&rep_out), verdict_of(&live_out));
    assert_eq!(rep.status.code(), live.status.code(), "{rep_out}");
    rep
}

fn png(path: &Path) {
    let bytes = std::fs::read(path).expect("the plot is written");
    assert!(bytes.starts_with(b"\x89PNG"), "{}", path.display());
}

#[test]
fn an_attach_file_is_reported_gated_and_drawn_as_attach_printed_it() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = periodic(dir.path(), "rr-periodic") else { return };
    // 3 s of a 1 ms loop (its first wait 300 ms after its start), attached for 1.5 s.
    let record = dir.path().join("record");
    let mut target = Command::new(&exe).arg(&record).args(["3000", "1000", "fifo"]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let json = dir.path().join("attach.json");
    let pid = target.id().to_string();
    // Fails on any timed wait: a verdict known in advance (exit 3).
    let live = rtick(&["attach", &pid, "-D", "1.5s", "-q", "--json", path_str(&json), "--fail-if", "max>=0"]);
    target.wait().unwrap();
    assert_eq!(live.status.code(), Some(3), "{}\n{}", stdout(&live), stderr(&live));
    assert!(verdict_of(&stdout(&live)).starts_with("FAIL max of rr-periodic T"), "{}", stdout(&live));
    let rep = same_as_live(&json, &live, "max>=0");
    assert!(stdout(&rep)
        .starts_with(&format!("== {} (rtick attach JSON)\nattach: pid {pid} (rr-periodic)", json.display())));
    // A passing condition passes in both.
    let rep = rtick(&["report", path_str(&json), "--fail-if", "max>1h"]);
    assert_eq!(rep.status.code(), Some(0), "{}", stdout(&rep));
    assert!(verdict_of(&stdout(&rep)).starts_with("PASS"), "{}", stdout(&rep));
    // The cycle's least margin is a figure of its row (any margin is below
    // an hour, and none above).
    let file = common::json(&json);
    let least = file["threads"][0]["cycle"]["margin_ns"][0].as_i64().expect("a 1 ms loop's margin");
    assert_eq!(file["results"][0]["margin_min_ns"].as_i64(), Some(least), "{}", file["results"]);
    let under = rtick(&["report", path_str(&json), "--fail-if", "margin<1h"]);
    assert_eq!(under.status.code(), Some(3), "{}", stdout(&under));
    assert!(verdict_of(&stdout(&under)).starts_with("FAIL margin of rr-periodic T"), "{}", stdout(&under));
    let over = rtick(&["report", path_str(&json), "--fail-if", "margin>1h"]);
    assert_eq!(over.status.code(), Some(0), "{}", stdout(&over));
    // The picture, from the lateness over time the file holds.
    let buckets = file["threads"][0]["over_time"]["buckets"].as_array().expect("the lateness over time").len();
    assert!(buckets > 10, "{buckets} buckets of 5 ms in 1.5 s of a 1 ms loop");
    let plot = dir.path().join("attach.png");
    ok(&rtick(&["report", path_str(&json), "--plot", path_str(&plot)]));
    png(&plot);
    // Two attach files side by side: their rows compared.
    let two = rtick(&["report", path_str(&json), path_str(&json)]);
    ok(&two);
    assert!(stdout(&two).contains("comparison"), "{}", stdout(&two));
    // An attach condition in noise's grammar is the user's to fix.
    let bad = rtick(&["report", path_str(&json), "--fail-if", "noise>1%"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
}

#[test]
fn a_noise_file_is_reported_gated_and_drawn_as_noise_printed_it() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("noise.json");
    // `gaps>=0` holds on every CPU: a verdict known in advance (exit 3).
    let live = rtick(&["noise", "-D", "1s", "-q", "--json", path_str(&json), "--fail-if", "gaps>=0"]);
    assert_eq!(live.status.code(), Some(3), "{}\n{}", stdout(&live), stderr(&live));
    let file = common::json(&json);
    assert_eq!(file["gates"]["passed"], false);
    assert!(["tsc", "vdso"].contains(&file["loop_clock"]["clock"].as_str().unwrap()), "{}", file["loop_clock"]);
    assert!(file["cpus"][0]["dropped_instances"].is_u64());
    let rep = same_as_live(&json, &live, "gaps>=0");
    assert!(stdout(&rep).contains("noise per CPU"), "{}", stdout(&rep));
    let rep = rtick(&["report", path_str(&json), "--fail-if", "gaps<0"]);
    assert_eq!(rep.status.code(), Some(0), "{}", stdout(&rep));
    let plot = dir.path().join("noise.png");
    let drawn = rtick(&["report", path_str(&json), "--plot", path_str(&plot)]);
    ok(&drawn);
    assert!(stdout(&drawn).contains("largest gaps"), "{}", stdout(&drawn));
    png(&plot);
    // Two noise runs: each reported, nothing to compare row by row.
    ok(&rtick(&["report", path_str(&json), path_str(&json)]));
    // A mix of kinds, and a measure-only option: one line, exit 2, no file written.
    let out = dir.path().join("report.json");
    let measure = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/report.json");
    for args in [
        vec!["report", path_str(&json), path_str(&measure), "--json", path_str(&out)],
        vec!["report", path_str(&json), "--buckets", "5", "--json", path_str(&out)],
        vec!["report", path_str(&measure), "--fail-if", "max>1ms", "--json", path_str(&out)],
    ] {
        let bad = rtick(&args);
        assert_eq!(bad.status.code(), Some(2), "{args:?}: {}", stderr(&bad));
        assert_eq!(stderr(&bad).lines().count(), 1, "{args:?}: {}", stderr(&bad));
        assert!(!out.exists(), "{args:?}");
    }
}

/// An attach file of an rtick before result rows, with 1550 timed waits.
fn older_attach_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/attach-older.json")
}

/// --fail-if with an attach file that holds no rows is the user's to fix
/// (re-run attach), not a run that failed for want of timed waits.
#[test]
fn fail_if_refuses_an_older_attach_file_without_rows() {
    let old = older_attach_file();
    let out = rtick(&["report", path_str(&old), "--fail-if", "p99>1h"]);
    assert_eq!(out.status.code(), Some(2), "{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("older rtick") && stderr(&out).contains("re-run rtick attach"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
}

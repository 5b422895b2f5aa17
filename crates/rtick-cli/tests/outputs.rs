//! Where output files go: `-` is standard output (the report for people then
//! goes to stderr), special files are written in place and never replaced, a
//! symlink is followed, and a new file gets the umask's mode.

mod common;
use common::*;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};

const MOCK: [&str; 6] = ["measure", "-m", "mock", "--mock-latencies=1000,3000", "-l", "4"];

#[test]
fn dash_is_stdout_and_the_report_moves_to_stderr() {
    let measure = [&MOCK[..], &PLAIN].concat();
    for (cmd, dest) in [(&measure[..], "-"), (&measure[..], "/proc/self/fd/1"), (&["audit"][..], "-")] {
        let o = rtick(&[cmd, &["--json", dest]].concat());
        assert!(o.status.code().is_some_and(|c| c == 0 || c == 3), "{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is the JSON alone");
        assert!(j["rtick_version"].is_string());
        if cmd[0] == "measure" {
            assert_eq!(j["results"][0]["count"], 4);
            assert!(stderr(&o).contains("mock"), "the table went to stderr: {}", stderr(&o));
        } else {
            assert!(stderr(&o).contains("verdict:"), "{}", stderr(&o));
        }
    }
    let o = rtick(&[&MOCK[..], &PLAIN, &["--json", "-", "--trace", "-"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("only one output can go to standard output"), "{}", stderr(&o));
}

#[test]
fn a_fifo_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = rtick(&[&MOCK[..], &PLAIN, &["--json", path_str(&fifo)]].concat());
    ok(&o);
    let text = reader.join().unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["results"][0]["count"], 4);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO, not replaced");
}

#[test]
fn symlinks_are_followed_and_modes_kept() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    ok(&rtick(&[&MOCK[..], &PLAIN, &["--json", path_str(&link)]].concat()));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    let real = dir.path().join("real.json");
    assert_eq!(json(&real)["results"][0]["count"], 4);
    // A new file: the umask's mode, not the temporary file's 0600.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask =
        status.lines().find_map(|l| l.strip_prefix("Umask:")).map(|v| u32::from_str_radix(v.trim(), 8).unwrap());
    match umask {
        Some(umask) => assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o666 & !umask),
        // /proc/PID/status shows the umask since Linux 4.7.
        None => skip("no Umask: line in /proc/self/status to check the new file's mode against", true),
    }
    // An existing file keeps its mode.
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    ok(&rtick(&[&MOCK[..], &PLAIN, &["--json", path_str(&link)]].concat()));
    assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
}

#[test]
fn two_outputs_naming_one_file_are_a_usage_error_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    std::fs::write(p("old.json"), "kept\n").unwrap();
    std::os::unix::fs::symlink("old.json", p("link.json")).unwrap();
    std::fs::hard_link(p("old.json"), p("hard.json")).unwrap();
    let new = path_str(&p("new.json")).to_string();
    let respelled = format!("{}/./new.json", dir.path().display());
    let measure = |a: &str, b: &str, c: &str, d: &str| rtick(&[&MOCK[..], &PLAIN, &[a, b, c, d]].concat());
    let cases = [
        ("--trace", measure("--json", &new, "--trace", &new)),
        ("--histogram", measure("--json", &new, "--histogram", &respelled)),
        ("--trace", measure("--json", path_str(&p("link.json")), "--trace", path_str(&p("old.json")))),
        ("--histogram", measure("--trace", path_str(&p("hard.json")), "--histogram", path_str(&p("old.json")))),
        ("--plot", measure("--json", path_str(&p("x.svg")), "--plot", path_str(&p("x.svg")))),
        ("--hdr-log", rtick(&["report", path_str(&p("old.json")), "--json", &new, "--hdr-log", &respelled])),
        (
            "--hdr-log",
            rtick(&[
                "report",
                path_str(&p("old.json")),
                "--json",
                path_str(&p("link.json")),
                "--hdr-log",
                path_str(&p("hard.json")),
            ]),
        ),
    ];
    for (option, o) in cases {
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{option}: ")) && err.contains("is the same file as"), "{err}");
        assert!(!err.contains("count"), "nothing ran: {err}");
    }
    assert!(!p("new.json").exists() && !p("x.svg").exists(), "no file was created");
    assert_eq!(std::fs::read_to_string(p("old.json")).unwrap(), "kept\n");
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 3, "no temporary file was left");
    // Special files are written in place and may be shared.
    ok(&measure("--json", "/dev/null", "--trace", "/dev/null"));
}

#[test]
fn a_file_that_cannot_be_replaced_is_named_for_its_real_cause() {
    // /proc/version exists, but /proc takes no temporary file to rename over it.
    for (dest, want) in [
        ("/proc/version", "--json: cannot replace /proc/version: cannot create a temporary file in /proc"),
        ("/proc/rtick-new.json", "--json: cannot create /proc/rtick-new.json: cannot create a temporary file in /proc"),
        (
            "/nonexistent-dir/r.json",
            "--json: cannot create /nonexistent-dir/r.json: the directory /nonexistent-dir does not exist",
        ),
    ] {
        let o = rtick(&[&MOCK[..], &PLAIN, &["--json", dest]].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "want '{want}': {err}");
        assert!(!err.contains("No such file"), "{err}");
    }
}

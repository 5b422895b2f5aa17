//! Values at the edges of what the command line accepts: products of user
//! input that overflow are usage errors (exit 2, one line), never a panic or
//! a wrapped-around number.

mod common;
use common::*;

/// Exit 2 with one line on stderr that contains every one of `want`.
fn usage_error(args: &[&str], want: &[&str]) {
    let o = rtick(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, got: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: should say '{w}': {err}");
    }
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn products_that_overflow_are_usage_errors() {
    usage_error(
        &["measure", "-l", "9223372036854775807", "-i", "1s", "--policy", "other", "-q"],
        &["9223372036854775807 loops of 1.000 s last longer than 73 years", "fewer loops"],
    );
    // More loops than i64 holds: no silent wrap to a negative count.
    usage_error(&["measure", "-l", "18446744073709551615", "-i", "1ns", "--policy", "other", "-q"], &["loops"]);
    // Each mechanism's duration fits; all of them together do not.
    usage_error(&["measure", "-D", "20000d", "-m", "all", "--policy", "other", "-q"], &["mechanisms", "73 years"]);
    usage_error(
        &["measure", "-D", "1h", "--compare", "-m", "spin,hybrid", "--slice", "1ns", "--policy", "other", "-q"],
        &["longer slices"],
    );
    usage_error(&["drift", "-D", "50000d", "-m", "timerfd,absolute-loop"], &["-D/--duration", "292 years"]);
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report").join(name)
}

/// `rtick report --plot` through a shell that sets the umask first.
fn report_plot_with_umask(
    umask: &str,
    input: &std::path::Path,
    plot: &std::path::Path,
    extra: &str,
) -> std::process::Output {
    let script = format!("umask {umask}; exec \"$0\" report \"$1\" --plot \"$2\" {extra}");
    std::process::Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_rtick"), path_str(input), path_str(plot)])
        .output()
        .unwrap()
}

#[test]
fn plots_go_through_the_atomic_writer() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let ct = fixture("cyclictest-hist-classic.txt");
    let dir = tempfile::tempdir().unwrap();
    // A new file gets the umask's mode (it was 0600, the temporary file's).
    for (umask, want) in [("022", 0o644), ("027", 0o640)] {
        for ext in ["png", "svg"] {
            let out = dir.path().join(format!("new-{umask}.{ext}"));
            ok(&report_plot_with_umask(umask, &ct, &out, ""));
            assert_eq!(mode(&out), want, "{} with umask {umask}", out.display());
        }
    }
    // A symlink is followed: the link stays, its target gets the picture, and
    // the format is the one the given name asks for.
    let real = dir.path().join("real.picture");
    let link = dir.path().join("link.png");
    std::os::unix::fs::symlink("real.picture", &link).unwrap();
    ok(&report_plot_with_umask("022", &ct, &link, ""));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert!(std::fs::read(&real).unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));
    // An existing file keeps its mode.
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o604)).unwrap();
    ok(&report_plot_with_umask("077", &ct, &link, ""));
    assert_eq!(mode(&real), 0o604);
    // A failure leaves the old file as it was and no temporary file behind
    // (a plot kind the input cannot give is refused before anything runs,
    // exit 2, since #18).
    let before = std::fs::read(&real).unwrap();
    let o = report_plot_with_umask("022", &ct, &link, "--plot-kind timeline");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&real).unwrap(), before, "untouched");
    let o = report_plot_with_umask("022", &ct, &dir.path().join("never.svg"), "--plot-kind timeline");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let mut names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["link.png", "new-022.png", "new-022.svg", "new-027.png", "new-027.svg", "real.picture"]);
    // A FIFO is written in place, never replaced.
    let fifo = dir.path().join("pipe.svg");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    ok(&rtick(&["report", path_str(&ct), "--plot", path_str(&fifo)]));
    assert!(reader.join().unwrap().starts_with("<svg"));
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
    // An unwritable place is a usage error found before anything is read.
    let o = rtick(&["report", "/nonexistent-input", "--plot", "/nonexistent-dir/x.png"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("--plot: cannot create /nonexistent-dir/x.png: the directory /nonexistent-dir does not exist"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[cfg_attr(not(feature = "mock"), ignore = "drives the hidden -m mock: needs --features mock")]
fn the_command_line_chooses_the_tracefs() {
    let fs = tempfile::tempdir().unwrap();
    std::fs::write(fs.path().join("trace_marker"), "").unwrap();
    std::fs::write(fs.path().join("tracing_on"), "1\n").unwrap();
    let run = |tracefs: &std::path::Path| {
        let args = ["measure", "-m", "mock", "--mock-latencies=1000,9000", "-l", "10", "-b", "5", "--tracemark"];
        rtick(&[&args[..], &PLAIN, &["--tracefs", path_str(tracefs)]].concat())
    };
    ok(&run(fs.path()));
    let mark = std::fs::read_to_string(fs.path().join("trace_marker")).unwrap();
    assert_eq!(mark, "rtick: hit latency threshold (9000 > 5000 ns): mock T0 cycle 1\n");
    // A directory that is not a tracefs: a run-time failure in one line.
    let empty = tempfile::tempdir().unwrap();
    let o = run(empty.path());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("is not a tracefs directory"), "{}", stderr(&o));
}

#[test]
fn named_options_are_parsed_by_clap_and_list_their_values() {
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["--clock", "sundial"],
            &["invalid value 'sundial' for '--clock <CLOCK>': one of: monotonic, realtime, tai, boottime"],
        ),
        (&["--overrun", "panic"], &["invalid value 'panic' for '--overrun <POLICY>': one of: skip, catch-up"]),
        (
            &["--policy", "fastest"],
            &["invalid value 'fastest' for '--policy <POLICY>': one of: other, batch, idle, fifo, rr"],
        ),
        (
            &["--hybrid-slack", "soon"],
            &["invalid value 'soon' for '--hybrid-slack <auto|TIME>': 'soon' is not a number", "give auto or a time"],
        ),
    ];
    for (args, want) in cases {
        usage_error(&[&["measure", "-l", "1"], args].concat(), want);
    }
}

#[test]
#[cfg_attr(not(feature = "mock"), ignore = "drives the hidden -m mock: needs --features mock")]
fn named_options_take_the_library_spellings_too() {
    // Kernel names, cyclictest's numbers.
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let o = rtick(&[
        "measure",
        "-m",
        "mock",
        "--mock-latencies=1000",
        "-l",
        "2",
        "--no-mlock",
        "-q",
        "-c",
        "CLOCK_REALTIME",
        "--policy",
        "SCHED_OTHER",
        "--overrun",
        "catchup",
        "--hybrid-slack",
        "20",
        "--json",
        path_str(&j),
    ]);
    ok(&o);
    let c = &json(&j)["config"];
    assert_eq!(
        (c["clock"].as_str(), c["policy"].as_str(), c["overrun"].as_str()),
        (Some("realtime"), Some("SCHED_OTHER"), Some("catch-up")),
        "{c}"
    );
}

//! Every invalid value exits 2 with one line naming the option, creates no
//! output file and changes nothing.

mod common;
use common::*;

#[test]
fn invalid_values_exit_2_with_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["-i", "0"], "--interval"),
        (&["-i", "-5"], "--interval"),
        (&["-i", "abc"], "--interval"),
        (&["-i", "5 parsecs"], "--interval"),
        (&["-i", "0.5ns"], "less than 1 ns"),
        (&["-l", "0"], "--loops"),
        (&["-l", "x"], "--loops"),
        (&["-D", "0"], "--duration"),
        (&["-D", "soon"], "--duration"),
        (&["-m", "teleport"], "--mechanism"),
        (&["-m", "clock_nanosleep,bogus"], "--mechanism"),
        (&["--policy", "fastest"], "--policy"),
        (&["--clock", "sundial"], "--clock"),
        (&["--overrun", "panic"], "--overrun"),
        (&["-p", "0"], "--priority"),
        (&["-p", "100"], "--priority"),
        (&["-p", "-3"], "--priority"),
        (&["--policy", "fifo", "-p", "150"], "--priority"),
        (&["--policy", "other", "-p", "5"], "--priority"),
        (&["-a", "4096"], "--affinity"),
        (&["-a", "zero"], "--affinity"),
        (&["-t", "0"], "--threads"),
        (&["-m", "itimer", "-t", "2"], "itimer"),
        (&["-m", "itimer", "-i", "1500ns"], "itimer"),
        (&["--hybrid-slack", "2ms", "-i", "1ms"], "--hybrid-slack"),
        (&["--hybrid-slack", "soon"], "--hybrid-slack"),
        (&["--timer-slack", "0"], "--timer-slack"),
        (&["--dma-latency", "-1"], "--dma-latency"),
        (&["-b", "0"], "--breaktrace"),
        // A negative time with a unit is a value, not an unknown option.
        (&["-b", "-5us"], "--breaktrace"),
        (&["-D", "-1s"], "--duration"),
        (&["-i", "-1ms"], "--interval"),
        (&["--warm-up", "-2s"], "--warm-up"),
        (&["--histogram-max", "-1ms"], "--histogram-max"),
        (&["--json", "/nonexistent-dir/r.json"], "--json"),
        (&["--trace", "/nonexistent-dir/t.csv"], "--trace"),
        (&["--histogram", "/"], "--histogram"),
        (&["--frobnicate"], "--frobnicate"),
        // Contradictions: one of the two would win without a word.
        (&["-S", "-a", "0"], "'--smp' cannot be used with '--affinity"),
        (&["-S", "-t", "4"], "'--smp' cannot be used with '--threads"),
        (&["--mlock", "--no-mlock"], "'--mlock' cannot be used with '--no-mlock'"),
        // Options of an option not given would be ignored.
        (&["--slice", "2"], "--compare"),
        // Nothing to compare.
        (&["--compare", "-m", "timerfd"], "--compare needs at least 2 mechanisms, and -m names only timerfd"),
        (&["--compare", "-m", "spin,spin"], "-m names only spin: add another (-m spin,clock_nanosleep)"),
        (&["--histogram-max", "50"], "--histogram"),
    ];
    for (args, option) in cases {
        let (o, left) = measure_with(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line, got: {err}");
        assert!(err.contains(option), "{args:?}: should name {option}: {err}");
        // The harness's own options never collide with the case's.
        assert!(!err.contains("cannot be used multiple times"), "{args:?}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}: printed {}", stdout(&o));
        assert!(left.is_empty(), "{args:?}: left files behind: {left:?}");
    }
}

/// `rtick measure ARGS`, with `--json DIR/out.json` and bounded by `-l 5`
/// unless the case gives those options itself (clap would refuse the second
/// one as a duplicate, not the check under test). Returns the output and the
/// files left in DIR.
fn measure_with(args: &[&str]) -> (std::process::Output, Vec<std::path::PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("out.json");
    let sets = |options: &[&str]| args.iter().any(|a| options.contains(a));
    let mut full = vec!["measure"];
    if !sets(&["--json"]) {
        full.extend(["--json", path_str(&j)]);
    }
    if !sets(&["-l", "--loops", "-D", "--duration"]) {
        full.extend(["-l", "5"]);
    }
    full.extend_from_slice(args);
    let o = rtick(&full);
    let left = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    (o, left)
}

/// The loop count's own validation, not a clash with another `--loops`.
#[test]
fn loops_are_refused_for_their_value() {
    for (args, why) in [
        (&["-l", "0"][..], "'0' must be greater than zero"),
        (&["--loops", "0"], "'0' must be greater than zero"),
        (&["-l", "x"], "'x' is not a whole number of loops"),
        (&["-l", "1.5"], "'1.5' is not a whole number of loops"),
    ] {
        let (o, left) = measure_with(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--loops") && err.contains(why), "{args:?}: should refuse the value ({why}): {err}");
        assert!(left.is_empty(), "{args:?}: left files behind: {left:?}");
    }
}

#[test]
fn help_and_version_exit_0() {
    for a in [&["--help"][..], &["--version"], &["measure", "--help"]] {
        let o = rtick(a);
        assert_eq!(o.status.code(), Some(0), "{a:?}");
    }
}

/// `rtick ARGS` refused before anything is done: exit 2, one line with
/// every `why`, nothing on stdout.
fn refused(args: &[&str], why: &[&str]) {
    let o = rtick(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, got: {err}");
    for w in why {
        assert!(err.contains(w), "{args:?}: should say {w:?}: {err}");
    }
    assert!(stdout(&o).is_empty(), "{args:?}: printed {}", stdout(&o));
}

#[test]
fn report_options_are_checked_before_anything_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report/cyclictest-hist.json");
    let png = dir.path().join("p.png");
    let plot = ["report", fixture, "--plot", path_str(&png), "--plot-kind"];
    refused(&[&plot[..], &["pie"]].concat(), &["--plot-kind", "histogram, timeline, percentiles, breakdown"]);
    // No kernel phases in a run without --explain: a usage error, before the report.
    refused(&[&plot[..], &["breakdown"]].concat(), &["--plot-kind breakdown", "measure --explain"]);
    refused(&[&plot[..], &["timeline"]].concat(), &["--plot-kind timeline", "--trace"]);
    refused(&["report", fixture, "--plot-kind", "histogram"], &["--plot"]);
    refused(&["report", fixture, "--buckets", "-1us"], &["--buckets", "must not be negative"]);
    refused(&["report", fixture, "--buckets", "0"], &["--buckets", "greater than zero"]);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "no plot file");
}

#[test]
fn monitor_listen_says_the_form_it_takes() {
    for bad in ["nonsense", ":99999", "127.0.0.1:http", "no-such-host.invalid:9560"] {
        refused(&["monitor", "--listen", bad, "-D", "1"], &["--listen", "IP:PORT", "127.0.0.1:9464"]);
    }
    refused(&["monitor", "--spike", "-5us"], &["--spike", "must not be negative"]);
    refused(&["monitor", "-D", "-1s"], &["--duration", "must not be negative"]);
}

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
        (&["--hybrid-slack", "2ms", "-i", "1ms"], "--hybrid-slack"),
        (&["--hybrid-slack", "soon"], "--hybrid-slack"),
        (&["--timer-slack", "0"], "--timer-slack"),
        (&["--dma-latency", "-1"], "--dma-latency"),
        (&["-b", "0"], "--breaktrace"),
        (&["--json", "/nonexistent-dir/r.json"], "--json"),
        (&["--trace", "/nonexistent-dir/t.csv"], "--trace"),
        (&["--histogram", "/"], "--histogram"),
        (&["--frobnicate"], "--frobnicate"),
    ];
    for (args, option) in cases {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("out.json");
        let mut full = vec!["measure", "-l", "5", "--json", path_str(&j)];
        full.extend_from_slice(args);
        let o = rtick(&full);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line, got: {err}");
        assert!(err.contains(option), "{args:?}: should name {option}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}: printed {}", stdout(&o));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
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

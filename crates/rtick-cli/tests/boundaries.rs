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
        &["9223372036854775807 loops of 1.000 s last longer than 292 years", "fewer loops"],
    );
    // More loops than i64 holds: no silent wrap to a negative count.
    usage_error(&["measure", "-l", "18446744073709551615", "-i", "1ns", "--policy", "other", "-q"], &["loops"]);
    // Each mechanism's duration fits; all of them together do not.
    usage_error(&["measure", "-D", "50000d", "-m", "all", "--policy", "other", "-q"], &["mechanisms", "292 years"]);
    usage_error(
        &["measure", "-D", "1h", "--compare", "-m", "spin,hybrid", "--slice", "1ns", "--policy", "other", "-q"],
        &["longer slices"],
    );
    usage_error(&["drift", "-D", "50000d", "-m", "timerfd,absolute-loop"], &["-D/--duration", "292 years"]);
}

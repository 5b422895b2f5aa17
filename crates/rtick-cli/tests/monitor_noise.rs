//! `rtick monitor --noise 1` scraped by a real Prometheus: the gap
//! histogram answers a quantile query, the per-source noise adds up to no
//! more than the gaps, no thread name or id becomes a label, promtool
//! accepts the exposition, and the trace instance goes away on SIGTERM.
//! Root, tracefs, two CPUs and Prometheus needed; under CI a skip is a failure.

mod common;

use std::time::Duration;

use common::monitor::Monitor;
use common::prometheus::{self, get, Prometheus};
use common::{skip, tracee};

#[test]
fn prometheus_reads_the_noise_per_cpu_and_source() {
    if !prometheus::installed() {
        return skip("prometheus/promtool not installed (scripts/setup installs them)", false);
    }
    if !tracee::ready_on_cpu_1("these tests spin") {
        return;
    }
    // -D bounds the run if this test dies.
    let mut m = Monitor::start(&["--noise", "1", "-q", "-D", "120"]);
    let dir = tempfile::tempdir().unwrap();
    let p = Prometheus::start(&m.target());
    let wait = Duration::from_secs(60);
    // Some gaps, scraped twice or more: a rate and a quantile have values.
    p.wait_value("rtick_noise_gap_seconds_count{cpu=\"1\"} > 0", wait);
    let p99 = p.wait_value("histogram_quantile(0.99, rate(rtick_noise_gap_seconds_bucket{cpu=\"1\"}[10s]))", wait);
    assert!(p99 > 0.0, "p99 of the gaps: {p99}");
    let share = p.wait_value("sum(rate(rtick_noise_seconds_total{cpu=\"1\"}[10s]))", wait);
    assert!((0.0..1.0).contains(&share), "the share of CPU 1 taken: {share}");
    // What the sources were given is what the gaps lost, at most (the
    // latest gaps wait for their events).
    let given = p.wait_value("sum(rtick_noise_seconds_total{cpu=\"1\"})", wait);
    let lost = p.wait_value("rtick_noise_gap_seconds_sum{cpu=\"1\"}", wait);
    assert!(given > 0.0 && given <= lost * 1.01, "sources {given} s, gaps {lost} s");
    let spun = p.wait_value("rtick_noise_spun_seconds_total{cpu=\"1\"}", wait);
    assert!(spun >= lost, "spun {spun} s, gaps {lost} s");
    // Bounded labels: threads together, no name or id.
    for s in p.query("rtick_noise_seconds_total") {
        let (kind, source) = (s["metric"]["kind"].as_str().unwrap(), s["metric"]["source"].as_str().unwrap());
        assert!(kind != "thread" || matches!(source, "threads" | "idle"), "{s}");
        assert!(!source.contains("pid"), "{s}");
    }
    let (_, exposition) = get(&m.url("/metrics")).unwrap();
    prometheus::promtool_check_metrics(&exposition, dir.path()).expect("promtool check metrics passes");
    let pid = m.child.id();
    // Its metrics show no stack: the spinner's switches take none.
    let trigger = tracee::instance(pid).join("events/sched/sched_switch/trigger");
    let set = std::fs::read_to_string(&trigger).expect("the instance's sched_switch trigger file");
    let armed = set.lines().any(|l| !l.starts_with('#') && l.contains("stacktrace"));
    assert!(!armed, "{}: {set}", trigger.display());
    let (_, status) = m.terminate();
    assert!(status.success(), "{status:?}");
    assert!(!tracee::instance(pid).exists(), "the instance is removed");
}

/// Bad input: exit 2, one line, before anything is served.
#[test]
fn noise_with_loop_options_or_a_bad_cpu_is_refused() {
    for args in [vec!["--noise", "1", "-m", "nanosleep"], vec!["--noise", "1", "--spike", "50"], vec!["--noise", "999"]]
    {
        let o = common::rtick(&[&["monitor"][..], &args].concat());
        let err = common::stderr(&o);
        assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{args:?}: {err}");
        assert!(common::stdout(&o).is_empty(), "{args:?}");
    }
}

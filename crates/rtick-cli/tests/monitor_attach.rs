//! `rtick monitor --attach` on a real program (tests/c/periodic.c) scraped
//! by a real Prometheus: the target's threads are series labelled with
//! their tid and name, their counts grow from scrape to scrape, /spikes
//! serves their late waits explained, and the target's exit ends the
//! monitor (exit 0, a note, the trace instance removed). Bad input is a
//! one-line usage error. Root, tracefs, a C compiler and Prometheus
//! needed; under CI a skip is a failure.

mod common;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::monitor::Monitor;
use common::prometheus::{self, get, Prometheus};
use common::tracee::{instance, periodic, ready};
use common::{is_root, skip};

/// The program, killed when dropped (a failed assertion leaves it running).
struct Program(Child);

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_reads_an_attached_programs_threads() {
    if !prometheus::installed() {
        return skip("prometheus/promtool not installed (scripts/setup installs them)", false);
    }
    if !is_root() {
        return skip("needs root (tracefs)", false);
    }
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = periodic(dir.path(), "rtick-monat") else { return };
    // A minute of 1 ms sleeps, SCHED_FIFO: it is killed once checked.
    let prog = Program(
        Command::new(&exe)
            .arg(dir.path().join("t.txt"))
            .args(["60000", "1000", "fifo"])
            .spawn()
            .expect("the loop starts"),
    );
    let pid = prog.0.id();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap().trim().to_string();
    // Every timed wait later than 5 µs is a spike: most of them, here.
    let mut m = Monitor::start_with(&["--attach", &pid.to_string(), "--spike", "5", "-D", "120"], Stdio::piped());
    let p = Prometheus::start(&m.target());
    let wait = Duration::from_secs(60);
    let thread = format!("{pid} {comm}");
    let series = format!("{{mechanism=\"attach\",thread=\"{thread}\"}}");
    let first = p.wait_value(&format!("rtick_wakeups_total{series} > 0"), wait);
    // The series is the target's thread: its tid and name, no other label value.
    let found = p.query(&format!("rtick_wakeups_total{series}"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["metric"]["cpu"], "any", "{found:?}");
    // Counts grow from scrape to scrape.
    let t0 = Instant::now();
    let later = loop {
        std::thread::sleep(Duration::from_millis(500));
        let v = p.value(&format!("rtick_wakeups_total{series}")).unwrap_or(0.0);
        if v > first || t0.elapsed() > wait {
            break v;
        }
    };
    assert!(later > first, "rtick_wakeups_total stayed at {first}");
    let p99 = p
        .wait_value(&format!("histogram_quantile(0.99, rate(rtick_wakeup_latency_seconds_bucket{series}[10s]))"), wait);
    assert!(p99 > 0.0, "p99 of the lateness: {p99}");
    p.wait_value(&format!("rtick_spikes_total{series} > 0"), wait);
    // /spikes: the target's late waits, explained.
    let (status, body) = get(&m.url("/spikes")).unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let spikes = v["spikes"].as_array().unwrap();
    assert!(!spikes.is_empty(), "{body}");
    for s in spikes {
        assert_eq!((s["thread"].as_u64(), s["comm"].as_str()), (Some(u64::from(pid)), Some(comm.as_str())), "{s}");
        assert_eq!(s["mechanism"], "attach", "{s}");
        assert!(s["latency_ns"].as_i64().unwrap() > 5_000, "{s}");
        assert!(s.get("explain").is_some() || s.get("unexplained").is_some(), "{s}");
    }
    let explained = spikes.iter().filter_map(|s| s.get("explain")).collect::<Vec<_>>();
    assert!(!explained.is_empty(), "no spike explained: {body}");
    for e in &explained {
        assert_eq!(e["phases_ns"].as_array().map(Vec::len), Some(4), "{e}");
        assert!(!e["cause"].as_str().unwrap().is_empty(), "{e}");
    }
    let (_, exposition) = get(&m.url("/metrics")).unwrap();
    prometheus::promtool_check_metrics(&exposition, dir.path()).expect("promtool check metrics passes");
    // The target's exit ends the monitor: exit 0, a note, no trace instance left.
    drop(prog);
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = m.child.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "the monitor still runs 20 s after its target exited");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    m.child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(status.success(), "{status:?}: {out}");
    assert!(out.contains(&format!("note: pid {pid} ({comm}) exited")), "{out}");
    let instance = instance(m.child.id());
    assert!(!instance.exists(), "the instance is removed");
}

/// Bad input: exit 2, one line, nothing printed or served.
#[test]
fn attach_with_loop_options_or_a_bad_target_is_refused() {
    let cases: [(&[&str], &str); 9] = [
        (&["--attach", "999999999"], "no process or thread 999999999"),
        (&["--attach", "2"], "is a kernel thread"),
        (&["--attach", "0"], "--attach 0 is not a process id"),
        (&["--comm", "rtick-no-such"], "no process is named \"rtick-no-such\""),
        (&["--attach", "1", "-m", "nanosleep"], "cannot be used with"),
        (&["--attach", "1", "--noise", "1"], "cannot be used with"),
        (&["--attach", "1", "--spike", "100", "--explain", "-D", "1s"], "cannot be used with"),
        (&["--attach", "1", "--tid", "1"], "cannot be used with"),
        (&["--attach", "1", "-D", "0"], "--duration"),
    ];
    for (args, want) in cases {
        let port = prometheus::free_port().to_string();
        let o = common::rtick(&[&["monitor", "--listen", &format!("127.0.0.1:{port}")][..], args].concat());
        let err = common::stderr(&o);
        assert_eq!((o.status.code(), err.trim().lines().count()), (Some(2), 1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(common::stdout(&o).is_empty(), "{args:?}");
    }
}

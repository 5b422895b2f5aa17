//! The shipped Grafana dashboard and alerting rules (deploy/) run by a live
//! Prometheus scraping one `rtick monitor`: every query of the dashboard
//! returns data, and every alerting rule evaluates without error, the p99.9
//! latency alert going pending when its threshold is 0 (so its quantile
//! found the histogram). tests/monitor.rs runs these checks on a Prometheus
//! that keeps the histogram's classic buckets, tests/monitor_native.rs on
//! one that keeps only its native buckets (`--enable-feature=native-histograms`):
//! the shipped queries must work on both.
//!
//! Included by path next to `common` and `grafana` (common/grafana.rs).

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::prometheus::{get, Prometheus};
use crate::grafana;

/// A file under deploy/.
fn deploy(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy").join(rel)
}

/// The alert on the p99.9 wake-up latency (deploy/prometheus/rtick-rules.yml).
pub const P999_ALERT: &str = "RtickWakeupLatencyP999High";

/// The comparison of the p99.9 alert, as the rules file writes it.
const P999_THRESHOLD: &str = ") > 0.0002\n";

/// Writes into `dir` the shipped alerting rules with the p99.9 alert's
/// threshold at 0: any latency then makes it pending, so a live Prometheus
/// shows whether its quantile finds the histogram (at 200 µs it would
/// depend on the machine). Every other rule as shipped. Its path.
pub fn rules_with_p999_at_zero(dir: &Path) -> PathBuf {
    let shipped = std::fs::read_to_string(deploy("prometheus/rtick-rules.yml")).unwrap();
    assert_eq!(shipped.matches(P999_THRESHOLD).count(), 1, "the p99.9 alert's threshold in rtick-rules.yml");
    let path = dir.join("rtick-rules.yml");
    std::fs::write(&path, shipped.replace(P999_THRESHOLD, ") > 0\n")).unwrap();
    path
}

/// Every query of the Grafana dashboard (deploy/grafana), sent to the live
/// Prometheus as Grafana sends it: the variables' queries first, in order,
/// each giving the values that "All" selects; then every panel's query with
/// them, `$__rate_interval` as Grafana computes it for a data source of the
/// default 15 s scrape interval (4 × 15 s). Each must run without error and,
/// with a monitor (`target`, with --spike) scraped for a while, return
/// numbers or, for the heatmap on a Prometheus that keeps only native
/// histograms, a native histogram: every panel has data to show. How many
/// panel queries answered with a native histogram.
pub fn dashboard_queries_return_data(p: &Prometheus, target: &str) -> usize {
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(deploy("grafana/rtick-dashboard.json")).unwrap()).unwrap();
    let mut queries = grafana::dashboard_queries(&dashboard);
    // The variables' queries first (a stable sort keeps their order).
    queries.sort_by_key(|q| q.variable.is_none());
    let mut values: Vec<(String, String)> = Vec::new();
    let (mut panels, mut native) = (0, 0);
    for q in &queries {
        let vars: Vec<(&str, &str)> = values.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let expr = grafana::substitute(&q.expr, "1m", &vars);
        let result = p.query(&expr);
        assert!(!result.is_empty(), "{}: no data for {expr}", q.place);
        if let Some(name) = &q.variable {
            // `group by (LABEL) (…)`: each series' only label is a value.
            let found: Vec<String> = result
                .iter()
                .map(|r| r["metric"].as_object().and_then(|o| o.values().next()?.as_str().map(str::to_string)))
                .map(|v| v.unwrap_or_else(|| panic!("{}: a series without its label: {result:?}", q.place)))
                .collect();
            if name == "instance" {
                assert_eq!(found, [target], "{}", q.place);
            }
            values.push((name.clone(), grafana::all_of(&found)));
            continue;
        }
        panels += 1;
        native += usize::from(result.iter().any(|r| r.get("histogram").is_some()));
        for r in &result {
            assert_eq!(r["metric"]["instance"].as_str().unwrap_or(target), target, "{}", q.place);
            if let Some(h) = r.get("histogram") {
                assert_native_histogram(&h[1], &format!("{}: {expr}", q.place));
                continue;
            }
            let v: f64 = r["value"][1].as_str().and_then(|v| v.parse().ok()).expect("a sample");
            assert!(v.is_finite() && v >= 0.0, "{}: {v} in {r} for {expr}", q.place);
            if expr.starts_with("histogram_quantile(") || expr.contains("rate(rtick_wakeups_total") {
                assert!(v > 0.0, "{}: {v} for {expr}", q.place);
            }
        }
    }
    assert_eq!(values.len(), 3, "the instance, cpu and mechanism variables: {values:?}");
    assert!(panels >= 9, "{panels} panel queries");
    native
}

/// A native histogram as the query API gives it (`{count, sum, buckets:
/// [[boundaries, lower, upper, count], …]}`) holds wake-ups, all of them in
/// its buckets: what a heatmap draws.
fn assert_native_histogram(h: &Value, place: &str) {
    let number =
        |v: &Value| -> f64 { v.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{place}: {h}")) };
    let count = number(&h["count"]);
    let buckets = h["buckets"].as_array().unwrap_or_else(|| panic!("{place}: no buckets in {h}"));
    assert!(count > 0.0 && !buckets.is_empty(), "{place}: an empty histogram {h}");
    let mut in_buckets = 0.0;
    for b in buckets {
        let (lower, upper, n) = (number(&b[1]), number(&b[2]), number(&b[3]));
        assert!(lower < upper && n >= 0.0, "{place}: bucket {b}");
        in_buckets += n;
    }
    assert!((in_buckets - count).abs() <= count * 1e-9, "{place}: {in_buckets} in the buckets of {count}");
}

/// The rules Prometheus evaluates, from /api/v1/rules: every rule of
/// every group.
fn rules(p: &Prometheus) -> Vec<Value> {
    let (status, body) = get(&format!("http://127.0.0.1:{}/api/v1/rules", p.port)).expect("prometheus answers");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let groups = v["data"]["groups"].as_array().cloned().unwrap_or_default();
    groups.iter().flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default()).collect()
}

/// The alerting rules of [`rules_with_p999_at_zero`], loaded by `p`, which
/// scrapes `target`: each has been evaluated without error and its
/// expression runs through the query API; the p99.9 alert is pending (its
/// `for` is 5 minutes) for each mechanism and CPU the monitor measures, with
/// the quantile as its value. Waits up to 20 s for Prometheus to have
/// evaluated every rule since it has the data.
pub fn alert_rules_evaluate(p: &Prometheus, target: &str) {
    let measured: BTreeSet<(String, String)> = p
        .query(&format!(r#"group by (mechanism, cpu) (rtick_wakeups_total{{instance="{target}"}})"#))
        .iter()
        .map(|r| (r["metric"]["mechanism"].as_str().unwrap().into(), r["metric"]["cpu"].as_str().unwrap().into()))
        .collect();
    assert!(!measured.is_empty(), "no rtick_wakeups_total from {target}");
    let t0 = Instant::now();
    let (rules, pending) = loop {
        let rules = rules(p);
        let p999 = rules.iter().find(|r| r["name"] == P999_ALERT).unwrap_or_else(|| panic!("no {P999_ALERT}"));
        let pending = p999["alerts"].as_array().cloned().unwrap_or_default();
        let evaluated = rules.iter().all(|r| r["health"] != "unknown");
        if (evaluated && pending.len() >= measured.len()) || t0.elapsed() > Duration::from_secs(20) {
            break (rules, pending);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(rules.len() >= 5, "the shipped alerting rules: {rules:#?}");
    for r in &rules {
        let name = r["name"].as_str().unwrap_or("?");
        assert_eq!(r["type"], "alerting", "{name}");
        assert!(r["health"] == "ok" && r["lastError"].as_str().unwrap_or("").is_empty(), "{name}: {r}");
        // Panics on an error; an alert that is not firing returns nothing.
        p.query(r["query"].as_str().expect("the rule's expression"));
    }
    let alerted: BTreeSet<(String, String)> = pending
        .iter()
        .map(|a| {
            let l = &a["labels"];
            assert_eq!(l["instance"], target, "{a}");
            assert_eq!(a["state"], "pending", "{P999_ALERT} fires only after 5 minutes: {a}");
            let v: f64 = a["value"].as_str().and_then(|v| v.parse().ok()).expect("the alert's value");
            assert!(v > 0.0 && v < 10.0, "{P999_ALERT}: p99.9 {v} s in {a}");
            (l["mechanism"].as_str().unwrap().into(), l["cpu"].as_str().unwrap().into())
        })
        .collect();
    assert_eq!(alerted, measured, "{P999_ALERT} at threshold 0: {pending:#?}");
}

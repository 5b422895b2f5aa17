//! `rtick monitor`'s native histogram end to end: Debian's Prometheus (2.42)
//! with native histograms enabled asks for the protobuf format, gets
//! `rtick_wakeup_latency_seconds` with its native buckets, and answers
//! PromQL on the native form. What such a Prometheus does with the classic
//! buckets of the same histogram is pinned too: it drops them, so a
//! `_bucket` query finds nothing there (the default Prometheus, which gets
//! the text formats, keeps them: tests/monitor.rs). The shipped alert rules
//! and dashboard fall back to the native form: every dashboard query returns
//! data there, the heatmap's a native histogram, and every alerting rule
//! evaluates, the p99.9 alert on the native quantile.

mod common;
#[path = "common/grafana.rs"]
mod grafana;
#[path = "common/shipped.rs"]
mod shipped;

use std::process::Command;
use std::time::{Duration, Instant};

use common::monitor::Monitor;
use common::prometheus::{self, Prometheus};
use common::{skip, PLAIN};
use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model as pb;
use prost::Message;

/// What Prometheus 2.42 sends with native histograms enabled (scrape.go).
const PROMETHEUS_NATIVE_ACCEPT: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// What the native test asks of a monitor.
trait Native {
    fn latency_protobuf(&self) -> (String, pb::Histogram);
}

impl Native for Monitor {
    /// Its latency histogram as Prometheus with native histograms gets it:
    /// the Content-Type, and the decoded histogram.
    fn latency_protobuf(&self) -> (String, pb::Histogram) {
        let mut r =
            ureq::get(&self.url("/metrics")).header("Accept", PROMETHEUS_NATIVE_ACCEPT).call().expect("a scrape");
        let content_type = r.headers().get("content-type").unwrap().to_str().unwrap().to_string();
        let body = r.body_mut().read_to_vec().unwrap();
        let mut rest = body.as_slice();
        while !rest.is_empty() {
            let family = pb::MetricFamily::decode_length_delimited(&mut rest).expect("delimited MetricFamily messages");
            if family.name == "rtick_wakeup_latency_seconds" {
                return (content_type, family.metric[0].histogram.clone().expect("a histogram"));
            }
        }
        panic!("no rtick_wakeup_latency_seconds in the protobuf answer");
    }
}

/// The upper bound of native bucket `index` of `schema`: 2^(index / 2^schema).
fn upper_bound(schema: i32, index: i32) -> f64 {
    2f64.powf(f64::from(index) / 2f64.powi(schema))
}

/// The range the native buckets say every observation is in: from the
/// lowest bucket holding one to the highest (the sparse buckets start and
/// end with a non-empty one; only the gaps between hold zeros).
fn observed_range(h: &pb::Histogram) -> (f64, f64) {
    let first = |spans: &[pb::BucketSpan]| spans.first().map(|s| s.offset);
    let last = |spans: &[pb::BucketSpan]| {
        (!spans.is_empty()).then(|| spans.iter().map(|s| s.offset + s.length as i32).sum::<i32>() - 1)
    };
    let lowest = match (last(&h.negative_span), h.zero_count, first(&h.positive_span)) {
        (Some(i), ..) => -upper_bound(h.schema, i),
        (None, 1.., _) => -h.zero_threshold,
        (None, 0, Some(i)) => upper_bound(h.schema, i - 1),
        (None, 0, None) => panic!("no observation in {h:?}"),
    };
    let highest = match (last(&h.positive_span), h.zero_count, first(&h.negative_span)) {
        (Some(i), ..) => upper_bound(h.schema, i),
        (None, 1.., _) => h.zero_threshold,
        (None, 0, Some(i)) => -upper_bound(h.schema, i - 1),
        (None, 0, None) => panic!("no observation in {h:?}"),
    };
    (lowest, highest)
}

#[test]
fn prometheus_with_native_histograms_keeps_only_the_native_buckets_and_the_shipped_rules_and_dashboard_read_them() {
    if !prometheus::installed() {
        return skip("prometheus/promtool not installed (scripts/setup installs them)", false);
    }
    // Unprivileged (SCHED_OTHER): the subject is the exposition, not the
    // latency; --spike 50, as the dashboard's spike panels need it (such a
    // monitor has spikes over 50 µs every second); -D bounds the run if this
    // test dies.
    let m = Monitor::start(&[&PLAIN[..], &["-i", "1ms", "--spike", "50", "-D", "120"]].concat());
    let target = format!("127.0.0.1:{}", m.port);
    let dir = tempfile::tempdir().unwrap();
    let rules = shipped::rules_with_p999_at_zero(dir.path());
    let p = Prometheus::start_with_rules(&target, &["--enable-feature=native-histograms"], &[&rules]);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(30));

    let p99 = p.wait_value("histogram_quantile(0.99, rate(rtick_wakeup_latency_seconds[1m]))", Duration::from_secs(10));
    let max = p.wait_value("max(max_over_time(rtick_wakeup_latency_max_seconds[2m]))", Duration::from_secs(5));
    let per_s = p.wait_value("sum(histogram_count(rate(rtick_wakeup_latency_seconds[1m])))", Duration::from_secs(5));
    let wakeups = p.wait_value("sum(rate(rtick_wakeups_total[1m]))", Duration::from_secs(5));
    let (content_type, h) = m.latency_protobuf();
    let (lowest, highest) = observed_range(&h);
    eprintln!(
        "after {:.0?}: p99 {p99:e} s, window max {max:e} s, native buckets from {lowest:e} to {highest:e} s (schema {}), {per_s:.1} observations/s, {wakeups:.1} wake-ups/s",
        started.elapsed(),
        h.schema
    );
    assert_eq!(
        content_type,
        "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
    );
    // The monitor's latencies are all within [lowest, highest] (its
    // histogram, fetched last, holds every one Prometheus saw), its exact
    // maximum, the window gauge, too. The quantile is interpolated within
    // its bucket: at most the upper bound of the maximum's bucket, one
    // bucket width (2^(2^-schema)) above the maximum.
    let width = 2f64.powf(2f64.powi(-h.schema));
    assert!(lowest <= max && max <= highest, "max {max:e} outside the native buckets [{lowest:e}, {highest:e}]");
    assert!(
        lowest <= p99 && p99 <= max * width,
        "p99 {p99:e} not between the minimum ≥ {lowest:e} and maximum {max:e}"
    );
    // The native counts are the wake-ups (the collector keeps up here).
    assert!((per_s - wakeups).abs() <= wakeups * 0.05, "{per_s:.1} observations/s, {wakeups:.1} wake-ups/s");

    // Prometheus 2.42 keeps only the native form of a histogram that has
    // one: no _bucket, _count or _sum series, so a classic query finds
    // nothing …
    for series in ["rtick_wakeup_latency_seconds_bucket", "rtick_wakeup_latency_seconds_count"] {
        assert_eq!(p.query(series), Vec::<serde_json::Value>::new(), "{series} under native histograms");
    }
    assert_eq!(p.value("histogram_quantile(0.99, rate(rtick_wakeup_latency_seconds_bucket[1m]))"), None);
    // … and has no setting to keep both (scrape_classic_histograms came
    // with 2.45): its configuration check refuses it.
    let config = dir.path().join("prometheus.yml");
    let yml = "scrape_configs:\n  - job_name: rtick\n    scrape_classic_histograms: true\n    static_configs:\n      - targets: ['127.0.0.1:9464']\n";
    std::fs::write(&config, yml).unwrap();
    let check = Command::new("promtool").arg("check").arg("config").arg(&config).output().expect("promtool runs");
    let said = String::from_utf8_lossy(&check.stderr).into_owned() + &String::from_utf8_lossy(&check.stdout);
    assert!(!check.status.success() && said.contains("scrape_classic_histograms"), "promtool check config: {said}");

    // The shipped alert rules and dashboard fall back to the native form:
    // every panel has data (the heatmap's query, and only it, answers with
    // a native histogram), and the p99.9 alert reads the native quantile.
    assert_eq!(shipped::dashboard_queries_return_data(&p, &target), 1, "the heatmap draws the native buckets");
    shipped::alert_rules_evaluate(&p, &target);
}

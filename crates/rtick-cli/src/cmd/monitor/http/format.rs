//! The formats `/metrics` answers in, and which one a scraper gets: the
//! Prometheus text format, OpenMetrics, or the Prometheus protobuf format
//! (length-delimited `io.prometheus.client.MetricFamily` messages), the
//! only one that carries the latency's native histogram buckets. Prometheus
//! asks for protobuf first when it runs with native histograms enabled
//! (`--enable-feature=native-histograms`), OpenMetrics first otherwise.
//!
//! The choice follows the `Accept` header much as Prometheus's Go client
//! does (`expfmt.Negotiate`): of the media ranges naming one of the three
//! formats, the one of highest q-value wins, the first of them on a tie
//! (Prometheus lists them in its order of preference, older versions
//! without q-values); q=0 refuses a format. Wildcards and anything else
//! get the default, the text format, as does a header naming none of them.

use anyhow::Result;
use mediatype::{names, MediaType, MediaTypeList, ReadParams};
use prometheus_client::encoding::{prometheus_protobuf, prometheus_text, text};
use prometheus_client::registry::Registry;

/// An exposition format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    OpenMetrics,
    Protobuf,
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROTOBUF: &str = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

impl Format {
    /// The format an `Accept` header (its values joined by commas) gets.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let mut best: Option<(f64, Format)> = None;
        // A range that does not parse is skipped, as one naming no format.
        for range in MediaTypeList::new(accept.unwrap_or("")).filter_map(Result::ok) {
            let (Some(format), Some(q)) = (Format::named_by(&range), quality(&range)) else { continue };
            if q > 0.0 && best.is_none_or(|(best_q, _)| q > best_q) {
                best = Some((q, format));
            }
        }
        best.map_or(Format::Text, |(_, format)| format)
    }

    /// The format a media range names, if one of these.
    fn named_by(range: &MediaType<'_>) -> Option<Format> {
        let param = |name: &str| range.get_param(mediatype::Name::new(name)?);
        if range.ty == "text" && range.subty == "plain" {
            Some(Format::Text)
        } else if range.ty == "application" && range.subty == "openmetrics-text" {
            Some(Format::OpenMetrics)
        } else if range.ty == "application"
            && range.subty == "vnd.google.protobuf"
            && param("proto").is_some_and(|v| v == "io.prometheus.client.MetricFamily")
            && param("encoding").is_some_and(|v| v == "delimited")
        {
            Some(Format::Protobuf)
        } else {
            None
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => OPENMETRICS,
            Format::Protobuf => PROTOBUF,
        }
    }

    /// The registry's metrics in this format.
    pub fn encode(self, registry: &Registry) -> Result<Vec<u8>> {
        let mut body = String::new();
        match self {
            Format::Text => prometheus_text::encode(&mut body, registry)?,
            Format::OpenMetrics => text::encode(&mut body, registry)?,
            Format::Protobuf => return Ok(prometheus_protobuf::encode_to_vec(registry)?),
        }
        Ok(body.into_bytes())
    }
}

/// A range's q-value: 1 without one; `None` when it is not a number from
/// 0 to 1 (the range is then ignored, not taken as preferred).
fn quality(range: &MediaType<'_>) -> Option<f64> {
    match range.get_param(names::Q) {
        None => Some(1.0),
        Some(q) => q.unquoted_str().trim().parse().ok().filter(|q| (0.0..=1.0).contains(q)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model as pb;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Unit;
    use prost::Message;

    use super::super::super::metrics::latency::{self, tests::native_buckets, BUCKETS, SCHEMA, ZERO_THRESHOLD};
    use super::super::super::metrics::{Exporter, SeriesLabels};
    use super::super::route;
    use super::*;

    const PROTO: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited";
    /// Prometheus 2.42's Accept headers (scrape/scrape.go), without and
    /// with native histograms enabled.
    const PROMETHEUS: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    const PROMETHEUS_NATIVE: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn each_accept_header_gets_its_format() {
        use Format::*;
        let cases: &[(Option<&str>, Format)] = &[
            (None, Text),
            (Some(""), Text),
            (Some("*/*"), Text),
            (Some("text/plain"), Text),
            (Some("application/json"), Text),
            (Some("application/openmetrics-text;version=1.0.0"), OpenMetrics),
            (Some(PROMETHEUS), OpenMetrics),
            (Some(PROMETHEUS_NATIVE), Protobuf),
            // Prometheus 2.49 and later: every range with a q-value, in the
            // order of its scrape_protocols setting.
            (Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"), Protobuf),
            (Some("text/plain;version=0.0.4;q=0.5,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.4,*/*;q=0.1"), Text),
            (Some("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=0.4"), OpenMetrics),
            (Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=0.9,text/plain;q=0.8"), Protobuf),
            // A tie: the first.
            (Some(&format!("application/openmetrics-text, {PROTO}")), OpenMetrics),
            (Some(&format!("{PROTO}, application/openmetrics-text")), Protobuf),
            // q=0 refuses; a q that is no q-value is ignored.
            (Some(&format!("{PROTO};q=0, application/openmetrics-text;q=0.1")), OpenMetrics),
            (Some(&format!("{PROTO};q=0")), Text),
            (Some(&format!("{PROTO};q=high, text/plain;q=0.1")), Text),
            (Some(&format!("{PROTO};q=1.5, text/plain;q=0.1")), Text),
            // Only delimited MetricFamily messages are this format.
            (Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"), Text),
            (Some("application/vnd.google.protobuf;encoding=delimited"), Text),
            (Some("application/vnd.google.protobuf;proto=io.prometheus.client.Other;encoding=delimited"), Text),
            // Quoted values, spaces, case: as RFC 9110 allows.
            (Some(r#"Application/Vnd.Google.Protobuf; proto="io.prometheus.client.MetricFamily"; encoding="delimited""#), Protobuf),
            (Some("APPLICATION/OPENMETRICS-TEXT ; q=0.3 , text/plain ; q=0.2"), OpenMetrics),
            // Two Accept headers, joined by the endpoint: the second one's counts.
            (Some(&format!("text/plain;q=0.5,{PROTO}")), Protobuf),
            (Some("nonsense,,;;/,"), Text),
        ];
        for (accept, want) in cases {
            assert_eq!(Format::negotiate(*accept), *want, "Accept: {accept:?}");
        }
    }

    /// A registry with the latency family as the collector registers it
    /// (name, unit, labels), each histogram made by `histogram`, and
    /// `latencies_ns` observed as the collector observes them.
    fn exporter(histogram: fn() -> Histogram, latencies_ns: &[i64]) -> Exporter {
        let mut registry = Registry::default();
        let family = Family::<SeriesLabels, Histogram>::new_with_constructor(histogram);
        registry.register_with_unit("rtick_wakeup_latency", "Wake-up latency", Unit::Seconds, family.clone());
        let labels = SeriesLabels { mechanism: "clock_nanosleep".into(), cpu: "1".into(), thread: "0".into() };
        for &ns in latencies_ns {
            family.get_or_create(&labels).observe(rtick::Nanos(ns).as_secs_f64());
        }
        Exporter { registry, spikes: None }
    }

    /// Early (3 µs, 40 ns, 1 ns), on time, late from 1 ns to 2 s.
    const LATENCIES_NS: [i64; 11] = [-3_000, -40, -1, 0, 1, 950, 5_000, 5_000, 120_000, 1_300_000, 2_000_000_000];

    /// The native bucket of schema 3 holding |v| > 0: bucket i is
    /// (2^((i-1)/8), 2^(i/8)].
    fn bucket_of(v: f64) -> i32 {
        (v.abs().log2() * f64::from(1 << SCHEMA)).ceil() as i32
    }

    #[test]
    fn protobuf_answer_decodes_to_the_observed_native_and_classic_buckets() {
        let e = exporter(latency::histogram, &LATENCIES_NS);
        let reply = route("GET", "/metrics", Some(PROMETHEUS_NATIVE), &e);
        assert_eq!((reply.status, reply.content_type), (200, PROTOBUF));
        let mut body = reply.body.as_slice();
        let mut families = Vec::new();
        while !body.is_empty() {
            families.push(pb::MetricFamily::decode_length_delimited(&mut body).expect("a delimited MetricFamily"));
        }
        let family = families.iter().find(|f| f.name == "rtick_wakeup_latency_seconds").expect("the latency family");
        assert_eq!(family.r#type, pb::MetricType::Histogram as i32);
        let [metric] = family.metric.as_slice() else { panic!("one series: {family:?}") };
        let labels: Vec<_> = metric.label.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
        assert_eq!(labels, [("mechanism", "clock_nanosleep"), ("cpu", "1"), ("thread", "0")]);
        let h = metric.histogram.as_ref().expect("a histogram");

        let secs: Vec<f64> = LATENCIES_NS.iter().map(|&ns| rtick::Nanos(ns).as_secs_f64()).collect();
        assert_eq!(h.sample_count, secs.len() as u64);
        assert!((h.sample_sum - secs.iter().sum::<f64>()).abs() < 1e-12, "{}", h.sample_sum);
        // Native: each value in its bucket of its sign, 0 in the zero bucket.
        assert_eq!((h.schema, h.zero_threshold, h.zero_count), (i32::from(SCHEMA), ZERO_THRESHOLD, 1));
        let mut positive = BTreeMap::new();
        let mut negative = BTreeMap::new();
        for &v in secs.iter().filter(|&&v| v != 0.0) {
            *(if v > 0.0 { &mut positive } else { &mut negative }).entry(bucket_of(v)).or_insert(0) += 1;
        }
        assert_eq!(native_buckets(&h.positive_span, &h.positive_delta), positive);
        assert_eq!(native_buckets(&h.negative_span, &h.negative_delta), negative);
        // Classic: cumulative, the early ones in the first bucket, as in text.
        let classic: Vec<(f64, u64)> = h.bucket.iter().map(|b| (b.upper_bound, b.cumulative_count)).collect();
        let want: Vec<(f64, u64)> = BUCKETS
            .iter()
            .chain([f64::INFINITY].iter())
            .map(|&le| (le, secs.iter().filter(|&&v| v <= le).count() as u64))
            .collect();
        assert_eq!(classic, want);
        assert_eq!(classic[0].1, 6, "3 early, 1 on time, 1 ns and 950 ns late: ≤ 1 µs");
    }

    /// The text and OpenMetrics answers of the histogram with native
    /// buckets are byte for byte those of one with the fixed buckets alone.
    #[test]
    fn text_and_openmetrics_answers_are_those_of_the_classic_histogram() {
        let classic = exporter(|| Histogram::new(BUCKETS), &LATENCIES_NS);
        let native = exporter(latency::histogram, &LATENCIES_NS);
        for accept in [None, Some("*/*"), Some(PROMETHEUS)] {
            let (a, b) = (route("GET", "/metrics", accept, &classic), route("GET", "/metrics", accept, &native));
            assert_eq!((a.status, a.content_type), (b.status, b.content_type), "{accept:?}");
            assert_eq!(String::from_utf8(a.body).unwrap(), String::from_utf8(b.body).unwrap(), "{accept:?}");
        }
        let text = route("GET", "/metrics", None, &native);
        assert_eq!(text.content_type, prometheus_text::CONTENT_TYPE);
        let text = String::from_utf8(text.body).unwrap();
        assert_eq!(text.matches("rtick_wakeup_latency_seconds_bucket{").count(), BUCKETS.len() + 1, "{text}");
    }
}

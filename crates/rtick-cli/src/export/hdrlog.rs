//! The HdrHistogram interval log format, so HdrHistogram's own tools
//! (HistogramLogAnalyzer, hdr-plot) read rtick's data. One tag per series
//! (`mechanism/T0`, or with the file name for several inputs); from a trace,
//! one interval per second; otherwise the whole run in one interval.
//! HdrHistogram cannot hold negative values: early wake-ups are logged as 0
//! and counted in a comment; so are values beyond its range of an hour,
//! logged as an hour.

use std::io::Write;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

use rtick_model::read::Input;

/// The histograms' range: an hour, in ns.
const MAX_NS: i64 = 3_600_000_000_000;

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS as u64, 3).expect("valid bounds")
}

/// A latency as the histogram can hold it, counting what had to be clamped.
fn loggable(v: i64, negative: &mut u64, beyond: &mut u64, count: u64) -> u64 {
    *negative += count * u64::from(v < 0);
    *beyond += count * u64::from(v > MAX_NS);
    v.clamp(0, MAX_NS) as u64
}

pub fn write(out: &mut impl Write, inputs: &[Input]) -> Result<()> {
    let mut ser = V2DeflateSerializer::new();
    let mut b = IntervalLogWriterBuilder::new();
    b.add_comment(&format!("rtick {} latency histograms, values in ns", env!("CARGO_PKG_VERSION")))
        .with_start_time(SystemTime::now())
        .with_max_value_divisor(1000.0);
    let mut w = b.begin_log_with(out, &mut ser).map_err(|e| anyhow!("writing the log: {e}"))?;
    let many = inputs.len() > 1;
    for input in inputs {
        for s in &input.series {
            let raw = if many {
                format!("{}/T{}/{}", s.result.mechanism, s.result.thread, input.name())
            } else {
                format!("{}/T{}", s.result.mechanism, s.result.thread)
            };
            let tag_text: String = raw.chars().map(|c| if c.is_whitespace() || c == ',' { '_' } else { c }).collect();
            let tag = Tag::new(&tag_text);
            let (mut negative, mut beyond) = (0u64, 0u64);
            if let Some(t) = &s.timeline {
                let mut h = new_hist();
                let mut second = 0i64;
                for (&at, &lat) in t.t_ns.iter().zip(&t.latency_ns) {
                    let sec = at / 1_000_000_000;
                    if sec != second && !h.is_empty() {
                        w.write_histogram(&h, Duration::from_secs(second as u64), Duration::from_secs(1), tag)
                            .map_err(|e| anyhow!("writing the log: {e:?}"))?;
                        h.reset();
                    }
                    second = sec;
                    h.saturating_record(loggable(lat, &mut negative, &mut beyond, 1));
                }
                if !h.is_empty() {
                    w.write_histogram(&h, Duration::from_secs(second as u64), Duration::from_secs(1), tag)
                        .map_err(|e| anyhow!("writing the log: {e:?}"))?;
                }
            } else if let Some(d) = &s.dist {
                let mut h = new_hist();
                for &(v, c) in &d.weighted {
                    h.saturating_record_n(loggable(v, &mut negative, &mut beyond, c), c);
                }
                w.write_histogram(&h, Duration::ZERO, Duration::from_secs(1), tag)
                    .map_err(|e| anyhow!("writing the log: {e:?}"))?;
            }
            if negative > 0 {
                w.write_comment(&format!("{tag_text}: {negative} early wake-ups (negative latency) logged as 0"))?;
            }
            if beyond > 0 {
                w.write_comment(&format!("{tag_text}: {beyond} latencies beyond an hour logged as an hour"))?;
            }
        }
    }
    Ok(())
}

//! `--spike US`: the latest wake-ups later than US, served as JSON at
//! `/spikes`.
//!
//! A bounded log (the last [`CAPACITY`], oldest dropped first) filled by the
//! collector thread from the trace rows, never by a measuring thread; the
//! memory it takes is allocated once, at start.

use std::collections::VecDeque;
use std::time::SystemTime;

use rtick::Nanos;
use serde::Serialize;

/// How many spikes the log keeps.
pub const CAPACITY: usize = 256;

/// One late wake-up.
#[derive(Clone, Debug)]
pub struct Spike {
    /// When it woke, on the wall clock.
    pub wall: SystemTime,
    /// When it woke, on CLOCK_MONOTONIC.
    pub monotonic_ns: i64,
    pub mechanism: &'static str,
    /// The CPU the thread is pinned to (`None`: not pinned).
    pub cpu: Option<usize>,
    pub thread: u32,
    /// The grid index of its deadline.
    pub cycle: u64,
    pub latency_ns: i64,
}

/// The last [`CAPACITY`] spikes over a threshold.
#[derive(Debug)]
pub struct SpikeLog {
    threshold: Nanos,
    spikes: VecDeque<Spike>,
    /// Spikes seen since the start, kept or not.
    seen: u64,
}

impl SpikeLog {
    pub fn new(threshold: Nanos) -> SpikeLog {
        SpikeLog { threshold, spikes: VecDeque::with_capacity(CAPACITY), seen: 0 }
    }

    pub fn threshold(&self) -> Nanos {
        self.threshold
    }

    /// Keeps `s` when it is later than the threshold, dropping the oldest when full.
    pub fn offer(&mut self, s: Spike) {
        if s.latency_ns <= self.threshold.as_ns() {
            return;
        }
        self.seen += 1;
        if self.spikes.len() == CAPACITY {
            self.spikes.pop_front();
        }
        self.spikes.push_back(s);
    }

    /// The log as served at `/spikes` (schema in docs/json.md's monitor section).
    pub fn json(&self) -> String {
        let doc = SpikesJson {
            threshold_ns: self.threshold.as_ns(),
            capacity: CAPACITY,
            seen: self.seen,
            spikes: self.spikes.iter().map(SpikeJson::from).collect(),
        };
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    }
}

#[derive(Serialize)]
struct SpikesJson {
    threshold_ns: i64,
    capacity: usize,
    seen: u64,
    /// Oldest first.
    spikes: Vec<SpikeJson>,
}

#[derive(Serialize)]
struct SpikeJson {
    /// RFC 3339, UTC, nanoseconds.
    time: String,
    monotonic_ns: i64,
    mechanism: &'static str,
    cpu: Option<usize>,
    thread: u32,
    cycle: u64,
    latency_ns: i64,
    // The kernel-side breakdown of each spike (IRQ delay, wake-up path,
    // scheduling, return to user: `rtick measure --explain`'s phases) belongs
    // here once the monitor keeps a kernel trace session of its own; it does
    // not trace yet, so there is no such field.
}

impl From<&Spike> for SpikeJson {
    fn from(s: &Spike) -> Self {
        SpikeJson {
            time: humantime::format_rfc3339_nanos(s.wall).to_string(),
            monotonic_ns: s.monotonic_ns,
            mechanism: s.mechanism,
            cpu: s.cpu,
            thread: s.thread,
            cycle: s.cycle,
            latency_ns: s.latency_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spike(latency_ns: i64, cycle: u64) -> Spike {
        Spike {
            wall: SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(1_700_000_000_123_456_789),
            monotonic_ns: 5_000,
            mechanism: "clock_nanosleep",
            cpu: Some(1),
            thread: 0,
            cycle,
            latency_ns,
        }
    }

    #[test]
    fn keeps_the_last_spikes_over_the_threshold() {
        let mut log = SpikeLog::new(Nanos::from_us(50));
        log.offer(spike(50_000, 0));
        assert_eq!(log.seen, 0, "at the threshold is not over it");
        for c in 0..(CAPACITY as u64 + 10) {
            log.offer(spike(60_000, c));
        }
        assert_eq!(log.seen, CAPACITY as u64 + 10);
        let v: serde_json::Value = serde_json::from_str(&log.json()).unwrap();
        let spikes = v["spikes"].as_array().unwrap();
        assert_eq!(spikes.len(), CAPACITY);
        assert_eq!(spikes[0]["cycle"], 10, "the oldest ten were dropped");
        assert_eq!(spikes[CAPACITY - 1]["cycle"], CAPACITY as u64 + 9);
        assert_eq!(spikes[0]["time"], "2023-11-14T22:13:20.123456789Z");
        assert_eq!(spikes[0]["latency_ns"], 60_000);
        assert_eq!(v["threshold_ns"], 50_000);
    }
}

//! `--spike US`: the latest wake-ups later than US, served as JSON at
//! `/spikes`.
//!
//! A bounded log (the last [`CAPACITY`], oldest dropped first) filled by the
//! collector thread from the trace rows, never by a measuring thread; the
//! memory it takes is allocated once, at start. With `--explain` each spike
//! carries its kernel-side breakdown, as `measure --explain` prints it, or
//! the reason it has none.

use std::collections::VecDeque;
use std::time::SystemTime;

use rtick::Nanos;
use serde::Serialize;

use rtick_model::json::SpikeJson;

/// A series' CPU as `/metrics` labels it and `/spikes` spells it: its number
/// when the thread is pinned to one CPU, else "any".
pub fn cpu_label(cpu: Option<usize>) -> String {
    cpu.map_or("any".to_string(), |c| c.to_string())
}

/// How many spikes the log keeps.
pub const CAPACITY: usize = 256;

/// One late wake-up.
#[derive(Clone, Debug)]
pub struct LoggedSpike {
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
    /// With `--explain`: its breakdown, or why it has none.
    pub explain: Option<Result<Box<SpikeJson>, &'static str>>,
    /// With `--attach`: the target's thread and its wait.
    pub attached: Option<AttachedWait>,
}

/// A spike of `monitor --attach`: its `thread` is the tid; this says the
/// rest.
#[derive(Clone, Debug, Serialize)]
pub struct AttachedWait {
    /// The thread's name.
    pub comm: String,
    /// The time it asked for (CLOCK_MONOTONIC ns).
    pub requested_ns: i64,
    /// The timer slack the kernel took (part of the latency, no task's
    /// doing: the breakdown's phases are the rest).
    pub slack_taken_ns: i64,
}

/// The last [`CAPACITY`] spikes over a threshold.
#[derive(Debug)]
pub struct SpikeLog {
    threshold: Nanos,
    spikes: VecDeque<LoggedSpike>,
    /// Spikes seen since the start, kept or not.
    seen: u64,
}

impl SpikeLog {
    pub fn new(threshold: Nanos) -> SpikeLog {
        SpikeLog { threshold, spikes: VecDeque::with_capacity(CAPACITY), seen: 0 }
    }

    /// Counts `n` spikes that were not offered (more than [`CAPACITY`]
    /// came at once: only the latest are).
    pub fn not_offered(&mut self, n: u64) {
        self.seen += n;
    }

    /// Keeps `s` when it is later than the threshold, dropping the oldest when full.
    pub fn offer(&mut self, s: LoggedSpike) {
        if s.latency_ns <= self.threshold.as_ns() {
            return;
        }
        self.seen += 1;
        if self.spikes.len() == CAPACITY {
            self.spikes.pop_front();
        }
        self.spikes.push_back(s);
    }

    /// The log as served at `/spikes` (schema in docs/json.md's monitor section), compact: with
    /// --explain a spike takes about 1 KB (`curl … | jq` to read it).
    pub fn json(&self) -> String {
        let doc = SpikesJson {
            threshold_ns: self.threshold.as_ns(),
            capacity: CAPACITY,
            seen: self.seen,
            spikes: self.spikes.iter().map(LoggedSpikeJson::from).collect(),
        };
        serde_json::to_string(&doc).unwrap_or_default()
    }
}

#[derive(Serialize)]
struct SpikesJson {
    threshold_ns: i64,
    capacity: usize,
    seen: u64,
    /// Oldest first.
    spikes: Vec<LoggedSpikeJson>,
}

#[derive(Serialize)]
struct LoggedSpikeJson {
    /// RFC 3339, UTC, nanoseconds.
    time: String,
    monotonic_ns: i64,
    mechanism: &'static str,
    /// As `/metrics` labels it: the CPU, or "any" for an unpinned thread.
    cpu: String,
    thread: u32,
    cycle: u64,
    latency_ns: i64,
    /// With --explain: the kernel-side breakdown (IRQ delay, wake-up path,
    /// scheduling, return to user), as in `measure --explain`'s JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    explain: Option<SpikeJson>,
    /// With --explain, for a spike without a breakdown: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    unexplained: Option<&'static str>,
    /// With --attach: the thread's name, the time asked for, the slack taken.
    #[serde(flatten)]
    attached: Option<AttachedWait>,
}

impl From<&LoggedSpike> for LoggedSpikeJson {
    fn from(s: &LoggedSpike) -> Self {
        LoggedSpikeJson {
            time: humantime::format_rfc3339_nanos(s.wall).to_string(),
            monotonic_ns: s.monotonic_ns,
            mechanism: s.mechanism,
            cpu: cpu_label(s.cpu),
            thread: s.thread,
            cycle: s.cycle,
            latency_ns: s.latency_ns,
            explain: s.explain.as_ref().and_then(|e| e.as_ref().ok()).map(|b| SpikeJson::clone(b)),
            unexplained: s.explain.as_ref().and_then(|e| e.as_ref().err()).copied(),
            attached: s.attached.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spike(latency_ns: i64, cycle: u64) -> LoggedSpike {
        LoggedSpike {
            wall: SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(1_700_000_000_123_456_789),
            monotonic_ns: 5_000,
            mechanism: "clock_nanosleep",
            cpu: Some(1),
            thread: 0,
            cycle,
            latency_ns,
            explain: None,
            attached: None,
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
        assert!(spikes[0].get("explain").is_none() && spikes[0].get("unexplained").is_none(), "not without --explain");
        log.not_offered(5);
        assert_eq!(log.seen, CAPACITY as u64 + 15);
    }

    #[test]
    fn a_spike_carries_its_breakdown_or_why_it_has_none() {
        let mut log = SpikeLog::new(Nanos::from_us(50));
        let b = SpikeJson {
            cycle: 7,
            cpu: 1,
            latency_ns: 60_000,
            phases_ns: vec![("irq_delay".into(), 55_000), ("wakeup_path".into(), 5_000)],
            cause: "CPU idle".into(),
            work: None,
            cgroup: None,
            stack: Vec::new(),
            culprits: vec![vec![("idle".into(), 55_000)], vec![]],
            line: "cycle 7 …".into(),
        };
        log.offer(LoggedSpike { explain: Some(Ok(Box::new(b))), ..spike(60_000, 7) });
        log.offer(LoggedSpike { explain: Some(Err("no reason")), ..spike(70_000, 8) });
        let v: serde_json::Value = serde_json::from_str(&log.json()).unwrap();
        let (a, b) = (&v["spikes"][0], &v["spikes"][1]);
        assert_eq!(
            (a["explain"]["phases_ns"][0][1].as_i64(), a["explain"]["cause"].as_str()),
            (Some(55_000), Some("CPU idle"))
        );
        assert!(a.get("unexplained").is_none());
        assert_eq!((b["unexplained"].as_str(), b.get("explain")), (Some("no reason"), None));
    }

    #[test]
    fn a_spike_spells_its_cpu_as_the_metrics_label_does() {
        let mut log = SpikeLog::new(Nanos::from_us(50));
        log.offer(spike(60_000, 1));
        log.offer(LoggedSpike { cpu: None, ..spike(70_000, 2) });
        let v: serde_json::Value = serde_json::from_str(&log.json()).unwrap();
        let cpus: Vec<&str> = v["spikes"].as_array().unwrap().iter().map(|s| s["cpu"].as_str().unwrap()).collect();
        assert_eq!(cpus, ["1", "any"]);
    }
}

//! `explain.ab` of the run file (`measure --explain-ab`): the traced
//! stretches of the run against the plain ones.

use serde::{Deserialize, Serialize};

/// `explain.ab` in the JSON run file (with `--explain-ab`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbJson {
    /// The stretch length asked for.
    pub period_ns: i64,
    /// Wake-ups this close to a switch count for neither side.
    pub guard_ns: i64,
    /// Each switch: its CLOCK_MONOTONIC start and end, and whether tracing is on after it.
    pub switches: Vec<SwitchJson>,
    /// Why the A/B stopped early, if it did.
    pub error: Option<String>,
    /// One per mechanism and thread.
    pub results: Vec<AbResultJson>,
}

/// One switch of the tracing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SwitchJson {
    pub began_ns: i64,
    pub done_ns: i64,
    pub traced: bool,
}

/// One mechanism and thread: traced against plain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbResultJson {
    pub mechanism: String,
    pub thread: usize,
    pub traced: LatenciesJson,
    pub plain: LatenciesJson,
    pub at_switches: LatenciesJson,
    /// traced ÷ plain; null when a side has no wake-up.
    pub ratio_p50: Option<f64>,
    pub ratio_p99: Option<f64>,
    pub ratio_max: Option<f64>,
    /// The worst wake-ups (by --explain-top and --explain US) that were not traced.
    pub not_traced: Vec<NotTracedJson>,
}

/// Latency of a set of wake-ups.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatenciesJson {
    pub wakeups: usize,
    pub p50_ns: i64,
    pub p99_ns: i64,
    pub max_ns: i64,
}

/// A wake-up not traced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotTracedJson {
    pub cycle: u64,
    pub latency_ns: i64,
    /// "plain" or "at_switch".
    pub stretch: String,
}

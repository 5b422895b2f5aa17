//! A measurement run explained: every recorded wake-up matched to the
//! kernel's events, the phases of each mechanism summarised, and the worst
//! wake-ups (and every one over a threshold) explained as spikes.

use std::collections::HashMap;

use super::input::{CpuTrace, Recorded};
use super::{phase_summary, Analysis, Phases, Spike, StealSample, Unmatched};
use crate::measure::{ThreadResult, TraceRow};
use crate::time::Nanos;
use crate::wait::Mechanism;

/// Which wake-ups to explain one by one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SpikeChoice {
    /// The worst wake-ups of each mechanism and thread.
    pub top: usize,
    /// And every one later than this.
    pub over: Option<Nanos>,
}

impl Default for SpikeChoice {
    fn default() -> Self {
        SpikeChoice { top: 5, over: None }
    }
}

/// One mechanism of one thread, explained.
#[derive(Debug)]
pub struct Explained {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Thread index.
    pub thread: usize,
    /// Wake-ups recorded.
    pub wakeups: usize,
    /// Of them, matched to their kernel events.
    pub matched: usize,
    /// Why the others were not, with how many.
    pub unmatched: Vec<(&'static str, usize)>,
    /// p50, p99 and max of each phase over the matched wake-ups.
    pub phases: [(&'static str, [Nanos; 3]); 4],
    /// The worst wake-ups and those over the threshold, worst first.
    pub spikes: Vec<Spike>,
    /// Why it has no phases (mechanisms not woken by a timer), if so.
    pub not_timer_woken: Option<&'static str>,
    /// The phases of each matched wake-up, by cycle (for the trace rows).
    pub by_cycle: HashMap<u64, Phases>,
}

/// Explains every mechanism and thread of a run: `rows` are its trace rows
/// (every wake-up), `results` its per-thread results (for the tids), `cpus`
/// the kernel's events, `steal` the CPUs' steal time sampled during it.
pub fn explain_run(
    cpus: &[CpuTrace<'_>],
    rows: &[TraceRow],
    results: &[ThreadResult],
    steal: &[StealSample],
    choice: SpikeChoice,
) -> Vec<Explained> {
    let mut by_slot: HashMap<(Mechanism, usize), Vec<Recorded>> = HashMap::new();
    let tid: HashMap<(Mechanism, usize), i32> = results.iter().map(|r| ((r.mechanism, r.thread), r.tid)).collect();
    for r in rows {
        let key = (r.mechanism, r.thread as usize);
        if let Some(&tid) = tid.get(&key) {
            by_slot.entry(key).or_default().push(Recorded {
                tid,
                cycle: r.cycle,
                planned: r.planned,
                actual: r.actual,
            });
        }
    }
    results
        .iter()
        .map(|r| {
            let wakes = by_slot.remove(&(r.mechanism, r.thread)).unwrap_or_default();
            explain_slot(r, &wakes, cpus, steal, choice)
        })
        .collect()
}

fn explain_slot(
    r: &ThreadResult,
    wakes: &[Recorded],
    cpus: &[CpuTrace<'_>],
    steal: &[StealSample],
    choice: SpikeChoice,
) -> Explained {
    let mut out = Explained {
        mechanism: r.mechanism,
        thread: r.thread,
        wakeups: wakes.len(),
        matched: 0,
        unmatched: Vec::new(),
        phases: phase_summary(&[]),
        spikes: Vec::new(),
        not_timer_woken: None,
        by_cycle: HashMap::new(),
    };
    if r.mechanism.info().burns_cpu {
        out.not_timer_woken = Some("it ends its waits by spinning on the clock, not woken by a timer");
        return out;
    }
    let analysis = Analysis::new(cpus, wakes);
    let mut unmatched: HashMap<Unmatched, usize> = HashMap::new();
    for (w, m) in wakes.iter().zip(analysis.matched()) {
        match m {
            Ok(m) => {
                out.by_cycle.insert(w.cycle, m.phases(w));
            }
            Err(u) => *unmatched.entry(*u).or_default() += 1,
        }
    }
    // Cycles are grid indices: one wake-up each per mechanism and thread.
    out.matched = out.by_cycle.len();
    out.phases = phase_summary(&out.by_cycle.values().copied().collect::<Vec<_>>());
    out.unmatched = unmatched.into_iter().map(|(u, n)| (u.reason(), n)).collect();
    out.unmatched.sort();
    // The worst first; then every one over the threshold.
    let mut order: Vec<usize> = (0..wakes.len()).filter(|&i| analysis.matched()[i].is_ok()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(wakes[i].actual - wakes[i].planned));
    let over = |i: &usize| choice.over.is_some_and(|o| wakes[*i].actual - wakes[*i].planned > o);
    let picked: Vec<usize> =
        order.iter().enumerate().filter(|(rank, i)| *rank < choice.top || over(i)).map(|(_, &i)| i).collect();
    out.spikes = picked.into_iter().filter_map(|i| analysis.spike(wakes, i, steal)).collect();
    out
}

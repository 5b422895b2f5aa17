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
    explain_run_where(cpus, rows, results, steal, choice, |_| true)
}

/// [`explain_run`], explaining only the wake-ups `explain` keeps (those of
/// the traced stretches of an A/B, [`super::ab`]). The others are matched
/// all the same, unreported: they happened, and bound the search for their
/// neighbours' events.
pub fn explain_run_where(
    cpus: &[CpuTrace<'_>],
    rows: &[TraceRow],
    results: &[ThreadResult],
    steal: &[StealSample],
    choice: SpikeChoice,
    explain: impl Fn(&TraceRow) -> bool,
) -> Vec<Explained> {
    let tid: HashMap<(Mechanism, usize), i32> = results.iter().map(|r| ((r.mechanism, r.thread), r.tid)).collect();
    // Every wake-up of every mechanism is matched at once: a thread measures
    // its mechanisms in turn, and its previous wake-up, whichever mechanism
    // made it, bounds the events of the next (the first wake-up of a slice
    // must not take the events of the other mechanism's slice before it).
    let mut all = Vec::with_capacity(rows.len());
    let mut by_slot: HashMap<(Mechanism, usize), Vec<usize>> = HashMap::new();
    for r in rows {
        let key = (r.mechanism, r.thread as usize);
        if let Some(&tid) = tid.get(&key) {
            if explain(r) {
                by_slot.entry(key).or_default().push(all.len());
            }
            all.push(Recorded { tid, cycle: r.cycle, planned: r.planned, actual: r.actual });
        }
    }
    let analysis = Analysis::new(cpus, &all);
    results
        .iter()
        .map(|r| {
            let mine = by_slot.remove(&(r.mechanism, r.thread)).unwrap_or_default();
            explain_slot(r, &all, &mine, &analysis, steal, choice)
        })
        .collect()
}

/// Why wake-ups of `mechanism` have no phases, if they have none: those
/// that end their waits by spinning are not woken by a timer.
pub fn not_timer_woken(mechanism: Mechanism) -> Option<&'static str> {
    mechanism.info().burns_cpu.then_some("it ends its waits by spinning on the clock, not woken by a timer")
}

/// Explains the wake-ups `mine` (indices into `all`, matched by `analysis`) of one slot.
fn explain_slot(
    r: &ThreadResult,
    all: &[Recorded],
    mine: &[usize],
    analysis: &Analysis,
    steal: &[StealSample],
    choice: SpikeChoice,
) -> Explained {
    let mut out = Explained {
        mechanism: r.mechanism,
        thread: r.thread,
        wakeups: mine.len(),
        matched: 0,
        unmatched: Vec::new(),
        phases: phase_summary(&[]),
        spikes: Vec::new(),
        not_timer_woken: None,
        by_cycle: HashMap::new(),
    };
    out.not_timer_woken = not_timer_woken(r.mechanism);
    if out.not_timer_woken.is_some() {
        return out;
    }
    let mut unmatched: HashMap<Unmatched, usize> = HashMap::new();
    for &i in mine {
        match analysis.matched()[i] {
            Ok(m) => {
                out.by_cycle.insert(all[i].cycle, m.phases(&all[i]));
            }
            Err(u) => *unmatched.entry(u).or_default() += 1,
        }
    }
    // Cycles are grid indices: one wake-up each per mechanism and thread.
    out.matched = out.by_cycle.len();
    out.phases = phase_summary(&out.by_cycle.values().copied().collect::<Vec<_>>());
    out.unmatched = unmatched.into_iter().map(|(u, n)| (u.reason(), n)).collect();
    out.unmatched.sort();
    // The worst first; then every one over the threshold.
    let late = |i: usize| all[i].actual - all[i].planned;
    let mut order: Vec<usize> = mine.iter().copied().filter(|&i| analysis.matched()[i].is_ok()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(late(i)));
    let over = |i: usize| choice.over.is_some_and(|o| late(i) > o);
    let picked: Vec<usize> =
        order.iter().enumerate().filter(|&(rank, &i)| rank < choice.top || over(i)).map(|(_, &i)| i).collect();
    out.spikes = picked.into_iter().filter_map(|i| analysis.spike(all, i, steal)).collect();
    out
}

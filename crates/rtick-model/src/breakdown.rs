//! The kernel phases `measure --explain` left in a run's files, as one model:
//! per mechanism and thread, each phase's p50 / p99 / max, every wake-up's
//! phases when a trace holds them, and the spikes. The JSON's `explain`
//! object is read with its own serde types (`json::ExplainJson`), a trace's phase
//! columns row by row; the terminal table (`output::explain`) and the
//! `breakdown` plot read only this model, so `measure --explain` and
//! `rtick report` print the same thing whichever file the phases came from.

use std::collections::BTreeMap;

use rtick::explain::Phases;
use rtick::stats::percentile;

use crate::json::{ExplainJson, ExplainedJson, SpikeJson};

/// How many of a trace's worst wake-ups stand for its spikes (a trace has
/// no culprits, only the phases): as many as `--explain-top`'s default.
pub const TRACE_SPIKES: usize = 5;

/// A trace's wake-up: (mechanism, thread, cycle, latency ns, its phases
/// when it was matched to its kernel events).
pub type Wakeup<'a> = (&'a str, usize, u64, i64, Option<[i64; 4]>);

/// The phases of one input (or of the run just measured).
#[derive(Clone, Debug)]
pub struct Breakdown {
    pub series: Vec<PhaseSeries>,
    /// The JSON's `explain` object as written (events, losses): `report
    /// --json` carries it through. `None` for a trace.
    pub explain: Option<ExplainJson>,
}

/// One mechanism on one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSeries {
    pub mechanism: String,
    pub thread: usize,
    pub wakeups: usize,
    /// Wake-ups matched to their kernel events (those with phases).
    pub matched: usize,
    /// Why the mechanism has no phases (spin, hybrid), as measure said.
    pub not_timer_woken: Option<String>,
    /// Why some wake-ups were not split, with counts (JSON only: a trace
    /// leaves them empty without a reason).
    pub unmatched: Vec<(String, usize)>,
    /// p50, p99 and max (ns) of each phase, in [`Phases::NAMES`]' order;
    /// `None` when no wake-up was matched.
    pub summary: Option<[[i64; 3]; 4]>,
    /// Each phase's values over the matched wake-ups, as (ns, count) in
    /// ascending order (a trace; empty from JSON): exact, and as large as
    /// the distinct values, not the wake-ups.
    pub dists: [Vec<(i64, u64)>; 4],
    /// Worst first.
    pub spikes: Vec<Spike>,
}

/// One late wake-up and its phases.
#[derive(Clone, Debug, PartialEq)]
pub struct Spike {
    pub cycle: u64,
    pub latency_ns: i64,
    /// In [`Phases::NAMES`]' order; they add up to the latency.
    pub phases_ns: [i64; 4],
    /// measure's line with the cause and the culprits (`None` from a trace,
    /// which records no culprits).
    pub line: Option<String>,
    /// The kernel stack where the wake-up was due, named, innermost first
    /// (empty when none was recorded, and from a trace).
    pub stack: Vec<String>,
}

impl Breakdown {
    /// From the JSON's `explain` object; the error says which series and
    /// which phase does not fit the schema.
    pub fn from_explain(e: &ExplainJson) -> Result<Breakdown, String> {
        let series = e.results.iter().map(series_of_json).collect::<Result<_, _>>()?;
        Ok(Breakdown { series, explain: Some(e.clone()) })
    }

    /// From a trace's wake-ups, in trace order. Keeps per series each
    /// phase's counted values and the worst wake-ups, not every wake-up.
    pub fn from_wakeups<'a>(rows: impl IntoIterator<Item = Wakeup<'a>>) -> Breakdown {
        let mut series: Vec<(PhaseSeries, [BTreeMap<i64, u64>; 4])> = Vec::new();
        for (mechanism, thread, cycle, latency, phases) in rows {
            let at = match series.iter().position(|s| s.0.mechanism == mechanism && s.0.thread == thread) {
                Some(i) => i,
                None => {
                    series.push((empty(mechanism, thread), Default::default()));
                    series.len() - 1
                }
            };
            let (s, counts) = &mut series[at];
            s.wakeups += 1;
            if let Some(p) = phases {
                s.matched += 1;
                for (c, v) in counts.iter_mut().zip(p) {
                    *c.entry(v).or_insert(0) += 1;
                }
                keep_worst(
                    &mut s.spikes,
                    Spike { cycle, latency_ns: latency, phases_ns: p, line: None, stack: Vec::new() },
                );
            }
        }
        let series = series
            .into_iter()
            .map(|(mut s, counts)| {
                s.dists = counts.map(|c| c.into_iter().collect());
                s.summary = (s.matched > 0).then(|| {
                    // Nearest rank, as measure's `phase_summary` over the same wake-ups.
                    s.dists
                        .each_ref()
                        .map(|d| [0.5, 0.99, 1.0].map(|q| percentile::of_counts(d.iter().copied(), q).unwrap_or(0)))
                });
                s
            })
            .collect();
        Breakdown { series, explain: None }
    }
}

/// Adds `sp` to `worst` (worst first; the earlier cycle first among equals)
/// when it is among the [`TRACE_SPIKES`] worst.
fn keep_worst(worst: &mut Vec<Spike>, sp: Spike) {
    let key = |s: &Spike| (std::cmp::Reverse(s.latency_ns), s.cycle);
    let at = worst.partition_point(|w| key(w) <= key(&sp));
    if at < TRACE_SPIKES {
        worst.insert(at, sp);
        worst.truncate(TRACE_SPIKES);
    }
}

impl PhaseSeries {
    /// The same series of the same run: a JSON's and a trace's summaries of
    /// one run are computed from the same wake-ups, so they are equal.
    pub fn same_run(&self, other: &PhaseSeries) -> bool {
        (&self.mechanism, self.thread, self.wakeups, self.matched, self.summary)
            == (&other.mechanism, other.thread, other.wakeups, other.matched, other.summary)
    }
}

fn empty(mechanism: &str, thread: usize) -> PhaseSeries {
    PhaseSeries {
        mechanism: mechanism.to_string(),
        thread,
        wakeups: 0,
        matched: 0,
        not_timer_woken: None,
        unmatched: Vec::new(),
        summary: None,
        dists: Default::default(),
        spikes: Vec::new(),
    }
}

/// The four values of `named` in [`Phases::NAMES`]' order, by name.
fn in_order<T: Copy>(named: &[(&str, T)], what: &str) -> Result<[T; 4], String> {
    let mut out = Vec::with_capacity(4);
    for name in Phases::NAMES {
        let v = named.iter().find(|(n, _)| *n == name).ok_or_else(|| format!("{what} has no \"{name}\" phase"))?;
        out.push(v.1);
    }
    Ok([out[0], out[1], out[2], out[3]])
}

fn series_of_json(e: &ExplainedJson) -> Result<PhaseSeries, String> {
    let what = format!("explain: {} T{}", e.mechanism, e.thread);
    // Without phases (spin, hybrid, nothing matched) measure writes none, or zeros.
    let summary = if e.not_timer_woken.is_some() || e.matched == 0 {
        None
    } else {
        let named: Vec<(&str, [i64; 3])> =
            e.phases_ns.iter().map(|p| (p.phase.as_str(), [p.p50, p.p99, p.max])).collect();
        Some(in_order(&named, &format!("{what}: phases_ns"))?)
    };
    let spikes = e.spikes.iter().map(|s| spike_of_json(s, &what)).collect::<Result<_, _>>()?;
    Ok(PhaseSeries {
        not_timer_woken: e.not_timer_woken.clone(),
        unmatched: e.unmatched.clone(),
        summary,
        spikes,
        wakeups: e.wakeups,
        matched: e.matched,
        ..empty(&e.mechanism, e.thread)
    })
}

fn spike_of_json(s: &SpikeJson, what: &str) -> Result<Spike, String> {
    let named: Vec<(&str, i64)> = s.phases_ns.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let phases_ns = in_order(&named, &format!("{what}: the spike of cycle {}", s.cycle))?;
    Ok(Spike {
        cycle: s.cycle,
        latency_ns: s.latency_ns,
        phases_ns,
        line: Some(s.line.clone()),
        stack: s.stack.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_gives_the_summary_and_the_worst_wake_ups() {
        let rows = [
            ("timerfd", 0, 0, 10, Some([1, 2, 3, 4])),
            ("timerfd", 0, 1, 100, Some([70, 10, 10, 10])),
            ("spin", 0, 0, 1, None),
            ("timerfd", 0, 2, 7, None),
            ("timerfd", 0, 3, 100, Some([10, 10, 70, 10])),
        ];
        let b = Breakdown::from_wakeups(rows);
        let t = &b.series[0];
        assert_eq!((t.mechanism.as_str(), t.wakeups, t.matched), ("timerfd", 4, 3));
        // Nearest rank over [1, 70, 10] etc.: p50 is the 2nd of 3, p99 and max the 3rd.
        assert_eq!(t.summary, Some([[10, 70, 70], [10, 10, 10], [10, 70, 70], [10, 10, 10]]));
        let cycles: Vec<u64> = t.spikes.iter().map(|s| s.cycle).collect();
        assert_eq!(cycles, [1, 3, 0], "worst first, the earlier of equals first");
        assert_eq!(t.spikes[1].phases_ns, [10, 10, 70, 10]);
        assert_eq!((b.series[1].wakeups, b.series[1].matched, b.series[1].summary), (1, 0, None));
    }

    #[test]
    fn a_long_trace_keeps_counts_and_the_worst_not_every_wake_up() {
        let phases = |i: u64| [(i % 3) as i64 * 100, 5, 7, i as i64 % 2];
        let rows = (0..10_000u64).map(|i| ("timerfd", 0, i, phases(i).iter().sum::<i64>(), Some(phases(i))));
        let b = Breakdown::from_wakeups(rows);
        let t = &b.series[0];
        assert_eq!(t.dists.each_ref().map(Vec::len), [3, 1, 1, 2], "one entry per distinct value");
        assert_eq!(t.dists[0], [(0, 3334), (100, 3333), (200, 3333)]);
        let cycles: Vec<u64> = t.spikes.iter().map(|s| s.cycle).collect();
        assert_eq!(cycles, [5, 11, 17, 23, 29], "the five worst (213 ns), earliest first");
        // The same numbers measure's summary gives over every wake-up.
        let all: Vec<Phases> = (0..10_000)
            .map(phases)
            .map(|p| Phases {
                irq_delay: rtick::Nanos(p[0]),
                wakeup_path: rtick::Nanos(p[1]),
                scheduling: rtick::Nanos(p[2]),
                return_to_user: rtick::Nanos(p[3]),
            })
            .collect();
        let want = rtick::explain::phase_summary(&all).map(|(_, v)| v.map(rtick::Nanos::as_ns));
        assert_eq!(t.summary, Some(want));
    }
}

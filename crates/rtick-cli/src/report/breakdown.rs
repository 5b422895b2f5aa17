//! The kernel phases `measure --explain` left in a run's files, as one model:
//! per mechanism and thread, each phase's p50 / p99 / max, every wake-up's
//! phases when a trace holds them, and the spikes. The JSON's `explain`
//! object is read with its own serde types (`cmd::explain`), a trace's phase
//! columns row by row; the terminal table (`output::explain`) and the
//! `breakdown` plot read only this model, so `measure --explain` and
//! `rtick report` print the same thing whichever file the phases came from.

use rtick::explain::{phase_summary, Phases};
use rtick::Nanos;

use crate::cmd::explain::{ExplainJson, ExplainedJson, SpikeJson};

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
    /// Every matched wake-up's phases, in trace order (a trace); empty from JSON.
    pub samples: Vec<[i64; 4]>,
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
}

impl Breakdown {
    /// From the JSON's `explain` object; the error says which series and
    /// which phase does not fit the schema.
    pub fn from_explain(e: &ExplainJson) -> Result<Breakdown, String> {
        let series = e.results.iter().map(series_of_json).collect::<Result<_, _>>()?;
        Ok(Breakdown { series, explain: Some(e.clone()) })
    }

    /// From a trace's wake-ups, in trace order.
    pub fn from_wakeups<'a>(rows: impl IntoIterator<Item = Wakeup<'a>>) -> Breakdown {
        let mut series: Vec<(PhaseSeries, Vec<(u64, i64)>)> = Vec::new();
        for (mechanism, thread, cycle, latency, phases) in rows {
            let at = match series.iter().position(|s| s.0.mechanism == mechanism && s.0.thread == thread) {
                Some(i) => i,
                None => {
                    series.push((empty(mechanism, thread), Vec::new()));
                    series.len() - 1
                }
            };
            let (s, cycles) = &mut series[at];
            s.wakeups += 1;
            if let Some(p) = phases {
                s.matched += 1;
                s.samples.push(p);
                cycles.push((cycle, latency));
            }
        }
        let series = series
            .into_iter()
            .map(|(mut s, cycles)| {
                let phases: Vec<Phases> = s.samples.iter().map(|p| phases_of(*p)).collect();
                s.summary = (!phases.is_empty()).then(|| phase_summary(&phases).map(|(_, v)| v.map(Nanos::as_ns)));
                let mut worst: Vec<usize> = (0..cycles.len()).collect();
                // Worst first; the earlier cycle first among equals, as a stable order.
                worst.sort_by_key(|&i| (std::cmp::Reverse(cycles[i].1), cycles[i].0));
                s.spikes = worst
                    .into_iter()
                    .take(TRACE_SPIKES)
                    .map(|i| Spike { cycle: cycles[i].0, latency_ns: cycles[i].1, phases_ns: s.samples[i], line: None })
                    .collect();
                s
            })
            .collect();
        Breakdown { series, explain: None }
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
        samples: Vec::new(),
        spikes: Vec::new(),
    }
}

fn phases_of(p: [i64; 4]) -> Phases {
    Phases { irq_delay: Nanos(p[0]), wakeup_path: Nanos(p[1]), scheduling: Nanos(p[2]), return_to_user: Nanos(p[3]) }
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
    Ok(Spike { cycle: s.cycle, latency_ns: s.latency_ns, phases_ns, line: Some(s.line.clone()) })
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
}

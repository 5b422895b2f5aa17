//! What tracing costs, measured inside the run it explains: the tracing is
//! switched off and on in stretches ([`crate::ktrace::Session::pause`]),
//! and afterwards the wake-ups of the traced and of the plain stretches are
//! compared, per mechanism and thread, on the same CPUs and under the same
//! load — which separate runs, minutes apart on a noisy machine, are not.
//!
//! ```text
//!  traced          │sw│   plain          │sw│   traced …
//!  ────────────────┼──┼──────────────────┼──┼──────────
//!        guard ◀──▶│  │◀──▶ guard   guard◀──▶  │◀──▶
//! ```
//!
//! A switch patches kernel code (static keys), which interrupts every CPU,
//! and a wake-up whose timer was armed in the other state is half of each:
//! wake-ups within `guard` of a switch (the caller takes two periods) count
//! for neither side. Only the traced stretches can be explained; the
//! others' wake-ups are not traced, which is not a failure to match.

use std::collections::HashMap;

use super::run::SpikeChoice;
use crate::measure::TraceRow;
use crate::time::{Nanos, Time};
use crate::wait::Mechanism;

/// One switch of the tracing: when it began, when the last event's switch
/// was done, and whether tracing is on after it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    /// Before the first write (CLOCK_MONOTONIC).
    pub began: Time,
    /// After the last write.
    pub done: Time,
    /// Tracing on (true) or off after it.
    pub traced: bool,
}

/// The stretches of a run: traced from its start, then switched at each
/// [`Switch`], in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// The switches, in time order.
    pub switches: Vec<Switch>,
}

/// Which stretch a wake-up belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stretch {
    /// Traced, away from any switch: explained, and the A side.
    Traced,
    /// Not traced, away from any switch: the B side.
    Plain,
    /// Within the guard of a switch: neither.
    AtSwitch,
}

impl Stretch {
    /// Why a wake-up of this stretch has no explanation (none for traced ones).
    pub fn not_traced(self) -> Option<&'static str> {
        match self {
            Stretch::Traced => None,
            Stretch::Plain => Some("not traced (a plain stretch of the A/B)"),
            Stretch::AtSwitch => Some("not traced (at a switch of the A/B)"),
        }
    }
}

impl Schedule {
    /// The stretch of a wake-up planned at `planned` that woke at `actual`:
    /// [`Stretch::AtSwitch`] when a switch overlaps `[planned − guard,
    /// actual + guard]`, else the state at `planned`.
    pub fn stretch(&self, planned: Time, actual: Time, guard: Nanos) -> Stretch {
        let (from, to) = (planned - guard, actual.max(planned) + guard);
        if self.switches.iter().any(|s| s.began <= to && s.done >= from) {
            return Stretch::AtSwitch;
        }
        let i = self.switches.partition_point(|s| s.done < planned);
        match i.checked_sub(1) {
            Some(i) if !self.switches[i].traced => Stretch::Plain,
            _ => Stretch::Traced,
        }
    }
}

/// p50, p99 and max of a set of latencies, and how many.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Latencies {
    /// Wake-ups.
    pub wakeups: usize,
    /// Median latency.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// Maximum.
    pub max: Nanos,
}

impl Latencies {
    /// Of `ns`, sorted here.
    pub fn of(mut ns: Vec<i64>) -> Latencies {
        ns.sort_unstable();
        let at = |q| Nanos(crate::stats::percentile::of_sorted(&ns, q).unwrap_or(0));
        Latencies { wakeups: ns.len(), p50: at(0.5), p99: at(0.99), max: at(1.0) }
    }
}

/// A wake-up the user would want explained (among the worst, or over the
/// threshold) that was not traced.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NotTraced {
    /// Grid index.
    pub cycle: u64,
    /// Its latency.
    pub latency: Nanos,
    /// Plain, or at a switch.
    pub stretch: Stretch,
}

/// One mechanism of one thread: traced against plain.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Thread index.
    pub thread: usize,
    /// The wake-ups of the traced stretches.
    pub traced: Latencies,
    /// Those of the plain stretches.
    pub plain: Latencies,
    /// Those within the guard of a switch (left out of both).
    pub at_switches: Latencies,
    /// The worst wake-ups (by the spike choice) that were not traced, worst first.
    pub not_traced: Vec<NotTraced>,
}

impl Compared {
    /// traced ÷ plain of p50, p99 and max; `None` when a side has no wake-up
    /// or a plain value is not positive.
    pub fn ratios(&self) -> Option<[f64; 3]> {
        let (t, p) = (&self.traced, &self.plain);
        let ok = t.wakeups > 0 && p.wakeups > 0 && p.p50 > Nanos::ZERO;
        ok.then(|| {
            [(t.p50, p.p50), (t.p99, p.p99), (t.max, p.max)].map(|(a, b)| a.as_ns() as f64 / b.as_ns().max(1) as f64)
        })
    }
}

/// Compares traced and plain stretches for every mechanism and thread of
/// `slots` (in their order: the run's results), from every wake-up's row;
/// names the worst wake-ups by `choice` that fell outside the traced stretches.
pub fn compare(
    rows: &[TraceRow],
    slots: &[(Mechanism, usize)],
    schedule: &Schedule,
    guard: Nanos,
    choice: SpikeChoice,
) -> Vec<Compared> {
    let mut by_slot: HashMap<(Mechanism, usize), Vec<Wake>> = HashMap::new();
    for r in rows {
        let stretch = schedule.stretch(r.planned, r.actual, guard);
        let w = Wake { cycle: r.cycle, latency: r.actual - r.planned, stretch };
        by_slot.entry((r.mechanism, r.thread as usize)).or_default().push(w);
    }
    slots
        .iter()
        .map(|&(mechanism, thread)| {
            let mut wakes = by_slot.remove(&(mechanism, thread)).unwrap_or_default();
            let side = |s: Stretch| {
                Latencies::of(wakes.iter().filter(|w| w.stretch == s).map(|w| w.latency.as_ns()).collect())
            };
            let (traced, plain, at_switches) = (side(Stretch::Traced), side(Stretch::Plain), side(Stretch::AtSwitch));
            wakes.sort_by_key(|w| std::cmp::Reverse(w.latency));
            let over = |l: Nanos| choice.over.is_some_and(|o| l > o);
            let not_traced = wakes
                .iter()
                .enumerate()
                .filter(|(rank, w)| (*rank < choice.top || over(w.latency)) && w.stretch != Stretch::Traced)
                .map(|(_, w)| NotTraced { cycle: w.cycle, latency: w.latency, stretch: w.stretch })
                .collect();
            Compared { mechanism, thread, traced, plain, at_switches, not_traced }
        })
        .collect()
}

/// One wake-up, classified.
struct Wake {
    cycle: u64,
    latency: Nanos,
    stretch: Stretch,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn row(cycle: u64, planned_ms: i64, latency: i64) -> TraceRow {
        TraceRow {
            thread: 0,
            mechanism: Mechanism::ClockNanosleep,
            cycle,
            planned: Time(planned_ms * MS),
            actual: Time(planned_ms * MS + latency),
        }
    }

    /// Traced until a switch at 100–101 ms, plain until a switch at 200–201 ms, traced again.
    fn schedule() -> Schedule {
        Schedule {
            switches: vec![
                Switch { began: Time(100 * MS), done: Time(101 * MS), traced: false },
                Switch { began: Time(200 * MS), done: Time(201 * MS), traced: true },
            ],
        }
    }

    #[test]
    fn wake_ups_are_split_by_stretch_and_those_near_a_switch_left_out() {
        let s = schedule();
        let g = Nanos::from_ms(2);
        let at = |ms: i64, lat: i64| s.stretch(Time(ms * MS), Time(ms * MS + lat), g);
        assert_eq!(at(50, 10_000), Stretch::Traced);
        assert_eq!(at(97, 0), Stretch::Traced, "guard ends just before the switch");
        assert_eq!(at(98, 0), Stretch::AtSwitch, "within the guard before the switch");
        // Planned before the switch but woken (late) into it.
        assert_eq!(at(90, 9 * MS), Stretch::AtSwitch);
        assert_eq!(at(102, 0), Stretch::AtSwitch, "within the guard after it");
        assert_eq!(at(104, 0), Stretch::Plain);
        assert_eq!(at(150, 0), Stretch::Plain);
        assert_eq!(at(204, 0), Stretch::Traced);
        assert_eq!(Schedule::default().stretch(Time(5), Time(6), g), Stretch::Traced, "no switch: all traced");
    }

    const SLOT: [(Mechanism, usize); 1] = [(Mechanism::ClockNanosleep, 0)];

    #[test]
    fn traced_and_plain_are_compared_with_exact_percentiles() {
        let s = schedule();
        // Traced (0–97 ms, 204–299 ms): latencies 10 µs, a quarter 20 µs, one 500 µs.
        // Plain (104–197 ms): 8 µs, and one of 900 µs (its p99 too: 94 wake-ups).
        // At the switches: 5 ms.
        let mut rows = Vec::new();
        for ms in 0..300 {
            let lat = match ms {
                0..=97 | 204.. if ms == 250 => 500_000,
                0..=97 | 204.. if ms % 4 == 1 => 20_000,
                0..=97 | 204.. => 10_000,
                104..=197 if ms == 150 => 900_000,
                104..=197 => 8_000,
                _ => 5 * MS,
            };
            rows.push(row(ms as u64, ms, lat));
        }
        let c = &compare(&rows, &SLOT, &s, Nanos::from_ms(2), SpikeChoice { top: 2, over: None })[0];
        assert_eq!((c.traced.wakeups, c.plain.wakeups, c.at_switches.wakeups), (194, 94, 12));
        assert_eq!(c.traced, Latencies { wakeups: 194, p50: Nanos(10_000), p99: Nanos(20_000), max: Nanos(500_000) });
        assert_eq!(c.plain, Latencies { wakeups: 94, p50: Nanos(8_000), p99: Nanos(900_000), max: Nanos(900_000) });
        assert_eq!(c.ratios().unwrap(), [1.25, 20_000.0 / 900_000.0, 500_000.0 / 900_000.0]);
        // The two worst are at the switches (5 ms each): not traced.
        assert_eq!(c.not_traced.len(), 2);
        assert!(c.not_traced.iter().all(|n| n.stretch == Stretch::AtSwitch && n.latency == Nanos(5 * MS)));
        // With a threshold: the plain 900 µs one too, and not the traced 500 µs one.
        let c = &compare(&rows, &SLOT, &s, Nanos::from_ms(2), SpikeChoice { top: 0, over: Some(Nanos(400_000)) })[0];
        assert_eq!(c.not_traced.len(), 13);
        assert_eq!(
            c.not_traced.last(),
            Some(&NotTraced { cycle: 150, latency: Nanos(900_000), stretch: Stretch::Plain })
        );
        // No plain wake-up: no ratio.
        let traced_only: Vec<_> = rows.iter().filter(|r| r.planned < Time(97 * MS)).cloned().collect();
        assert_eq!(compare(&traced_only, &SLOT, &s, Nanos::from_ms(2), SpikeChoice::default())[0].ratios(), None);
    }
}

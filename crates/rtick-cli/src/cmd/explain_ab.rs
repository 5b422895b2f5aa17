//! `--explain-ab`: what tracing costs, measured inside the run it explains.
//! The main thread (the progress callback, never a measuring thread)
//! switches the session's events off and on in fixed stretches and records
//! when; afterwards [`rtick::explain::ab`] compares the wake-ups of the
//! traced and the plain stretches, and only the traced ones are explained.
//!
//! The default stretch is a second; with `--compare`, half a slice at most,
//! so that every slice (and so every mechanism) has both: any window of two
//! stretches is half traced, half plain, wherever it begins.

use std::time::{Duration, Instant};

use rtick::explain::ab::{self, Compared, Latencies, Schedule, Stretch, Switch};
use rtick::explain::SpikeChoice;
use rtick::ktrace::Session;
use rtick::measure::{MeasureConfig, ThreadResult, TraceRow};
use rtick::{ClockId, Mechanism, Nanos};
use rtick_model::json::{AbJson, AbResultJson, LatenciesJson, NotTracedJson, SwitchJson};

use crate::output::{fmt_latency, unit};

/// The stretch length when `--explain-ab` does not give one.
const DEFAULT_PERIOD: Nanos = Nanos::from_secs(1);

/// The shortest stretch: the tracing is switched from the progress
/// callback, which comes ten times a second.
const MIN_PERIOD: Nanos = Nanos::from_ms(200);

/// clap value parser of `--explain-ab PERIOD`: a duration, at least [`MIN_PERIOD`].
pub fn parse_period(s: &str) -> Result<Nanos, String> {
    let p = crate::units::duration(s)?;
    if p < MIN_PERIOD {
        return Err(format!(
            "a stretch must last at least {MIN_PERIOD} (the tracing is switched ten times a second at most)"
        ));
    }
    Ok(p)
}

/// The stretch length for `requested` (`--explain-ab[=PERIOD]`) in `cfg`'s run.
pub fn period(requested: Option<Nanos>, cfg: &MeasureConfig) -> Nanos {
    requested.unwrap_or_else(|| match cfg.interleave {
        Some(slice) => DEFAULT_PERIOD.min(Nanos(slice.as_ns() / 2)).max(MIN_PERIOD),
        None => DEFAULT_PERIOD,
    })
}

/// The switching during the run.
pub struct Alternating {
    period: Nanos,
    guard: Nanos,
    next: Option<Instant>,
    schedule: Schedule,
    error: Option<String>,
}

impl Alternating {
    /// Stretches of `period`; wake-ups within two of `cfg`'s periods of a
    /// switch count for neither side (the timer of the first one after a
    /// switch was armed before it, and the switch itself interrupts every CPU).
    pub fn new(period: Nanos, cfg: &MeasureConfig) -> Alternating {
        let guard = Nanos(cfg.interval.as_ns() * 2);
        Alternating { period, guard, next: None, schedule: Schedule::default(), error: None }
    }

    /// From the progress callback: switches when the stretch is over. The
    /// first call (the measurement has started) starts the first, traced,
    /// stretch. A failed switch ends the A/B, with tracing left as it is.
    pub fn tick(&mut self, session: &mut Session) {
        let now = Instant::now();
        let next = *self.next.get_or_insert(now + Duration::from_nanos(self.period.as_ns() as u64));
        if now < next || self.error.is_some() {
            return;
        }
        let traced = session.is_paused();
        let began = ClockId::Monotonic.now();
        let switched = if traced { session.resume() } else { session.pause() };
        let done = ClockId::Monotonic.now();
        match switched {
            // Recorded even when it failed: some events may have switched.
            Ok(()) => self.schedule.switches.push(Switch { began, done, traced }),
            Err(e) => {
                self.schedule.switches.push(Switch { began, done, traced: !traced });
                self.error = Some(format!("switching the tracing {} failed: {e}", if traced { "on" } else { "off" }));
            }
        }
        // On a grid of periods: the callback comes every 100 ms, so a stretch
        // may be that much longer or shorter, but traced and plain time stay
        // equal on the whole. After a stall, the grid starts again from now.
        let period = Duration::from_nanos(self.period.as_ns() as u64);
        self.next = Some(if next + period > now { next + period } else { now + period });
    }

    /// Whether `r`'s wake-up is of a traced stretch (one to explain).
    pub fn traced(&self, r: &TraceRow) -> bool {
        self.schedule.stretch(r.planned, r.actual, self.guard) == Stretch::Traced
    }

    /// Compares the stretches over every row of the run.
    pub fn finish(self, rows: &[TraceRow], results: &[ThreadResult], choice: SpikeChoice) -> AbReport {
        let slots: Vec<(Mechanism, usize)> = results.iter().map(|r| (r.mechanism, r.thread)).collect();
        let compared = ab::compare(rows, &slots, &self.schedule, self.guard, choice);
        AbReport { period: self.period, guard: self.guard, schedule: self.schedule, compared, error: self.error }
    }
}

/// The A/B's outcome.
pub struct AbReport {
    period: Nanos,
    guard: Nanos,
    schedule: Schedule,
    compared: Vec<Compared>,
    error: Option<String>,
}

impl AbReport {
    /// The table of traced against plain, then the worst wake-ups not traced.
    pub fn render(&self, nsecs: bool) -> String {
        let f = |n: Nanos| fmt_latency(n.as_ns(), nsecs);
        let lat = |l: &Latencies| format!("{:>7}  {} / {} / {}", l.wakeups, f(l.p50), f(l.p99), f(l.max));
        let longest = self.schedule.switches.iter().map(|s| s.done - s.began).max().unwrap_or(Nanos::ZERO);
        let mut s = format!(
            "\nwhat tracing added (A/B in this run: tracing switched off and on every {}, {} switches of up to {}; same CPUs): n  p50 / p99 / max, {}\n",
            self.period,
            self.schedule.switches.len(),
            longest,
            unit(nsecs)
        );
        s.push_str(&format!(
            "{:<20} {:>2}  {:<32} {:<32} {}\n",
            "mechanism", "T", "traced stretches", "plain stretches", "tracing added"
        ));
        for c in &self.compared {
            let added = match c.ratios() {
                // The max is one wake-up, the host's more than tracing's: in the JSON only.
                Some([p50, p99, _]) => format!("p50 ×{p50:.2}, p99 ×{p99:.2}"),
                None => "no ratio: a side has no wake-up (a run shorter than two stretches?)".into(),
            };
            s.push_str(&format!(
                "{:<20} {:>2}  {:<32} {:<32} {added}\n",
                c.mechanism.name(),
                c.thread,
                lat(&c.traced),
                lat(&c.plain)
            ));
            let w = &c.at_switches;
            if w.wakeups > 0 {
                s.push_str(&format!(
                    "  {} within {} of a switch, in neither: {} / {} / {}\n",
                    rtick::text::count(w.wakeups as u64, "wake-up"),
                    self.guard,
                    f(w.p50),
                    f(w.p99),
                    f(w.max)
                ));
            }
        }
        s.push_str("the phases and spikes above are those of the traced stretches\n");
        for c in self.compared.iter().filter(|c| !c.not_traced.is_empty()) {
            s.push_str(&format!("worst wake-ups of {} T{} not traced:\n", c.mechanism.name(), c.thread));
            for n in &c.not_traced {
                s.push_str(&format!("  cycle {}  {}: {}\n", n.cycle, n.latency, n.stretch.not_traced().unwrap_or("")));
            }
        }
        if let Some(e) = &self.error {
            s.push_str(&format!("note: the A/B stopped early: {e}\n"));
        }
        s
    }

    /// The JSON form (`explain.ab`).
    pub fn json(&self) -> AbJson {
        let lat = |l: &Latencies| LatenciesJson {
            wakeups: l.wakeups,
            p50_ns: l.p50.as_ns(),
            p99_ns: l.p99.as_ns(),
            max_ns: l.max.as_ns(),
        };
        AbJson {
            period_ns: self.period.as_ns(),
            guard_ns: self.guard.as_ns(),
            switches: self
                .schedule
                .switches
                .iter()
                .map(|s| SwitchJson { began_ns: s.began.0, done_ns: s.done.0, traced: s.traced })
                .collect(),
            error: self.error.clone(),
            results: self
                .compared
                .iter()
                .map(|c| {
                    let r = c.ratios();
                    AbResultJson {
                        mechanism: c.mechanism.name().into(),
                        thread: c.thread,
                        traced: lat(&c.traced),
                        plain: lat(&c.plain),
                        at_switches: lat(&c.at_switches),
                        ratio_p50: r.map(|r| r[0]),
                        ratio_p99: r.map(|r| r[1]),
                        ratio_max: r.map(|r| r[2]),
                        not_traced: c
                            .not_traced
                            .iter()
                            .map(|n| NotTracedJson {
                                cycle: n.cycle,
                                latency_ns: n.latency.as_ns(),
                                stretch: match n.stretch {
                                    Stretch::Plain => "plain",
                                    _ => "at_switch",
                                }
                                .into(),
                            })
                            .collect(),
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::Time;

    fn report() -> AbReport {
        let ms = |n: i64| Time(n * 1_000_000);
        let schedule = Schedule {
            switches: vec![
                Switch { began: ms(1000), done: ms(1001), traced: false },
                Switch { began: ms(2000), done: ms(2001), traced: true },
            ],
        };
        let l = |n, p50, p99, max| Latencies { wakeups: n, p50: Nanos(p50), p99: Nanos(p99), max: Nanos(max) };
        let compared = vec![Compared {
            mechanism: Mechanism::ClockNanosleep,
            thread: 0,
            traced: l(1990, 21_400, 66_000, 900_000),
            plain: l(995, 20_000, 60_000, 1_800_000),
            at_switches: l(8, 20_500, 90_000, 90_000),
            not_traced: vec![ab::NotTraced { cycle: 1500, latency: Nanos(1_800_000), stretch: Stretch::Plain }],
        }];
        AbReport { period: Nanos::from_secs(1), guard: Nanos::from_ms(2), schedule, compared, error: None }
    }

    #[test]
    fn stretches_default_to_a_second_or_half_a_slice_and_are_never_shorter_than_200_ms() {
        let mut cfg = MeasureConfig::default();
        assert_eq!(period(None, &cfg), Nanos::from_secs(1));
        assert_eq!(period(Some(Nanos::from_ms(300)), &cfg), Nanos::from_ms(300));
        assert_eq!(parse_period("300ms"), Ok(Nanos::from_ms(300)));
        assert_eq!(parse_period("2"), Ok(Nanos::from_secs(2)));
        assert!(parse_period("50ms").unwrap_err().contains("at least 200.00 ms"));
        cfg.interleave = Some(Nanos::from_secs(1));
        assert_eq!(period(None, &cfg), Nanos::from_ms(500));
        cfg.interleave = Some(Nanos::from_ms(100));
        assert_eq!(period(None, &cfg), Nanos::from_ms(200));
        cfg.interleave = Some(Nanos::from_secs(5));
        assert_eq!(period(None, &cfg), Nanos::from_secs(1));
    }

    #[test]
    fn the_table_shows_both_sides_their_ratios_and_what_was_not_traced() {
        let out = report().render(false);
        assert!(out.contains("switched off and on every 1.000 s, 2 switches of up to 1.00 ms"), "{out}");
        assert!(out.contains("   1990  21.4 / 66.0 / 900.0"), "{out}");
        assert!(out.contains("    995  20.0 / 60.0 / 1800.0"), "{out}");
        assert!(out.contains("p50 ×1.07, p99 ×1.10\n"), "{out}");
        assert!(out.contains("  8 wake-ups within 2.00 ms of a switch, in neither: 20.5 / 90.0 / 90.0"), "{out}");
        assert!(out.contains("worst wake-ups of clock_nanosleep T0 not traced:\n  cycle 1500  1.80 ms: not traced (a plain stretch of the A/B)"), "{out}");
    }

    #[test]
    fn the_json_carries_the_switches_both_sides_and_the_ratios() {
        let j = serde_json::to_value(report().json()).unwrap();
        assert_eq!(j["period_ns"], 1_000_000_000);
        assert_eq!(j["switches"][0]["began_ns"], 1_000_000_000i64);
        assert_eq!(j["switches"][1]["traced"], true);
        let r = &j["results"][0];
        assert_eq!((r["traced"]["p99_ns"].as_i64(), r["plain"]["wakeups"].as_u64()), (Some(66_000), Some(995)));
        assert_eq!(r["ratio_p50"].as_f64(), Some(1.07));
        assert_eq!(r["ratio_p99"].as_f64(), Some(1.1));
        assert_eq!(r["not_traced"][0]["stretch"], "plain");
    }
}

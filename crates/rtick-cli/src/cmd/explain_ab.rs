//! `--explain-ab`: what tracing costs, measured inside the run it explains
//! ([`rtick::explain::Alternating`] switches the tracing; this renders its
//! outcome and writes its JSON form).

use rtick::explain::ab::{Latencies, Stretch};
use rtick::explain::AbOutcome;
use rtick::Nanos;
use rtick_model::json::{AbJson, AbResultJson, LatenciesJson, NotTracedJson, SwitchJson};

use crate::output::{fmt_latency, unit};

/// The table of traced against plain, then the worst wake-ups not traced.
pub fn render(ab: &AbOutcome, nsecs: bool) -> String {
    let f = |n: Nanos| fmt_latency(n.as_ns(), nsecs);
    let lat = |l: &Latencies| format!("{:>7}  {} / {} / {}", l.wakeups, f(l.p50), f(l.p99), f(l.max));
    let longest = ab.schedule.switches.iter().map(|s| s.done - s.began).max().unwrap_or(Nanos::ZERO);
    let mut s = format!(
            "\nwhat tracing added (A/B in this run: tracing switched off and on every {}, {} of up to {}; same CPUs): n  p50 / p99 / max, {}\n",
            ab.period,
            rtick::text::count(ab.schedule.switches.len() as u64, "switch"),
            longest,
            unit(nsecs)
        );
    s.push_str(&format!(
        "{:<20} {:>2}  {:<32} {:<32} {}\n",
        "mechanism", "T", "traced stretches", "plain stretches", "tracing added"
    ));
    for c in &ab.compared {
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
                ab.guard,
                f(w.p50),
                f(w.p99),
                f(w.max)
            ));
        }
    }
    s.push_str("the phases and spikes above are those of the traced stretches\n");
    for c in ab.compared.iter().filter(|c| !c.not_traced.is_empty()) {
        s.push_str(&format!("worst wake-ups of {} T{} not traced:\n", c.mechanism.name(), c.thread));
        for n in &c.not_traced {
            s.push_str(&format!("  cycle {}  {}: {}\n", n.cycle, n.latency, n.stretch.not_traced().unwrap_or("")));
        }
    }
    if let Some(e) = &ab.error {
        s.push_str(&format!("note: the A/B stopped early: {e}\n"));
    }
    s
}

/// The JSON form (`explain.ab`).
pub fn json(ab: &AbOutcome) -> AbJson {
    let lat = |l: &Latencies| LatenciesJson {
        wakeups: l.wakeups,
        p50_ns: l.p50.as_ns(),
        p99_ns: l.p99.as_ns(),
        max_ns: l.max.as_ns(),
    };
    AbJson {
        period_ns: ab.period.as_ns(),
        guard_ns: ab.guard.as_ns(),
        switches: ab
            .schedule
            .switches
            .iter()
            .map(|s| SwitchJson { began_ns: s.began.0, done_ns: s.done.0, traced: s.traced })
            .collect(),
        error: ab.error.clone(),
        results: ab
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

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::explain::ab::{self, Compared, Schedule, Switch};
    use rtick::{Mechanism, Time};

    fn report() -> AbOutcome {
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
        AbOutcome { period: Nanos::from_secs(1), guard: Nanos::from_ms(2), schedule, compared, error: None }
    }

    #[test]
    fn the_table_shows_both_sides_their_ratios_and_what_was_not_traced() {
        let out = render(&report(), false);
        assert!(out.contains("switched off and on every 1.000 s, 2 switches of up to 1.00 ms"), "{out}");
        assert!(out.contains("   1990  21.4 / 66.0 / 900.0"), "{out}");
        assert!(out.contains("    995  20.0 / 60.0 / 1800.0"), "{out}");
        assert!(out.contains("p50 ×1.07, p99 ×1.10\n"), "{out}");
        assert!(out.contains("  8 wake-ups within 2.00 ms of a switch, in neither: 20.5 / 90.0 / 90.0"), "{out}");
        assert!(out.contains("worst wake-ups of clock_nanosleep T0 not traced:\n  cycle 1500  1.80 ms: not traced (a plain stretch of the A/B)"), "{out}");
    }

    #[test]
    fn the_json_carries_the_switches_both_sides_and_the_ratios() {
        let j = serde_json::to_value(json(&report())).unwrap();
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

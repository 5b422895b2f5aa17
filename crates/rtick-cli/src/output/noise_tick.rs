//! The tick of a `nohz_full` CPU under `rtick noise`: a line per CPU
//! saying whether it stopped, and when it did not, what kept it. CPUs
//! that are not nohz_full get none (the run's notes say so once).

use rtick::ktrace::TickDependency;
use rtick_model::json::{NoiseCpuJson, NoiseTickJson};

/// The line for CPU `c`, or nothing when it is not nohz_full.
pub fn line(c: &NoiseCpuJson) -> String {
    match (&c.tick, c.nohz_full) {
        (Some(t), true) => format!("  tick (nohz_full): {}\n", words(t)),
        _ => String::new(),
    }
}

/// A dependency's words, from the kernel's name of it.
fn meaning(name: &str) -> &'static str {
    TickDependency::KNOWN.iter().find(|k| k.1 == name).map_or("unknown dependency", |k| k.2)
}

fn words(t: &NoiseTickJson) -> String {
    if t.stopped == 0 && t.kept == 0 {
        return "no timer:tick_stop event: it never tried to stop (always busy in the kernel, or the event is missing)"
            .into();
    }
    let mut o = format!("stopped {} times", t.stopped);
    if t.kept > 0 {
        let why: Vec<String> = t.reasons.iter().map(|(name, n)| format!("{} ({name}) {n}×", meaning(name))).collect();
        o += &format!("; kept running {} times by: {}", t.kept, why.join(", "));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::noise::TickTally;

    #[test]
    fn a_refusal_names_what_kept_the_tick() {
        let mut t = TickTally::default();
        let json = |t: &TickTally| NoiseTickJson {
            stopped: t.stopped,
            kept: t.kept,
            reasons: t.reasons.iter().map(|r| (r.0.clone(), r.2)).collect(),
        };
        assert!(words(&json(&t)).starts_with("no timer:tick_stop event"));
        t.event(true, TickDependency(0));
        assert_eq!(words(&json(&t)), "stopped 1 times");
        t.event(false, TickDependency(1 << 4));
        t.event(false, TickDependency(1));
        t.event(false, TickDependency(1 << 9));
        assert_eq!(words(&json(&t)), "stopped 1 times; kept running 3 times by: RCU (RCU) 1×, POSIX timer (POSIX_TIMER) 1×, unknown dependency (BIT_9) 1×");
    }
}

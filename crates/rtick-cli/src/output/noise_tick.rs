//! The tick of a `nohz_full` CPU under `rtick noise`: a line per CPU
//! saying whether it stopped, and when it did not, what kept it. CPUs
//! that are not nohz_full get none (the run's notes say so once).

use rtick::noise::{CpuNoise, TickTally};

/// The line for CPU `c`, or nothing when it is not nohz_full.
pub fn line(c: &CpuNoise) -> String {
    if !c.nohz_full {
        return String::new();
    }
    format!("  tick (nohz_full): {}\n", words(&c.tick))
}

fn words(t: &TickTally) -> String {
    if !t.any() {
        return "no timer:tick_stop event: it never tried to stop (always busy in the kernel, or the event is missing)"
            .into();
    }
    let mut o = format!("stopped {} times", t.stopped);
    if t.kept > 0 {
        let why: Vec<String> = t.reasons.iter().map(|(name, words, n)| format!("{words} ({name}) {n}×")).collect();
        o += &format!("; kept running {} times by: {}", t.kept, why.join(", "));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::ktrace::TickDependency;

    #[test]
    fn a_refusal_names_what_kept_the_tick() {
        let mut t = TickTally::default();
        assert!(words(&t).starts_with("no timer:tick_stop event"));
        t.event(true, TickDependency(0));
        assert_eq!(words(&t), "stopped 1 times");
        t.event(false, TickDependency(1 << 4));
        t.event(false, TickDependency(1));
        assert_eq!(words(&t), "stopped 1 times; kept running 2 times by: RCU (RCU) 1×, POSIX timer (POSIX_TIMER) 1×");
    }
}

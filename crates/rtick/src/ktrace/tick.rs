//! `timer:tick_stop`: whether a CPU's periodic tick stopped, and when it
//! did not, what kept it ([`TickDependency`], the kernel's
//! `TICK_DEP_MASK_*` bits).

use std::fmt;

/// What keeps a `nohz_full` CPU's tick running: the `dependency` field of
/// `timer:tick_stop`, a mask of the kernel's `TICK_DEP_MASK_*` bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TickDependency(pub u32);

impl TickDependency {
    /// Every bit the kernel defines, with its name as the trace prints it
    /// and in words. Bits past these are shown by number.
    pub const KNOWN: [(u32, &'static str, &'static str); 6] = [
        (1 << 0, "POSIX_TIMER", "POSIX timer"),
        (1 << 1, "PERF_EVENTS", "perf events"),
        (1 << 2, "SCHED", "scheduler (more than one task runnable)"),
        (1 << 3, "CLOCK_UNSTABLE", "clock unstable"),
        (1 << 4, "RCU", "RCU"),
        (1 << 5, "RCU_EXP", "expedited RCU"),
    ];

    /// No dependency (a stop that succeeded says this).
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    /// Its bits one by one: the kernel's name and the words, or the bit's
    /// number for a bit this list does not know.
    pub fn reasons(self) -> impl Iterator<Item = (String, &'static str)> {
        (0..32).map(|b| 1u32 << b).filter(move |bit| self.0 & bit != 0).map(|bit| {
            match Self::KNOWN.iter().find(|k| k.0 == bit) {
                Some(&(_, name, words)) => (name.to_string(), words),
                None => (format!("BIT_{}", bit.trailing_zeros()), "unknown dependency"),
            }
        })
    }
}

impl fmt::Display for TickDependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("NONE");
        }
        let names: Vec<String> = self.reasons().map(|r| r.0).collect();
        f.write_str(&names.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_reads_as_the_kernel_names_its_bits() {
        assert_eq!(TickDependency(0).to_string(), "NONE");
        assert_eq!(TickDependency(1).to_string(), "POSIX_TIMER");
        assert_eq!(TickDependency(0b10100).to_string(), "SCHED|RCU");
        assert_eq!(TickDependency(1 << 8).to_string(), "BIT_8");
        let words: Vec<&str> = TickDependency(0b1010).reasons().map(|r| r.1).collect();
        assert_eq!(words, ["perf events", "clock unstable"]);
    }
}

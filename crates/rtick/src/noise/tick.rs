//! The tick of `nohz_full` CPUs: how often it stopped, and when it could
//! not, what kept it (`timer:tick_stop`). On other CPUs the tick runs
//! whatever happens: there is nothing to tell per CPU.

use crate::ktrace::TickDependency;
use crate::system::{parse_cpu_list, SysRoot};

/// The CPUs booted `nohz_full` (`/sys/devices/system/cpu/nohz_full`;
/// empty when the file is missing — a kernel without NO_HZ_FULL — or says
/// `(null)`, none).
pub fn nohz_full_cpus(root: &SysRoot) -> Vec<usize> {
    root.read("/sys/devices/system/cpu/nohz_full").and_then(|s| parse_cpu_list(&s)).unwrap_or_default()
}

/// One CPU's `timer:tick_stop` events, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickTally {
    /// Times the tick stopped.
    pub stopped: u64,
    /// Times it could not, in all.
    pub kept: u64,
    /// Per dependency bit (the kernel's name), how often it kept the tick,
    /// in the kernel's bit order. A refusal can name several.
    pub reasons: Vec<(String, &'static str, u64)>,
}

impl TickTally {
    /// One `timer:tick_stop` event.
    pub fn event(&mut self, success: bool, dependency: TickDependency) {
        if success {
            self.stopped += 1;
            return;
        }
        self.kept += 1;
        for (name, words) in dependency.reasons() {
            match self.reasons.iter_mut().find(|r| r.0 == name) {
                Some(r) => r.2 += 1,
                None => self.reasons.push((name, words, 1)),
            }
        }
        self.reasons.sort_by_key(|r| std::cmp::Reverse(r.2));
    }

    /// Whether any event was seen.
    pub fn any(&self) -> bool {
        self.stopped + self.kept > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_per_reason_most_first() {
        let mut t = TickTally::default();
        t.event(true, TickDependency(0));
        t.event(false, TickDependency(1 << 4));
        t.event(false, TickDependency((1 << 4) | 1));
        t.event(false, TickDependency(1 << 2));
        t.event(false, TickDependency(1 << 4));
        assert_eq!((t.stopped, t.kept), (1, 4));
        let got: Vec<(&str, u64)> = t.reasons.iter().map(|r| (r.0.as_str(), r.2)).collect();
        assert_eq!(got[0], ("RCU", 3));
        assert!(got.contains(&("POSIX_TIMER", 1)) && got.contains(&("SCHED", 1)), "{got:?}");
    }

    #[test]
    fn the_nohz_full_list_is_read_and_none_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::new(dir.path());
        assert!(nohz_full_cpus(&root).is_empty(), "no file: a kernel without NO_HZ_FULL");
        let f = root.path("/sys/devices/system/cpu/nohz_full");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, "(null)\n").unwrap();
        assert!(nohz_full_cpus(&root).is_empty());
        std::fs::write(&f, "1-3,6\n").unwrap();
        assert_eq!(nohz_full_cpus(&root), [1, 2, 3, 6]);
    }
}

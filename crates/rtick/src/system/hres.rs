//! Whether high-resolution timers are active, CPU by CPU, as
//! `/proc/timer_list` shows it (`.hres_active` in each `cpu:` section). The
//! one reading of this fact: the audit and `rtick measure`'s header and
//! warnings both use it.

use super::SysRoot;

/// Where it is read.
pub const TIMER_LIST: &str = "/proc/timer_list";

/// One `cpu:` section of /proc/timer_list.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CpuHres {
    /// The CPU number; `None` when the `cpu:` line does not give one.
    pub cpu: Option<usize>,
    /// `.hres_active`: `None` when the section has no such line, or its
    /// value is neither 0 nor 1.
    pub active: Option<bool>,
}

/// `.hres_active` of every CPU listed in /proc/timer_list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HresActive {
    cpus: Vec<CpuHres>,
}

impl HresActive {
    /// Reads [`TIMER_LIST`] under `root`; `None` when it cannot be read.
    pub fn read(root: &SysRoot) -> Option<HresActive> {
        root.read(TIMER_LIST).map(|t| HresActive::parse(&t))
    }

    /// Parses the text of /proc/timer_list.
    pub fn parse(timer_list: &str) -> HresActive {
        let mut cpus: Vec<CpuHres> = Vec::new();
        for line in timer_list.lines().map(str::trim) {
            if let Some(n) = line.strip_prefix("cpu:") {
                cpus.push(CpuHres { cpu: n.trim().parse().ok(), active: None });
            } else if let Some(v) = line.strip_prefix(".hres_active") {
                // A line before any `cpu:` belongs to no CPU.
                if let Some(c) = cpus.last_mut() {
                    c.active = match v.trim_start().strip_prefix(':').map(str::trim) {
                        Some("1") => Some(true),
                        Some("0") => Some(false),
                        _ => None,
                    };
                }
            }
        }
        HresActive { cpus }
    }

    /// Every CPU listed, in order.
    pub fn cpus(&self) -> &[CpuHres] {
        &self.cpus
    }

    /// CPUs whose state is `active` (`None`: unreadable).
    pub fn count(&self, active: Option<bool>) -> usize {
        self.cpus.iter().filter(|c| c.active == active).count()
    }

    /// `Some(false)` when any CPU has them inactive, `Some(true)` when every
    /// CPU listed (at least one) has them active, else `None`: unknown.
    pub fn all_active(&self) -> Option<bool> {
        if self.count(Some(false)) > 0 {
            Some(false)
        } else if !self.cpus.is_empty() && self.count(None) == 0 {
            Some(true)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cpu: usize, active: Option<bool>) -> CpuHres {
        CpuHres { cpu: Some(cpu), active }
    }

    #[test]
    fn per_cpu_sections() {
        let t = "now at 1000 nsecs\ncpu: 0\n clock 0:\n  .hres_active    : 1\ncpu: 1\n  .hres_active    : 0\n\
                 Tick Device: mode:     1\nPer CPU device: 0\n";
        let h = HresActive::parse(t);
        assert_eq!(h.cpus(), [cpu(0, Some(true)), cpu(1, Some(false))]);
        assert_eq!((h.count(Some(true)), h.count(Some(false)), h.count(None)), (1, 1, 0));
        assert_eq!(h.all_active(), Some(false));
        let all = HresActive::parse("cpu: 0\n .hres_active : 1\ncpu: 1\n\t.hres_active\t:\t1\n");
        assert_eq!(all.all_active(), Some(true));
    }

    #[test]
    fn malformed_values_are_unknown_not_inactive() {
        let h = HresActive::parse(
            "cpu: 0\n .hres_active : 1\ncpu: x\n .hres_active : yes\ncpu: 2\n .hres_active 1\ncpu: 3\n",
        );
        assert_eq!(h.cpus(), [cpu(0, Some(true)), CpuHres { cpu: None, active: None }, cpu(2, None), cpu(3, None)]);
        assert_eq!(h.count(None), 3);
        assert_eq!(h.all_active(), None);
        // An inactive CPU is known even when another is not.
        assert_eq!(HresActive::parse("cpu: 0\n .hres_active : 0\ncpu: 1\n").all_active(), Some(false));
    }

    #[test]
    fn no_cpu_listed_is_unknown() {
        let h = HresActive::parse(" .hres_active : 1\nTimer List Version: v0.9\n");
        assert!(h.cpus().is_empty());
        assert_eq!(h.all_active(), None);
        assert_eq!(HresActive::parse("").all_active(), None);
    }
}

//! Scheduling policy, priority, affinity and timer slack of a thread.

use std::fmt;

use crate::error::{Error, Result};
use crate::sys::sched;
use crate::time::Nanos;

/// A Linux scheduling policy.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// SCHED_OTHER (CFS/EEVDF), the default for ordinary threads.
    #[default]
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_FIFO: real-time, runs until it blocks.
    Fifo,
    /// SCHED_RR: real-time with a time slice among equal priorities.
    Rr,
}

impl Policy {
    /// All policies.
    pub const ALL: [Policy; 5] = [Policy::Other, Policy::Batch, Policy::Idle, Policy::Fifo, Policy::Rr];

    /// The kernel constant.
    pub fn raw(self) -> libc::c_int {
        match self {
            Policy::Other => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
        }
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
        }
    }

    /// The kernel's name, e.g. `SCHED_FIFO`.
    pub fn kernel_name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
        }
    }

    /// Parses a command-line name (`normal` is accepted for `other`).
    pub fn parse(s: &str) -> Option<Policy> {
        match s.to_ascii_lowercase().trim_start_matches("sched_") {
            "other" | "normal" => Some(Policy::Other),
            "batch" => Some(Policy::Batch),
            "idle" => Some(Policy::Idle),
            "fifo" => Some(Policy::Fifo),
            "rr" => Some(Policy::Rr),
            _ => None,
        }
    }

    /// Whether this is a real-time policy (takes a priority 1–99).
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// A thread's kernel priority under this policy, as trace events show
    /// it: 99 − `rt_priority` for SCHED_FIFO/RR, 120 + `nice` for the others.
    pub fn kernel_prio(self, rt_priority: i32, nice: i32) -> i32 {
        match self.is_realtime() {
            true => 99 - rt_priority,
            false => 120 + nice,
        }
    }

    /// From the kernel constant.
    pub fn from_raw(raw: libc::c_int) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.raw() == raw)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kernel_name())
    }
}

/// What a measuring thread applies to itself before it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSetup {
    /// Scheduling policy.
    pub policy: Policy,
    /// Priority (1–99 for fifo/rr, 0 otherwise).
    pub priority: i32,
    /// CPUs to pin to (empty: leave the affinity alone).
    pub cpus: Vec<usize>,
    /// Timer slack to set (`None`: leave the inherited value).
    pub timer_slack: Option<Nanos>,
}

impl Default for ThreadSetup {
    fn default() -> Self {
        ThreadSetup { policy: Policy::Other, priority: 0, cpus: Vec::new(), timer_slack: Some(Nanos(1)) }
    }
}

impl ThreadSetup {
    /// Checks the values without applying anything.
    pub fn validate(&self) -> Result<()> {
        if self.policy.is_realtime() {
            if !(1..=99).contains(&self.priority) {
                return Err(Error::Invalid(format!(
                    "priority {} is outside 1–99 for {}",
                    self.priority,
                    self.policy.kernel_name()
                )));
            }
        } else if self.priority != 0 {
            return Err(Error::Invalid(format!(
                "priority {} needs a real-time policy (fifo or rr); {} takes 0",
                self.priority,
                self.policy.kernel_name()
            )));
        }
        let online = sched::online_cpus();
        if let Some(&bad) = self.cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
            return Err(Error::Invalid(format!("CPU {bad} does not exist (this machine has {online})")));
        }
        Ok(())
    }

    /// Applies the setup to the calling thread.
    pub fn apply(&self) -> Result<()> {
        self.validate()?;
        if !self.cpus.is_empty() {
            sched::set_affinity(&self.cpus).map_err(|e| {
                Error::sys(
                    format!("sched_setaffinity({:?})", self.cpus),
                    e,
                    "choose CPUs that exist and are allowed to this process (see taskset -p $$ and cpusets)",
                )
            })?;
        }
        if let Some(slack) = self.timer_slack {
            sched::set_timer_slack(slack).map_err(|e| Error::sys("prctl(PR_SET_TIMERSLACK)", e, ""))?;
        }
        sched::set_scheduler(self.policy.raw(), self.priority).map_err(|e| {
            let refused = crate::cgroup::cpu_cgroup(&crate::system::SysRoot::default())
                .filter(|c| e.raw_os_error() == Some(libc::EPERM) && c.refuses_realtime());
            let fix = if let (true, Some(cg)) = (self.policy.is_realtime(), refused) {
                cg.fix()
            } else if self.policy.is_realtime() {
                format!(
                    "run as root, or grant CAP_SYS_NICE (setcap cap_sys_nice+ep rtick), or raise RLIMIT_RTPRIO to at least {} (ulimit -r {})",
                    self.priority, self.priority
                )
            } else {
                String::new()
            };
            Error::sys(format!("sched_setscheduler({}, {})", self.policy.kernel_name(), self.priority), e, fix)
        })?;
        Ok(())
    }
}

/// Tries `setup`'s policy and priority in a short-lived thread, changing
/// nothing in the caller: tells whether the measuring threads will get them.
pub fn probe(setup: &ThreadSetup) -> Result<()> {
    let s = ThreadSetup { cpus: Vec::new(), timer_slack: None, ..setup.clone() };
    std::thread::spawn(move || s.apply()).join().unwrap_or_else(|_| Err(Error::Invalid("probe thread panicked".into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_priorities_are_as_trace_events_show_them() {
        assert_eq!(Policy::Fifo.kernel_prio(50, 0), 49);
        assert_eq!(Policy::Rr.kernel_prio(99, 5), 0);
        assert_eq!(Policy::Other.kernel_prio(0, -5), 115);
        assert_eq!(Policy::Batch.kernel_prio(0, 19), 139);
        assert_eq!(Policy::Idle.kernel_prio(0, 0), 120);
    }

    #[test]
    fn names_and_kernel_numbers() {
        // The numbers are the kernel's ABI (include/uapi/linux/sched.h).
        let table = [
            (Policy::Other, "other", "SCHED_OTHER", 0),
            (Policy::Fifo, "fifo", "SCHED_FIFO", 1),
            (Policy::Rr, "rr", "SCHED_RR", 2),
            (Policy::Batch, "batch", "SCHED_BATCH", 3),
            (Policy::Idle, "idle", "SCHED_IDLE", 5),
        ];
        for (p, name, kernel, raw) in table {
            assert_eq!((p.name(), p.kernel_name(), p.raw()), (name, kernel, raw));
            assert_eq!(
                (Policy::parse(name), Policy::parse(kernel), Policy::from_raw(raw)),
                (Some(p), Some(p), Some(p))
            );
        }
        assert_eq!(Policy::ALL.len(), table.len());
        assert_eq!(Policy::parse("normal"), Some(Policy::Other));
        assert_eq!((Policy::parse("deadline"), Policy::from_raw(6)), (None, None), "SCHED_DEADLINE is no Policy");
    }

    #[test]
    fn priority_validation() {
        let mut s = ThreadSetup { policy: Policy::Fifo, priority: 0, ..Default::default() };
        assert!(s.validate().is_err());
        s.priority = 100;
        assert!(s.validate().is_err());
        s.priority = 99;
        assert!(s.validate().is_ok());
        let o = ThreadSetup { policy: Policy::Other, priority: 5, ..Default::default() };
        assert!(o.validate().is_err());
    }

    /// The calling thread's (policy, real-time priority), read from the
    /// kernel's own account: fields 41 and 40 of /proc/thread-self/stat.
    fn this_thread_policy() -> (i32, i32) {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields from 3 on follow the parenthesised command name.
        let f: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
        (f[41 - 3].parse().unwrap(), f[40 - 3].parse().unwrap())
    }

    #[test]
    fn probe_other_always_works_and_changes_nothing_here() {
        std::thread::spawn(|| {
            let before = this_thread_policy();
            probe(&ThreadSetup::default()).unwrap();
            // Whether or not this process may use SCHED_FIFO, the probe's thread tries it, not this one.
            let _ = probe(&ThreadSetup { policy: Policy::Fifo, priority: 10, ..Default::default() });
            assert_eq!(this_thread_policy(), before);
        })
        .join()
        .unwrap();
    }
}

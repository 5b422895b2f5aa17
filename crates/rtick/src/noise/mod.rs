//! `rtick noise`: how much of a CPU a busy-polling thread gets, and who
//! takes the rest.
//!
//! One spinner per measured CPU ([`spin`](mod@spin)) reads the clock in a
//! tight loop; every step longer than the threshold is a **gap**: time the
//! thread was promised and did not get. Each gap is explained
//! ([`attribute`]) by the CPU's own trace events, read from rtick's tracefs
//! instance ([`Tracepoint::NOISE`](crate::ktrace::Tracepoint::NOISE)): IRQ
//! handlers, vectors, softirqs, NMIs, other threads, RT throttling — or, with
//! no event at all, the hardware or the host ([`source`]). [`run`](mod@run)
//! holds it all together; [`attach`] follows an application's own thread
//! instead of spinning, its gaps found by [`follow`]; either run hands its
//! gaps, as they are known, to one [`Observer`] ([`observe`]); [`tick`]
//! tells, on `nohz_full` CPUs, whether the tick stopped and what kept it;
//! [`switch_stacks`] where in the kernel a thread that took the CPU was.
//!
//! ```no_run
//! use rtick::noise::{run, NoiseOptions};
//! use std::sync::atomic::AtomicBool;
//!
//! let opts = NoiseOptions { duration: Some(rtick::Nanos::from_secs(2)), ..Default::default() };
//! let plan = opts.plan()?;
//! let r = run(&plan, &opts, &AtomicBool::new(false))?;
//! for c in &r.cpus {
//!     println!("CPU {}: {:.3} % available, max gap {}", c.cpu, c.available_percent(), c.max_gap);
//! }
//! # Ok::<(), rtick::Error>(())
//! ```

pub mod attach;
pub mod attribute;
mod cfs;
pub mod follow;
pub mod observe;
pub mod run;
pub mod senders;
pub mod source;
pub mod spin;
mod spinners;
pub mod switch_stacks;
pub mod tick;

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::rt::Policy;
use crate::system::format_cpu_list;
use crate::time::Nanos;

pub use attach::{run_attached, AttachPlan};
pub use attribute::{Attributor, Gap, GapRecord, Instance};
pub use observe::{Live, Observer, Unobserved};
pub use run::{run, run_observed, CpuNoise, End, NoiseRun};
pub use senders::SentBy;
pub use source::{Source, Tally, Vector};
pub use spin::{StepsUs, STEP_US_BUCKETS};
pub use tick::{nohz_full_cpus, TickTally};

/// The default threshold: a step of the loop longer than this is a gap.
pub const DEFAULT_THRESHOLD: Nanos = Nanos(1_000);

/// What to measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoiseOptions {
    /// The CPUs (`None`: every allowed CPU but CPU 0, when there are two or more).
    pub cpus: Option<Vec<usize>>,
    /// How long (`None`: until stopped).
    pub duration: Option<Nanos>,
    /// A step longer than this is a gap.
    pub threshold: Nanos,
    /// SCHED_FIFO at this priority (`None`: SCHED_OTHER).
    pub priority: Option<i32>,
    /// The tracefs root (the mounted one when `None`).
    pub tracefs: Option<PathBuf>,
    /// Whether gaps are explained from trace events.
    pub attribution: bool,
    /// Whether a thread source carries its kernel stack (a `stacktrace`
    /// trigger at the switches back to the spinners: its cost is paid at
    /// the end of each such gap); `monitor --noise` shows none.
    pub stacks: bool,
}

impl Default for NoiseOptions {
    fn default() -> Self {
        NoiseOptions {
            cpus: None,
            duration: None,
            threshold: DEFAULT_THRESHOLD,
            priority: None,
            tracefs: None,
            attribution: true,
            stacks: true,
        }
    }
}

/// The options checked: the CPUs and the policy the spinners get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The measured CPUs, in order.
    pub cpus: Vec<usize>,
    /// CPU 0 was left out by default (it keeps rtick's own work and the system's).
    pub cpu0_left_out: bool,
    /// The spinners' policy.
    pub policy: Policy,
    /// Its priority (0 for SCHED_OTHER).
    pub priority: i32,
}

impl Plan {
    /// The spinners' kernel priority, as trace events show it (99 − p for
    /// SCHED_FIFO p; 120 for SCHED_OTHER at nice 0).
    pub fn kernel_prio(&self) -> i32 {
        self.policy.kernel_prio(self.priority, 0)
    }
}

impl NoiseOptions {
    /// The threshold and the duration, which every mode needs above zero.
    fn check_times(&self) -> Result<()> {
        if self.threshold <= Nanos::ZERO {
            return Err(Error::Invalid("--threshold must be greater than zero (e.g. 1us)".into()));
        }
        if self.duration.is_some_and(|d| d <= Nanos::ZERO) {
            return Err(Error::Invalid("-D must be greater than zero (e.g. 10s)".into()));
        }
        Ok(())
    }

    /// Checks every value before anything changes: a zero threshold or
    /// duration, a priority outside 1–99, a CPU this process may not use
    /// or that is offline are [`Error::Invalid`], one line each.
    pub fn plan(&self) -> Result<Plan> {
        self.check_times()?;
        if let Some(p) = self.priority.filter(|p| !(1..=99).contains(p)) {
            return Err(Error::Invalid(format!("-p {p} is outside 1–99 (the SCHED_FIFO priorities)")));
        }
        let allowed = crate::info::allowed_cpus()?;
        let (cpus, cpu0_left_out) = match &self.cpus {
            Some(c) if c.is_empty() => return Err(Error::Invalid("-a needs at least one CPU".into())),
            Some(c) => {
                if let Some(bad) = c.iter().find(|c| !allowed.contains(c)) {
                    return Err(Error::Invalid(format!(
                        "CPU {bad} is offline or not allowed to this process (allowed: {}): choose among those",
                        format_cpu_list(&allowed)
                    )));
                }
                let mut c = c.clone();
                c.sort_unstable();
                c.dedup();
                (c, false)
            }
            None if allowed.len() >= 2 => (allowed.iter().copied().filter(|&c| c != 0).collect(), allowed.contains(&0)),
            None => (allowed, false),
        };
        let (policy, priority) = self.priority.map_or((Policy::Other, 0), |p| (Policy::Fifo, p));
        Ok(Plan { cpus, cpu0_left_out, policy, priority })
    }
}

#[cfg(test)]
mod follow_tests;
#[cfg(test)]
mod tests;

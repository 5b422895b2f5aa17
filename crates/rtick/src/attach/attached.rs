//! What an attach found, and why it ended: [`attach`](super::attach)'s
//! answer, which `rtick attach` prints and saves and `monitor --attach`
//! ends with.

use std::collections::BTreeMap;

use super::overruns::Overrun;
use super::summary::ThreadSummary;
use super::worst::WorstWait;
use crate::cfs::Throttling;
use crate::explain::{cause_summary, CauseTotal};
use crate::ktrace::LostEvents;
use crate::stats::Summary;
use crate::time::{Nanos, Time};

/// Why the attach ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Its duration passed.
    Duration,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The target exited.
    TargetExited,
}

/// What an attach found.
#[derive(Debug)]
pub struct Attached {
    /// Per thread alive at the end (in tid order), its figures; then, when
    /// threads exited during the run, one row of tid 0 with their figures
    /// pooled (its name says how many; its settings are the first's to exit).
    pub threads: Vec<ThreadSummary>,
    /// Per thread, its worst timed waits, the worst first, explained.
    pub worst: BTreeMap<i32, Vec<WorstWait>>,
    /// Per thread, its largest overruns, the largest first, with their cause.
    pub overruns: BTreeMap<i32, Vec<Overrun>>,
    /// Per thread with a timed wait, its lateness in full (every
    /// percentile, mean, standard deviation): what --fail-if checks.
    pub lateness: BTreeMap<i32, Summary>,
    /// Why it ended.
    pub end: End,
    /// When tracing began (CLOCK_MONOTONIC).
    pub started: Time,
    /// How long it traced.
    pub elapsed: Nanos,
    /// The CPUs traced (those the target's threads may run on).
    pub cpus: Vec<usize>,
    /// The CPUs rtick read the trace on (`None`: the target may run on
    /// every CPU rtick may, so it shares them).
    pub reader_cpus: Option<Vec<usize>>,
    /// The events the recent window held at most, per traced CPU.
    pub window_events: usize,
    /// Events the kernel or the reader lost.
    pub lost: LostEvents,
    /// Trace events this kernel lacks.
    pub missing: Vec<&'static str>,
    /// Kernel events read.
    pub events: usize,
    /// What limited the run's view, a sentence each.
    pub notes: Vec<String>,
    /// The CFS throttling of the threads' cgroups (at most
    /// [`MAX_CGROUPS`](crate::cfs::MAX_CGROUPS)) and of their ancestors
    /// with a quota, over the run (empty without bandwidth control).
    pub cfs: Vec<Throttling>,
    /// How long the kernel stack trigger was set, and how many times: it
    /// is set while waits run late ([`StackArming`](super::stacks::StackArming)). `None`: no stacks
    /// (why is among `notes`).
    pub stacks_armed: Option<(Nanos, u64)>,
}

impl Attached {
    /// Each cause across the threads' explained worst waits, as
    /// `measure --explain` sums up its spikes ([`cause_summary`]).
    pub fn causes(&self) -> Vec<CauseTotal> {
        cause_summary(self.worst.values().flatten().filter_map(|w| w.explained.as_ref().ok()))
    }
}

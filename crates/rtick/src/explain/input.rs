//! What the analysis reads besides the kernel's events ([`crate::ktrace`]):
//! the wake-ups the measuring threads recorded, and names for tasks.

use crate::ktrace::{Comm, Event};
use crate::time::Time;

/// A task as the scheduler's events name it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Task {
    /// Its `comm`.
    pub comm: String,
    /// Its pid (thread id); 0 is the idle task.
    pub pid: i32,
    /// The kernel's priority (0–99 real-time, lower is more urgent; 100–139 normal).
    pub prio: i32,
}

impl Task {
    /// From a trace event's fields.
    pub fn new(comm: &Comm, pid: i32, prio: i32) -> Task {
        Task { comm: comm.to_string(), pid, prio }
    }

    /// The idle task (`swapper/N`).
    pub fn is_idle(&self) -> bool {
        self.pid == 0
    }
}

/// One CPU's events, in time order (a [`crate::ktrace::CpuEvents`] or a test's).
#[derive(Copy, Clone, Debug)]
pub struct CpuTrace<'a> {
    /// The CPU.
    pub cpu: u32,
    /// Its events, in timestamp order.
    pub events: &'a [Event],
}

impl<'a> From<&'a crate::ktrace::CpuEvents> for CpuTrace<'a> {
    fn from(c: &'a crate::ktrace::CpuEvents) -> Self {
        CpuTrace { cpu: c.cpu as u32, events: &c.events }
    }
}

/// One wake-up a measuring thread recorded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The measuring thread's tid.
    pub tid: i32,
    /// Grid index.
    pub cycle: u64,
    /// The planned wake-up (the deadline).
    pub planned: Time,
    /// The clock read right after the wait returned.
    pub actual: Time,
}

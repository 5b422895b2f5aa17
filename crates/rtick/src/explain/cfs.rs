//! CFS bandwidth throttling as a spike's cause: a SCHED_OTHER thread kept
//! off its CPU (after its wake-up, or right after it was switched in) while
//! its cgroup, or an ancestor, was throttled for its CPU quota. No trace
//! event marks throttling on most kernels: the cgroups' `cpu.stat`, sampled
//! during the run ([`crate::cfs::CfsWatch`]), says whether and which.

use super::{Cause, Spike};
use crate::cfs::CfsRun;

impl Spike {
    /// Blames CFS throttling when the thread waited runnable (its largest
    /// phase the scheduling delay or the return to user) and a watched
    /// cgroup was throttled around the spike for at least half that wait
    /// (its `cpu.stat` adds the throttled time of each CPU's run queue when
    /// it is unthrottled, so the throttling that held the thread is counted
    /// by the first sample after the spike).
    pub fn find_cfs_throttling(&mut self, run: &CfsRun) {
        let (big, held) = self.largest();
        if big < 2 {
            return;
        }
        if let Some(cgroup) = run.blamed(self.matched.prio, self.wake.planned, self.wake.actual, held) {
            self.cause = Cause::CfsThrottled;
            self.cgroup = Some(cgroup);
            self.work = None;
        }
    }
}

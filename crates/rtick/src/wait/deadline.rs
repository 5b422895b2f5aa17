//! SCHED_DEADLINE: the thread gets `runtime` every period and gives the rest
//! back with `sched_yield`, which sleeps until its next period.
//!
//! The kernel's period start is not visible from user space, so each slice
//! anchors its grid at the earliest phase seen over the first
//! [`ANCHOR_PERIODS`] periods after the thread became SCHED_DEADLINE:
//! latency is measured against that grid (the best wake-up of those periods
//! counts as on time), and the period figures (actual period − interval)
//! are exact. The periods run on the scheduler's clock, which NTP does not
//! slew, while CLOCK_MONOTONIC is slewed: over a long slice the two drift
//! apart by the NTP correction (a few µs per second at most), which shows as
//! a slow trend in the latency, early or late.

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::sys::{deadline, sched};
use crate::time::{Nanos, Time};

/// Periods watched at the start of each slice to find the grid's phase.
pub const ANCHOR_PERIODS: i64 = 16;

pub(super) struct DeadlineWait {
    clock: ClockId,
    interval: Nanos,
    restore: (libc::c_int, libc::c_int),
    next: Time,
}

fn unavailable(e: std::io::Error) -> Error {
    let reason = match e.raw_os_error() {
        Some(libc::EPERM) => {
            "needs root or CAP_SYS_NICE, and a thread whose affinity spans its whole root domain (no -a/-S)".to_string()
        }
        Some(libc::EBUSY) => "the deadline bandwidth admission test failed (kernel.sched_rt_runtime_us)".to_string(),
        Some(libc::EINVAL) => {
            "the period is outside the kernel's limits (kernel.sched_deadline_period_min_us)".to_string()
        }
        _ => format!("sched_setattr(SCHED_DEADLINE) failed: {e}"),
    };
    Error::Unavailable { mechanism: "sched-deadline", reason }
}

/// A budget of 5 % of the period (at least 20 µs): ample for recording a wake-up.
fn runtime_for(interval: Nanos) -> Nanos {
    Nanos((interval.as_ns() / 20).max(20_000)).min(interval)
}

impl DeadlineWait {
    pub(super) fn new(clock: ClockId) -> Result<Self> {
        let restore = sched::scheduler().map_err(|e| Error::sys("sched_getscheduler", e, ""))?;
        // Try it now with a typical period, so that a system that refuses
        // SCHED_DEADLINE reports "unavailable" before the run; the real
        // period comes with `arm`.
        let probe = Nanos::from_ms(1);
        deadline::set_deadline(runtime_for(probe), probe).map_err(unavailable)?;
        let me = DeadlineWait { clock, interval: probe, restore, next: Time(0) };
        me.leave()?;
        Ok(me)
    }

    fn leave(&self) -> Result<()> {
        sched::set_scheduler(self.restore.0, self.restore.1)
            .map_err(|e| Error::sys("sched_setscheduler (leaving SCHED_DEADLINE)", e, ""))
    }
}

impl Waiter for DeadlineWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, _first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        deadline::set_deadline(runtime_for(interval), interval).map_err(unavailable)?;
        // Find the grid: the earliest phase (modulo the period, so a skipped
        // period does not matter) over the first periods.
        sched::yield_now();
        let t0 = self.clock.now();
        let mut earliest = Nanos::ZERO;
        let mut last = t0;
        for _ in 0..ANCHOR_PERIODS {
            sched::yield_now();
            last = self.clock.now();
            let phase = (last - t0).as_ns().rem_euclid(interval.as_ns());
            let phase = if phase > interval.as_ns() / 2 { phase - interval.as_ns() } else { phase };
            earliest = earliest.min(Nanos(phase));
        }
        let anchor = t0 + earliest;
        let k = (last - anchor).as_ns().div_euclid(interval.as_ns()) + 1;
        self.next = anchor + interval * k;
        Ok(())
    }

    fn disarm(&mut self) -> Result<()> {
        self.leave()
    }

    #[inline]
    fn wait(&mut self, _deadline: Time) -> Result<Wake> {
        sched::yield_now();
        let actual = self.clock.now();
        let planned = self.next;
        // The next period boundary after this wake-up: periods slept through are skipped.
        let behind = (actual - planned).as_ns().max(0) / self.interval.as_ns();
        self.next = planned + self.interval * (behind + 1);
        Ok(Wake { planned, actual, kernel_next: Some(self.next) })
    }
}

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
//!
//! While armed, a [`watchdog`] releases the thread if the kernel leaves it
//! throttled inside one yield (seen on loaded VMs): the wait then fails with
//! [`Error::Unavailable`], saying so.

mod watchdog;

use super::{Waiter, Wake};
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::rt::Policy;
use crate::sys::{deadline, sched, timer};
use crate::time::{Nanos, Time};
use watchdog::Watchdog;

/// Periods watched at the start of each slice to find the grid's phase.
pub const ANCHOR_PERIODS: i64 = 16;

pub(super) struct DeadlineWait {
    clock: ClockId,
    interval: Nanos,
    restore: (libc::c_int, libc::c_int),
    next: Time,
    watchdog: Watchdog,
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

/// The watchdog thread could not be started (its stack could not be had:
/// memory, RLIMIT_MEMLOCK under `mlockall`, RLIMIT_NPROC).
fn no_watchdog(e: std::io::Error) -> Error {
    Error::Unavailable {
        mechanism: "sched-deadline",
        reason: format!(
            "its watchdog thread could not be started ({e}): raise RLIMIT_MEMLOCK (ulimit -l) and \
             RLIMIT_NPROC (ulimit -u), or use another mechanism"
        ),
    }
}

/// The error of a wait whose thread the watchdog released after `stuck`
/// (`restore`: the raw policy it was moved back to, with its flags).
#[cold]
#[inline(never)]
fn released(stuck: Nanos, restore: libc::c_int) -> Error {
    let policy = Policy::from_raw(restore & !libc::SCHED_RESET_ON_FORK).unwrap_or_default().kernel_name();
    Error::Unavailable {
        mechanism: "sched-deadline",
        reason: format!(
            "the kernel did not replenish the thread's runtime for {stuck} (it stayed throttled after \
             sched_yield; seen on loaded VMs): the thread was moved back to {policy}; \
             use another mechanism or a longer period"
        ),
    }
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
        let me = DeadlineWait { clock, interval: probe, restore, next: Time(0), watchdog: Watchdog::new() };
        me.leave()?;
        Ok(me)
    }

    fn leave(&self) -> Result<()> {
        sched::set_scheduler(self.restore.0, self.restore.1)
            .map_err(|e| Error::sys("sched_setscheduler (leaving SCHED_DEADLINE)", e, ""))
    }

    /// One `sched_yield` under the watchdog's eye; fails if the watchdog
    /// had to release the thread.
    #[inline]
    fn yield_watched(&mut self) -> Result<()> {
        self.watchdog.enter();
        sched::yield_now();
        self.watchdog.leave();
        match self.watchdog.released() {
            None => Ok(()),
            Some((stuck, _)) => Err(released(stuck, self.restore.0)),
        }
    }
}

impl Waiter for DeadlineWait {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn arm(&mut self, _first: Time, interval: Nanos) -> Result<()> {
        self.interval = interval;
        // Spawned (once) while the thread is not SCHED_DEADLINE yet: such a thread may not fork.
        self.watchdog.spawn(timer::gettid(), self.restore).map_err(no_watchdog)?;
        // Watched from before it is SCHED_DEADLINE: a release of the previous
        // arming still under way cannot reach the thread armed now.
        self.watchdog.watch(interval);
        if let Err(e) = deadline::set_deadline(runtime_for(interval), interval) {
            self.watchdog.idle();
            return Err(unavailable(e));
        }
        // Find the grid: the earliest phase (modulo the period, so a skipped
        // period does not matter) over the first periods.
        self.yield_watched()?;
        let t0 = self.clock.now();
        let mut earliest = Nanos::ZERO;
        let mut last = t0;
        for _ in 0..ANCHOR_PERIODS {
            self.yield_watched()?;
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
        self.watchdog.idle();
        self.leave()
    }

    #[inline]
    fn wait(&mut self, _deadline: Time) -> Result<Wake> {
        self.yield_watched()?;
        let actual = self.clock.now();
        let planned = self.next;
        // The next period boundary after this wake-up: periods slept through are skipped.
        let behind = (actual - planned).as_ns().max(0) / self.interval.as_ns();
        self.next = planned + self.interval * (behind + 1);
        Ok(Wake { planned, actual, kernel_next: Some(self.next) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::skip::skip;
    use std::sync::{mpsc, Arc};

    /// A sched-deadline wait for the calling thread, or why not (a skip).
    fn built() -> Option<DeadlineWait> {
        match DeadlineWait::new(ClockId::Monotonic) {
            Ok(w) => Some(w),
            Err(e) => {
                skip(&e.to_string(), false);
                None
            }
        }
    }

    #[test]
    fn the_release_names_the_policy_whatever_its_flags() {
        for (raw, name) in
            [(libc::SCHED_FIFO, "SCHED_FIFO"), (libc::SCHED_RR, "SCHED_RR"), (libc::SCHED_BATCH, "SCHED_BATCH")]
        {
            for flags in [0, libc::SCHED_RESET_ON_FORK] {
                let e = released(Nanos::from_secs(1), raw | flags).to_string();
                assert!(e.contains(&format!("moved back to {name};")), "{raw:#x} {flags:#x}: {e}");
            }
        }
    }

    #[test]
    fn waits_that_progress_are_never_released_and_the_watchdog_ends_with_the_wait() {
        std::thread::spawn(|| {
            let Some(mut w) = built() else { return };
            w.arm(w.now(), Nanos::from_ms(1)).unwrap();
            let start = w.now();
            let mut waits = 0;
            // Beyond the watchdog's limit (1 s for a 1 ms period).
            while w.now() - start < Nanos::from_ms(1_500) {
                w.wait(Time(0)).unwrap();
                waits += 1;
            }
            assert!(waits > 10, "{waits} waits in 1.5 s");
            assert_eq!(w.watchdog.released(), None);
            assert_eq!(sched::scheduler().unwrap().0, deadline::SCHED_DEADLINE as libc::c_int);
            w.disarm().unwrap();
            // Disarmed, the watchdog watches nothing: not even a thread that
            // looks stuck inside a wait beyond the limit.
            w.watchdog.enter();
            std::thread::sleep(std::time::Duration::from_millis(1_500));
            assert_eq!(w.watchdog.released(), None, "released while disarmed");
            assert_eq!(sched::scheduler().unwrap(), w.restore);
            let shared = Arc::clone(w.watchdog.shared());
            drop(w);
            assert_eq!(Arc::strong_count(&shared), 1, "the watchdog thread outlived the wait");
        })
        .join()
        .unwrap();
    }

    /// The stall seen on loaded VMs, made to happen: once the thread waits,
    /// its period becomes 4 s (the kernel's longest by default), so it stays
    /// inside one yield far beyond the watchdog's limit for the 1 ms armed.
    #[test]
    fn a_thread_left_inside_its_yield_is_released_and_the_wait_says_why() {
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let mut w = built()?;
            w.arm(w.now(), Nanos::from_ms(1)).unwrap();
            tx.send(timer::gettid()).unwrap();
            let start = w.now();
            let e = loop {
                match w.wait(Time(0)) {
                    Ok(_) if w.now() - start < Nanos::from_secs(20) => {}
                    Ok(_) => {
                        // Out of SCHED_DEADLINE first: a panic on 100 µs every 4 s takes ages.
                        w.leave().unwrap();
                        panic!("not released in 20 s");
                    }
                    Err(e) => break e,
                }
            };
            let after = (sched::scheduler().unwrap(), w.now());
            Some((e, w.watchdog.released(), start, after))
        });
        let Ok(tid) = rx.recv() else { return assert!(waiter.join().unwrap().is_none()) };
        let four = Nanos::from_secs(4);
        deadline::set_deadline_of(tid, Nanos::from_us(100), four, four).unwrap();
        let (e, released, start, (policy, end)) = waiter.join().unwrap().unwrap();
        let (stuck, at) = released.expect("the release is recorded");
        assert!(stuck >= Nanos::from_secs(1), "released after {stuck}");
        assert!(start < at && at <= end, "released at {at:?}, not within the waits ({start:?}..{end:?})");
        assert_eq!(policy, (libc::SCHED_OTHER, 0), "moved back to the policy it had");
        assert_eq!(
            e.to_string(),
            format!(
                "sched-deadline is unavailable: the kernel did not replenish the thread's runtime for {stuck} \
                 (it stayed throttled after sched_yield; seen on loaded VMs): the thread was moved back to \
                 SCHED_OTHER; use another mechanism or a longer period"
            )
        );
    }
}

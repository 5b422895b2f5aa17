//! The watchdog of a sched-deadline wait.
//!
//! On a loaded machine the kernel has been seen never to replenish a
//! SCHED_DEADLINE thread that yielded: it stays throttled inside
//! `sched_yield` for ever, and the process cannot even be killed. While the
//! wait is armed, a plain SCHED_OTHER thread watches a progress counter the
//! waiting thread moves as it enters and leaves each `sched_yield`; when the
//! thread has been inside one yield for [`limit_for`] the period, the
//! watchdog moves it back to the policy it had before, which ends the yield,
//! and records that it did so for the wait to report.
//!
//! Each arming and disarming starts a new generation; the watchdog claims
//! the generation it watched before it acts, and only if the thread has not
//! moved since its look, so that it never releases a thread that left the
//! stalled yield, or was disarmed and armed again, in between.
//!
//! The thread is spawned at the first arm (before the waiting thread becomes
//! SCHED_DEADLINE: a deadline thread may not fork), idles parked while the
//! wait is disarmed, so that re-arming on a change of period allocates
//! nothing, and ends when the wait is dropped.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::clock::ClockId;
use crate::sys::sched;
use crate::time::{Nanos, Time};

/// How long a thread may stay inside one yield before it is released:
/// 1 s, or 1000 periods when that is longer.
pub(super) fn limit_for(interval: Nanos) -> Nanos {
    Nanos(interval.as_ns().saturating_mul(1000)).max(Nanos::from_secs(1))
}

/// The decision: release the thread when it is inside the wait and its
/// progress has not moved for at least the limit of its period.
pub(super) fn stalled(moved: bool, inside: bool, unmoved_for: Nanos, interval: Nanos) -> bool {
    !moved && inside && unmoved_for >= limit_for(interval)
}

/// Whether a progress value says the thread is inside a yield (odd values).
fn inside(progress: u64) -> bool {
    progress % 2 == 1
}

/// The watchdog's last look at the waiting thread: the progress value it
/// saw, and since when that value has not moved.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Sighting {
    seen: u64,
    since: Time,
}

impl Sighting {
    /// Takes a new look; returns how long the thread has been stuck inside
    /// the wait when it is time to release it.
    fn look(&mut self, progress: u64, now: Time, interval: Nanos) -> Option<Nanos> {
        let moved = progress != self.seen;
        if moved {
            *self = Sighting { seen: progress, since: now };
        }
        let unmoved_for = now - self.since;
        stalled(moved, inside(progress), unmoved_for, interval).then_some(unmoved_for)
    }
}

/// The low bit of [`Shared::generation`]: the watchdog is releasing the
/// thread armed in that generation.
const RELEASING: u64 = 1;

/// The watchdog's stack: it calls a few system calls, nothing deep (and
/// under `mlockall` the default 2 MiB would be locked).
const STACK: usize = 64 * 1024;

/// What the waiting thread and its watchdog share.
#[derive(Default)]
pub(super) struct Shared {
    /// Moved by the waiting thread on entering (to odd) and leaving (to even) each yield.
    progress: AtomicU64,
    /// The armed interval in ns; 0 while disarmed (the watchdog idles).
    interval: AtomicI64,
    /// Moved by 2 at each arm and disarm; its low bit is [`RELEASING`].
    generation: AtomicU64,
    /// How long the thread had been stuck when the watchdog released it; 0 if it did not.
    stalled_for: AtomicI64,
    /// When it released it (CLOCK_MONOTONIC ns).
    released_at: AtomicI64,
    /// Set at drop: the watchdog ends.
    stop: AtomicBool,
}

/// The waiting thread's side: the shared state, its own copy of the
/// progress counter (it is the only writer), and the watchdog thread.
pub(super) struct Watchdog {
    shared: Arc<Shared>,
    progress: u64,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub(super) fn new() -> Watchdog {
        Watchdog { shared: Arc::new(Shared::default()), progress: 0, thread: None }
    }

    /// Spawns the watchdog thread, idle, if it is not running yet; it
    /// releases `tid` to `restore` (policy, priority). Call before `tid`
    /// becomes SCHED_DEADLINE.
    pub(super) fn spawn(&mut self, tid: libc::pid_t, restore: (libc::c_int, libc::c_int)) -> io::Result<()> {
        if self.thread.is_none() {
            let shared = Arc::clone(&self.shared);
            let handle = std::thread::Builder::new()
                .name("rtick-dl-watch".into())
                .stack_size(STACK)
                .spawn(move || watch(&shared, tid, restore))?;
            self.thread = Some(handle);
        }
        Ok(())
    }

    /// Starts watching waits of period `interval` (allocates nothing). Call
    /// before the thread becomes SCHED_DEADLINE: a release of the previous
    /// generation still under way ends first.
    pub(super) fn watch(&self, interval: Nanos) {
        self.next_generation();
        self.shared.stalled_for.store(0, Relaxed);
        self.shared.interval.store(interval.as_ns().max(1), Release);
        self.wake();
    }

    /// Stops watching: the watchdog idles until the next [`Watchdog::watch`].
    pub(super) fn idle(&self) {
        self.next_generation();
        self.shared.interval.store(0, Release);
    }

    /// A new generation, once no release of the current one is under way
    /// (one system call of the watchdog's: it is given the CPU to finish).
    fn next_generation(&self) {
        let generation = &self.shared.generation;
        loop {
            let g = generation.load(Acquire);
            if g & RELEASING == 0 && generation.compare_exchange(g, g + 2, AcqRel, Acquire).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    fn wake(&self) {
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// The waiting thread enters a yield: one relaxed store.
    #[inline]
    pub(super) fn enter(&mut self) {
        self.progress += 1;
        self.shared.progress.store(self.progress, Relaxed);
    }

    /// The waiting thread has left the yield: one relaxed store.
    #[inline]
    pub(super) fn leave(&mut self) {
        self.progress += 1;
        self.shared.progress.store(self.progress, Relaxed);
    }

    /// How long the thread had been stuck when the watchdog released it,
    /// and when it did (CLOCK_MONOTONIC), since the last [`Watchdog::watch`].
    #[inline]
    pub(super) fn released(&self) -> Option<(Nanos, Time)> {
        match self.shared.stalled_for.load(Acquire) {
            0 => None,
            ns => Some((Nanos(ns), Time(self.shared.released_at.load(Relaxed)))),
        }
    }

    #[cfg(test)]
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl Drop for Watchdog {
    /// Ends the watchdog thread and waits for it.
    fn drop(&mut self) {
        self.shared.stop.store(true, Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// The watchdog thread: SCHED_OTHER, no timer signal, looks at the waiting
/// thread every eighth of the limit while armed, parks while disarmed.
fn watch(shared: &Shared, tid: libc::pid_t, restore: (libc::c_int, libc::c_int)) {
    // It must run whatever the waiting thread's policy; and the signals the
    // waits use are not for it. Neither can fail for a running thread.
    let _ = sched::set_scheduler(libc::SCHED_OTHER, 0);
    let _ = crate::sys::signal::block(&crate::wait::timer_signals());
    let mut sighting: Option<(u64, Sighting)> = None;
    while !shared.stop.load(Acquire) {
        let generation = shared.generation.load(Acquire);
        let interval = Nanos(shared.interval.load(Acquire));
        if interval == Nanos::ZERO || shared.stalled_for.load(Relaxed) != 0 {
            sighting = None;
            std::thread::park();
            continue;
        }
        let now = ClockId::Monotonic.now();
        let progress = shared.progress.load(Relaxed);
        // A new generation is a new arming: the count starts over.
        if sighting.is_some_and(|(g, _)| g != generation) {
            sighting = None;
        }
        let (_, s) = sighting.get_or_insert((generation, Sighting { seen: progress, since: now }));
        if let Some(stuck) = s.look(progress, now, interval) {
            if claim(shared, s.seen, generation) {
                let alive = release(shared, tid, restore, stuck, now);
                shared.generation.fetch_and(!RELEASING, Release);
                if !alive {
                    return;
                }
            }
        }
        std::thread::park_timeout(Nanos(limit_for(interval).as_ns() / 8).to_std());
    }
}

/// The decision made sure, right before acting: the thread has not moved
/// since the look that saw it stuck at `seen`, and is still armed in
/// `generation`, which the watchdog then claims (the waiting thread cannot
/// start another until [`RELEASING`] is cleared).
fn claim(shared: &Shared, seen: u64, generation: u64) -> bool {
    if shared.generation.compare_exchange(generation, generation | RELEASING, AcqRel, Acquire).is_err() {
        return false;
    }
    if shared.progress.load(Acquire) != seen {
        shared.generation.fetch_and(!RELEASING, Release);
        return false;
    }
    true
}

/// Moves `tid` back to `restore`, which ends its yield. The record comes
/// first, so that the thread sees it as soon as it runs; it is withdrawn if
/// the move fails. False when the thread no longer exists.
fn release(shared: &Shared, tid: libc::pid_t, restore: (libc::c_int, libc::c_int), stuck: Nanos, now: Time) -> bool {
    shared.released_at.store(now.as_ns(), Relaxed);
    shared.stalled_for.store(stuck.as_ns().max(1), Release);
    match sched::set_scheduler_of(tid, restore.0, restore.1) {
        Ok(()) => true,
        Err(e) => {
            shared.stalled_for.store(0, Release);
            // Any other failure is tried again at the next look.
            e.raw_os_error() != Some(libc::ESRCH)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_one_second_or_a_thousand_periods() {
        assert_eq!(limit_for(Nanos::from_us(300)), Nanos::from_secs(1));
        assert_eq!(limit_for(Nanos::from_ms(1)), Nanos::from_secs(1));
        assert_eq!(limit_for(Nanos::from_ms(4)), Nanos::from_secs(4));
        assert_eq!(limit_for(Nanos(i64::MAX / 10)), Nanos(i64::MAX), "saturates");
    }

    #[test]
    fn released_only_inside_the_wait_without_progress_for_the_limit() {
        let p = Nanos::from_us(300);
        let s = Nanos::from_secs(1);
        assert!(stalled(false, true, s, p));
        assert!(stalled(false, true, s * 5, p));
        assert!(!stalled(false, true, s - Nanos(1), p), "not before the limit");
        assert!(!stalled(true, true, s * 5, p), "progress was made");
        assert!(!stalled(false, false, s * 5, p), "outside the wait: the application's own work");
        // A long period lengthens the limit.
        assert!(!stalled(false, true, s * 3, Nanos::from_ms(4)));
        assert!(stalled(false, true, s * 4, Nanos::from_ms(4)));
    }

    #[test]
    fn a_release_is_claimed_only_for_an_unmoved_thread_of_the_same_generation() {
        let w = Watchdog::new();
        let shared = w.shared();
        w.watch(Nanos::from_ms(1));
        let g = shared.generation.load(Relaxed);
        shared.progress.store(5, Relaxed);
        // It left the yield (and maybe entered another) since the look.
        assert!(!claim(shared, 3, g), "moved since the look");
        assert_eq!(shared.generation.load(Relaxed), g, "a refused claim leaves the generation");
        // Disarmed, or disarmed and armed again, since the look.
        w.idle();
        assert!(!claim(shared, 5, g), "disarmed since the look");
        w.watch(Nanos::from_ms(2));
        assert!(!claim(shared, 5, g), "armed again since the look");
        let now = shared.generation.load(Relaxed);
        assert_eq!(now, g + 4, "each arm and disarm is a generation");
        // Unmoved, same generation: claimed, once.
        assert!(claim(shared, 5, now));
        assert_eq!(shared.generation.load(Relaxed), now | RELEASING);
        assert!(!claim(shared, 5, now), "claimed twice");
        // The next arm waits for the release to end.
        let releasing = Arc::clone(shared);
        let ends = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            releasing.generation.fetch_and(!RELEASING, Release);
        });
        w.watch(Nanos::from_ms(1));
        assert_eq!(shared.generation.load(Relaxed), now + 2, "armed after the release ended");
        ends.join().unwrap();
    }

    #[test]
    fn a_sighting_counts_from_the_last_move_of_the_progress() {
        let p = Nanos::from_ms(1);
        let t = |ms: i64| Time(Nanos::from_ms(ms).as_ns());
        let mut s = Sighting { seen: 0, since: t(0) };
        // Outside the wait (even) for long: never.
        assert_eq!(s.look(0, t(5_000), p), None);
        // Entered at 5 s (as seen then): counted from there.
        assert_eq!(s.look(1, t(5_000), p), None);
        assert_eq!(s.look(1, t(5_999), p), None);
        assert_eq!(s.look(1, t(6_000), p), Some(Nanos::from_secs(1)));
        // It moved on (left, entered again): the count starts over.
        assert_eq!(s.look(3, t(6_500), p), None);
        assert_eq!(s.look(3, t(7_400), p), None);
        assert_eq!(s.look(3, t(7_600), p), Some(Nanos::from_ms(1_100)));
    }
}

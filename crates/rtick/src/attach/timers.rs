//! The hrtimers the followed threads armed, and the callbacks running on
//! each CPU: what tells a timer's wake-up from any other.
//!
//! A thread's timed wait need not arm a timer of its own: a loop on a
//! timerfd, a POSIX timer or an itimer blocks in `read`, `epoll_wait` or
//! `sigwaitinfo` with no timeout, and the timer it armed before (or re-armed
//! on its last `read` or signal dequeue) wakes it from its callback
//! (`timerfd_tmrproc`, `posix_timer_fn`, `it_real_fn`). So every timer a
//! followed thread arms is remembered (its request and when it was armed),
//! and per CPU the callback running is tracked from its
//! `hrtimer_expire_entry` to its `hrtimer_expire_exit`: a `sched_waking`
//! on that CPU between them was done by that callback (a callback runs
//! with interrupts off on the timer's CPU, and wakes there).
//!
//! Memory stays bounded by the timers armed at once: the kernel records an
//! `hrtimer_cancel` for each timer it removes, whether cancelled, re-armed
//! or about to expire (just before its callback, on that CPU), so a timer
//! leaves the map then; the last one removed on each CPU is kept aside for
//! the expiry that may follow, and a timer re-armed (in the thread's
//! context or in its callback) comes back with its new request.
//!
//! A remembered timer whose callback woke no followed thread and did not
//! re-arm it fired while its thread was busy (a periodic timer's loop
//! overran): it is kept until the timer is armed again — by its thread's
//! next `read` or signal dequeue, which consumes that expiry at once — at
//! most [`MAX_FIRED`] at a time.

use std::collections::HashMap;

use crate::time::Time;

/// Callbacks nest at most twice (a hard-interrupt timer interrupting a
/// softirq one); more on one CPU means exits were lost: the oldest go.
const MAX_NESTED: usize = 4;

/// Timers fired unconsumed kept at once (each leaves at its next arm; one
/// never armed again stays until this many pile up, then all are dropped).
pub const MAX_FIRED: usize = 1024;

/// A timer armed by a followed thread: its `hrtimer_start`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Armed {
    /// The timer's address.
    pub hrtimer: u64,
    /// Its callback's address.
    pub function: u64,
    /// Soft expiry: the time asked for, on the timer's clock.
    pub soft: Time,
    /// Hard expiry: the request plus the timer slack.
    pub hard: Time,
    /// When it was armed (or re-armed): the event's time stamp.
    pub at: Time,
}

/// A timer's callback running on a CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Callback {
    /// The timer's address.
    pub hrtimer: u64,
    /// Its `hrtimer_expire_entry`'s time stamp.
    pub entry: Time,
    /// The clock base's time the interrupt read (`now`).
    pub now: Time,
    /// How it was armed, when a followed thread armed it.
    pub armed: Option<Armed>,
    /// It woke a followed thread.
    pub woke: bool,
}

/// One CPU's timer state.
#[derive(Clone, Debug, Default)]
struct Cpu {
    /// The last remembered timer removed on this CPU.
    removed: Option<Armed>,
    /// The callbacks running, innermost last.
    running: Vec<Callback>,
}

/// The timers followed threads armed and the callbacks running, fed the
/// timer events in time order.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    armed: HashMap<u64, Armed>,
    /// Remembered timers whose callback woke no followed thread, by address.
    fired: HashMap<u64, Callback>,
    cpus: Vec<Cpu>,
}

impl Timers {
    /// `timer:hrtimer_start` on `cpu`: `a` is remembered when a followed
    /// thread armed it (`by_followed`), or when it is a remembered timer
    /// re-armed (by anyone, its own callback included). Returns the
    /// timer's last expiry when its callback woke no followed thread
    /// (fired while its thread was busy), now consumed.
    pub fn start(&mut self, cpu: usize, a: Armed, by_followed: bool) -> Option<Callback> {
        let known = self.armed.contains_key(&a.hrtimer)
            || self.cpus.get(cpu).is_some_and(|c| {
                c.running.iter().any(|r| r.hrtimer == a.hrtimer && r.armed.is_some())
                    || c.removed.is_some_and(|r| r.hrtimer == a.hrtimer)
            });
        if by_followed || known {
            self.armed.insert(a.hrtimer, a);
        }
        self.fired.remove(&a.hrtimer)
    }

    /// `timer:hrtimer_cancel` on `cpu`: the timer leaves the map, kept
    /// aside for the expiry that follows when it is about to fire.
    pub fn cancel(&mut self, cpu: usize, hrtimer: u64) {
        if let Some(a) = self.armed.remove(&hrtimer) {
            self.cpu(cpu).removed = Some(a);
        }
    }

    /// `timer:hrtimer_expire_entry` on `cpu` at `entry`, `now` on its base.
    pub fn entry(&mut self, cpu: usize, hrtimer: u64, entry: Time, now: Time) {
        let armed = match self.armed.remove(&hrtimer) {
            Some(a) => Some(a),
            None => self.cpu(cpu).removed.take_if(|a| a.hrtimer == hrtimer),
        };
        let c = self.cpu(cpu);
        c.running.retain(|r| r.hrtimer != hrtimer);
        if c.running.len() >= MAX_NESTED {
            c.running.remove(0);
        }
        c.running.push(Callback { hrtimer, entry, now, armed, woke: false });
    }

    /// The callback running on `cpu` (the innermost) woke a followed thread.
    pub fn woke(&mut self, cpu: usize) {
        if let Some(r) = self.cpu(cpu).running.last_mut() {
            r.woke = true;
        }
    }

    /// `timer:hrtimer_expire_exit` on `cpu`: the callback returned (the
    /// timer stays remembered only if it was re-armed; if not and it woke
    /// no followed thread, its expiry is kept for its next arm).
    pub fn exit(&mut self, cpu: usize, hrtimer: u64) {
        let c = self.cpu(cpu);
        let Some(i) = c.running.iter().rposition(|r| r.hrtimer == hrtimer) else { return };
        let r = c.running[i];
        c.running.truncate(i);
        if r.armed.is_some() && !r.woke && !self.armed.contains_key(&hrtimer) {
            if self.fired.len() >= MAX_FIRED {
                self.fired.clear();
            }
            self.fired.insert(hrtimer, r);
        }
    }

    /// The callback running on `cpu` now (the innermost), if it is a
    /// remembered timer's.
    pub fn callback(&self, cpu: usize) -> Option<&Callback> {
        self.cpus.get(cpu)?.running.last().filter(|r| r.armed.is_some())
    }

    /// Timers fired unconsumed kept now.
    pub fn fired(&self) -> usize {
        self.fired.len()
    }

    /// Timers remembered now.
    pub fn len(&self) -> usize {
        self.armed.len()
    }

    /// No timer is remembered.
    pub fn is_empty(&self) -> bool {
        self.armed.is_empty()
    }

    fn cpu(&mut self, cpu: usize) -> &mut Cpu {
        if self.cpus.len() <= cpu {
            self.cpus.resize_with(cpu + 1, Cpu::default);
        }
        &mut self.cpus[cpu]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn armed(hrtimer: u64, soft: i64, at: i64) -> Armed {
        Armed { hrtimer, function: 0xf, soft: Time(soft), hard: Time(soft), at: Time(at) }
    }

    #[test]
    fn a_callback_is_known_from_its_entry_to_its_exit_on_its_cpu_only() {
        let mut t = Timers::default();
        t.start(1, armed(0xa, 10_000, 1_000), true);
        t.start(1, armed(0xb, 10_000, 1_000), false);
        assert_eq!(t.len(), 1, "a timer no followed thread armed is not remembered");
        t.cancel(1, 0xa);
        t.entry(1, 0xa, Time(10_100), Time(10_050));
        let c = *t.callback(1).unwrap();
        assert_eq!((c.entry, c.now, c.armed), (Time(10_100), Time(10_050), Some(armed(0xa, 10_000, 1_000))));
        assert!(t.callback(0).is_none());
        // A hard-interrupt timer of no followed thread nests inside it.
        t.entry(1, 0xb, Time(10_200), Time(10_200));
        assert!(t.callback(1).is_none(), "the innermost callback is another timer's");
        t.exit(1, 0xb);
        assert_eq!(t.callback(1).unwrap().hrtimer, 0xa);
        t.exit(1, 0xa);
        assert!(t.callback(1).is_none() && t.is_empty(), "expired without a re-arm: forgotten");
    }

    #[test]
    fn a_timer_re_armed_by_its_callback_or_its_thread_is_kept_with_its_new_request() {
        let mut t = Timers::default();
        t.start(0, armed(0xa, 10_000, 1_000), true);
        t.cancel(0, 0xa);
        t.entry(0, 0xa, Time(10_100), Time(10_100));
        // Re-armed in its own callback (hard interrupt, not the thread's context).
        t.start(0, armed(0xa, 20_000, 10_150), false);
        t.exit(0, 0xa);
        t.cancel(0, 0xa);
        t.entry(0, 0xa, Time(20_100), Time(20_100));
        t.exit(0, 0xa);
        // Re-armed by its thread's `read` after its callback returned.
        t.start(0, armed(0xa, 30_000, 20_300), true);
        // Re-armed while queued, by a task not followed: the kernel records
        // its removal, then the start.
        t.cancel(0, 0xa);
        t.start(0, armed(0xa, 35_000, 20_400), false);
        t.cancel(0, 0xa);
        t.entry(0, 0xa, Time(35_100), Time(35_100));
        assert_eq!(t.callback(0).unwrap().armed, Some(armed(0xa, 35_000, 20_400)));
    }

    #[test]
    fn an_expiry_that_woke_nobody_is_kept_until_its_timer_is_armed_again() {
        let mut t = Timers::default();
        t.start(0, armed(0xa, 10_000, 1_000), true);
        t.cancel(0, 0xa);
        t.entry(0, 0xa, Time(10_100), Time(10_100));
        t.woke(0);
        t.exit(0, 0xa);
        assert_eq!(t.fired(), 0, "it woke its thread");
        assert!(t.start(0, armed(0xa, 20_000, 10_400), true).is_none());
        t.cancel(0, 0xa);
        t.entry(0, 0xa, Time(20_100), Time(20_050));
        t.exit(0, 0xa);
        let c = t.start(1, armed(0xa, 30_000, 23_000), true).expect("fired unconsumed");
        assert_eq!((c.entry, c.now, c.armed), (Time(20_100), Time(20_050), Some(armed(0xa, 20_000, 10_400))));
        assert_eq!(t.fired(), 0, "consumed by the arm");
        // Re-armed in its own callback: not fired unconsumed.
        t.cancel(1, 0xa);
        t.entry(1, 0xa, Time(30_100), Time(30_100));
        t.start(1, armed(0xa, 40_000, 30_150), false);
        t.exit(1, 0xa);
        assert_eq!(t.fired(), 0);
    }

    #[test]
    fn memory_is_bounded_by_the_timers_armed_at_once() {
        let mut t = Timers::default();
        for i in 0..10_000u64 {
            let ts = i as i64 * 1_000;
            t.start(0, armed(0x100 + i % 3, ts + 500, ts), true);
            t.cancel(0, 0x100 + i % 3);
            // Lost exits pile no more than a few callbacks per CPU.
            t.entry(0, 0x100 + i % 3, Time(ts + 600), Time(ts + 600));
        }
        assert!(t.is_empty());
        assert!(t.cpus[0].running.len() <= MAX_NESTED);
        // Timers that fired, woke nobody and were never armed again.
        for i in 0..3 * MAX_FIRED as u64 {
            t.start(0, armed(0x10_000 + i, 5, 0), true);
            t.cancel(0, 0x10_000 + i);
            t.entry(0, 0x10_000 + i, Time(6), Time(6));
            t.exit(0, 0x10_000 + i);
        }
        assert!(t.fired() <= MAX_FIRED);
        t.start(0, armed(0x1, 5, 0), true);
        t.start(0, armed(0x1, 9, 1), true);
        t.cancel(3, 0x1);
        assert_eq!((t.len(), t.cpus.len()), (0, 4), "a cancel on another CPU removes it too");
    }
}

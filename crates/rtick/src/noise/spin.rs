//! The spinning thread: reads the cheapest clock this CPU allows as fast
//! as it can on its CPU and records every step longer than the threshold
//! as a gap.
//!
//! The clock ([`LoopClock`]) is the TSC where the kernel trusts it (x86-64,
//! `constant_tsc` and `nonstop_tsc`, and `tsc` the clocksource): `rdtsc`,
//! not fenced (oslat's choice: a fence would lengthen every step, and a
//! step's few cycles of reordering are far below any threshold), converted
//! to nanoseconds with a calibration against CLOCK_MONOTONIC made once per
//! process ([`CALIBRATION`]). Gap times are CLOCK_MONOTONIC times, as the
//! trace's: the TSC is re-anchored to CLOCK_MONOTONIC at every progress
//! check (every 1024 steps; the anchor within 50 ns), so that a
//! calibration's small error (and NTP's slewing of CLOCK_MONOTONIC) never
//! adds up over a long run. Elsewhere the loop reads CLOCK_MONOTONIC
//! through the vDSO.
//!
//! The hot loop allocates nothing, takes no lock and makes no system call:
//! steps up to the threshold are counted in a preallocated array (the
//! loop's resolution), gaps go into a preallocated histogram and a
//! lock-free ring the main thread drains, and progress into atomics.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, OnceLock, RwLock};

use super::attribute::Gap;
use crate::clock::ClockId;
use crate::error::Result;
use crate::rt::ThreadSetup;
use crate::stats::{percentile, SignedHistogram};
use crate::system::SysRoot;
use crate::time::{Nanos, Time};
use crate::tsc_clock::{self, NotUsable, TscClock};

/// How long the TSC is calibrated against CLOCK_MONOTONIC. Its error
/// bound is the TSC's uncertainty at both ends over this: on a 2.6 GHz
/// KVM guest brackets of 104 ticks, 0.7 ppm (0.7 ns a millisecond); the
/// frequency found was off by 0.009 ppm (0.5 µs a minute apart from
/// CLOCK_MONOTONIC, 30 µs an hour: why the loop re-anchors).
pub const CALIBRATION: Nanos = Nanos::from_ms(50);
/// The widest TSC bracket around a CLOCK_MONOTONIC read that re-anchors
/// the TSC (an interrupt inside it would move the anchor).
const ANCHOR_WIDTH: Nanos = Nanos(100);

/// The clock the loop reads.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopClock {
    /// The TSC, calibrated against CLOCK_MONOTONIC.
    Tsc(TscClock),
    /// CLOCK_MONOTONIC through the vDSO, and why not the TSC.
    Vdso(NotUsable),
}

impl LoopClock {
    /// This machine's, decided and calibrated once per process.
    pub fn get() -> &'static LoopClock {
        static CLOCK: OnceLock<LoopClock> = OnceLock::new();
        CLOCK.get_or_init(|| LoopClock::decide(&SysRoot::default()))
    }

    /// The TSC if [`tsc_clock::usable_under`] `root` and it calibrates, else the vDSO.
    pub fn decide(root: &SysRoot) -> LoopClock {
        if let Err(why) = tsc_clock::usable_under(root) {
            return LoopClock::Vdso(why);
        }
        #[cfg(target_arch = "x86_64")]
        let clock = tsc_clock::calibrate(crate::clock::PosixClock::Monotonic, CALIBRATION)
            .map_or(LoopClock::Vdso(NotUsable::Stalled), LoopClock::Tsc);
        #[cfg(not(target_arch = "x86_64"))]
        let clock = LoopClock::Vdso(NotUsable::NotX86_64);
        clock
    }

    /// What the loop reads, and why, for the header.
    pub fn describe(&self) -> String {
        match self {
            LoopClock::Tsc(c) => format!(
                "TSC (constant, nonstop, the clocksource) at {:.6} GHz ±{:.2} ppm against CLOCK_MONOTONIC, \
                 rdtsc unfenced as oslat's",
                c.hz / 1e9,
                c.error_ppm.max(0.01)
            ),
            LoopClock::Vdso(why) => format!("CLOCK_MONOTONIC through the vDSO: {why}"),
        }
    }
}

/// A clock the loop reads: raw readings, the ns between two, the
/// CLOCK_MONOTONIC time of one, and a look at CLOCK_MONOTONIC at each
/// progress check.
trait Reader {
    fn read(&self) -> u64;
    fn span(&self, from: u64, to: u64) -> i64;
    fn time(&self, raw: u64) -> Time;
    fn check(&mut self);
}

/// CLOCK_MONOTONIC through the vDSO: readings are nanoseconds.
struct Vdso;

impl Reader for Vdso {
    #[inline(always)]
    fn read(&self) -> u64 {
        ClockId::Monotonic.now().as_ns() as u64
    }
    #[inline(always)]
    fn span(&self, from: u64, to: u64) -> i64 {
        to.wrapping_sub(from) as i64
    }
    #[inline(always)]
    fn time(&self, raw: u64) -> Time {
        Time(raw as i64)
    }
    #[inline(always)]
    fn check(&mut self) {}
}

/// The TSC: `rdtsc` (not fenced), re-anchored to CLOCK_MONOTONIC at each check.
#[cfg(target_arch = "x86_64")]
struct Tsc {
    clock: TscClock,
    max_width: u64,
}

#[cfg(target_arch = "x86_64")]
impl Reader for Tsc {
    #[inline(always)]
    fn read(&self) -> u64 {
        crate::sys::tsc::rdtsc()
    }
    #[inline(always)]
    fn span(&self, from: u64, to: u64) -> i64 {
        self.clock.ns(to.saturating_sub(from))
    }
    #[inline(always)]
    fn time(&self, raw: u64) -> Time {
        self.clock.time(raw)
    }
    #[inline]
    fn check(&mut self) {
        let p = tsc_clock::pair(crate::clock::PosixClock::Monotonic);
        if p.width <= self.max_width {
            self.clock.anchor(p);
        }
    }
}

/// Steps counted one nanosecond apart up to this; longer ones below the
/// threshold are counted together.
const STEP_SLOTS: usize = 1 << 14;
/// Iterations between looks at the stop flag, the end and the progress.
const CHECK_EVERY: u64 = 1024;
/// Buckets of [`StepsUs`], 1 µs each (oslat's largest bucket count); the
/// last one also counts every longer step.
pub const STEP_US_BUCKETS: usize = 1024;

/// Every step of the loop by whole microseconds, as oslat counts them:
/// bucket `i` holds the steps of `i` µs to just under `i + 1` µs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepsUs {
    /// [`STEP_US_BUCKETS`] counts; the last includes the longer steps.
    pub buckets: Vec<u64>,
    /// The sum over every step of its bucket's upper bound, µs (oslat's
    /// average is this over the count).
    pub sum_upper_us: u64,
    /// The longest step's bucket upper bound, µs (oslat's maximum).
    pub max_upper_us: u64,
}

/// What the main thread and a spinner share.
#[derive(Debug)]
pub struct Shared {
    /// Set to end the run.
    pub stop: AtomicBool,
    /// The spinner's latest read published (every gap ending by it is in the ring).
    pub progress: AtomicI64,
    /// Its first read (`i64::MIN` until it starts).
    pub start: AtomicI64,
}

impl Default for Shared {
    fn default() -> Self {
        Shared { stop: AtomicBool::new(false), progress: AtomicI64::new(i64::MIN), start: AtomicI64::new(i64::MIN) }
    }
}

/// The spinner's figures, once it ends.
#[derive(Debug)]
pub struct Spun {
    /// Its thread id.
    pub tid: i32,
    /// Its first read.
    pub start: Time,
    /// Its last read.
    pub end: Time,
    /// Loop iterations.
    pub iterations: u64,
    /// Gaps (steps longer than the threshold), ns.
    pub gaps: SignedHistogram,
    /// Their sum.
    pub noise: Nanos,
    /// The longest.
    pub max_gap: Nanos,
    /// Gaps the ring had no room for (counted, not attributed).
    pub unqueued: u64,
    /// The loop's resolution: its shortest step and its median step.
    pub resolution: (Nanos, Nanos),
    /// Every step by whole microseconds.
    pub steps_us: StepsUs,
}

/// The spinning loop with everything it writes preallocated: the steps
/// per nanosecond, the gap histogram, the ring the gaps go into.
#[derive(Debug)]
pub struct Loop {
    threshold: i64,
    steps: Vec<u64>,
    over: u64,
    /// Steps past the per-ns counts (gaps, longer steps) by µs, and their sum of upper bounds.
    long_us: Vec<u64>,
    long_upper_us: u64,
    gaps: SignedHistogram,
    noise: i64,
    max_gap: i64,
    unqueued: u64,
    iterations: u64,
    ring: rtrb::Producer<Gap>,
    clock: LoopClock,
}

impl Loop {
    /// A loop for `threshold` on this machine's [`LoopClock`], its gaps
    /// pushed into `ring` (allocates all it will use).
    pub fn new(threshold: Nanos, ring: rtrb::Producer<Gap>) -> Loop {
        Loop::on(LoopClock::get().clone(), threshold, ring)
    }

    /// [`Loop::new`] reading `clock`.
    pub fn on(clock: LoopClock, threshold: Nanos, ring: rtrb::Producer<Gap>) -> Loop {
        let slots = (threshold.as_ns().max(0) as usize + 1).min(STEP_SLOTS);
        Loop {
            threshold: threshold.as_ns(),
            steps: vec![0u64; slots],
            over: 0,
            long_us: vec![0u64; STEP_US_BUCKETS],
            long_upper_us: 0,
            gaps: SignedHistogram::new(),
            noise: 0,
            max_gap: 0,
            unqueued: 0,
            iterations: 0,
            ring,
            clock,
        }
    }

    /// Spins until `until`, `shared.stop` or `run_stop` (the whole run's
    /// flag: a spinner ends on it even if the thread that would set
    /// `shared.stop` never runs), publishing its first read and its
    /// progress in `shared`; returns its first and last reads. The loop
    /// allocates nothing, takes no lock and makes no system call
    /// (crates/rtick/tests/alloc_free.rs checks the first).
    pub fn spin(&mut self, until: Option<Time>, shared: &Shared, run_stop: &AtomicBool) -> (Time, Time) {
        match &self.clock {
            #[cfg(target_arch = "x86_64")]
            LoopClock::Tsc(c) => {
                let tsc = Tsc { clock: *c, max_width: c.ticks(ANCHOR_WIDTH) };
                self.spin_on(tsc, until, shared, run_stop)
            }
            // Only x86-64 has a TSC clock ([`tsc_clock::usable`]).
            #[cfg(not(target_arch = "x86_64"))]
            LoopClock::Tsc(_) => self.spin_on(Vdso, until, shared, run_stop),
            LoopClock::Vdso(_) => self.spin_on(Vdso, until, shared, run_stop),
        }
    }

    #[inline(always)]
    fn spin_on(
        &mut self,
        mut clock: impl Reader,
        until: Option<Time>,
        shared: &Shared,
        run_stop: &AtomicBool,
    ) -> (Time, Time) {
        let end = until.map_or(i64::MAX, |t| t.as_ns());
        clock.check();
        let first = clock.read();
        let start = clock.time(first);
        shared.start.store(start.as_ns(), Ordering::Release);
        let (mut prev, mut floor) = (first, start);
        loop {
            let now = clock.read();
            let d = clock.span(prev, now);
            if d > self.threshold {
                self.gaps.record(d);
                self.noise += d;
                self.max_gap = self.max_gap.max(d);
                // Its end from its span: every gap lasts what the histogram
                // holds. Never before the last time handed out: a new anchor
                // may move the TSC's times back by a few ns.
                let start = clock.time(prev).max(floor);
                floor = start + Nanos(d);
                if self.ring.push(Gap { start, end: floor }).is_err() {
                    self.unqueued += 1;
                }
                self.count_long(d);
            } else if let Some(s) = self.steps.get_mut(d.max(0) as usize) {
                *s += 1;
            } else {
                self.over += 1;
                self.count_long(d);
            }
            prev = now;
            self.iterations += 1;
            if self.iterations % CHECK_EVERY == 0 {
                clock.check();
                floor = clock.time(now).max(floor);
                let t = floor.as_ns();
                shared.progress.store(t, Ordering::Release);
                if t >= end || shared.stop.load(Ordering::Relaxed) || run_stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        }
        let last = clock.time(prev).max(floor);
        shared.progress.store(last.as_ns(), Ordering::Release);
        (start, last)
    }

    /// A step the per-ns counts do not hold, by µs.
    #[inline]
    fn count_long(&mut self, d: i64) {
        let us = (d / 1000) as usize;
        self.long_us[us.min(STEP_US_BUCKETS - 1)] += 1;
        self.long_upper_us += us as u64 + 1;
    }

    /// Every step by µs: the per-ns counts folded in with the longer ones.
    fn steps_us(&self) -> StepsUs {
        let mut buckets = self.long_us.clone();
        let mut sum_upper_us = self.long_upper_us;
        for (ns, &n) in self.steps.iter().enumerate().filter(|(_, &n)| n > 0) {
            buckets[(ns / 1000).min(STEP_US_BUCKETS - 1)] += n;
            sum_upper_us += n * (ns as u64 / 1000 + 1);
        }
        // The last bucket holds longer steps too: the longest gap says how long.
        let top = buckets.iter().rposition(|&n| n > 0).map_or(0, |i| i as u64 + 1);
        let longest_gap = if !self.gaps.is_empty() { self.max_gap as u64 / 1000 + 1 } else { 0 };
        StepsUs { buckets, sum_upper_us, max_upper_us: top.max(longest_gap) }
    }

    /// The figures of a loop that ran from `start` to `end` on thread `tid`.
    pub fn finish(self, tid: i32, (start, end): (Time, Time)) -> Spun {
        let steps_us = self.steps_us();
        let resolution = resolution(&self.steps, self.over + self.gaps.len());
        Spun {
            tid,
            start,
            end,
            iterations: self.iterations,
            gaps: self.gaps,
            noise: Nanos(self.noise),
            max_gap: Nanos(self.max_gap),
            unqueued: self.unqueued,
            resolution,
            steps_us,
        }
    }
}

/// What a spinner thread is to do: its setup, its threshold, its end.
#[derive(Clone, Debug)]
pub(super) struct Job {
    pub setup: ThreadSetup,
    pub threshold: Nanos,
    pub until: Option<Time>,
}

/// Runs on its own thread: sets itself up as `job` says, says its tid (or
/// why it could not), waits for `gate` to open (its write lock released:
/// every spinner starts then), then spins until `job.until`,
/// `shared.stop` or `run_stop`.
pub(super) fn spin(
    job: Job,
    shared: &Shared,
    run_stop: &AtomicBool,
    gate: &RwLock<()>,
    ready: mpsc::Sender<Result<i32>>,
    ring: rtrb::Producer<Gap>,
) -> Option<Spun> {
    let applied = job.setup.apply().map(|_| crate::sys::timer::gettid());
    // Decided (and the TSC calibrated) once, before the gate opens.
    LoopClock::get();
    let ok = applied.is_ok();
    let tid = applied.as_ref().copied().unwrap_or(0);
    let _ = ready.send(applied);
    // A poisoned gate is open all the same.
    drop(gate.read());
    if !ok || shared.stop.load(Ordering::Acquire) || run_stop.load(Ordering::Acquire) {
        return None;
    }
    let mut l = Loop::new(job.threshold, ring);
    let span = l.spin(job.until, shared, run_stop);
    Some(l.finish(tid, span))
}

/// The shortest step and the median step, from the per-nanosecond counts
/// and the count of longer ones (which only the median's rank sees).
fn resolution(steps: &[u64], longer: u64) -> (Nanos, Nanos) {
    let min = steps.iter().position(|&c| c > 0).unwrap_or(steps.len()) as i64;
    let counts = steps.iter().enumerate().map(|(i, &c)| (i as i64, c)).chain([(i64::MAX, longer)]);
    let n = steps.iter().sum::<u64>() + longer;
    let median = percentile::rank(0.5, n).and_then(|r| percentile::at_rank(counts, r)).unwrap_or(0);
    (Nanos(min), Nanos(median.min(steps.len() as i64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_by_us_fold_the_short_steps_with_the_gaps() {
        let (producer, _ring) = rtrb::RingBuffer::new(4);
        let mut l = Loop::new(Nanos(1500), producer);
        l.steps[20] = 7;
        l.steps[999] = 1;
        l.steps[1000] = 2;
        l.steps[1500] = 1;
        for d in [1501, 2999, 3000, 5_000_000] {
            l.gaps.record(d);
            l.max_gap = l.max_gap.max(d);
            l.count_long(d);
        }
        let s = l.steps_us();
        assert_eq!(s.buckets.len(), STEP_US_BUCKETS);
        assert_eq!(&s.buckets[..4], &[8, 4, 1, 1]);
        assert_eq!(s.buckets[STEP_US_BUCKETS - 1], 1, "5 ms counts in the last bucket");
        assert_eq!(s.buckets.iter().sum::<u64>(), 15);
        assert_eq!(s.sum_upper_us, 8 + 4 * 2 + 3 + 4 + 5001);
        assert_eq!(s.max_upper_us, 5001);
    }

    /// The header's clock line, for each choice.
    #[test]
    fn the_clock_says_which_and_why() {
        use crate::tsc_clock::Pair;
        let kvm = LoopClock::Vdso(NotUsable::NotClocksource(Some("kvm-clock".into())));
        assert_eq!(kvm.describe(), "CLOCK_MONOTONIC through the vDSO: the clocksource is kvm-clock");
        let first = Pair { tsc: 0, time: Time(0), width: 40 };
        let c = TscClock::from_pairs(first, Pair { tsc: 299_400_000, time: Time(100_000_000), width: 20 }).unwrap();
        assert_eq!(
            LoopClock::Tsc(c).describe(),
            "TSC (constant, nonstop, the clocksource) at 2.994000 GHz ±0.12 ppm against CLOCK_MONOTONIC, \
             rdtsc unfenced as oslat's"
        );
    }

    /// On this machine's clock, the loop's first and last reads are
    /// CLOCK_MONOTONIC times: between reads of it taken around the loop
    /// (within the TSC's anchor, 50 ns, and a µs of margin).
    #[test]
    fn the_loop_reads_monotonic_times_on_either_clock() {
        for clock in [LoopClock::get().clone(), LoopClock::Vdso(NotUsable::NotX86_64)] {
            let (producer, _ring) = rtrb::RingBuffer::new(4);
            let mut l = Loop::on(clock, Nanos(1000), producer);
            let before = ClockId::Monotonic.now();
            let (start, end) = l.spin(Some(before + Nanos::from_ms(20)), &Shared::default(), &AtomicBool::new(false));
            let after = ClockId::Monotonic.now();
            let slack = Nanos(1000);
            assert!(
                before - slack <= start && start <= end && end <= after + slack,
                "{before:?} {start:?} {end:?} {after:?}"
            );
            // It spins until a read at or past the time given (its first read
            // comes a little after `before`: the span can be shorter than 20 ms).
            assert!(end + slack >= before + Nanos::from_ms(20), "{before:?} {end:?}");
        }
    }

    /// Readings 10 ns apart with two 2 µs steps around the first progress
    /// check, where a new anchor moves the clock's times 30 ns back.
    struct Scripted {
        reads: std::cell::Cell<u64>,
        offset: i64,
    }

    impl Reader for Scripted {
        fn read(&self) -> u64 {
            let i = self.reads.get();
            self.reads.set(i + 1);
            10 * i
                + if i >= 1025 {
                    4000
                } else if i >= 1024 {
                    2000
                } else {
                    0
                }
        }
        fn span(&self, from: u64, to: u64) -> i64 {
            (to - from) as i64
        }
        fn time(&self, raw: u64) -> Time {
            Time(raw as i64 + self.offset)
        }
        fn check(&mut self) {
            self.offset -= 30;
        }
    }

    /// Gaps last exactly their span and follow each other, even when the
    /// clock's times move back between them.
    #[test]
    fn gaps_stay_in_order_when_the_anchor_moves_back() {
        let (producer, mut ring) = rtrb::RingBuffer::new(8);
        let mut l = Loop::on(LoopClock::Vdso(NotUsable::NotX86_64), Nanos(1000), producer);
        let clock = Scripted { reads: std::cell::Cell::new(0), offset: 0 };
        let (start, end) = l.spin_on(clock, Some(Time(15_000)), &Shared::default(), &AtomicBool::new(false));
        let gaps: Vec<Gap> = std::iter::from_fn(|| ring.pop().ok()).collect();
        assert_eq!(gaps.len(), 2, "{gaps:?}");
        assert!(gaps.iter().all(|g| g.end - g.start == Nanos(2010)), "{gaps:?}");
        assert!(gaps[0].end <= gaps[1].start, "{gaps:?}");
        assert!(start <= gaps[0].start && gaps[1].end <= end, "{start:?} {gaps:?} {end:?}");
        assert_eq!(l.noise, 2 * 2010);
    }

    #[test]
    fn resolution_is_the_shortest_and_the_median_step() {
        let mut steps = vec![0u64; 100];
        steps[20] = 3;
        steps[25] = 5;
        steps[40] = 1;
        assert_eq!(resolution(&steps, 0), (Nanos(20), Nanos(25)));
        // Twenty longer steps move the median past every counted one.
        assert_eq!(resolution(&steps, 9), (Nanos(20), Nanos(40)));
        assert_eq!(resolution(&steps, 20), (Nanos(20), Nanos(100)));
    }
}

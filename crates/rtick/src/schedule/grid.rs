//! The grid of deadlines as a pure state machine: no clock, no waiting.
//!
//! It is fed each wake-up (`Wake{planned, actual, kernel_next}`) and answers
//! with the [`Tick`] an application sees and what a measurement counts. It
//! owns everything about time on the loop: the next deadline, the cycle
//! index, the periods missed, the overrun policy, the reconciliation with
//! the expiry an interval timer's kernel grid reports, clock steps, period
//! changes and shifts. Every number below is exact, so the tests can pin it.
//!
//! Clock steps (CLOCK_REALTIME/TAI set, not slewed) have one semantics for
//! every user: the wake-up that saw the step is reported with the step and
//! counted nowhere (not late, not an overrun, no period missed); the loop
//! goes on with the first deadline of the *same* grid after that wake-up.
//!
//! ```text
//! grid:     |d0     |d1     |d2 ······ clock set forward by 3.4 periods ······ |d6     |d7
//! woke:      ^w0     ^w1     ^w2 (reads d5.4: the step)                        ^w3
//! ticks:    cycle 0, 1, 2 (clock_step = 3.4 periods), then cycle 6 with missed = 0
//! ```

use super::{next_deadline, OverrunPolicy};
use crate::time::{Nanos, Time};
use crate::wait::{Mechanism, Wake};

/// One wake-up of the loop.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Grid index: deadline = first + cycle·period (until the period changes).
    pub cycle: u64,
    /// The deadline waited for (for relative mechanisms: the time read
    /// before the sleep plus the period).
    pub deadline: Time,
    /// When the thread ran again.
    pub woke: Time,
    /// woke − deadline.
    pub latency: Nanos,
    /// Deadlines skipped between the previous tick and this one.
    pub missed: u64,
    /// On CLOCK_REALTIME/TAI: how far the clock was stepped (set, not
    /// slewed) since the previous tick; zero otherwise. A step is not an
    /// overrun: the deadlines stepped over are not counted as missed, the
    /// loop goes on with the next deadline on its grid, and this tick's
    /// latency (which measures the step, not the wait) stays out of every
    /// statistic.
    pub clock_step: Nanos,
}

/// What the grid made of one wake-up: the tick, and what a measurement counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Advance {
    /// The tick.
    pub tick: Tick,
    /// The wake-up came after the following deadline.
    pub overrun: bool,
    /// Deadlines this wake-up made the loop skip (the next tick's `missed`).
    pub skipped: u64,
    /// actual − previous actual − period; `None` for the first wake-up, and
    /// after a clock step or a resumption.
    pub period_deviation: Option<Nanos>,
}

impl Advance {
    /// Whether this wake-up saw a clock step (and so measures nothing).
    pub fn stepped(&self) -> bool {
        self.tick.clock_step != Nanos::ZERO
    }
}

/// How a mechanism's wake-ups relate to the grid.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Timing {
    /// It waits for the deadline it is given.
    Absolute,
    /// The kernel keeps the grid (interval timers) and merges expirations:
    /// the next deadline is the one it reports, so overruns always skip.
    KernelGrid,
    /// It sleeps one period from whenever it is called (`clock_nanosleep-rel`,
    /// `nanosleep`): each wake-up is one cycle, planned one period after the
    /// clock read before its sleep, and nothing is ever skipped.
    Relative,
}

impl Timing {
    /// The timing of `m`, from the mechanism table.
    pub fn of(m: Mechanism) -> Timing {
        let info = m.info();
        if info.relative {
            Timing::Relative
        } else if info.kernel_grid {
            Timing::KernelGrid
        } else {
            Timing::Absolute
        }
    }
}

/// The deadlines `first + k·period`, and the loop's position on them.
#[derive(Clone, Debug)]
pub struct Grid {
    period: Nanos,
    policy: OverrunPolicy,
    timing: Timing,
    next: Time,
    cycle: u64,
    pending_missed: u64,
    last_wake: Option<Time>,
    waited: bool,
}

impl Grid {
    /// A grid whose cycle 0 is at `first`.
    ///
    /// # Panics
    ///
    /// If `period` is not positive. Its users keep periods within
    /// (0, [`MAX_SPAN`](crate::time::MAX_SPAN)] and deadlines within
    /// `MAX_SPAN` of the clock's time, so its arithmetic cannot overflow.
    pub fn new(first: Time, period: Nanos, policy: OverrunPolicy, timing: Timing) -> Grid {
        assert!(period > Nanos::ZERO, "a grid needs a positive period");
        Grid { period, policy, timing, next: first, cycle: 0, pending_missed: 0, last_wake: None, waited: false }
    }

    /// The next deadline to wait for.
    #[inline]
    pub fn next(&self) -> Time {
        self.next
    }

    /// The cycle index of the next deadline.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// The period.
    pub fn period(&self) -> Nanos {
        self.period
    }

    /// The overrun policy.
    pub fn policy(&self) -> OverrunPolicy {
        self.policy
    }

    /// The policy applied: interval timers cannot catch up, the kernel merges their expirations.
    fn effective_policy(&self) -> OverrunPolicy {
        match (self.timing, self.policy) {
            (Timing::KernelGrid, OverrunPolicy::CatchUp) => OverrunPolicy::Skip,
            (_, p) => p,
        }
    }

    /// Time since the previous wake-up (one period before the first): what
    /// a clock-step check compares the clock's drift with.
    #[inline]
    pub fn since_last(&self, actual: Time) -> Nanos {
        self.last_wake.map_or(self.period, |p| actual - p)
    }

    /// The next deadline and the number of periods from `wake.planned` to it.
    #[inline]
    fn following(&self, wake: &Wake, policy: OverrunPolicy) -> (Time, u64, bool) {
        let step = next_deadline(policy, wake.planned, self.period, wake.actual);
        if self.timing == Timing::Relative {
            // The next sleep starts about now and plans one period later.
            return (wake.actual + self.period, 1, step.overrun);
        }
        let next = wake.kernel_next.unwrap_or(step.next);
        let periods = ((next - wake.planned).as_ns() / self.period.as_ns()).max(1) as u64;
        (next, periods, step.overrun)
    }

    /// Records a wake-up and moves to the next deadline.
    #[inline]
    pub fn advance(&mut self, wake: Wake) -> Advance {
        let (next, periods, overrun) = self.following(&wake, self.effective_policy());
        let tick = self.tick(&wake, Nanos::ZERO);
        let period_deviation = self.last_wake.map(|p| wake.actual - p - self.period);
        self.move_to(next, periods, Some(wake.actual));
        Advance { tick, overrun, skipped: periods - 1, period_deviation }
    }

    /// Records the wake-up that saw the clock stepped by `jump`: on to the
    /// first deadline of the grid after it, nothing counted.
    #[cold]
    pub fn stepped(&mut self, wake: Wake, jump: Nanos) -> Advance {
        let (next, periods, _) = self.following(&wake, OverrunPolicy::Skip);
        let tick = self.tick(&wake, jump);
        self.move_to(next, periods, None);
        // The periods stepped over are not missed: the next tick says 0.
        self.pending_missed = 0;
        Advance { tick, overrun: false, skipped: 0, period_deviation: None }
    }

    /// The tick of `wake` at the current cycle.
    #[inline]
    fn tick(&self, wake: &Wake, clock_step: Nanos) -> Tick {
        Tick {
            cycle: self.cycle,
            deadline: wake.planned,
            woke: wake.actual,
            latency: wake.actual - wake.planned,
            missed: self.pending_missed,
            clock_step,
        }
    }

    #[inline]
    fn move_to(&mut self, next: Time, periods: u64, woke: Option<Time>) {
        self.cycle += periods;
        self.pending_missed = periods - 1;
        self.next = next;
        // Neither the period across a step nor the time since one means anything.
        self.last_wake = woke;
        self.waited = true;
    }

    /// Changes the period: the next deadline becomes the last one plus `p`
    /// (before the first wait, the first deadline stays where it is).
    ///
    /// # Panics
    ///
    /// If `p` is not positive.
    pub fn set_period(&mut self, p: Nanos) {
        assert!(p > Nanos::ZERO, "a grid needs a positive period");
        if self.waited {
            self.next = self.next - self.period + p;
        }
        self.period = p;
    }

    /// Moves every following deadline by `by` (negative: earlier), keeping
    /// their spacing.
    pub fn shift(&mut self, by: Nanos) {
        self.next += by;
    }

    /// Resumes the loop after a pause (`rtick measure` interleaves
    /// mechanisms in slices): the next deadline becomes the first of the
    /// same grid at least one period after `now`, with its cycle index; the
    /// deadlines of the pause are neither waited for nor counted missed.
    pub fn resume(&mut self, now: Time) {
        let soonest = now + self.period;
        if soonest > self.next {
            let behind = (soonest - self.next).as_ns();
            let k = behind.div_euclid(self.period.as_ns()) + i64::from(behind.rem_euclid(self.period.as_ns()) != 0);
            self.next += self.period * k;
            self.cycle += k as u64;
        }
        self.pending_missed = 0;
        self.last_wake = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Nanos = Nanos(1000);

    fn wake(planned: i64, actual: i64) -> Wake {
        Wake { planned: Time(planned), actual: Time(actual), kernel_next: None }
    }

    /// Feeds wake-ups `latency` ns after each deadline the grid asks for.
    fn run(g: &mut Grid, latencies: &[i64]) -> Vec<Advance> {
        latencies.iter().map(|&l| g.advance(wake(g.next().as_ns(), g.next().as_ns() + l))).collect()
    }

    #[test]
    fn on_time_wake_ups_walk_the_grid() {
        // |d0 |d1 |d2 |d3   woke 10, 999, 0, 1000 ns after each: all within a period.
        let mut g = Grid::new(Time(5000), P, OverrunPolicy::Skip, Timing::Absolute);
        let a = run(&mut g, &[10, 999, 0, 1000]);
        let cycles: Vec<u64> = a.iter().map(|a| a.tick.cycle).collect();
        assert_eq!(cycles, [0, 1, 2, 3]);
        let deadlines: Vec<i64> = a.iter().map(|a| a.tick.deadline.as_ns()).collect();
        assert_eq!(deadlines, [5000, 6000, 7000, 8000]);
        let dev: Vec<Option<i64>> = a.iter().map(|a| a.period_deviation.map(|d| d.as_ns())).collect();
        assert_eq!(dev, [None, Some(989), Some(-999), Some(1000)]);
        assert!(a.iter().all(|a| !a.overrun && a.skipped == 0 && a.tick.missed == 0));
        assert_eq!((g.next(), g.cycle()), (Time(9000), 4));
    }

    #[test]
    fn skip_jumps_and_reports_the_missed_periods_on_the_next_tick() {
        // |d0 |d1 ·········· |d2 |d3 |d4
        //      ^ woke 2.5 periods late (after d3's time): d2, d3 skipped; next is d4.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::Skip, Timing::Absolute);
        let a = run(&mut g, &[0, 2500, 0]);
        assert_eq!((a[1].tick.cycle, a[1].overrun, a[1].skipped, a[1].tick.missed), (1, true, 2, 0));
        assert_eq!((a[2].tick.cycle, a[2].tick.deadline, a[2].tick.missed), (4, Time(4000), 2));
        assert_eq!(a[2].period_deviation, Some(Nanos(-500)));
    }

    #[test]
    fn fail_moves_like_skip() {
        let mut g = Grid::new(Time(0), P, OverrunPolicy::Fail, Timing::Absolute);
        let a = run(&mut g, &[0, 2500, 0]);
        assert_eq!((a[1].overrun, a[1].skipped, a[2].tick.cycle), (true, 2, 4));
    }

    #[test]
    fn catch_up_serves_every_deadline() {
        // |d0 |d1 |d2 |d3    woke at 2500 for d0: d1 (1500 late), d2 (500 late), d3 on time.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::CatchUp, Timing::Absolute);
        let mut lat = vec![];
        for _ in 0..4 {
            let d = g.next().as_ns();
            let a = g.advance(wake(d, d.max(2500)));
            lat.push((a.tick.cycle, a.tick.latency.as_ns(), a.overrun));
        }
        assert_eq!(lat, [(0, 2500, true), (1, 1500, true), (2, 500, false), (3, 0, false)]);
    }

    #[test]
    fn the_kernel_grid_decides_and_never_catches_up() {
        // A timer that merged two expirations reports its next one at d3.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::CatchUp, Timing::KernelGrid);
        g.advance(wake(0, 10));
        let a = g.advance(Wake { planned: Time(1000), actual: Time(3100), kernel_next: Some(Time(4000)) });
        assert_eq!((a.overrun, a.skipped, g.next(), g.cycle()), (true, 2, Time(4000), 4));
        // Without a report from the kernel, catch-up is still skip.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::CatchUp, Timing::KernelGrid);
        let a = g.advance(wake(0, 2500));
        assert_eq!((a.skipped, g.next()), (2, Time(3000)));
    }

    #[test]
    fn relative_wake_ups_are_one_cycle_each() {
        // A relative sleep planned at 1000 woke at 3700: an overrun, but one cycle; the
        // next sleep plans from about now.
        let mut g = Grid::new(Time(1000), P, OverrunPolicy::Skip, Timing::Relative);
        let a = g.advance(wake(1000, 3700));
        assert_eq!((a.tick.cycle, a.overrun, a.skipped, g.cycle(), g.next()), (0, true, 0, 1, Time(4700)));
    }

    #[test]
    fn a_clock_step_keeps_the_grid_and_counts_nothing() {
        // |d0 |d1 |d2 ······ step +3400 ······ |d6: the wake-up for d2 reads 5400.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::Fail, Timing::Absolute);
        run(&mut g, &[0, 0]);
        let s = g.stepped(wake(2000, 5400), Nanos(3400));
        assert_eq!(
            (s.tick.cycle, s.tick.clock_step, s.overrun, s.skipped, s.period_deviation),
            (2, Nanos(3400), false, 0, None)
        );
        assert!(s.stepped());
        let a = run(&mut g, &[7]);
        assert_eq!(
            (a[0].tick.cycle, a[0].tick.deadline, a[0].tick.missed, a[0].period_deviation),
            (6, Time(6000), 0, None)
        );
        // Backwards: the kernel held the wait; on with the next grid point.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::Skip, Timing::Absolute);
        g.stepped(wake(0, 20), Nanos(-5000));
        assert_eq!((g.cycle(), g.next()), (1, Time(1000)));
    }

    #[test]
    fn set_period_and_shift_move_the_following_deadlines() {
        // |d0 (waited) then period 500: d1' = 500; shift −3: 497, then 997.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::Skip, Timing::Absolute);
        g.set_period(Nanos(2000));
        assert_eq!(g.next(), Time(0), "before any wait the first deadline stays");
        g.set_period(P);
        run(&mut g, &[0]);
        g.set_period(Nanos(500));
        assert_eq!(g.next(), Time(500));
        g.shift(Nanos(-3));
        run(&mut g, &[0]);
        assert_eq!(g.next(), Time(997));
        let a = run(&mut g, &[0]);
        assert_eq!((a[0].tick.deadline, a[0].period_deviation), (Time(997), Some(Nanos(0))));
    }

    #[test]
    fn resume_rejoins_the_same_grid() {
        // Paused at d3 (next); resumed at 7200: the first grid point ≥ 8200 is d9.
        let mut g = Grid::new(Time(0), P, OverrunPolicy::Skip, Timing::Absolute);
        run(&mut g, &[0, 0, 0]);
        g.resume(Time(7200));
        assert_eq!((g.next(), g.cycle()), (Time(9000), 9));
        let a = run(&mut g, &[5]);
        assert_eq!((a[0].tick.missed, a[0].period_deviation), (0, None));
        // Exactly on a grid point one period ahead: that point.
        g.resume(Time(9000));
        assert_eq!((g.next(), g.cycle()), (Time(10000), 10));
    }
}

//! The one loop: a [`Grid`] and a [`Waiter`], plus the clock-step watch.
//!
//! [`super::Periodic`] is a ticker with telemetry; `rtick measure` drives a
//! ticker per mechanism and does its statistics, trace rows and progress
//! with each [`Advance`]. The interval reaches the waiter only through
//! `arm`, so a period change reaches every mechanism.

use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::schedule::{Advance, Grid, OverrunPolicy, Timing};
use crate::time::{Nanos, Time, MAX_SPAN, MAX_SPAN_TEXT};
use crate::wait::{Mechanism, StepWatch, Waiter};

/// A grid, the waiter that waits for its deadlines, and (on clocks that can
/// be set) the watch that tells a step of the clock from a late wake-up.
pub(crate) struct Ticker {
    grid: Grid,
    waiter: Box<dyn Waiter>,
    mechanism: Mechanism,
    watch_steps: bool,
    steps: Option<StepWatch>,
    /// Cycle 0's deadline, once started.
    origin: Option<Time>,
}

impl Ticker {
    /// A ticker for `waiter`, not yet armed: [`Ticker::start_at`] or [`Ticker::resume`] arms it.
    pub(crate) fn new(
        waiter: Box<dyn Waiter>,
        mechanism: Mechanism,
        clock: ClockId,
        period: Nanos,
        policy: OverrunPolicy,
    ) -> Ticker {
        Ticker {
            grid: Grid::new(Time(0), period, policy, Timing::of(mechanism)),
            waiter,
            mechanism,
            watch_steps: clock.can_step(),
            steps: None,
            origin: None,
        }
    }

    /// Starts the grid with cycle 0 at `first` (at most [`MAX_SPAN`] from
    /// now) and arms the waiter.
    pub(crate) fn start_at(&mut self, first: Time) -> Result<()> {
        self.check_reachable("the first deadline", first)?;
        let timing = Timing::of(self.mechanism);
        self.grid = Grid::new(first, self.grid.period(), self.grid.policy(), timing);
        self.origin = Some(first);
        self.arm()?;
        self.start_watch();
        Ok(())
    }

    /// A deadline further than [`MAX_SPAN`] from now is refused: the grid's
    /// arithmetic stays far from overflow.
    fn check_reachable(&self, what: &str, t: Time) -> Result<()> {
        match t.checked_since(self.waiter.now()) {
            Some(d) if d.within_max_span() => Ok(()),
            _ => Err(Error::Invalid(format!("{what} is more than {MAX_SPAN_TEXT} away from now"))),
        }
    }

    /// Starts (one period from now) or, after [`Ticker::pause`], resumes on
    /// the same grid at its first deadline at least one period from now.
    /// Returns that deadline.
    pub(crate) fn resume(&mut self) -> Result<Time> {
        let now = self.waiter.now();
        match self.origin {
            None => self.start_at(now + self.grid.period())?,
            Some(_) => {
                self.grid.resume(now);
                self.arm()?;
                self.start_watch();
            }
        }
        Ok(self.grid.next())
    }

    /// Stops the waiter's timer and drops pending expirations.
    pub(crate) fn pause(&mut self) -> Result<()> {
        self.waiter.disarm()
    }

    fn arm(&mut self) -> Result<()> {
        self.waiter.arm(self.grid.next(), self.grid.period())
    }

    /// (Re)reads the clock's offset to CLOCK_MONOTONIC as the loop (re)starts.
    /// Not on a change of period or a shift: a step during the cycle's work
    /// would be absorbed and show as lateness.
    fn start_watch(&mut self) {
        self.steps = self.watch_steps.then(|| StepWatch::new(&*self.waiter));
    }

    /// Waits for the next deadline and advances the grid. Allocates
    /// nothing; the only system call is the wait.
    #[inline]
    pub(crate) fn tick(&mut self) -> Result<Advance> {
        let wake = self.waiter.wait(self.grid.next())?;
        if self.steps.is_some() {
            if let Some(a) = self.watch(wake) {
                return Ok(a);
            }
        }
        Ok(self.grid.advance(wake))
    }

    /// On a settable clock: the advance of a wake-up that saw a step, if it
    /// did. Out of line, so that the loop on CLOCK_MONOTONIC does not pay for it.
    #[inline(never)]
    fn watch(&mut self, wake: crate::wait::Wake) -> Option<Advance> {
        let since = self.grid.since_last(wake.actual);
        let jump = self.steps.as_mut()?.check(&*self.waiter, wake.actual, since)?;
        Some(self.grid.stepped(wake, jump))
    }

    /// Changes the period from the last deadline on, and re-arms the waiter
    /// with it. On failure (a period the mechanism cannot keep) the loop
    /// stays on its old grid, armed.
    pub(crate) fn set_period(&mut self, p: Nanos) -> Result<()> {
        if p <= Nanos::ZERO || p > MAX_SPAN {
            return Err(Error::Invalid(format!("the period must be greater than zero and at most {MAX_SPAN_TEXT}")));
        }
        self.change(|g| g.set_period(p))
    }

    /// Moves every following deadline by `by`, and re-arms the waiter.
    /// Mechanisms without a grid of their own to move refuse it: relative
    /// sleeps (each sleeps one period from when it is called) and
    /// sched-deadline (the kernel keeps its grid out of sight).
    pub(crate) fn shift(&mut self, by: Nanos) -> Result<()> {
        let info = self.mechanism.info();
        if info.relative || info.estimated_grid {
            return Err(Error::Invalid(format!(
                "{} has no deadlines of its own to shift ({}); use an absolute mechanism such as clock_nanosleep",
                info.name,
                if info.relative {
                    "each sleep is one period from when it is called"
                } else {
                    "the kernel keeps its grid"
                }
            )));
        }
        let next = self.grid.next().checked_add(by).filter(|_| by.within_max_span());
        self.check_reachable("the shifted deadline", next.unwrap_or(Time(i64::MAX)))?;
        self.change(|g| g.shift(by))
    }

    /// Applies a change to the grid and re-arms the waiter on it; if the
    /// waiter refuses it, back to the old grid, re-armed.
    fn change(&mut self, f: impl FnOnce(&mut Grid)) -> Result<()> {
        let before = self.grid.clone();
        f(&mut self.grid);
        if let Err(e) = self.rearm() {
            self.grid = before;
            // Best effort: the old grid was armed a moment ago.
            let _ = self.rearm();
            return Err(e);
        }
        Ok(())
    }

    /// Interval timers keep the grid in the kernel: stop the old one first.
    fn rearm(&mut self) -> Result<()> {
        if self.origin.is_none() {
            return Ok(());
        }
        if Timing::of(self.mechanism) == Timing::KernelGrid {
            self.waiter.disarm()?;
        }
        self.arm()
    }

    /// The mechanism.
    pub(crate) fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The grid.
    pub(crate) fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The waiter.
    pub(crate) fn waiter(&self) -> &dyn Waiter {
        &*self.waiter
    }

    /// Cycle 0's deadline, once started.
    pub(crate) fn origin(&self) -> Option<Time> {
        self.origin
    }
}

impl Drop for Ticker {
    /// Stops the waiter's timer and undoes what arming did (sched-deadline
    /// leaves SCHED_DEADLINE; pending timer signals are drained), so nothing
    /// of the loop outlives it.
    fn drop(&mut self) {
        if self.origin.is_some() {
            let _ = self.waiter.disarm();
        }
    }
}

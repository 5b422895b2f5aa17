//! The isochronous loop applications embed: the very loop `rtick measure`
//! measures, with real-time setup, overrun handling, a period that can be
//! adjusted while it runs, and telemetry readable from other threads.
//!
//! ```no_run
//! use rtick::periodic::{Periodic, Start};
//! use rtick::rt::{Policy, Setup};
//! use rtick::{Mechanism, Nanos, OverrunPolicy};
//!
//! let mut lp = Periodic::builder()
//!     .period(Nanos::from_ms(1))
//!     .mechanism(Mechanism::ClockNanosleep)
//!     .start(Start::Aligned)
//!     .overrun(OverrunPolicy::Skip)
//!     .setup(Setup::new().policy(Policy::Fifo, 80).lock_memory(8 << 20, 256 << 10))
//!     .build()?;
//! let telemetry = lp.telemetry(); // read it from another thread
//! for _ in 0..1000 {
//!     let tick = lp.wait()?;
//!     // … the cycle's work, deadline tick.deadline …
//! }
//! println!("p99 latency {} ns", telemetry.snapshot().latency.percentiles[2]);
//! # Ok::<(), rtick::Error>(())
//! ```
//!
//! ## Overruns
//!
//! A wake-up later than the *following* deadline is an overrun:
//!
//! ```text
//! grid:        |d0       |d1       |d2       |d3       |d4
//! woke:          ^w0                      ^w1 (late for d1, past d2)
//!
//! Skip:        the next wait is for d3; d2 is missed (Tick::missed = 1 on the next tick)
//! CatchUp:     the next wait is for d2 (returns at once), then d3
//! Fail:        as Skip, and wait() returns Error::Overrun for w1
//! ```
//!
//! ## Adjusting the period
//!
//! [`Periodic::set_period`] changes the interval from the last deadline on;
//! [`Periodic::shift`] moves every following deadline by ±n ns, keeping
//! their spacing; [`Periodic::sync_to`] runs a PI controller on a reference
//! clock's reading and shifts by a bounded amount each cycle (EtherCAT
//! distributed clocks).

mod sync;
mod telemetry;
pub(crate) mod ticker;

use std::sync::Arc;

pub use crate::schedule::Tick;
pub use sync::{PiController, SyncConfig};
pub use telemetry::{SeriesSummary, Snapshot, Telemetry};

use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::rt::{Setup, SetupGuard};
use crate::schedule::OverrunPolicy;
use crate::time::{Nanos, Time};
use crate::wait::{self, HybridSlack, Mechanism, WaitConfig, WaiterSource};
use ticker::Ticker;

/// When the first deadline falls. Relative sleeps (each one period from
/// when it is called) and sched-deadline (the kernel's own grid) start one
/// period from the first wait whatever is asked.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Start {
    /// One period from now.
    #[default]
    Now,
    /// The next multiple of the period on the clock: loops in different
    /// processes with the same period wake together.
    Aligned,
    /// At this absolute time on the loop's clock.
    At(Time),
}

/// Builds a [`Periodic`].
///
/// ```no_run
/// use rtick::periodic::Periodic;
/// use rtick::{ClockId, Mechanism, Nanos};
///
/// let lp = Periodic::builder()
///     .period(Nanos::from_us(500))
///     .clock(ClockId::Monotonic)
///     .mechanism(Mechanism::Hybrid)
///     .build()?;
/// # Ok::<(), rtick::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct PeriodicBuilder {
    period: Option<Nanos>,
    clock: ClockId,
    start: Start,
    mechanism: Option<Mechanism>,
    overrun: OverrunPolicy,
    setup: Option<Setup>,
    sync: SyncConfig,
    hybrid_slack: HybridSlack,
    waiters: Option<Arc<dyn WaiterSource>>,
}

impl PeriodicBuilder {
    /// The period (required, > 0).
    pub fn period(mut self, p: Nanos) -> Self {
        self.period = Some(p);
        self
    }
    /// The clock of the deadlines (default CLOCK_MONOTONIC).
    ///
    /// CLOCK_REALTIME and CLOCK_TAI step when the time is set. The loop then
    /// reads CLOCK_MONOTONIC too at each wake-up (vDSO, no system call) to
    /// tell a step from slewing, and reports it in [`Tick::clock_step`]:
    /// after a step forward it goes on with the next deadline of its grid in
    /// the new time, without counting the periods stepped over as missed.
    /// A step back cannot be seen during the wait: the kernel holds it until
    /// the clock reaches the deadline again. Choose these clocks only when
    /// deadlines must fall on wall-clock time, on a machine whose time is
    /// slewed (NTP/PTP), not set.
    pub fn clock(mut self, c: ClockId) -> Self {
        self.clock = c;
        self
    }
    /// When the first deadline falls (default: one period from now).
    pub fn start(mut self, s: Start) -> Self {
        self.start = s;
        self
    }
    /// How to wait (default `clock_nanosleep`).
    pub fn mechanism(mut self, m: Mechanism) -> Self {
        self.mechanism = Some(m);
        self
    }
    /// What to do after an overrun (default skip).
    pub fn overrun(mut self, o: OverrunPolicy) -> Self {
        self.overrun = o;
        self
    }
    /// Real-time setup applied by `build` in the calling thread and undone
    /// when the loop is dropped.
    pub fn setup(mut self, s: Setup) -> Self {
        self.setup = Some(s);
        self
    }
    /// Settings of [`Periodic::sync_to`].
    pub fn sync(mut self, s: SyncConfig) -> Self {
        self.sync = s;
        self
    }
    /// The hybrid mechanism's slack (default auto).
    pub fn hybrid_slack(mut self, s: HybridSlack) -> Self {
        self.hybrid_slack = s;
        self
    }
    /// Waiters in place of the library's own (a test's scripted waiter,
    /// `rtick::testing`).
    pub fn waiters(mut self, source: Arc<dyn WaiterSource>) -> Self {
        self.waiters = Some(source);
        self
    }

    /// Applies the setup, builds the waiter in the calling thread, and arms
    /// the first deadline.
    pub fn build(self) -> Result<Periodic> {
        let period = self.period.ok_or_else(|| Error::Invalid("a periodic loop needs a period".into()))?;
        if period <= Nanos::ZERO {
            return Err(Error::Invalid("the period must be greater than zero".into()));
        }
        if period > crate::time::MAX_SPAN {
            return Err(Error::Invalid(format!("the period must be at most {}", crate::time::MAX_SPAN_TEXT)));
        }
        if self.sync.max_step < Nanos::ZERO || !self.sync.kp.is_finite() || !self.sync.ki.is_finite() {
            return Err(Error::Invalid("sync gains must be finite and max_step not negative".into()));
        }
        let guard = self.setup.as_ref().map(Setup::apply).transpose()?;
        let mechanism = self.mechanism.unwrap_or(Mechanism::ClockNanosleep);
        let waiter = wait::build(
            mechanism,
            &WaitConfig { clock: self.clock, hybrid_slack: self.hybrid_slack, waiters: self.waiters },
        )?;
        let now = waiter.now();
        let first = match self.start {
            Start::Now => now + period,
            Start::Aligned => Time((now.as_ns().div_euclid(period.as_ns()) + 1) * period.as_ns()),
            Start::At(t) => t,
        };
        let mut ticker = Ticker::new(waiter, mechanism, self.clock, period, self.overrun);
        ticker.start_at(first)?;
        Ok(Periodic {
            ticker,
            last_wake: None,
            telemetry: Arc::new(Telemetry::new()),
            sync: self.sync,
            pi: PiController::default(),
            _guard: guard,
        })
    }
}

/// An absolute-deadline periodic loop: a [`Grid`](crate::schedule::Grid),
/// the mechanism that waits for its deadlines, and telemetry.
///
/// Neither `Send` nor `Sync`: build it in the thread that runs it (POSIX
/// timers signal that thread, and the real-time setup applies to it); share
/// [`Periodic::telemetry`] instead.
pub struct Periodic {
    ticker: Ticker,
    /// The previous wake-up, for the execution time of the cycle's work.
    last_wake: Option<Time>,
    telemetry: Arc<Telemetry>,
    sync: SyncConfig,
    pi: PiController,
    _guard: Option<SetupGuard>,
}

impl std::fmt::Debug for Periodic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Periodic")
            .field("mechanism", &self.mechanism())
            .field("period", &self.period())
            .field("next", &self.next_deadline())
            .field("cycle", &self.ticker.grid().cycle())
            .finish_non_exhaustive()
    }
}

impl Periodic {
    /// A builder.
    pub fn builder() -> PeriodicBuilder {
        PeriodicBuilder::default()
    }

    /// Waits for the next deadline. Allocates nothing and takes no lock; the
    /// only system call is the wait itself (clock reads go through the vDSO).
    #[inline]
    pub fn wait(&mut self) -> Result<Tick> {
        if let Some(w) = self.last_wake {
            self.telemetry.record_execution((self.ticker.waiter().now() - w).as_ns());
        }
        let a = self.ticker.tick()?;
        let tick = a.tick;
        if a.stepped() {
            // Neither the period across a step nor the time since means anything.
            self.last_wake = None;
            return Ok(tick);
        }
        self.last_wake = Some(tick.woke);
        self.telemetry.record_wake(tick.latency.as_ns(), a.period_deviation.map(Nanos::as_ns), a.overrun, a.skipped);
        if a.overrun && self.ticker.grid().policy() == OverrunPolicy::Fail {
            return Err(Error::Overrun { cycle: tick.cycle, latency_ns: tick.latency.as_ns(), missed: a.skipped });
        }
        Ok(tick)
    }

    /// The period.
    pub fn period(&self) -> Nanos {
        self.ticker.grid().period()
    }

    /// The next deadline.
    pub fn next_deadline(&self) -> Time {
        self.ticker.grid().next()
    }

    /// The mechanism waiting.
    pub fn mechanism(&self) -> Mechanism {
        self.ticker.mechanism()
    }

    /// Changes the period: the next deadline becomes the last one plus `p`
    /// (or stays the first deadline before any wait). The mechanism is
    /// re-armed with the new period, whichever it is.
    pub fn set_period(&mut self, p: Nanos) -> Result<()> {
        self.ticker.set_period(p)
    }

    /// Moves every following deadline by `by` (negative: earlier), keeping
    /// their spacing.
    pub fn shift(&mut self, by: Nanos) -> Result<()> {
        self.ticker.shift(by)
    }

    /// Feeds the reference clock's reading at the last deadline to the PI
    /// controller and shifts the following deadlines by its bounded answer,
    /// which is returned.
    pub fn sync_to(&mut self, reference: Time) -> Result<Nanos> {
        let c = self.pi.update(reference.as_ns(), &self.sync, self.period());
        if c != Nanos::ZERO {
            self.shift(c)?;
        }
        Ok(c)
    }

    /// The phase error of the last [`Periodic::sync_to`].
    pub fn phase_error(&self) -> Nanos {
        self.pi.last_error()
    }

    /// The loop's telemetry, readable from any thread.
    pub fn telemetry(&self) -> Arc<Telemetry> {
        Arc::clone(&self.telemetry)
    }
}

#[cfg(test)]
mod tests;

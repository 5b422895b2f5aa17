//! Wait mechanisms: every way a Linux thread can wait for a deadline.
//!
//! A [`Waiter`] is built in the thread that will use it (POSIX timers are
//! aimed at that thread; the hybrid calibrates under that thread's policy),
//! armed once with the grid, then asked to wait for each deadline.

mod deadline;
mod fd;
mod futex;
mod handler;
pub mod kind;
mod signal;
mod sleep;
mod spin;
mod step;
mod timeout;

pub use kind::{KindInfo, Mechanism, KINDS};
pub use spin::Calibration;
pub(crate) use step::StepWatch;

use std::fmt;
use std::sync::Arc;

use crate::clock::ClockId;
use crate::error::Result;
use crate::time::{Nanos, Time};

/// One wake-up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Wake {
    /// When the wake-up was planned. For absolute mechanisms the deadline
    /// waited for; for relative ones the time read before the sleep plus the
    /// interval, as cyclictest -r computes it.
    pub planned: Time,
    /// When the thread ran again (clock read right after the wait returned).
    pub actual: Time,
    /// For mechanisms whose grid the kernel keeps: the deadline of the next
    /// expiry the kernel will deliver, which accounts for expirations it merged.
    pub kernel_next: Option<Time>,
}

/// A way to wait. Implementations make no allocation and take no lock in
/// [`Waiter::wait`], and no system call but the wait itself and clock reads.
pub trait Waiter {
    /// Reads the clock this waiter measures against.
    fn now(&self) -> Time;

    /// Sets up the periodic grid `first + k·interval`: the only way the
    /// interval reaches a waiter, so that a change of period reaches every
    /// mechanism. Interval timers arm the kernel here; relative sleeps take
    /// their length and `hybrid` its slack cap from `interval`. Called again
    /// whenever the grid changes.
    fn arm(&mut self, _first: Time, _interval: Nanos) -> Result<()> {
        Ok(())
    }

    /// A reading of CLOCK_MONOTONIC taken now, against which a step of the
    /// waiter's own clock (CLOCK_REALTIME, CLOCK_TAI) shows as a jump in the
    /// offset between the two.
    fn reference_now(&self) -> Time {
        ClockId::Monotonic.now()
    }

    /// Stops whatever `arm` started and drops pending expirations, so that
    /// the next `arm` starts clean (between interleaved slices).
    fn disarm(&mut self) -> Result<()> {
        Ok(())
    }

    /// Waits for `deadline` and reports the wake-up.
    fn wait(&mut self, deadline: Time) -> Result<Wake>;

    /// For `hybrid`: the slack in use.
    fn slack(&self) -> Option<Nanos> {
        None
    }

    /// For `hybrid --hybrid-slack auto`: how the slack was calibrated.
    fn calibration(&self) -> Option<Calibration> {
        None
    }
}

/// How `hybrid` chooses its slack.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum HybridSlack {
    /// Calibrated at start from the measured sleep overshoot.
    #[default]
    Auto,
    /// A fixed slack.
    Fixed(Nanos),
}

/// What a waiter is built from.
#[derive(Clone, Debug)]
pub struct WaitConfig {
    /// The clock deadlines are on.
    pub clock: ClockId,
    /// The hybrid's slack.
    pub hybrid_slack: HybridSlack,
    /// Waiters supplied in place of the built-in ones (tests inject a
    /// scripted waiter this way, see `rtick::testing`).
    pub waiters: Option<Arc<dyn WaiterSource>>,
}

/// Supplies waiters in place of the library's own: how a test injects a
/// [`Waiter`] into a run or a loop. A run builds its waiters in each
/// measuring thread, so this is a factory.
pub trait WaiterSource: Send + Sync + fmt::Debug {
    /// The waiter for `mechanism`, built in the calling thread; `None`
    /// leaves it to the library.
    fn waiter(&self, mechanism: Mechanism, cfg: &WaitConfig) -> Option<Result<Box<dyn Waiter>>>;
}

/// Builds `mechanism` for the calling thread: the waiter source's, else the
/// library's own. It waits for nothing until [`Waiter::arm`] gives it the grid.
pub fn build(mechanism: Mechanism, cfg: &WaitConfig) -> Result<Box<dyn Waiter>> {
    match cfg.waiters.as_ref().and_then(|w| w.waiter(mechanism, cfg)) {
        Some(supplied) => supplied,
        None => build_own(mechanism, cfg),
    }
}

/// The library's own waiter for `mechanism`.
fn build_own(mechanism: Mechanism, cfg: &WaitConfig) -> Result<Box<dyn Waiter>> {
    Ok(match mechanism {
        Mechanism::ClockNanosleep => Box::new(sleep::AbsoluteSleep::new(cfg.clock)),
        Mechanism::ClockNanosleepRel => Box::new(sleep::RelativeSleep::clock_nanosleep(cfg.clock)),
        Mechanism::Nanosleep => Box::new(sleep::RelativeSleep::nanosleep(cfg.clock)),
        Mechanism::PosixTimer => Box::new(signal::PosixTimerWait::new(cfg.clock)?),
        Mechanism::Itimer => Box::new(signal::ItimerWait::new(cfg.clock)?),
        Mechanism::Spin => Box::new(spin::Spin::new(cfg.clock)),
        Mechanism::Hybrid => Box::new(spin::Hybrid::new(cfg.clock, cfg.hybrid_slack)?),
        Mechanism::Timerfd => Box::new(fd::TimerfdWait::new(cfg.clock, false)?),
        Mechanism::TimerfdEpoll => Box::new(fd::TimerfdWait::new(cfg.clock, true)?),
        Mechanism::Ppoll => Box::new(timeout::TimeoutWait::new(cfg.clock, timeout::Call::Ppoll)?),
        Mechanism::Pselect => Box::new(timeout::TimeoutWait::new(cfg.clock, timeout::Call::Pselect)?),
        Mechanism::EpollPwait2 => Box::new(timeout::TimeoutWait::epoll_pwait2(cfg.clock)?),
        Mechanism::Futex => Box::new(futex::FutexWait::new(cfg.clock)?),
        Mechanism::Condvar => Box::new(futex::CondvarWait::new(cfg.clock)?),
        Mechanism::Usleep => Box::new(timeout::TimeoutWait::new(cfg.clock, timeout::Call::Usleep)?),
        Mechanism::StdSleep => Box::new(timeout::TimeoutWait::new(cfg.clock, timeout::Call::StdSleep)?),
        Mechanism::PosixTimerHandler => Box::new(handler::HandlerTimerWait::new(cfg.clock)?),
        Mechanism::SchedDeadline => Box::new(deadline::DeadlineWait::new(cfg.clock)?),
        other => return Err(no_waiter_of_its_own(other)),
    })
}

/// The error for a mechanism the library has no waiter of its own for (a
/// test mechanism) when none is supplied.
pub(crate) fn no_waiter_of_its_own(m: Mechanism) -> crate::Error {
    crate::Error::Invalid(format!("{m} has no waiter of the library's own: supply one (WaiterSource)"))
}

/// The signals the signal-based mechanisms wait for. Block them with
/// [`block_timer_signals`] in the main thread before spawning any thread.
pub fn timer_signals() -> [libc::c_int; 5] {
    [
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        crate::sys::signal::timer_signal(),
        crate::sys::signal::handler_signal(),
    ]
}

/// Blocks the timer signals in the calling thread and every thread it spawns
/// afterwards, so that `sigwaitinfo` in a measuring thread receives them.
pub fn block_timer_signals() -> Result<()> {
    crate::sys::signal::block(&timer_signals())
        .map(|_| ())
        .map_err(|e| crate::Error::sys("pthread_sigmask(SIG_BLOCK)", e, ""))
}

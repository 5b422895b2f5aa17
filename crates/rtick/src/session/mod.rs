//! What a measuring run takes from the system, and gives back: the
//! scheduling policy (probed in a throw-away thread, with its fallback),
//! locked memory, `/dev/cpu_dma_latency` and the deepest idle state allowed.
//! Timer slack is the measuring threads' own ([`crate::rt::ThreadSetup`]).
//!
//! Two steps, so that the caller can do its own work between them (open
//! its output, start its collector): [`settle`] changes the configuration
//! only; [`Session::take`] changes the system, and dropping the session (or
//! [`Session::restore`], which reports what failed) puts it back. What fell
//! back is returned as [`Fallback`]s, for the caller to tell.

use crate::error::{Error, Result};
use crate::measure::MeasureConfig;
use crate::rt::{self, DmaLatency, IdleLimit, IdleStates, MemoryLock, Policy, DEFAULT_HEAP_PREFAULT};
use crate::system::SystemInfo;
use crate::time::Nanos;

/// A setting the run could not take and measures without, because it was
/// not asked for explicitly.
#[derive(Debug)]
pub enum Fallback {
    /// The real-time policy was refused: the threads measure as SCHED_OTHER.
    Policy {
        /// The policy asked for.
        policy: Policy,
        /// Its priority.
        priority: i32,
        /// Why it was refused.
        error: Error,
    },
    /// Memory could not be locked: the run measures without.
    Unlocked(Error),
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fallback::Policy { policy, priority, error } => write!(
                f,
                "cannot use {policy} {priority} ({error}); measuring as SCHED_OTHER, whose wake-ups are far later"
            ),
            Fallback::Unlocked(e) => {
                write!(f, "{e}; measuring without locked memory (page faults may show as latency)")
            }
        }
    }
}

/// Settles `cfg` before anything on the system changes: probes its
/// real-time policy, falling back to SCHED_OTHER (said in the returned
/// [`Fallback`]) only when the policy was not asked for explicitly; and sets
/// the rest after spinning slices when RT throttling would stop the thread.
pub fn settle(cfg: &mut MeasureConfig, sys: &SystemInfo, policy_explicit: bool) -> Result<Option<Fallback>> {
    let fallback = settle_policy(cfg, policy_explicit)?;
    if let Some(rest) = rest_after_spinning(cfg, sys) {
        cfg.rest_after_spinning = Some(rest);
    }
    Ok(fallback)
}

fn settle_policy(cfg: &mut MeasureConfig, explicit: bool) -> Result<Option<Fallback>> {
    let wanted = cfg.threads[0].clone();
    let Err(error) = rt::probe(&wanted) else { return Ok(None) };
    if !error.is_permission() || explicit {
        return Err(error);
    }
    for t in &mut cfg.threads {
        t.policy = Policy::Other;
        t.priority = 0;
    }
    Ok(Some(Fallback::Policy { policy: wanted.policy, priority: wanted.priority, error }))
}

/// A real-time thread that spins into RT throttling is stopped for the rest
/// of the throttling period: rest that long after its slices so the next
/// mechanism does not inherit the stop.
fn rest_after_spinning(cfg: &MeasureConfig, sys: &SystemInfo) -> Option<(f64, Nanos)> {
    let (true, Some(rt), Some(period)) = (cfg.threads[0].policy.is_realtime(), sys.rt_runtime_us, sys.rt_period_us)
    else {
        return None;
    };
    (sys.rt_throttled() && period > rt).then(|| (rt as f64 / period as f64, Nanos::from_us(period - rt)))
}

/// What a run asks of the system.
#[derive(Debug, Default)]
pub struct Request<'a> {
    /// Lock memory (and prefault the heap) …
    pub mlock: bool,
    /// … and fail rather than measure without it.
    pub mlock_explicit: bool,
    /// Hold `/dev/cpu_dma_latency` at this many µs.
    pub dma_latency: Option<i32>,
    /// Allow no idle state deeper than this one (its index) on these CPUs.
    pub idle: Option<(&'a IdleStates, usize)>,
}

/// The system settings a run holds; dropping it (or [`Session::restore`])
/// puts them back.
#[derive(Debug)]
pub struct Session {
    mem: Option<MemoryLock>,
    /// Held for its Drop, which releases /dev/cpu_dma_latency.
    dma: Option<DmaLatency>,
    idle: Option<IdleLimit>,
    /// The `cpu_dma_latency` held for the run, µs (`None`: not asked for).
    pub dma_asked: Option<i32>,
    /// The system's `cpu_dma_latency` before the run, µs.
    pub dma_system: Option<i32>,
    fallbacks: Vec<Fallback>,
}

/// What [`Session::restore`] could not put back.
#[derive(Debug, Default)]
pub struct Restored {
    /// The idle states, when restoring them failed.
    pub idle: Option<Error>,
}

impl Session {
    /// Takes what `req` asks for; memory left unlocked when that fails and
    /// was not asked for explicitly ([`Session::fallbacks`]).
    pub fn take(req: &Request<'_>) -> Result<Session> {
        let mut fallbacks = Vec::new();
        let mem = match req.mlock.then(|| MemoryLock::lock(DEFAULT_HEAP_PREFAULT)) {
            None => None,
            Some(Ok(m)) => Some(m),
            Some(Err(e)) if !req.mlock_explicit => {
                fallbacks.push(Fallback::Unlocked(e));
                None
            }
            Some(Err(e)) => return Err(e),
        };
        let dma_system = DmaLatency::current().map(|l| l.us());
        let dma = req.dma_latency.map(DmaLatency::hold).transpose()?;
        let idle = req.idle.map(|(s, deepest)| s.limit(deepest)).transpose()?;
        Ok(Session { mem, dma, idle, dma_asked: req.dma_latency, dma_system, fallbacks })
    }

    /// What was not taken, in the order met.
    pub fn fallbacks(&self) -> &[Fallback] {
        &self.fallbacks
    }

    /// The locked memory, if locked.
    pub fn memory(&self) -> Option<&MemoryLock> {
        self.mem.as_ref()
    }

    /// The idle states limited, if any.
    pub fn idle(&self) -> Option<&IdleLimit> {
        self.idle.as_ref()
    }

    /// Gives back the locked memory and `cpu_dma_latency` now, right after
    /// the measurement; the idle states stay limited until [`Session::restore`].
    pub fn release(&mut self) {
        drop(self.mem.take());
        drop(self.dma.take());
    }

    /// Puts everything back, saying what failed.
    pub fn restore(mut self) -> Restored {
        self.release();
        Restored { idle: self.idle.take().map(IdleLimit::restore).and_then(Result::err) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fallbacks' text is what `measure` and `monitor` warn with.
    #[test]
    fn a_fallback_says_what_was_refused_and_what_the_run_does_instead() {
        let refused = Fallback::Policy {
            policy: Policy::Fifo,
            priority: 90,
            error: Error::sys("sched_setscheduler", std::io::Error::from_raw_os_error(libc::EPERM), "run as root"),
        };
        let text = refused.to_string();
        assert!(text.starts_with("cannot use SCHED_FIFO 90 (sched_setscheduler failed: "), "{text}");
        assert!(text.ends_with("run as root); measuring as SCHED_OTHER, whose wake-ups are far later"), "{text}");
        assert_eq!(
            Fallback::Unlocked(Error::Invalid("mlockall failed".into())).to_string(),
            "mlockall failed; measuring without locked memory (page faults may show as latency)"
        );
    }

    /// Rest after spinning only for a real-time thread on a throttled system.
    #[test]
    fn a_real_time_thread_rests_out_the_throttled_part_of_the_period() {
        let mut cfg = MeasureConfig::default();
        cfg.threads[0].policy = Policy::Fifo;
        let mut sys = SystemInfo::read();
        (sys.rt_runtime_us, sys.rt_period_us) = (Some(950_000), Some(1_000_000));
        assert_eq!(rest_after_spinning(&cfg, &sys), Some((0.95, Nanos::from_ms(50))));
        cfg.threads[0].policy = Policy::Other;
        assert_eq!(rest_after_spinning(&cfg, &sys), None);
    }

    /// Nothing asked, nothing taken, nothing to restore.
    #[test]
    fn an_empty_request_takes_nothing() {
        let s = Session::take(&Request::default()).unwrap();
        assert!(s.memory().is_none() && s.idle().is_none() && s.fallbacks().is_empty() && s.dma_asked.is_none());
        assert!(s.restore().idle.is_none());
    }
}

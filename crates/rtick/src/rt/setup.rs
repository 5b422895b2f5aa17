//! Real-time setup for an application thread, undone when the guard drops.

use std::marker::PhantomData;

use crate::error::{Error, Result};
use crate::sys::{deadline, sched};
use crate::time::Nanos;

use super::{
    check_heap_prefault, check_stack_prefault, DmaLatency, MemoryLock, Policy, ThreadSetup, DEFAULT_HEAP_PREFAULT,
};

/// SCHED_DEADLINE parameters: `runtime` of CPU every `period`, finished by
/// `deadline` after the period starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeadlineParams {
    /// CPU time per period.
    pub runtime: Nanos,
    /// Relative deadline (≤ period).
    pub deadline: Nanos,
    /// The period.
    pub period: Nanos,
}

/// What to set up. Build with [`Setup::new`] and the methods below, then
/// [`Setup::apply`] in the thread that will run the loop.
///
/// ```no_run
/// use rtick::rt::{Policy, Setup};
/// use rtick::Nanos;
///
/// let guard = Setup::new()
///     .policy(Policy::Fifo, 80)
///     .affinity(&[1])
///     .lock_memory(8 << 20, 256 << 10)
///     .dma_latency(0)
///     .timer_slack(Nanos(1))
///     .apply()?;
/// // … the real-time loop …
/// drop(guard); // everything is back as it was
/// # Ok::<(), rtick::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Setup {
    policy: Option<(Policy, i32)>,
    deadline: Option<DeadlineParams>,
    cpus: Option<Vec<usize>>,
    lock: Option<(usize, usize)>,
    dma_latency_us: Option<i32>,
    timer_slack: Option<Nanos>,
}

impl Setup {
    /// Nothing to change yet.
    pub fn new() -> Setup {
        Setup::default()
    }
    /// Scheduling policy and priority (1–99 for fifo/rr, 0 otherwise).
    pub fn policy(mut self, policy: Policy, priority: i32) -> Self {
        self.policy = Some((policy, priority));
        self
    }
    /// SCHED_DEADLINE instead of a policy and priority.
    pub fn deadline(mut self, params: DeadlineParams) -> Self {
        self.deadline = Some(params);
        self
    }
    /// Pin the thread to these CPUs.
    pub fn affinity(mut self, cpus: &[usize]) -> Self {
        self.cpus = Some(cpus.to_vec());
        self
    }
    /// `mlockall` and prefault this much heap (0: [`DEFAULT_HEAP_PREFAULT`];
    /// at most half the physical memory) and stack (0: none; at most half of
    /// what is left of the stack of the thread that validates and applies).
    pub fn lock_memory(mut self, heap_prefault: usize, stack_prefault: usize) -> Self {
        self.lock = Some((heap_prefault, stack_prefault));
        self
    }
    /// Hold `/dev/cpu_dma_latency` at this many µs while the guard lives.
    pub fn dma_latency(mut self, us: i32) -> Self {
        self.dma_latency_us = Some(us);
        self
    }
    /// The thread's timer slack.
    pub fn timer_slack(mut self, slack: Nanos) -> Self {
        self.timer_slack = Some(slack);
        self
    }

    /// Checks every value without changing anything. The stack prefault is
    /// checked against the calling thread's stack.
    pub fn validate(&self) -> Result<()> {
        if let Some((policy, priority)) = self.policy {
            ThreadSetup { policy, priority, cpus: self.cpus.clone().unwrap_or_default(), timer_slack: None }
                .validate()?;
        }
        if let Some(cpus) = &self.cpus {
            let allowed = crate::info::allowed_cpus()?;
            if cpus.is_empty() {
                return Err(Error::Invalid("an affinity needs at least one CPU".into()));
            }
            if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
                return Err(Error::Invalid(format!("CPU {c} does not exist or is not allowed to this process")));
            }
        }
        if let Some(d) = self.deadline {
            if !(d.runtime > Nanos::ZERO && d.runtime <= d.deadline && d.deadline <= d.period) {
                return Err(Error::Invalid("SCHED_DEADLINE needs 0 < runtime ≤ deadline ≤ period".into()));
            }
        }
        if let Some((heap, stack)) = self.lock {
            check_heap_prefault(if heap == 0 { DEFAULT_HEAP_PREFAULT } else { heap })?;
            check_stack_prefault(stack)?;
        }
        if matches!(self.timer_slack, Some(s) if s <= Nanos::ZERO) {
            return Err(Error::Invalid("the timer slack must be at least 1 ns".into()));
        }
        if matches!(self.dma_latency_us, Some(us) if us < 0) {
            return Err(Error::Invalid("cpu_dma_latency takes 0 µs or more".into()));
        }
        Ok(())
    }

    /// Applies everything to the calling thread (and the process, for memory
    /// and cpu_dma_latency). On failure, what was already applied is undone.
    pub fn apply(&self) -> Result<SetupGuard> {
        self.validate()?;
        let mut g = SetupGuard {
            policy: sched::scheduler().map_err(|e| Error::sys("sched_getscheduler", e, ""))?,
            cpus: sched::affinity().ok(),
            slack: sched::timer_slack().ok(),
            memory: None,
            dma: None,
            _thread_bound: PhantomData,
        };
        if let Some((heap, stack)) = self.lock {
            g.memory = Some(MemoryLock::lock(if heap == 0 { DEFAULT_HEAP_PREFAULT } else { heap })?);
            super::prefault_stack(stack);
        }
        if let Some(us) = self.dma_latency_us {
            g.dma = Some(DmaLatency::hold(us)?);
        }
        let (policy, priority) =
            self.policy.unwrap_or((Policy::from_raw(g.policy.0).unwrap_or(Policy::Other), g.policy.1));
        let thread = ThreadSetup {
            policy,
            priority,
            cpus: self.cpus.clone().unwrap_or_default(),
            timer_slack: self.timer_slack,
        };
        thread.apply()?;
        if let Some(d) = self.deadline {
            deadline::set_deadline_full(d.runtime, d.deadline, d.period).map_err(|e| {
                Error::sys(
                    "sched_setattr(SCHED_DEADLINE)",
                    e,
                    "needs root or CAP_SYS_NICE, an affinity spanning the root domain, and free deadline bandwidth",
                )
            })?;
        }
        Ok(g)
    }
}

/// Everything [`Setup::apply`] changed; restored on drop.
///
/// Thread-bound: the policy, affinity and timer slack it restores are those
/// of the thread that drops it, so it must be dropped by the thread that
/// applied the setup. It is therefore neither `Send` nor `Sync`:
///
/// ```compile_fail
/// fn assert_send<T: Send>() {}
/// assert_send::<rtick::rt::SetupGuard>();
/// ```
///
/// (The same check compiles for a `Send` type, and the path names the guard:)
///
/// ```
/// fn assert_send<T: Send>() {}
/// assert_send::<rtick::rt::Setup>();
/// let _guard: Option<rtick::rt::SetupGuard> = None;
/// ```
#[derive(Debug)]
pub struct SetupGuard {
    policy: (libc::c_int, libc::c_int),
    cpus: Option<Vec<usize>>,
    slack: Option<Nanos>,
    memory: Option<MemoryLock>,
    dma: Option<DmaLatency>,
    /// A raw pointer is neither `Send` nor `Sync`: keeps the guard in the
    /// thread whose settings it restores.
    _thread_bound: PhantomData<*const ()>,
}

impl Drop for SetupGuard {
    fn drop(&mut self) {
        let _ = sched::set_scheduler(self.policy.0, self.policy.1);
        if let Some(c) = &self.cpus {
            let _ = sched::set_affinity(c);
        }
        if let Some(s) = self.slack {
            let _ = sched::set_timer_slack(s);
        }
        self.dma.take();
        self.memory.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_restores_the_thread() {
        std::thread::spawn(|| {
            let before = (sched::scheduler().unwrap(), sched::affinity().unwrap(), sched::timer_slack().unwrap());
            {
                let _g = Setup::new().affinity(&before.1[..1]).timer_slack(Nanos(1)).apply().unwrap();
                assert_eq!(sched::affinity().unwrap(), before.1[..1].to_vec());
                assert_eq!(sched::timer_slack().unwrap(), Nanos(1));
            }
            assert_eq!(
                (sched::scheduler().unwrap(), sched::affinity().unwrap(), sched::timer_slack().unwrap()),
                before
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn invalid_values_change_nothing() {
        std::thread::spawn(invalid_values_change_nothing_here).join().unwrap();
    }

    fn invalid_values_change_nothing_here() {
        let state = || (sched::scheduler().unwrap(), sched::affinity().unwrap(), sched::timer_slack().unwrap());
        let before = state();
        for s in [
            Setup::new().policy(Policy::Fifo, 0),
            Setup::new().policy(Policy::Rr, 100),
            Setup::new().affinity(&[4096]),
            Setup::new().affinity(&[]),
            Setup::new().timer_slack(Nanos(0)),
            Setup::new().dma_latency(-1),
            Setup::new().lock_memory(usize::MAX, 0),
            Setup::new().lock_memory(0, usize::MAX),
            Setup::new().deadline(DeadlineParams { runtime: Nanos(10), deadline: Nanos(5), period: Nanos(20) }),
        ] {
            assert!(s.apply().is_err(), "{s:?}");
            assert_eq!(state(), before, "{s:?}");
        }
    }
}

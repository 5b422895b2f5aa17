//! The spinners of a run, one per measured CPU, as the main thread holds
//! them: started together, and stopped and joined on every way out of the
//! run ([`Spinners`]' drop), an error's included.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::thread::{Scope, ScopedJoinHandle};

use super::attribute::{Attributor, Gap};
use super::run::{End, ROUND};
use super::spin::{spin, Job, Shared, Spun};
use super::{NoiseOptions, Plan};
use crate::error::{Error, Result};
use crate::explain::Cgroups;
use crate::ktrace::Event;
use crate::rt::ThreadSetup;
use crate::time::Time;

/// Gaps a spinner can hand over between two reads.
const RING: usize = 1 << 16;

/// One spinner, as the main thread sees it.
pub(super) struct Spinner<'scope> {
    pub cpu: usize,
    pub tid: i32,
    pub shared: Arc<Shared>,
    pub ring: rtrb::Consumer<Gap>,
    /// `None` once joined.
    handle: Option<ScopedJoinHandle<'scope, Option<Spun>>>,
    pub attr: Attributor,
    pub carry: Vec<Event>,
}

impl Spinner<'_> {
    fn ended(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }
}

/// The run's spinners: dropped, they are stopped and joined, so that no
/// spinner (SCHED_FIFO, pinned, with no end of its own without `-D`)
/// outlives the run, whichever way it ends.
pub(super) struct Spinners<'scope>(pub Vec<Spinner<'scope>>);

impl<'scope> Spinners<'scope> {
    /// One spinner per CPU of `plan`, set up, started together once
    /// `ready` has had their thread ids; each ends at `until`, when
    /// [`Spinners::join`]ed or dropped, or when `run_stop` is set (even if
    /// the calling thread never runs again).
    pub fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        plan: &Plan,
        opts: &NoiseOptions,
        until: Option<Time>,
        run_stop: &'env AtomicBool,
        ready: impl FnOnce(&[i32]),
    ) -> Result<Spinners<'scope>> {
        let gate = Arc::new(RwLock::new(()));
        // Held until every spinner is set up; released on every way out.
        let open = gate.write().unwrap_or_else(|e| e.into_inner());
        let mut out = Spinners(Vec::new());
        let mut failed = None;
        for &cpu in &plan.cpus {
            let shared = Arc::new(Shared::default());
            let (producer, ring) = rtrb::RingBuffer::new(RING);
            let (tx, rx) = mpsc::channel();
            let setup =
                ThreadSetup { policy: plan.policy, priority: plan.priority, cpus: vec![cpu], timer_slack: None };
            let job = Job { setup, threshold: opts.threshold, until };
            let (sh, g) = (Arc::clone(&shared), Arc::clone(&gate));
            let spawned = std::thread::Builder::new()
                .name(format!("rtick-noise-{cpu}"))
                .spawn_scoped(scope, move || spin(job, &sh, run_stop, &g, tx, producer));
            let handle = match spawned {
                Ok(h) => h,
                Err(e) => {
                    failed.get_or_insert(Error::sys("spawning a spinner thread", e, ""));
                    break;
                }
            };
            let tid = match rx.recv() {
                Ok(Ok(tid)) => tid,
                Ok(Err(e)) => {
                    failed.get_or_insert(e);
                    0
                }
                Err(_) => 0,
            };
            let mut attr = Attributor::new(tid, plan.kernel_prio());
            attr.observed = Some(Vec::new());
            attr.read_cgroups(Cgroups::system());
            out.0.push(Spinner { cpu, tid, shared, ring, handle: Some(handle), attr, carry: Vec::new() });
        }
        if failed.is_some() {
            out.stop();
        } else {
            ready(&out.0.iter().map(|s| s.tid).collect::<Vec<_>>());
        }
        drop(open);
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Asks every spinner to stop.
    fn stop(&self) {
        self.0.iter().for_each(|s| s.shared.stop.store(true, Ordering::Release));
    }

    /// Calls `each_round` every [`ROUND`] until `stop` is set or every
    /// spinner has ended; an error of `each_round` ends it.
    pub fn measure(
        &mut self,
        stop: &AtomicBool,
        mut each_round: impl FnMut(&mut [Spinner<'scope>]) -> Result<()>,
    ) -> Result<End> {
        loop {
            std::thread::sleep(ROUND);
            each_round(&mut self.0)?;
            if stop.load(Ordering::Relaxed) {
                return Ok(End::Interrupted);
            }
            if self.0.iter().all(Spinner::ended) {
                return Ok(End::Duration);
            }
        }
    }

    /// Stops every spinner and returns their figures, once all have ended.
    pub fn join(&mut self) -> Result<Vec<Spun>> {
        self.stop();
        let spun: Vec<Option<Spun>> =
            self.0.iter_mut().map(|s| s.handle.take().and_then(|h| h.join().ok().flatten())).collect();
        spun.into_iter()
            .zip(&self.0)
            .map(|(sp, s)| sp.ok_or_else(|| Error::Invalid(format!("the spinner of CPU {} failed", s.cpu))))
            .collect()
    }

    /// The spinners, every one joined (after [`Spinners::join`]).
    pub fn take(&mut self) -> Vec<Spinner<'scope>> {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Spinners<'_> {
    fn drop(&mut self) {
        self.stop();
        for h in self.0.iter_mut().filter_map(|s| s.handle.take()) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// One SCHED_OTHER spinner on the first CPU a run would measure, with no end of its own.
    fn plan() -> (Plan, NoiseOptions) {
        let opts = NoiseOptions::default();
        let mut plan = opts.plan().unwrap();
        plan.cpus.truncate(1);
        (plan, opts)
    }

    /// A round fails with no duration and no stop: the error comes back,
    /// and the spinners have ended by then (their thread dropped its hold
    /// on what they share).
    #[test]
    fn a_failed_round_stops_and_joins_the_spinners() {
        let (plan, opts) = plan();
        let stop = AtomicBool::new(false);
        let (result, ended) = std::thread::scope(|scope| {
            let mut spinners = Spinners::start(scope, &plan, &opts, None, &stop, |_| {}).unwrap();
            let shared: Vec<Arc<Shared>> = spinners.0.iter().map(|s| Arc::clone(&s.shared)).collect();
            let mut rounds = 0;
            let result = spinners.measure(&stop, |_| {
                rounds += 1;
                match rounds {
                    3 => Err(Error::Invalid("a round failed".into())),
                    _ => Ok(()),
                }
            });
            drop(spinners);
            let ended = shared.iter().all(|s| Arc::strong_count(s) == 1);
            // Were they still spinning, this ends them (and the test) anyway.
            stop.store(true, Ordering::Release);
            (result, ended)
        });
        assert!(matches!(result, Err(Error::Invalid(ref m)) if m == "a round failed"), "{result:?}");
        assert!(ended, "a spinner still ran after the run's error");
    }

    /// The run's stop flag alone ends the spinners, with no help from the
    /// thread that started them.
    #[test]
    fn spinners_end_on_the_runs_stop_flag_alone() {
        let (plan, opts) = plan();
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let spinners = Spinners::start(scope, &plan, &opts, None, &stop, |_| {}).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            assert!(!spinners.0.iter().any(Spinner::ended), "a spinner ended on its own");
            stop.store(true, Ordering::Release);
            let deadline = Instant::now() + Duration::from_secs(60);
            while !spinners.0.iter().all(Spinner::ended) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let ended = spinners.0.iter().all(Spinner::ended);
            // Ends them if the flag did not (the drop sets each one's own).
            drop(spinners);
            assert!(ended, "the spinners ignored the run's stop flag");
        });
    }
}

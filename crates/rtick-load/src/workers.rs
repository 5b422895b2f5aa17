//! The threads of the built-in loads: each confined to one load CPU (in
//! turn across all kinds, so every CPU of the set gets its share) and set
//! to SCHED_OTHER explicitly — a load never inherits a real-time policy —
//! counting its work in a relaxed atomic that the main thread reads at the
//! end. They stop when the shared flag is set: every wait of a worker is
//! bounded, so `stop_and_join` returns promptly.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rtick::rt::{Policy, ThreadSetup};

/// A bounded wait of a worker ended without its event (the socket's
/// timeout, a signal): look at the stop flag, then wait again.
pub fn timed_out(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// The stack of a load thread: their buffers are on the heap, so a little
/// is plenty — and memory is locked (mlockall MCL_FUTURE) before the loads
/// start, so every thread's stack is in RAM in full, not the 2 MiB default.
pub const STACK: usize = 128 << 10;

/// How long the workers of all kinds together may take to get ready.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The work a kind's workers did, their CPU time, and the first error.
#[derive(Debug, Default)]
pub struct KindCounters {
    work: AtomicU64,
    cpu_ns: AtomicU64,
    error: Mutex<Option<String>>,
}

impl KindCounters {
    pub fn work(&self) -> u64 {
        self.work.load(Relaxed)
    }
    pub fn cpu_ns(&self) -> i64 {
        self.cpu_ns.load(Relaxed) as i64
    }
    pub fn error(&self) -> Option<String> {
        self.error.lock().map(|e| e.clone()).unwrap_or(None)
    }
    fn fail(&self, e: String) {
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert(e);
        }
    }
}

/// What a worker's body sees.
#[derive(Debug)]
pub struct Ctx {
    stop: Arc<AtomicBool>,
    counters: Arc<KindCounters>,
    ready: Arc<AtomicUsize>,
    said_ready: bool,
}

impl Ctx {
    /// Whether to go on working.
    pub fn running(&self) -> bool {
        !self.stop.load(Relaxed)
    }
    /// Counts `n` units of work.
    pub fn add(&self, n: u64) {
        self.counters.work.fetch_add(n, Relaxed);
    }
    /// Prepared: the run may start.
    pub fn ready(&mut self) {
        if !self.said_ready {
            self.said_ready = true;
            self.ready.fetch_add(1, Relaxed);
        }
    }
}

/// The load threads.
#[derive(Debug)]
pub struct Workers {
    cpus: Vec<usize>,
    next: usize,
    stop: Arc<AtomicBool>,
    ready: Arc<AtomicUsize>,
    handles: Vec<JoinHandle<()>>,
}

impl Workers {
    pub fn new(cpus: Vec<usize>) -> Workers {
        Workers {
            cpus,
            next: 0,
            stop: Arc::new(AtomicBool::new(false)),
            ready: Arc::new(AtomicUsize::new(0)),
            handles: Vec::new(),
        }
    }

    /// The CPU of the next worker: the load CPUs in turn.
    pub fn next_cpu(&mut self) -> usize {
        let cpu = self.cpus[self.next % self.cpus.len()];
        self.next += 1;
        cpu
    }

    /// Starts a load thread on `cpu` running `body`; its error, if any, is
    /// kept in `counters` (a load that fails is reported, not fatal).
    pub fn spawn(
        &mut self,
        name: String,
        cpu: usize,
        counters: &Arc<KindCounters>,
        body: impl FnOnce(&mut Ctx) -> std::io::Result<()> + Send + 'static,
    ) -> Result<()> {
        let mut ctx =
            Ctx { stop: self.stop.clone(), counters: counters.clone(), ready: self.ready.clone(), said_ready: false };
        let setup = ThreadSetup { policy: Policy::Other, priority: 0, cpus: vec![cpu], timer_slack: None };
        let handle = std::thread::Builder::new()
            .name(name.clone())
            .stack_size(STACK)
            .spawn(move || {
                let outcome = setup.apply().map_err(|e| e.to_string()).and_then(|()| {
                    let started = Instant::now();
                    body(&mut ctx).map_err(|e| format!("{e} (after {:.1} s)", started.elapsed().as_secs_f64()))
                });
                if let Err(e) = outcome {
                    ctx.counters.fail(format!("{name}: {e}"));
                }
                ctx.counters.cpu_ns.fetch_add(rtick::info::thread_cpu_time().as_ns().max(0) as u64, Relaxed);
                ctx.ready();
            })
            .context("starting a load thread (pthread_create; check RLIMIT_NPROC)")?;
        self.handles.push(handle);
        Ok(())
    }

    /// Waits until every worker is ready (or has failed).
    pub fn wait_ready(&self) -> Result<()> {
        let t0 = Instant::now();
        while self.ready.load(Relaxed) < self.handles.len() {
            if t0.elapsed() > READY_WITHIN {
                bail!(
                    "the loads did not get ready within {} s ({} of {} {}); try fewer workers",
                    READY_WITHIN.as_secs(),
                    self.ready.load(Relaxed),
                    self.handles.len(),
                    rtick::text::noun(self.handles.len() as u64, "worker")
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    /// Sets the stop flag and joins every thread.
    pub fn stop_and_join(&mut self) {
        self.stop.store(true, Relaxed);
        for h in self.handles.drain(..) {
            // A panicking worker has already said so on stderr; the others still stop.
            let _ = h.join();
        }
    }
}

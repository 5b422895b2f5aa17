//! `rtick-load`: the loads run beside a measurement (`measure --load`,
//! `--load-cmd`): the
//! worst case of a latency shows under load, so rtick brings its own, as
//! rteval does, instead of leaving it to a shell script around the run.
//!
//! Each built-in kind is a module with a `start` that prepares what its
//! workers need (buffers, a file, sockets) and spawns them through
//! [`workers::Workers`], which confines every load thread to the load CPUs
//! as SCHED_OTHER and counts the work it does, so the achieved rate is
//! known and a load that did nothing shows. A command ([`command`]) runs
//! through `sh -c` on the load CPUs, in a process group of its own and,
//! where a cgroup v2 hierarchy is writable, in a cgroup of rtick's own
//! ([`rtick::child_cgroup`]). [`Running`] stops everything when it is
//! stopped or dropped: at the end of the run, on Ctrl-C or SIGTERM, and on
//! every error path — no load thread or process outlives an exit rtick
//! controls. Killed with SIGKILL, rtick cannot end the group itself: the
//! kernel kills `sh` (PR_SET_PDEATHSIG), and what the command started is
//! left in its cgroup, which `rtick cleanup` ends; without
//! a cgroup, it lives on.
//!
//! The crate owns what a load is ([`LoadSpec`], parsed from the load
//! grammar), running it ([`Running`]) and what it did ([`Outcome`]). It
//! depends on the `rtick` library, and on `rustix` for the signals to the
//! command's process group: no command line, no output format (the CLI
//! converts an outcome to its JSON and prints), no unsafe code.

#![forbid(unsafe_code)]

mod command;
mod cpu;
mod io;
mod memory;
mod net;
mod sched;
mod spec;
mod timers;
pub mod usage;
mod workers;

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

pub use command::{signal_name, CommandOutcome};
pub use memory::{Buffer, LastLevelCache};
pub use spec::{
    default_workers, Asked, KindSpec, KindWorkers, Kinds, LoadKind, LoadSpec, SpecError, MAX_MEMORY, MAX_WORKERS,
};
pub use usage::CpuBusy;
use workers::{KindCounters, Workers};

/// A kind that was started: its workers' counters and how it works here.
#[derive(Debug)]
struct Started {
    kind: LoadKind,
    workers: usize,
    counters: Arc<KindCounters>,
    detail: String,
}

/// Loads that are running; stopped by [`Running::stop`] or when dropped.
#[derive(Debug)]
pub struct Running {
    workers: Workers,
    kinds: Vec<Started>,
    command: Option<command::Command>,
    /// Before the first load thread is started: the start of the span of
    /// their CPU time.
    started: Instant,
    /// When every load ran (workers ready, command spawned): the start of
    /// the span of their rates, which getting ready would dilute.
    ready: Instant,
    busy_before: Option<Vec<rtick::system::cpustat::CpuTimes>>,
    stopped: bool,
}

/// What one kind did.
#[derive(Clone, Debug, PartialEq)]
pub struct KindOutcome {
    pub kind: LoadKind,
    pub workers: usize,
    /// Threads in all (a net or sched worker has two).
    pub threads: usize,
    /// Units of work done ([`LoadKind::unit`]).
    pub work: u64,
    /// `work` per second the loads ran, from all ready to the stop: 0 is a load that did nothing.
    pub rate_per_s: f64,
    /// CPU time of its threads, ns.
    pub cpu_time_ns: i64,
    /// How it works here (buffer size and cache, file directory, message size …);
    /// before the run, its sizing.
    pub detail: String,
    /// The first error of a worker, which then stopped.
    pub error: Option<String>,
}

/// What the loads did: the kinds' figures, the command's exit and the CPUs' busy share.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The built-in loads, in the order given.
    pub kinds: Vec<KindOutcome>,
    /// The command, if any.
    pub command: Option<CommandOutcome>,
    /// How long the built-in loads ran (ns); 0 when they never started.
    pub ran_ns: i64,
    /// Per CPU: the share of its time busy while the loads ran.
    pub cpu_busy: Vec<CpuBusy>,
}

impl Outcome {
    /// The loads of `spec` before the run: what will run, no figures yet.
    pub fn planned(spec: &LoadSpec) -> Outcome {
        let kinds = spec
            .kinds
            .iter()
            .map(|k| KindOutcome {
                kind: k.kind,
                workers: k.workers,
                threads: k.workers * k.kind.threads_per_worker(),
                work: 0,
                rate_per_s: 0.0,
                cpu_time_ns: 0,
                detail: k.sizing.clone(),
                error: None,
            })
            .collect();
        let command = spec.command.as_deref().map(CommandOutcome::planned);
        Outcome { kinds, command, ran_ns: 0, cpu_busy: Vec::new() }
    }
}

impl Running {
    /// Starts every load of `spec` and returns once each worker is ready
    /// (its buffer touched, its file open, its sockets connected), so that
    /// the measurement starts under the whole load.
    pub fn start(spec: &LoadSpec) -> Result<Running> {
        let busy_before = usage::now();
        let mut running = Running {
            workers: Workers::new(spec.cpus.clone()),
            kinds: Vec::new(),
            command: None,
            started: Instant::now(),
            ready: Instant::now(),
            busy_before,
            stopped: false,
        };
        // Dropped on an error: what was started stops again.
        for &KindSpec { kind, workers, .. } in &spec.kinds {
            let counters = Arc::new(KindCounters::default());
            let w = &mut running.workers;
            let detail = match kind {
                LoadKind::Cpu => cpu::start(w, workers, &counters)?,
                LoadKind::Memory => {
                    let buffer = spec.memory.expect("a spec with memory workers sizes their buffer");
                    memory::start(w, workers, buffer, &counters)?
                }
                LoadKind::Io => io::start(w, workers, &counters)?,
                LoadKind::Net => net::start(w, workers, &counters)?,
                LoadKind::Sched => sched::start(w, workers, &counters)?,
                LoadKind::Timers => timers::start(w, workers, &counters)?,
            };
            running.kinds.push(Started { kind, workers, counters, detail });
        }
        running.workers.wait_ready()?;
        if let Some(cmd) = &spec.command {
            running.command = Some(command::Command::spawn(cmd, &spec.cpus)?);
        }
        running.ready = Instant::now();
        Ok(running)
    }

    /// Why the command runs without a cgroup of its own (no cgroup v2
    /// hierarchy is writable): should rtick be killed with SIGKILL, what it
    /// started may go on running. `None`: it has one, or there is no command.
    pub fn command_uncontained(&self) -> Option<&str> {
        self.command.as_ref().and_then(|c| c.uncontained.as_deref())
    }

    /// Stops the loads (the command's group with SIGTERM, then SIGKILL after
    /// a grace period), waits for every thread and process, and says what
    /// they did.
    pub fn stop(mut self) -> Outcome {
        // The loads ran at full rate from ready to here; the command's grace
        // period and the joins that follow are not part of it.
        let loaded = self.ready.elapsed().as_secs_f64().max(1e-9);
        let command = self.command.take().map(command::Command::stop);
        self.workers.stop_and_join();
        self.stopped = true;
        // The whole life of the load threads, from before the first started to
        // after the last ended: their CPU time and work fall within it, so a
        // kind's CPU time per wall second (the header's "CPU %", of one CPU)
        // is at most 100 % × its threads, never more than the CPUs had.
        let ran = self.started.elapsed();
        let cpu_busy = match (&self.busy_before, usage::now()) {
            (Some(before), Some(after)) => usage::busy(before, &after),
            _ => Vec::new(),
        };
        let kinds = self
            .kinds
            .iter()
            .map(|s| {
                let work = s.counters.work();
                KindOutcome {
                    kind: s.kind,
                    workers: s.workers,
                    threads: s.workers * s.kind.threads_per_worker(),
                    work,
                    rate_per_s: work as f64 / loaded,
                    cpu_time_ns: s.counters.cpu_ns(),
                    detail: s.detail.clone(),
                    error: s.counters.error(),
                }
            })
            .collect();
        Outcome { kinds, command, ran_ns: ran.as_nanos() as i64, cpu_busy }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.stopped {
            if let Some(c) = self.command.take() {
                c.stop();
            }
            self.workers.stop_and_join();
        }
    }
}

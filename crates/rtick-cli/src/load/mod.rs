//! Loads run beside a measurement (`measure --load`, `--load-cmd`): the
//! worst case of a latency shows under load, so rtick brings its own, as
//! rteval does, instead of leaving it to a shell script around the run.
//!
//! Each built-in kind is a module with a `start` that prepares what its
//! workers need (buffers, a file, sockets) and spawns them through
//! [`workers::Workers`], which confines every load thread to the load CPUs
//! as SCHED_OTHER and counts the work it does, so the achieved rate is
//! known and a load that did nothing shows. A command runs in a process
//! group of its own ([`command`]), on the load CPUs too. [`Running`] stops
//! everything when it is stopped or dropped: at the end of the run, on
//! Ctrl-C or SIGTERM, and on every error path — no load thread or process
//! outlives an exit rtick controls. Killed with SIGKILL, rtick cannot end
//! the group: the kernel kills `sh` (PR_SET_PDEATHSIG), but what a compound
//! command started from it lives on.

mod command;
mod cpu;
mod io;
mod memory;
mod net;
mod sched;
pub mod spec;
mod timers;
pub mod usage;
mod workers;

use std::time::Instant;

use anyhow::Result;

use crate::export::json::{LoadJson, LoadKindJson};
pub use command::signal_name;
pub use spec::{Kind, LoadPlan};
use workers::{KindCounters, Workers};

/// Loads that are running; stopped by [`Running::stop`] or when dropped.
#[derive(Debug)]
pub struct Running {
    workers: Workers,
    kinds: Vec<(Kind, usize, std::sync::Arc<KindCounters>, String)>,
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

/// What the loads did.
#[derive(Debug)]
pub struct Outcome {
    /// The kinds' figures, the command's exit and the CPUs' busy share, as in the JSON.
    pub json: LoadJson,
}

impl Running {
    /// Starts every load of `plan` and returns once each worker is ready
    /// (its buffer touched, its file open, its sockets connected), so that
    /// the measurement starts under the whole load.
    pub fn start(plan: &LoadPlan) -> Result<Running> {
        let busy_before = usage::now();
        let mut running = Running {
            workers: Workers::new(plan.cpus.clone()),
            kinds: Vec::new(),
            command: None,
            started: Instant::now(),
            ready: Instant::now(),
            busy_before,
            stopped: false,
        };
        // Dropped on an error: what was started stops again.
        for &(kind, workers) in &plan.kinds {
            let counters = std::sync::Arc::new(KindCounters::default());
            let detail = match kind {
                Kind::Cpu => cpu::start(&mut running.workers, workers, &counters)?,
                Kind::Memory => {
                    let buffer = plan.memory.expect("a plan with memory workers sizes their buffer");
                    memory::start(&mut running.workers, workers, buffer, &counters)?
                }
                Kind::Io => io::start(&mut running.workers, workers, &counters)?,
                Kind::Net => net::start(&mut running.workers, workers, &counters)?,
                Kind::Sched => sched::start(&mut running.workers, workers, &counters)?,
                Kind::Timers => timers::start(&mut running.workers, workers, &counters)?,
            };
            running.kinds.push((kind, workers, counters, detail));
        }
        running.workers.wait_ready()?;
        if let Some(cmd) = &plan.command {
            running.command = Some(command::Command::spawn(cmd, &plan.cpus)?);
        }
        running.ready = Instant::now();
        Ok(running)
    }

    /// Stops the loads (the command's group with SIGTERM, then SIGKILL after
    /// a grace period), waits for every thread and process, and says what
    /// they did.
    pub fn stop(mut self, plan: &LoadPlan, measured: &[usize]) -> Outcome {
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
        let busy = match (&self.busy_before, usage::now()) {
            (Some(before), Some(after)) => usage::busy(before, &after),
            _ => Vec::new(),
        };
        let kinds = self
            .kinds
            .iter()
            .map(|(kind, workers, c, detail)| {
                let work = c.work();
                LoadKindJson {
                    kind: kind.name().into(),
                    workers: *workers,
                    threads: *workers * kind.threads_per_worker(),
                    unit: kind.unit().into(),
                    work,
                    rate_per_s: work as f64 / loaded,
                    cpu_time_ns: c.cpu_ns(),
                    detail: detail.clone(),
                    error: c.error(),
                }
            })
            .collect();
        Outcome { json: plan.json(measured, kinds, command, ran.as_nanos() as i64, busy) }
    }
}

/// Why the run was not under the load asked for: a kind whose worker
/// failed or that did no work, a command that exited by itself. Empty for a
/// load that never started (the run stopped before: that is the interruption's).
/// With --fail-if each is a violation; without, the run exits 1 after its outputs.
pub fn failures(l: &LoadJson) -> Vec<String> {
    if l.ran_ns == 0 && l.command.as_ref().is_none_or(|c| c.pid.is_none()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for k in &l.kinds {
        match &k.error {
            Some(e) => out.push(format!("load {} failed: {e}", k.kind)),
            None if k.work == 0 => out.push(format!("load {} did no work", k.kind)),
            None => {}
        }
    }
    if let Some(c) = &l.command {
        if let Some(t) = c.exited_early_after_ns {
            let how = match (c.exit_code, c.exit_signal) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(sig)) => signal_name(sig),
                (None, None) => "unknown status".into(),
            };
            out.push(format!("the load command exited by itself ({how}) after {}", rtick::Nanos(t)));
        }
    }
    out
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

//! What `--load`, `--load-cpus` and `--load-cmd` ask for, checked before
//! anything starts: every mistake is a usage error of one line.

use crate::cli::MeasureArgs;
use crate::cmd::plan::{cpu_list, Cpus};
use crate::export::json::{CpuBusyJson, LoadCommandJson, LoadJson, LoadKindJson};
use crate::Usage;

/// A built-in load.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Cpu,
    Memory,
    Io,
    Net,
    Sched,
    Timers,
}

impl Kind {
    pub const ALL: [Kind; 6] = [Kind::Cpu, Kind::Memory, Kind::Io, Kind::Net, Kind::Sched, Kind::Timers];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Memory => "memory",
            Kind::Io => "io",
            Kind::Net => "net",
            Kind::Sched => "sched",
            Kind::Timers => "timers",
        }
    }

    /// What a worker's work is counted in.
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Cpu => "iterations",
            Kind::Memory => "bytes copied",
            Kind::Io => "bytes written and synced",
            Kind::Net => "bytes received",
            Kind::Sched => "messages",
            Kind::Timers => "wake-ups",
        }
    }

    /// Threads one worker is made of (a stream or a message pair has two ends).
    pub fn threads_per_worker(self) -> usize {
        match self {
            Kind::Net | Kind::Sched => 2,
            _ => 1,
        }
    }

    /// The memory one worker holds: its buffers and its threads' stacks.
    /// All of it is locked in RAM when the run locks memory (MCL_FUTURE).
    fn bytes_per_worker(self) -> usize {
        let buffers = match self {
            Kind::Memory => super::memory::buffer_bytes(),
            Kind::Io => super::io::BLOCK,
            Kind::Net => 2 * super::net::BLOCK,
            Kind::Cpu | Kind::Sched | Kind::Timers => 0,
        };
        buffers + self.threads_per_worker() * super::workers::STACK
    }

    fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The most workers of one kind: far beyond any use, short of exhausting threads.
const MAX_WORKERS: usize = 256;
/// The most memory the loads may hold together. It is locked in RAM with
/// rtick's own (mlockall MCL_FUTURE): more could get rtick OOM-killed while
/// it holds system settings (idle states, cpu_dma_latency) changed.
pub const MAX_MEMORY: usize = 1 << 30;

/// The loads of a run.
#[derive(Clone, Debug)]
pub struct LoadPlan {
    /// Each kind once, with its number of workers.
    pub kinds: Vec<(Kind, usize)>,
    /// The CPUs the load threads are confined to.
    pub cpus: Vec<usize>,
    /// `--load-cmd`.
    pub command: Option<String>,
}

fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

impl LoadPlan {
    /// The plan of `--load`, `--load-cpus` and `--load-cmd`; `None` without a load.
    pub fn from_args(a: &MeasureArgs, cpus: &Cpus) -> Result<Option<LoadPlan>, Usage> {
        let load_cpus = match &a.load_cpus {
            Some(set) => cpu_list("--load-cpus", set, cpus)?,
            None => cpus.allowed.clone(),
        };
        if a.load.is_none() && a.load_cmd.is_none() {
            if a.load_cpus.is_some() {
                return Err(usage("--load-cpus: confines a load; give --load or --load-cmd too"));
            }
            return Ok(None);
        }
        if load_cpus.is_empty() {
            return Err(usage("--load-cpus: no CPU is allowed to this process (see taskset -p)"));
        }
        let kinds = match &a.load {
            Some(s) => parse_kinds(s, load_cpus.len())?,
            None => Vec::new(),
        };
        check_memory(&kinds, Kind::bytes_per_worker)?;
        let command = match a.load_cmd.as_deref().map(str::trim) {
            Some("") => return Err(usage("--load-cmd: the command is empty")),
            c => c.map(str::to_string),
        };
        Ok(Some(LoadPlan { kinds, cpus: load_cpus, command }))
    }

    /// The JSON `load` object; `kinds` and the rest are the figures after the run
    /// (before it: no work, `ran_ns` 0).
    pub fn json(
        &self,
        measured: &[usize],
        kinds: Vec<LoadKindJson>,
        command: Option<LoadCommandJson>,
        ran_ns: i64,
        cpu_busy: Vec<CpuBusyJson>,
    ) -> LoadJson {
        LoadJson {
            cpus: self.cpus.clone(),
            // Unpinned measuring threads may run on any CPU, the load's too.
            shares_measured_cpus: measured.is_empty() || measured.iter().any(|c| self.cpus.contains(c)),
            kinds,
            command: command.or_else(|| self.command.as_ref().map(|c| LoadCommandJson::planned(c))),
            ran_ns,
            cpu_busy,
        }
    }

    /// The `load` object before the run: what will run, no figures yet.
    pub fn planned_json(&self, measured: &[usize]) -> LoadJson {
        let kinds = self
            .kinds
            .iter()
            .map(|&(k, n)| LoadKindJson {
                kind: k.name().into(),
                workers: n,
                threads: n * k.threads_per_worker(),
                unit: k.unit().into(),
                work: 0,
                rate_per_s: 0.0,
                cpu_time_ns: 0,
                detail: String::new(),
                error: None,
            })
            .collect();
        self.json(measured, kinds, None, 0, Vec::new())
    }
}

/// `KIND[:N][,KIND…]`, each kind once; N defaults to one worker per load CPU.
pub fn parse_kinds(s: &str, load_cpus: usize) -> Result<Vec<(Kind, usize)>, Usage> {
    let names = Kind::ALL.map(Kind::name).join(", ");
    let mut kinds: Vec<(Kind, usize)> = Vec::new();
    for item in s.split(',').map(str::trim) {
        let (name, n) = match item.split_once(':') {
            Some((name, n)) => (name.trim(), Some(n.trim())),
            None => (item, None),
        };
        let kind = Kind::parse(name).ok_or_else(|| {
            usage(if name.is_empty() {
                format!("--load: an empty load in '{s}'; give KIND[:N][,KIND…], KIND one of: {names}")
            } else {
                format!("--load: unknown load '{name}'; one of: {names}")
            })
        })?;
        let workers = match n {
            None => load_cpus,
            Some(n) => match n.parse::<usize>() {
                Ok(0) => return Err(usage(format!("--load: {item}: give at least 1 worker"))),
                Ok(n) if n > MAX_WORKERS => {
                    return Err(usage(format!("--load: {item}: more than {MAX_WORKERS} workers")))
                }
                Ok(n) => n,
                Err(_) => return Err(usage(format!("--load: {item}: '{n}' is not a number of workers"))),
            },
        };
        if kinds.iter().any(|(k, _)| *k == kind) {
            return Err(usage(format!("--load: {name} is given twice; give it once, with :N workers")));
        }
        kinds.push((kind, workers));
    }
    Ok(kinds)
}

/// The loads' memory together (`per_worker`: a kind's bytes per worker) is
/// within [`MAX_MEMORY`].
fn check_memory(kinds: &[(Kind, usize)], per_worker: impl Fn(Kind) -> usize) -> Result<(), Usage> {
    let total: usize = kinds.iter().map(|&(k, n)| n * per_worker(k)).sum();
    if total <= MAX_MEMORY {
        return Ok(());
    }
    let (kind, n) = kinds.iter().max_by_key(|&&(k, n)| n * per_worker(k)).expect("a total above 0 has a kind");
    Err(usage(format!(
        "--load: the loads would hold {} MiB of memory, locked in RAM, beyond the cap of {} MiB ({} {}: {} KiB each); give fewer workers",
        total.div_ceil(1 << 20),
        MAX_MEMORY >> 20,
        n,
        if *n == 1 { format!("{} worker", kind.name()) } else { format!("{} workers", kind.name()) },
        per_worker(*kind) >> 10
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_with_and_without_workers() {
        let k = parse_kinds("cpu,memory:3, io:1,net,sched:2,timers", 2).unwrap();
        assert_eq!(
            k,
            [(Kind::Cpu, 2), (Kind::Memory, 3), (Kind::Io, 1), (Kind::Net, 2), (Kind::Sched, 2), (Kind::Timers, 2)]
        );
    }

    #[test]
    fn the_loads_memory_is_capped() {
        // Buffers of 64 MiB per memory worker (a 32 MiB cache): 16 fill the cap, a few stacks more are beyond it.
        let per_worker = |k: Kind| if k == Kind::Memory { 64 << 20 } else { k.bytes_per_worker() };
        assert!(check_memory(&[(Kind::Memory, 15), (Kind::Net, 64)], per_worker).is_ok());
        let e = check_memory(&[(Kind::Memory, 16), (Kind::Cpu, 4)], per_worker).unwrap_err().0;
        assert_eq!(
            e,
            "--load: the loads would hold 1025 MiB of memory, locked in RAM, beyond the cap of 1024 MiB (16 memory workers: 65536 KiB each); give fewer workers"
        );
    }

    #[test]
    fn bad_loads_are_one_line_usage_errors() {
        for (bad, says) in [
            ("gpu", "unknown load 'gpu'; one of: cpu, memory, io, net, sched, timers"),
            ("cpu:0", "cpu:0: give at least 1 worker"),
            ("cpu:x", "'x' is not a number of workers"),
            ("cpu:-1", "'-1' is not a number of workers"),
            ("cpu:300", "more than 256 workers"),
            ("cpu,cpu:2", "cpu is given twice"),
            ("cpu,", "an empty load"),
            ("", "an empty load"),
        ] {
            let e = parse_kinds(bad, 2).expect_err(bad).0;
            assert!(e.starts_with("--load: ") && e.contains(says), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
    }
}

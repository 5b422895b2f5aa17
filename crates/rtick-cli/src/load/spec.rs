//! What `--load`, `--load-cpus` and `--load-cmd` ask for, checked before
//! anything starts: every mistake is a usage error of one line.

use crate::cli::MeasureArgs;
use crate::cmd::plan::{cpu_list, Cpus};
use crate::export::json::{CpuBusyJson, LoadCommandJson, LoadJson, LoadKindJson};
use crate::Usage;
use rtick::system::SysRoot;

use super::memory::{Buffer, LastLevelCache};

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

    /// The memory one worker holds: its buffers (`memory`: a buffer of
    /// `memory_buffer` bytes) and its threads' stacks. All of it is locked
    /// in RAM when the run locks memory (MCL_FUTURE).
    fn bytes_per_worker(self, memory_buffer: usize) -> usize {
        let buffers = match self {
            Kind::Memory => memory_buffer,
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
    /// The buffer of each `memory` worker, sized from the cache.
    pub memory: Option<Buffer>,
    /// Per kind, what the header says of its sizing: how its buffers follow
    /// the hardware, and when a default was cut to fit a cap (empty: nothing).
    pub sizing: Vec<String>,
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
        let asked = match &a.load {
            Some(s) => parse_kinds(s)?,
            None => Vec::new(),
        };
        let kinds: Vec<(Kind, usize)> =
            asked.iter().map(|&(k, n)| (k, n.unwrap_or_else(|| default_workers(load_cpus.len())))).collect();
        let root = a.sysfs_root.as_ref().map_or_else(SysRoot::default, SysRoot::new);
        let memory = size_memory(&kinds, LastLevelCache::read(&root))?;
        let sizing = asked
            .iter()
            .map(|&(k, n)| {
                let mut said = Vec::new();
                if n.is_none() && load_cpus.len() > MAX_WORKERS {
                    said.push(format!(
                        "{MAX_WORKERS} workers, one per load CPU up to {MAX_WORKERS} ({} load CPUs)",
                        load_cpus.len()
                    ));
                }
                if let (Kind::Memory, Some(b)) = (k, memory) {
                    said.push(b.describe());
                }
                said.join("; ")
            })
            .collect();
        let command = match a.load_cmd.as_deref().map(str::trim) {
            Some("") => return Err(usage("--load-cmd: the command is empty")),
            c => c.map(str::to_string),
        };
        Ok(Some(LoadPlan { kinds, cpus: load_cpus, command, memory, sizing }))
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
            .zip(&self.sizing)
            .map(|(&(k, n), sizing)| LoadKindJson {
                kind: k.name().into(),
                workers: n,
                threads: n * k.threads_per_worker(),
                unit: k.unit().into(),
                work: 0,
                rate_per_s: 0.0,
                cpu_time_ns: 0,
                detail: sizing.clone(),
                error: None,
            })
            .collect();
        self.json(measured, kinds, None, 0, Vec::new())
    }
}

/// A kind's workers when `:N` is not given: one per load CPU, at most [`MAX_WORKERS`].
pub fn default_workers(load_cpus: usize) -> usize {
    load_cpus.min(MAX_WORKERS)
}

/// `KIND[:N][,KIND…]`, each kind once, with its N if given.
pub fn parse_kinds(s: &str) -> Result<Vec<(Kind, Option<usize>)>, Usage> {
    let names = Kind::ALL.map(Kind::name).join(", ");
    let mut kinds: Vec<(Kind, Option<usize>)> = Vec::new();
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
            None => None,
            Some(n) => match n.parse::<usize>() {
                Ok(0) => return Err(usage(format!("--load: {item}: give at least 1 worker"))),
                Ok(n) if n > MAX_WORKERS => {
                    return Err(usage(format!("--load: {item}: more than {MAX_WORKERS} workers")))
                }
                Ok(n) => Some(n),
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

/// The buffer of each `memory` worker (`None` without one): twice the
/// cache, or what the cap leaves each worker after every other kind's
/// memory and the workers' stacks; then the loads' memory is checked
/// against the cap.
fn size_memory(kinds: &[(Kind, usize)], llc: Option<LastLevelCache>) -> Result<Option<Buffer>, Usage> {
    let buffer = kinds.iter().find(|(k, _)| *k == Kind::Memory).map(|&(_, workers)| {
        let others: usize = kinds.iter().map(|&(k, n)| n * k.bytes_per_worker(0)).sum();
        Buffer::fit(llc, MAX_MEMORY.saturating_sub(others) / workers, MAX_MEMORY)
    });
    check_memory(kinds, |k| k.bytes_per_worker(buffer.map_or(0, |b| b.bytes)))?;
    Ok(buffer)
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
        let k = parse_kinds("cpu,memory:3, io:1,net,sched:2,timers").unwrap();
        assert_eq!(
            k,
            [
                (Kind::Cpu, None),
                (Kind::Memory, Some(3)),
                (Kind::Io, Some(1)),
                (Kind::Net, None),
                (Kind::Sched, Some(2)),
                (Kind::Timers, None)
            ]
        );
        // One worker per load CPU, within the most workers of a kind.
        assert_eq!((default_workers(2), default_workers(256), default_workers(384)), (2, 256, 256));
    }

    #[test]
    fn the_loads_memory_is_capped() {
        // Buffers of 64 MiB per memory worker (a 32 MiB cache): 16 fill the cap, a few stacks more are beyond it.
        let per_worker = |k: Kind| if k == Kind::Memory { 64 << 20 } else { k.bytes_per_worker(0) };
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
            let e = parse_kinds(bad).expect_err(bad).0;
            assert!(e.starts_with("--load: ") && e.contains(says), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
    }

    /// A fake sysfs of a large machine: CPU 0's caches, the last level `l3`.
    fn machine(l3: &str) -> (tempfile::TempDir, Option<LastLevelCache>) {
        let dir = tempfile::tempdir().unwrap();
        for (i, level, size) in [(0, "1", "48K"), (1, "2", "2048K"), (2, "3", l3)] {
            let d = dir.path().join(format!("sys/devices/system/cpu/cpu0/cache/index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [("level", level), ("type", "Unified"), ("size", size)] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        let llc = LastLevelCache::read(&SysRoot::new(dir.path()));
        (dir, llc)
    }

    /// The default loads of a machine with a 300 MiB or a 1.1 GiB L3 and 2
    /// or 384 CPUs fit the cap: the memory buffers shrink, and say so.
    #[test]
    fn default_loads_fit_the_cap_on_large_machines() {
        for (l3, cpus) in [("307200K", 2), ("1153434K", 2), ("1153434K", 384), ("300M", 384)] {
            let (_dir, llc) = machine(l3);
            let llc = llc.expect("the fake cache");
            for load in ["memory", "memory,io", "cpu,memory,io,net,sched,timers"] {
                let kinds: Vec<(Kind, usize)> = parse_kinds(load)
                    .unwrap()
                    .into_iter()
                    .map(|(k, n)| (k, n.unwrap_or(default_workers(cpus))))
                    .collect();
                let b = size_memory(&kinds, Some(llc)).unwrap().expect("a memory load");
                let total: usize = kinds.iter().map(|&(k, n)| n * k.bytes_per_worker(b.bytes)).sum();
                assert!(total <= MAX_MEMORY, "{l3}, {cpus} CPUs, {load}: {total} bytes");
                assert!(b.bytes < 2 * llc.bytes && b.capped_by == Some(MAX_MEMORY), "{l3} {cpus} {load}: {b:?}");
                assert!(b.describe().ends_with(", capped to fit 1024 MiB for all loads)"), "{}", b.describe());
            }
        }
        // The machine: 2 workers of a 300 MiB cache share the cap.
        let (_dir, llc) = machine("300M");
        let b = size_memory(&[(Kind::Memory, 2)], llc).unwrap().unwrap();
        assert_eq!(b.bytes, 511 << 20, "(1024 MiB - 2 stacks) / 2, in whole MiB");
        assert_eq!(
            b.describe(),
            "511 MiB buffer per worker (L3 cache 300 MiB × 2, capped to fit 1024 MiB for all loads)"
        );
        // A machine whose cache leaves room keeps twice the cache, uncapped.
        let (_dir, llc) = machine("32M");
        let b = size_memory(&[(Kind::Memory, 2), (Kind::Io, 2)], llc).unwrap().unwrap();
        assert_eq!((b.bytes, b.capped_by), (64 << 20, None));
        assert_eq!(b.describe(), "64 MiB buffer per worker (L3 cache 32 MiB × 2)");
        assert!(matches!(size_memory(&[(Kind::Cpu, 384)], llc), Ok(None)), "no memory load, no buffer");
    }
}

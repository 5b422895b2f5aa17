//! What `--load` and `--load-cmd` ask for: the kinds of load with their
//! workers, the CPUs, the memory buffers and the command, checked before
//! anything starts. The grammar of a list of kinds is [`Kinds`]'s `FromStr`.

use std::str::FromStr;

use rtick::system::SysRoot;

use crate::memory::{Buffer, LastLevelCache};

/// A built-in load.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LoadKind {
    Cpu,
    Memory,
    Io,
    Net,
    Sched,
    Timers,
}

impl LoadKind {
    pub const ALL: [LoadKind; 6] =
        [LoadKind::Cpu, LoadKind::Memory, LoadKind::Io, LoadKind::Net, LoadKind::Sched, LoadKind::Timers];

    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Cpu => "cpu",
            LoadKind::Memory => "memory",
            LoadKind::Io => "io",
            LoadKind::Net => "net",
            LoadKind::Sched => "sched",
            LoadKind::Timers => "timers",
        }
    }

    /// What a worker's work is counted in.
    pub fn unit(self) -> &'static str {
        match self {
            LoadKind::Cpu => "iterations",
            LoadKind::Memory => "bytes copied",
            LoadKind::Io => "bytes written and synced",
            LoadKind::Net => "bytes received",
            LoadKind::Sched => "messages",
            LoadKind::Timers => "wake-ups",
        }
    }

    /// Threads one worker is made of (a stream or a message pair has two ends).
    pub fn threads_per_worker(self) -> usize {
        match self {
            LoadKind::Net | LoadKind::Sched => 2,
            _ => 1,
        }
    }

    /// The memory one worker holds: its buffers (`memory`: a buffer of
    /// `memory_buffer` bytes) and its threads' stacks. All of it is locked
    /// in RAM when the run locks memory (MCL_FUTURE).
    fn bytes_per_worker(self, memory_buffer: usize) -> usize {
        let buffers = match self {
            LoadKind::Memory => memory_buffer,
            LoadKind::Io => crate::io::BLOCK,
            LoadKind::Net => 2 * crate::net::BLOCK,
            LoadKind::Cpu | LoadKind::Sched | LoadKind::Timers => 0,
        };
        buffers + self.threads_per_worker() * crate::workers::STACK
    }

    fn parse(s: &str) -> Option<LoadKind> {
        LoadKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The most workers of one kind: far beyond any use, short of exhausting threads.
pub const MAX_WORKERS: usize = 256;
/// The most memory the loads may hold together. It is locked in RAM with
/// rtick's own (mlockall MCL_FUTURE): more could get rtick OOM-killed while
/// it holds system settings (idle states, cpu_dma_latency) changed.
pub const MAX_MEMORY: usize = 1 << 30;

/// A mistake in what was asked for, in one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("an empty load in '{given}'; give KIND[:N][,KIND…], KIND one of: {}", kind_names())]
    Empty { given: String },
    #[error("unknown load '{name}'; one of: {}", kind_names())]
    Unknown { name: String },
    #[error("{item}: give at least 1 worker")]
    NoWorker { item: String },
    #[error("{item}: more than {MAX_WORKERS} workers")]
    TooManyWorkers { item: String },
    #[error("{item}: '{workers}' is not a number of workers")]
    NotWorkers { item: String, workers: String },
    #[error("{} is given twice; give it once, with :N workers", kind.name())]
    Twice { kind: LoadKind },
    #[error(
        "the loads would hold {} MiB of memory, locked in RAM, beyond the cap of {} MiB ({} {} {}: {} KiB each); give fewer workers",
        total.div_ceil(1 << 20),
        MAX_MEMORY >> 20,
        largest.workers,
        largest.kind.name(),
        rtick::text::noun(largest.workers as u64, "worker"),
        per_worker >> 10
    )]
    TooMuchMemory {
        /// The loads' memory together, bytes.
        total: usize,
        /// The kind holding the most.
        largest: KindWorkers,
        /// What each of its workers holds, bytes.
        per_worker: usize,
    },
    #[error("the command is empty")]
    EmptyCommand,
}

fn kind_names() -> String {
    LoadKind::ALL.map(LoadKind::name).join(", ")
}

/// A kind as asked for: with its number of workers, if given (`KIND[:N]`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    pub kind: LoadKind,
    pub workers: Option<usize>,
}

/// `KIND[:N][,KIND…]`: each kind once, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kinds(pub Vec<Asked>);

impl FromStr for Kinds {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Kinds, SpecError> {
        let mut kinds: Vec<Asked> = Vec::new();
        for item in s.split(',').map(str::trim) {
            let (name, n) = match item.split_once(':') {
                Some((name, n)) => (name.trim(), Some(n.trim())),
                None => (item, None),
            };
            let kind = LoadKind::parse(name).ok_or_else(|| {
                if name.is_empty() {
                    SpecError::Empty { given: s.into() }
                } else {
                    SpecError::Unknown { name: name.into() }
                }
            })?;
            let workers = match n {
                None => None,
                Some(n) => match n.parse::<usize>() {
                    Ok(0) => return Err(SpecError::NoWorker { item: item.into() }),
                    Ok(n) if n > MAX_WORKERS => return Err(SpecError::TooManyWorkers { item: item.into() }),
                    Ok(n) => Some(n),
                    Err(_) => return Err(SpecError::NotWorkers { item: item.into(), workers: n.into() }),
                },
            };
            if kinds.iter().any(|a| a.kind == kind) {
                return Err(SpecError::Twice { kind });
            }
            kinds.push(Asked { kind, workers });
        }
        Ok(Kinds(kinds))
    }
}

/// A kind with its number of workers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KindWorkers {
    pub kind: LoadKind,
    pub workers: usize,
}

/// A kind to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindSpec {
    pub kind: LoadKind,
    pub workers: usize,
    /// What the header says of its sizing: how its buffers follow the
    /// hardware, and when a default was cut to fit a cap (empty: nothing).
    pub sizing: String,
}

/// The loads of a run.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Each kind once, with its number of workers.
    pub kinds: Vec<KindSpec>,
    /// The CPUs the load threads are confined to.
    pub cpus: Vec<usize>,
    /// The command run as a load (`sh -c`).
    pub command: Option<String>,
    /// The buffer of each `memory` worker, sized from the cache.
    pub memory: Option<Buffer>,
}

impl LoadSpec {
    /// The loads of `asked` on `cpus` (not empty) and `command`; the memory
    /// workers' buffers follow the cache that sysfs under `root` describes.
    pub fn new(asked: &Kinds, cpus: Vec<usize>, command: Option<&str>, root: &SysRoot) -> Result<LoadSpec, SpecError> {
        let kinds: Vec<KindWorkers> = asked
            .0
            .iter()
            .map(|a| KindWorkers { kind: a.kind, workers: a.workers.unwrap_or_else(|| default_workers(cpus.len())) })
            .collect();
        let memory = size_memory(&kinds, LastLevelCache::read(root))?;
        let kinds = asked
            .0
            .iter()
            .zip(kinds)
            .map(|(a, k)| {
                let mut said = Vec::new();
                if a.workers.is_none() && cpus.len() > MAX_WORKERS {
                    said.push(format!(
                        "{MAX_WORKERS} workers, one per load CPU up to {MAX_WORKERS} ({} load CPUs)",
                        cpus.len()
                    ));
                }
                if let (LoadKind::Memory, Some(b)) = (k.kind, memory) {
                    said.push(b.describe());
                }
                KindSpec { kind: k.kind, workers: k.workers, sizing: said.join("; ") }
            })
            .collect();
        let command = match command.map(str::trim) {
            Some("") => return Err(SpecError::EmptyCommand),
            c => c.map(str::to_string),
        };
        Ok(LoadSpec { kinds, cpus, command, memory })
    }

    /// Whether the load CPUs include one of the `measured` CPUs (empty: a
    /// measuring thread is unpinned, and may run on any CPU, the load's too).
    pub fn shares_cpus_with(&self, measured: &[usize]) -> bool {
        measured.is_empty() || measured.iter().any(|c| self.cpus.contains(c))
    }
}

/// A kind's workers when `:N` is not given: one per load CPU, at most [`MAX_WORKERS`].
pub fn default_workers(load_cpus: usize) -> usize {
    load_cpus.min(MAX_WORKERS)
}

/// The buffer of each `memory` worker (`None` without one): twice the
/// cache, or what the cap leaves each worker after every other kind's
/// memory and the workers' stacks; then the loads' memory is checked
/// against the cap.
fn size_memory(kinds: &[KindWorkers], llc: Option<LastLevelCache>) -> Result<Option<Buffer>, SpecError> {
    let buffer = kinds.iter().find(|k| k.kind == LoadKind::Memory).map(|m| {
        let others: usize = kinds.iter().map(|k| k.workers * k.kind.bytes_per_worker(0)).sum();
        Buffer::fit(llc, MAX_MEMORY.saturating_sub(others) / m.workers, MAX_MEMORY)
    });
    check_memory(kinds, |k| k.bytes_per_worker(buffer.map_or(0, |b| b.bytes)))?;
    Ok(buffer)
}

/// The loads' memory together (`per_worker`: a kind's bytes per worker) is
/// within [`MAX_MEMORY`].
fn check_memory(kinds: &[KindWorkers], per_worker: impl Fn(LoadKind) -> usize) -> Result<(), SpecError> {
    let total: usize = kinds.iter().map(|k| k.workers * per_worker(k.kind)).sum();
    if total <= MAX_MEMORY {
        return Ok(());
    }
    let largest = *kinds.iter().max_by_key(|k| k.workers * per_worker(k.kind)).expect("a total above 0 has a kind");
    Err(SpecError::TooMuchMemory { total, largest, per_worker: per_worker(largest.kind) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_with_and_without_workers() {
        let k: Kinds = "cpu,memory:3, io:1,net,sched:2,timers".parse().unwrap();
        let k: Vec<(LoadKind, Option<usize>)> = k.0.iter().map(|a| (a.kind, a.workers)).collect();
        assert_eq!(
            k,
            [
                (LoadKind::Cpu, None),
                (LoadKind::Memory, Some(3)),
                (LoadKind::Io, Some(1)),
                (LoadKind::Net, None),
                (LoadKind::Sched, Some(2)),
                (LoadKind::Timers, None)
            ]
        );
        // One worker per load CPU, within the most workers of a kind.
        assert_eq!((default_workers(2), default_workers(256), default_workers(384)), (2, 256, 256));
    }

    #[test]
    fn the_loads_memory_is_capped() {
        // Buffers of 64 MiB per memory worker (a 32 MiB cache): 16 fill the cap, a few stacks more are beyond it.
        let per_worker = |k: LoadKind| if k == LoadKind::Memory { 64 << 20 } else { k.bytes_per_worker(0) };
        let kw = |kind, workers| KindWorkers { kind, workers };
        assert!(check_memory(&[kw(LoadKind::Memory, 15), kw(LoadKind::Net, 64)], per_worker).is_ok());
        let e = check_memory(&[kw(LoadKind::Memory, 16), kw(LoadKind::Cpu, 4)], per_worker).unwrap_err();
        // As the command line says it, after the option.
        let e = format!("--load: {e}");
        assert_eq!(
            e,
            "--load: the loads would hold 1025 MiB of memory, locked in RAM, beyond the cap of 1024 MiB (16 memory workers: 65536 KiB each); give fewer workers"
        );
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
                let kinds: Vec<KindWorkers> = load
                    .parse::<Kinds>()
                    .unwrap()
                    .0
                    .into_iter()
                    .map(|a| KindWorkers { kind: a.kind, workers: a.workers.unwrap_or(default_workers(cpus)) })
                    .collect();
                let b = size_memory(&kinds, Some(llc)).unwrap().expect("a memory load");
                let total: usize = kinds.iter().map(|k| k.workers * k.kind.bytes_per_worker(b.bytes)).sum();
                assert!(total <= MAX_MEMORY, "{l3}, {cpus} CPUs, {load}: {total} bytes");
                assert!(b.bytes < 2 * llc.bytes && b.capped_by == Some(MAX_MEMORY), "{l3} {cpus} {load}: {b:?}");
                assert!(b.describe().ends_with(", capped to fit 1024 MiB for all loads)"), "{}", b.describe());
            }
        }
        // The machine: 2 workers of a 300 MiB cache share the cap.
        let (_dir, llc) = machine("300M");
        let b = size_memory(&[KindWorkers { kind: LoadKind::Memory, workers: 2 }], llc).unwrap().unwrap();
        assert_eq!(b.bytes, 511 << 20, "(1024 MiB - 2 stacks) / 2, in whole MiB");
        assert_eq!(
            b.describe(),
            "511 MiB buffer per worker (L3 cache 300 MiB × 2, capped to fit 1024 MiB for all loads)"
        );
        // A machine whose cache leaves room keeps twice the cache, uncapped.
        let (_dir, llc) = machine("32M");
        let b = size_memory(
            &[KindWorkers { kind: LoadKind::Memory, workers: 2 }, KindWorkers { kind: LoadKind::Io, workers: 2 }],
            llc,
        )
        .unwrap()
        .unwrap();
        assert_eq!((b.bytes, b.capped_by), (64 << 20, None));
        assert_eq!(b.describe(), "64 MiB buffer per worker (L3 cache 32 MiB × 2)");
        assert!(
            matches!(size_memory(&[KindWorkers { kind: LoadKind::Cpu, workers: 384 }], llc), Ok(None)),
            "no memory load, no buffer"
        );
    }
}

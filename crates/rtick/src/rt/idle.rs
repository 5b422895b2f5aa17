//! cpuidle: limiting how deep the measured CPUs may sleep.
//!
//! An idle CPU woken by its timer interrupt first has to leave its idle
//! state; the deeper the state, the longer the exit (tens to hundreds of µs
//! for package C-states), and that exit is wake-up latency. Unlike
//! `/dev/cpu_dma_latency`, which holds every CPU of the machine, the
//! per-state `disable` files of `/sys/devices/system/cpu/cpuN/cpuidle/stateK/`
//! hold only the CPUs named, so the other CPUs keep saving power.
//!
//! [`IdleStates::read`] reads each CPU's states once (typed: index, name,
//! exit latency, disabled); [`IdleStates::limit`] writes `1` to the
//! `disable` file of every state deeper than the one allowed and returns an
//! [`IdleLimit`] guard that writes each file's previous value back when it
//! drops (at the end of the run, on an error, or while a panic unwinds).
//! Everything is read under a [`SysRoot`], so tests use a fake tree.
//!
//! Two limits of that guard, documented in the README's gates section:
//! the files are machine-wide and nothing claims them, so two processes
//! limiting at once undo each other — the second reads the first's `1`s as
//! the machine's own ("already disabled") and leaves them, and the first,
//! ending, writes the previous `0`s back under the second. And a process
//! that ends without unwinding (SIGKILL, the OOM killer) restores nothing:
//! the states stay disabled until someone writes `0` or the machine reboots.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::system::{format_cpu_list, SysRoot};

/// Where the CPUs' directories are.
const CPU_DIR: &str = "/sys/devices/system/cpu";

/// One idle state of one CPU, as its `stateK` directory describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleState {
    /// K of `stateK`: 0 is the shallowest (often `POLL`).
    pub index: usize,
    /// The `name` file: `POLL`, `C1`, `C1E`, `C6` …
    pub name: String,
    /// The `latency` file: the exit latency in µs.
    pub exit_latency_us: u64,
    /// The `disable` file: whether the state is disabled already.
    pub disabled: bool,
}

/// The idle states of some CPUs.
#[derive(Clone, Debug)]
pub struct IdleStates {
    root: SysRoot,
    /// (cpu, its states by index), ascending by CPU.
    cpus: Vec<(usize, Vec<IdleState>)>,
}

impl IdleStates {
    /// Reads the states of `cpus` under `root`. Fails, naming why, when the
    /// kernel has no cpuidle states for one of them (no cpuidle driver, as
    /// in most VMs: `current_driver` is `none` and there is no
    /// `cpuN/cpuidle`), or when a state's files cannot be read.
    pub fn read(root: &SysRoot, cpus: &[usize]) -> Result<IdleStates> {
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        let mut out = Vec::with_capacity(cpus.len());
        for cpu in cpus {
            let states = read_cpu(root, cpu)?;
            if states.is_empty() {
                return Err(no_cpuidle(root, cpu));
            }
            out.push((cpu, states));
        }
        Ok(IdleStates { root: root.clone(), cpus: out })
    }

    /// The CPUs and their states.
    pub fn cpus(&self) -> &[(usize, Vec<IdleState>)] {
        &self.cpus
    }

    /// Disables every state deeper than `deepest` on every CPU read (a state
    /// disabled already is left as it is). Writes nothing unless every CPU
    /// has state `deepest`; a write that fails undoes the ones before it.
    pub fn limit(&self, deepest: usize) -> Result<IdleLimit> {
        if let Some((cpu, states)) = self.cpus.iter().find(|(_, s)| s.len() <= deepest) {
            return Err(Error::Invalid(format!(
                "--deepest-idle-state {deepest}: CPU {cpu} has idle states 0–{} only ({}): give one of those",
                states.len() - 1,
                names(states)
            )));
        }
        let mut guard =
            IdleLimit { deepest, allowed: self.allowed(deepest), cpus: self.cpu_list(), changed: Vec::new() };
        for (cpu, states) in &self.cpus {
            for s in states.iter().filter(|s| s.index > deepest && !s.disabled) {
                let path = self.root.path(&format!("{CPU_DIR}/cpu{cpu}/cpuidle/state{}/disable", s.index));
                write(&path, "1")?;
                guard.changed.push((path, "0"));
            }
        }
        Ok(guard)
    }

    /// The deepest allowed state's name and the largest exit latency of the
    /// states left allowed (0…`deepest`, on any CPU).
    fn allowed(&self, deepest: usize) -> (String, u64) {
        let name = self.cpus.first().and_then(|(_, s)| s.get(deepest)).map_or_else(String::new, |s| s.name.clone());
        let latency = self.cpus.iter().flat_map(|(_, s)| s.iter().take(deepest + 1)).map(|s| s.exit_latency_us).max();
        (name, latency.unwrap_or(0))
    }

    fn cpu_list(&self) -> String {
        format_cpu_list(&self.cpus.iter().map(|(c, _)| *c).collect::<Vec<_>>())
    }
}

/// The states of `cpu`, by index; empty when it has none.
fn read_cpu(root: &SysRoot, cpu: usize) -> Result<Vec<IdleState>> {
    let mut states = Vec::new();
    loop {
        let dir = format!("{CPU_DIR}/cpu{cpu}/cpuidle/state{}", states.len());
        if !root.path(&dir).is_dir() {
            return Ok(states);
        }
        let file = |f: &str| {
            root.read(&format!("{dir}/{f}")).ok_or_else(|| {
                Error::Invalid(format!(
                    "cannot read {}: is this a cpuidle state?",
                    root.path(&format!("{dir}/{f}")).display()
                ))
            })
        };
        let number = |f: &str| {
            let text = file(f)?;
            text.parse::<u64>().map_err(|_| {
                Error::Invalid(format!("{}: '{text}' is not a number", root.path(&format!("{dir}/{f}")).display()))
            })
        };
        states.push(IdleState {
            index: states.len(),
            name: file("name")?,
            exit_latency_us: number("latency")?,
            disabled: number("disable")? != 0,
        });
    }
}

/// Why `cpu` has no idle states: the driver, when the kernel names one.
fn no_cpuidle(root: &SysRoot, cpu: usize) -> Error {
    let driver = match root.read(&format!("{CPU_DIR}/cpuidle/current_driver")) {
        Some(d) => format!("cpuidle driver '{d}'"),
        None => "no cpuidle driver".into(),
    };
    Error::Invalid(format!(
        "--deepest-idle-state: no cpuidle states on this kernel/VM ({driver}, no {}): the idle states are not Linux's to limit here; leave the option out",
        root.path(&format!("{CPU_DIR}/cpu{cpu}/cpuidle/state0")).display()
    ))
}

fn names(states: &[IdleState]) -> String {
    states.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
}

fn write(path: &std::path::Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| {
        Error::sys(
            format!("write({}, {value})", path.display()),
            e,
            "run as root (cpuidle's disable files are root-only)",
        )
    })
}

/// Idle states disabled by [`IdleStates::limit`]; each file gets its
/// previous value back by [`IdleLimit::restore`], which says whether it
/// did, or else on drop, which cannot.
#[derive(Debug)]
pub struct IdleLimit {
    deepest: usize,
    /// The deepest allowed state's name and the largest exit latency left.
    allowed: (String, u64),
    cpus: String,
    /// The files written, each with the value it had.
    changed: Vec<(PathBuf, &'static str)>,
}

impl IdleLimit {
    /// The deepest state allowed.
    pub fn deepest(&self) -> usize {
        self.deepest
    }

    /// The `disable` files written (each set to 1).
    pub fn changed(&self) -> impl Iterator<Item = &std::path::Path> {
        self.changed.iter().map(|(p, _)| p.as_path())
    }

    /// One line for a header: what is disabled where, and the worst exit
    /// latency left, e.g. `states deeper than C1 (exit latency ≤ 2 µs) disabled on CPU 1`.
    pub fn describe(&self) -> String {
        let (name, latency) = &self.allowed;
        let on = if self.cpus.contains([',', '-']) { "CPUs" } else { "CPU" };
        if self.changed.is_empty() {
            return format!(
                "no state deeper than {name} (state {}) left enabled on {on} {}: nothing to disable",
                self.deepest, self.cpus
            );
        }
        format!("states deeper than {name} (exit latency ≤ {latency} µs) disabled on {on} {}", self.cpus)
    }

    /// Writes every file's previous value back; the first failure is
    /// returned after trying them all.
    pub fn restore(mut self) -> Result<()> {
        self.restore_all()
    }

    fn restore_all(&mut self) -> Result<()> {
        let mut first = Ok(());
        for (path, value) in self.changed.drain(..).rev() {
            if let Err(e) = write(&path, value) {
                first = first.and(Err(e));
            }
        }
        first
    }
}

impl Drop for IdleLimit {
    /// The restore of an error path or a panic: best effort, unreported
    /// (the library never prints). An owner that can report calls
    /// [`IdleLimit::restore`], on every path, and says what it returns.
    fn drop(&mut self) {
        let _ = self.restore_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tree: CPUs 0 and 1 with POLL, C1, C1E, C6.
    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for cpu in 0..2 {
            for (k, (name, lat)) in [("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 133)].iter().enumerate() {
                let s = d.path().join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}"));
                std::fs::create_dir_all(&s).unwrap();
                std::fs::write(s.join("name"), format!("{name}\n")).unwrap();
                std::fs::write(s.join("latency"), format!("{lat}\n")).unwrap();
                std::fs::write(s.join("disable"), if k == 2 && cpu == 1 { "1\n" } else { "0\n" }).unwrap();
            }
        }
        d
    }

    fn disable(d: &std::path::Path, cpu: usize, k: usize) -> String {
        std::fs::read_to_string(d.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}/disable")))
            .unwrap()
            .trim()
            .to_string()
    }

    #[test]
    fn states_are_read_typed() {
        let d = tree();
        let s = IdleStates::read(&SysRoot::new(d.path()), &[1]).unwrap();
        let (cpu, states) = &s.cpus()[0];
        assert_eq!(*cpu, 1);
        assert_eq!(states.len(), 4);
        assert_eq!(states[3], IdleState { index: 3, name: "C6".into(), exit_latency_us: 133, disabled: false });
        assert!(states[2].disabled);
    }

    #[test]
    fn only_deeper_states_of_the_cpus_named_are_disabled_then_restored() {
        let d = tree();
        let s = IdleStates::read(&SysRoot::new(d.path()), &[1]).unwrap();
        let guard = s.limit(1).unwrap();
        assert_eq!(guard.describe(), "states deeper than C1 (exit latency ≤ 2 µs) disabled on CPU 1");
        assert_eq!([disable(d.path(), 1, 2), disable(d.path(), 1, 3)], ["1", "1"]);
        assert_eq!(guard.changed().count(), 1, "state 2 was disabled already: not ours to restore");
        assert_eq!((0..4).map(|k| disable(d.path(), 0, k)).collect::<Vec<_>>(), ["0"; 4], "CPU 0 untouched");
        drop(guard);
        assert_eq!(
            (0..4).map(|k| disable(d.path(), 1, k)).collect::<Vec<_>>(),
            ["0", "0", "1", "0"],
            "each file back to its value"
        );
    }

    #[test]
    fn restored_while_a_panic_unwinds() {
        let d = tree();
        let s = IdleStates::read(&SysRoot::new(d.path()), &[0, 1]).unwrap();
        let r = std::panic::catch_unwind(|| {
            let g = s.limit(0).unwrap();
            assert_eq!(g.describe(), "states deeper than POLL (exit latency ≤ 0 µs) disabled on CPUs 0-1");
            panic!("boom");
        });
        assert!(r.is_err());
        for cpu in 0..2 {
            assert_eq!(disable(d.path(), cpu, 3), "0");
        }
    }

    #[test]
    fn no_cpuidle_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let idle = d.path().join("sys/devices/system/cpu/cpuidle");
        std::fs::create_dir_all(&idle).unwrap();
        std::fs::write(idle.join("current_driver"), "none\n").unwrap();
        let e = IdleStates::read(&SysRoot::new(d.path()), &[1]).unwrap_err().to_string();
        assert!(e.contains("no cpuidle states on this kernel/VM (cpuidle driver 'none'"), "{e}");
        assert!(e.contains("cpu1/cpuidle/state0"), "{e}");
    }

    #[test]
    fn a_state_beyond_the_deepest_is_refused_before_writing() {
        let d = tree();
        let s = IdleStates::read(&SysRoot::new(d.path()), &[0]).unwrap();
        let e = s.limit(4).unwrap_err().to_string();
        assert!(e.contains("CPU 0 has idle states 0–3 only (POLL, C1, C1E, C6)"), "{e}");
        let g = s.limit(3).unwrap();
        assert!(g.describe().starts_with("no state deeper than C6 (state 3)"), "{}", g.describe());
    }
}

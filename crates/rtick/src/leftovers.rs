//! What an rtick killed with SIGKILL leaves behind, found by the pid each
//! name embeds (`rtick-<pid>`, `.NAME.<pid>.XXXXXX.rtick-tmp`) no longer
//! existing:
//!
//! - its tracefs instance (`--explain`), which goes on tracing and so slows
//!   every later measurement;
//! - its cgroup ([`crate::child_cgroup`]), with whatever `--load-cmd` still
//!   runs in it, loading every later measurement;
//! - its temporary output files, never renamed into place.
//!
//! Pids are looked up in this process's pid namespace: an rtick in another
//! one (a container sharing tracefs or the cgroup hierarchy) looks dead.

use std::path::{Path, PathBuf};

use crate::child_cgroup::PREFIX;
use crate::system::SysRoot;

/// The suffix of a temporary output file.
pub const TEMP_SUFFIX: &str = ".rtick-tmp";

/// What kind of leftover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeftoverKind {
    /// A tracefs instance, still tracing.
    Instance,
    /// A cgroup, with the pids that still run in it.
    Cgroup {
        /// Its processes' pids (empty: nothing runs, the directory remains).
        pids: Vec<i32>,
    },
    /// A temporary output file.
    TempFile,
}

/// One thing a dead rtick left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    /// What it is.
    pub kind: LeftoverKind,
    /// Where.
    pub path: PathBuf,
    /// The pid of the rtick that left it.
    pub pid: i32,
}

impl Leftover {
    /// Removes it: an instance stops tracing and goes, a cgroup's processes
    /// are killed and it goes, a file is deleted. Gone already counts as removed.
    pub fn remove(&self) -> Result<(), String> {
        let what = |e: &dyn std::fmt::Display| format!("cannot remove {}: {e}", self.path.display());
        match self.kind {
            LeftoverKind::Instance => crate::ktrace::remove_instance(&self.path).map_err(|e| what(&e)),
            LeftoverKind::Cgroup { .. } => crate::child_cgroup::end(&self.path).map_err(|e| what(&e)),
            LeftoverKind::TempFile => match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(what(&e)),
                _ => Ok(()),
            },
        }
    }
}

/// The pid in the name of an instance or cgroup of rtick's: `rtick-<pid>`,
/// or `rtick-<pid>.<n>`.
pub fn owner(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX)?;
    let pid = match rest.split_once('.') {
        Some((pid, n)) => digits(n).map(|_| pid)?,
        None => rest,
    };
    pid_of(pid)
}

/// `s` when it is one or more ASCII digits (no sign, no space).
fn digits(s: &str) -> Option<&str> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

/// The pid written in `s`: ASCII digits only, above 0.
fn pid_of(s: &str) -> Option<i32> {
    digits(s)?.parse().ok().filter(|&pid| pid > 0)
}

/// The start of a temporary output file's name for `name`, written by this
/// process: `.NAME.<pid>.` (a random part and [`TEMP_SUFFIX`] follow).
pub fn temp_prefix(name: &str) -> String {
    format!(".{name}.{}.", std::process::id())
}

/// The pid in a temporary output file's name (see [`temp_prefix`]).
pub fn temp_owner(file_name: &str) -> Option<i32> {
    let rest = file_name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (rest, _random) = rest.rsplit_once('.')?;
    let (name, pid) = rest.rsplit_once('.')?;
    (!name.is_empty()).then_some(())?;
    pid_of(pid)
}

fn dead(pid: i32) -> bool {
    !crate::sys::process::exists(pid)
}

/// The entries of `dir` whose name `owner` gives a dead pid, sorted.
fn owned_by_dead(dir: &Path, owner: impl Fn(&str) -> Option<i32>) -> Vec<(PathBuf, i32)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<(PathBuf, i32)> = entries
        .flatten()
        .filter_map(|e| {
            let pid = owner(e.file_name().to_str()?)?;
            dead(pid).then(|| (e.path(), pid))
        })
        .collect();
    found.sort();
    found
}

/// The instances of dead rticks under the tracefs at `tracefs` (none when
/// there is no tracefs there, or it cannot be read).
pub fn instances(tracefs: &Path) -> Vec<Leftover> {
    let found = owned_by_dead(&tracefs.join("instances"), owner);
    found.into_iter().map(|(path, pid)| Leftover { kind: LeftoverKind::Instance, path, pid }).collect()
}

/// The cgroups of dead rticks in the v2 hierarchy mounted at `mount`.
pub fn cgroups(mount: &Path) -> Vec<Leftover> {
    let found = owned_by_dead(mount, owner).into_iter().filter(|(p, _)| p.is_dir());
    found
        .map(|(path, pid)| Leftover {
            kind: LeftoverKind::Cgroup { pids: crate::child_cgroup::procs(&path) },
            path,
            pid,
        })
        .collect()
}

/// The temporary output files of dead rticks in `dir`.
pub fn temp_files(dir: &Path) -> Vec<Leftover> {
    let found = owned_by_dead(dir, temp_owner).into_iter().filter(|(p, _)| p.is_file());
    found.map(|(path, pid)| Leftover { kind: LeftoverKind::TempFile, path, pid }).collect()
}

/// Every instance and cgroup of a dead rtick on this system: under the
/// tracefs at `tracefs`, and in the v2 hierarchy `root`'s mountinfo shows.
pub fn find(tracefs: &Path, root: &SysRoot) -> Vec<Leftover> {
    let mut all = instances(tracefs);
    if let Some(mount) = crate::cgroup::v2_mount(root) {
        all.extend(cgroups(Path::new(&mount)));
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that no process has (beyond every pid the system gives).
    fn dead_pid() -> i32 {
        let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
        (1..1000).map(|k| max - k).find(|&p| dead(p)).unwrap()
    }

    #[test]
    fn names_give_their_owner() {
        assert_eq!(owner("rtick-123"), Some(123));
        assert_eq!(owner("rtick-123.2"), Some(123));
        assert_eq!((owner("rtick-fixture-9"), owner("rtick-12.x"), owner("other-1")), (None, None, None));
        // Only a pid above 0 in ASCII digits, and a non-empty n: another's name is never taken for a dead rtick's.
        for name in ["rtick-0", "rtick--5", "rtick-+5", "rtick-123.", "rtick-", "rtick-.2", "rtick- 5", "rtick-5.+1"] {
            assert_eq!(owner(name), None, "{name}");
        }
        for name in [".a.0.XYZ.rtick-tmp", ".a.-5.XYZ.rtick-tmp", ".a.+5.XYZ.rtick-tmp", ".a..XYZ.rtick-tmp"] {
            assert_eq!(temp_owner(name), None, "{name}");
        }
        let prefix = temp_prefix("run.json");
        assert_eq!(temp_owner(&format!("{prefix}Ab12Cd{TEMP_SUFFIX}")), Some(std::process::id() as i32));
        assert_eq!(temp_owner(".a.b.c.77.XYZ123.rtick-tmp"), Some(77));
        // The name before the pid is not empty; the old form (no pid) is not rtick's to judge.
        assert_eq!((temp_owner("..77.XYZ.rtick-tmp"), temp_owner(".run.json.XYZ123.rtick-tmp")), (None, None));
    }

    #[test]
    fn only_what_dead_processes_left_is_found_and_removed() {
        let d = tempfile::tempdir().unwrap();
        let (dead, me) = (dead_pid(), std::process::id());
        let old = d.path().join(format!(".out.png.{dead}.q1w2e3{TEMP_SUFFIX}"));
        let mine = d.path().join(format!("{}x{TEMP_SUFFIX}", temp_prefix("out.png")));
        let unrelated = d.path().join("out.png");
        for f in [&old, &mine, &unrelated] {
            std::fs::write(f, "x").unwrap();
        }
        let found = temp_files(d.path());
        assert_eq!(found, vec![Leftover { kind: LeftoverKind::TempFile, path: old.clone(), pid: dead }]);
        found[0].remove().unwrap();
        assert!(!old.exists() && mine.exists() && unrelated.exists());
        found[0].remove().unwrap();
        // A directory that looks like a dead rtick's cgroup, and a live one's.
        std::fs::create_dir(d.path().join(format!("rtick-{dead}"))).unwrap();
        std::fs::create_dir(d.path().join(format!("rtick-{me}"))).unwrap();
        let found = cgroups(d.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].pid, &found[0].kind), (dead, &LeftoverKind::Cgroup { pids: vec![] }));
        assert!(instances(d.path()).is_empty(), "no instances directory");
    }
}

//! Which container or systemd unit a culprit task is in: its cgroup path
//! ([`crate::cgroup::task_path`]), read from `/proc/PID/cgroup` once per
//! task while it lives, and kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::input::Task;
use crate::system::SysRoot;

/// How many tasks' cgroups are kept before the cache starts over (a
/// monitor running for days sees pids come and go).
const KEPT: usize = 4096;

/// A task as its cgroup is kept: (pid, comm), since a pid reused by
/// another program is another task.
type Key = (i32, String);

/// Tasks' cgroup paths, each read once.
#[derive(Debug, Default)]
pub struct Cgroups {
    root: SysRoot,
    known: Mutex<HashMap<Key, Option<Arc<str>>>>,
}

impl Cgroups {
    /// The cgroups of tasks under `root`'s `/proc`.
    pub fn new(root: SysRoot) -> Cgroups {
        Cgroups { root, known: Mutex::default() }
    }

    /// This machine's, shared by every analysis of the process.
    pub fn system() -> &'static Cgroups {
        static SYSTEM: OnceLock<Cgroups> = OnceLock::new();
        SYSTEM.get_or_init(Cgroups::default)
    }

    /// The cgroup `t` is in, unless it is the root (or the task is gone, or
    /// its pid now names another program).
    pub fn of(&self, t: &Task) -> Option<Arc<str>> {
        if t.is_idle() {
            return None;
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let key = (t.pid, t.comm.clone());
        if let Some(path) = known.get(&key) {
            return path.clone();
        }
        let comm = self.root.read(&format!("/proc/{}/comm", t.pid))?;
        if comm != t.comm {
            return None;
        }
        let text = self.root.read(&format!("/proc/{}/cgroup", t.pid))?;
        let path: Option<Arc<str>> = crate::cgroup::task_path(&text).map(Into::into);
        if known.len() >= KEPT {
            known.clear();
        }
        known.insert(key, path.clone());
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_read_once_and_only_while_its_pid_names_it() {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc/4242");
        std::fs::create_dir_all(&proc).unwrap();
        std::fs::write(proc.join("comm"), "hog\n").unwrap();
        std::fs::write(proc.join("cgroup"), "1:cpu,cpuacct:/system.slice/foo.service\n0::/\n").unwrap();
        let c = Cgroups::new(SysRoot::new(d.path()));
        let hog = Task { comm: "hog".into(), pid: 4242, prio: 4 };
        assert_eq!(c.of(&hog).as_deref(), Some("/system.slice/foo.service"));
        // Another program with that pid is not it.
        assert_eq!(c.of(&Task { comm: "other".into(), ..hog.clone() }), None);
        // Read once: kept after the task is gone.
        std::fs::remove_dir_all(&proc).unwrap();
        assert_eq!(c.of(&hog).as_deref(), Some("/system.slice/foo.service"));
        assert_eq!(c.of(&Task { comm: "gone".into(), pid: 9, prio: 120 }), None);
        assert_eq!(c.of(&Task { comm: "swapper/1".into(), pid: 0, prio: 120 }), None);
    }
}

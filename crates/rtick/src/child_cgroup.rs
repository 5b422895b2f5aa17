//! A cgroup v2 of rtick's own for the commands it starts (`--load-cmd`):
//! `<v2 mount>/rtick-<pid>[.<n>]`. Whatever the command forks is born in it
//! and cannot leave it unnoticed (a process group can be left by `setsid`,
//! and `PR_SET_PDEATHSIG` reaches only the first process), so ending the
//! cgroup ends all of it: `cgroup.kill` where the kernel has it (5.14+), else
//! SIGKILL to every pid in `cgroup.procs` until it is empty.
//!
//! The hierarchy is the v2 one even on a hybrid system, where it has no
//! controllers (`/sys/fs/cgroup/unified`): only membership is needed.
//! A cgroup whose rtick was killed with SIGKILL stays, with what runs in it:
//! [`crate::leftovers`] finds it, and [`end`] ends it.

use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The name prefix of rtick's cgroups (and of its tracefs instances).
pub const PREFIX: &str = "rtick-";

/// How long [`end`] waits for the cgroup to empty.
const EMPTY_WAIT: Duration = Duration::from_secs(5);

/// A cgroup created for commands this process starts; ended and removed on drop.
#[derive(Debug)]
pub struct ChildCgroup {
    dir: PathBuf,
}

impl ChildCgroup {
    /// Creates `rtick-<pid>` (or `rtick-<pid>.<n>` when taken) under the v2
    /// hierarchy mounted at `mount`. Fails when it is not writable (not root).
    pub fn create(mount: &Path) -> io::Result<ChildCgroup> {
        let pid = std::process::id();
        for n in 0..1000 {
            let name = if n == 0 { format!("{PREFIX}{pid}") } else { format!("{PREFIX}{pid}.{n}") };
            let dir = mount.join(name);
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(ChildCgroup { dir }),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::from(ErrorKind::AlreadyExists))
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the child of `cmd` (and all it starts) a member, before it runs
    /// anything. Fails when `cgroup.procs` cannot be opened.
    pub fn adopt(&self, cmd: &mut std::process::Command) -> io::Result<()> {
        let procs = std::fs::OpenOptions::new().write(true).open(self.dir.join("cgroup.procs"))?;
        crate::sys::child::join_cgroup(cmd, procs.into());
        Ok(())
    }

    /// Whether a process of it still runs.
    pub fn populated(&self) -> bool {
        !procs(&self.dir).is_empty()
    }

    /// Kills every process in it (see [`end`]); it stays until dropped.
    pub fn kill(&self) -> io::Result<()> {
        kill_all(&self.dir)
    }
}

impl Drop for ChildCgroup {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; an rtick that runs next names
        // a cgroup left here as it names one of a killed rtick.
        let _ = end(&self.dir);
    }
}

/// The pids in the cgroup at `dir` (none when it cannot be read).
pub fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills every process in the cgroup at `dir` and waits until it is empty
/// (at most [`EMPTY_WAIT`]: a process in uninterruptible sleep dies late).
fn kill_all(dir: &Path) -> io::Result<()> {
    let kill_file = dir.join("cgroup.kill");
    let has_kill = kill_file.exists() && std::fs::write(&kill_file, "1").is_ok();
    let deadline = Instant::now() + EMPTY_WAIT;
    loop {
        let pids = procs(dir);
        if pids.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                ErrorKind::TimedOut,
                format!("{} still holds pid {} after SIGKILL", dir.display(), pids[0]),
            ));
        }
        if !has_kill {
            // A process forked meanwhile is in the next read: killed then.
            pids.iter().for_each(|&p| crate::sys::process::kill(p));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ends the cgroup at `dir`: kills all in it, then removes it. A cgroup
/// already gone counts as ended.
pub fn end(dir: &Path) -> io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    kill_all(dir)?;
    // A killed process leaves the cgroup as it exits, just before its
    // parent can reap it: rmdir may say EBUSY for a moment.
    let deadline = Instant::now() + EMPTY_WAIT;
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(e),
        }
    }
}

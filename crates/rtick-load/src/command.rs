//! `--load-cmd`: any command as a load, through `sh -c`, in a cgroup of its
//! own where one can be made (see [`rtick::child_cgroup`]: nothing it
//! forks outlives rtick unnoticed, even a SIGKILLed rtick), and in a process
//! group of its own — so that a terminal's Ctrl-C reaches rtick alone (which then
//! ends the load in order), and so that the whole group, with whatever the
//! command started, can be ended at once: SIGTERM, then SIGKILL after
//! [`GRACE`] for a group that ignores it.
//!
//! A watcher thread notices when the command exits by itself, and when.
//! It does not reap `sh` until the group has been ended: the unreaped
//! leader (a zombie) keeps its pid, which is the group's id, from being
//! reused, so the SIGTERM and SIGKILL sent to the group cannot reach an
//! unrelated process group that got the id in the meantime.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::process::{kill_process_group, waitid, Pid, Signal, WaitId, WaitIdOptions};

use rtick::child_cgroup::ChildCgroup;

/// How long the group has to end after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
/// How close to the stop an exit of the command counts as the run's end.
const END_SLACK: Duration = Duration::from_millis(50);
/// How often the watcher looks at the command.
const POLL: Duration = Duration::from_millis(20);
/// How often it looks whether the group has ended after SIGTERM: each look
/// reads every process's `stat`, too costly at [`POLL`].
const GRACE_POLL: Duration = Duration::from_millis(100);

/// The command and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    /// As given; run with `sh -c` in a process group of its own.
    pub command: String,
    /// The process id of `sh` (the group's id); `None` when it did not start.
    pub pid: Option<u32>,
    /// The cgroup it ran in, ended with it; `None`: it ran in its process group only.
    pub cgroup: Option<PathBuf>,
    /// How long it was up to the stop (ns).
    pub ran_ns: i64,
    /// It exited by itself this long after its start (ns), before the stop.
    pub exited_early_after_ns: Option<i64>,
    /// What its group was sent at the end: none, SIGTERM, or SIGTERM then SIGKILL.
    pub stopped_with: Vec<String>,
    /// Its exit code, when it exited; `None` when ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended it; `None` when it exited.
    pub exit_signal: Option<i32>,
}

impl CommandOutcome {
    /// The command before it runs.
    pub fn planned(command: &str) -> CommandOutcome {
        CommandOutcome {
            command: command.into(),
            pid: None,
            cgroup: None,
            ran_ns: 0,
            exited_early_after_ns: None,
            stopped_with: Vec::new(),
            exit_code: None,
            exit_signal: None,
        }
    }
}

/// A running command.
#[derive(Debug)]
pub struct Command {
    stop: Arc<AtomicBool>,
    watcher: JoinHandle<CommandOutcome>,
    /// Why it has no cgroup of its own; `None`: it has one.
    pub uncontained: Option<String>,
}

impl Command {
    /// Starts `sh -c cmd` in a new process group; standard input and output
    /// are /dev/null (rtick's output stays its own), standard error is rtick's.
    /// It runs on `cpus` (`--load-cpus`), and so does all it starts.
    pub fn spawn(cmd: &str, cpus: &[usize]) -> Result<Command> {
        let mut sh = std::process::Command::new("sh");
        rtick::rt::set_child_affinity(&mut sh, cpus).context("--load-cpus: cannot confine the --load-cmd")?;
        // Spawned from the main thread, which lives as long as rtick: if rtick
        // is killed with SIGKILL, the kernel kills `sh` with it — not what sh
        // forked; the cgroup holds that.
        rtick::rt::kill_with_parent(&mut sh);
        let (cgroup, uncontained) = match cgroup(&mut sh)? {
            Ok(cg) => (Some(cg), None),
            Err(why) => (None, Some(why)),
        };
        // An early exit is timed from here, not from the watcher's start.
        let spawned = Instant::now();
        let child = sh
            .args(["-c", cmd])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("--load-cmd: cannot start sh -c '{cmd}'"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let outcome = CommandOutcome {
            pid: Some(child.id()),
            cgroup: cgroup.as_ref().map(|c| c.dir().to_path_buf()),
            ..CommandOutcome::planned(cmd)
        };
        let flag = stop.clone();
        let watcher = std::thread::Builder::new()
            .name("load-cmd".into())
            .spawn(move || watch(child, cgroup, outcome, &flag, spawned))
            .context("starting the --load-cmd watcher thread")?;
        Ok(Command { stop, watcher, uncontained })
    }

    /// Ends the command's group and says how it ended.
    pub fn stop(self) -> CommandOutcome {
        self.stop.store(true, Relaxed);
        self.watcher.join().unwrap_or_else(|_| CommandOutcome::planned("(the watcher thread panicked)"))
    }
}

/// A cgroup of rtick's own for the command, which `sh` joins before it runs
/// anything; or why none can be made (no cgroup v2 hierarchy is writable:
/// not root), for a warning: then only the process group and
/// `PR_SET_PDEATHSIG` end it.
fn cgroup(sh: &mut std::process::Command) -> Result<Result<ChildCgroup, String>> {
    let made = match rtick::cgroup::v2_mount(&rtick::system::SysRoot::default()) {
        Some(mount) => ChildCgroup::create(std::path::Path::new(&mount)).map_err(|e| format!("{mount}: {e}")),
        None => Err("no cgroup2 file system is mounted".into()),
    };
    match made {
        Ok(cg) => {
            cg.adopt(sh).with_context(|| format!("--load-cmd: cannot join the cgroup {}", cg.dir().display()))?;
            Ok(Ok(cg))
        }
        Err(why) => Ok(Err(why)),
    }
}

/// Waits for the stop flag (noting an early exit), then ends the group and
/// the cgroup, and only then reaps its leader and removes the cgroup.
fn watch(
    mut child: Child,
    cgroup: Option<ChildCgroup>,
    mut outcome: CommandOutcome,
    stop: &AtomicBool,
    spawned: Instant,
) -> CommandOutcome {
    let pgid = Pid::from_child(&child);
    // WNOWAIT: notices the leader's exit but leaves it a zombie (see the module's doc).
    let leader_exited = || {
        let how = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
        matches!(waitid(WaitId::Pid(pgid), how), Ok(Some(_)))
    };
    while !stop.load(Relaxed) {
        if outcome.exited_early_after_ns.is_none() && leader_exited() {
            outcome.exited_early_after_ns = Some(spawned.elapsed().as_nanos() as i64);
        }
        std::thread::sleep(POLL);
    }
    outcome.ran_ns = spawned.elapsed().as_nanos() as i64;
    // An exit seen within END_SLACK of the stop came with the end of the
    // measurement (the stop follows it by the measuring threads' joins and
    // this loop's poll), not before it: not an early exit.
    if outcome.exited_early_after_ns.is_some_and(|t| outcome.ran_ns - t <= END_SLACK.as_nanos() as i64) {
        outcome.exited_early_after_ns = None;
    }
    // The group outlives its leader while anything the command started runs.
    if group_alive(pgid) {
        let _ = kill_process_group(pgid, Signal::TERM);
        outcome.stopped_with.push("SIGTERM".into());
        let deadline = Instant::now() + GRACE;
        while group_alive(pgid) {
            if Instant::now() >= deadline {
                let _ = kill_process_group(pgid, Signal::KILL);
                outcome.stopped_with.push("SIGKILL".into());
                break;
            }
            std::thread::sleep(GRACE_POLL);
        }
    }
    // What left the group (setsid) is still in the cgroup.
    if let Some(cg) = cgroup.as_ref().filter(|c| c.populated()) {
        let _ = cg.kill();
        if outcome.stopped_with.last().is_none_or(|s| s != "SIGKILL") {
            outcome.stopped_with.push("SIGKILL".into());
        }
    }
    // The group is ended (or killed): the leader can be reaped now.
    if let Ok(s) = child.wait() {
        outcome.exit_code = s.code();
        outcome.exit_signal = s.signal();
    }
    drop(cgroup);
    outcome
}

/// Whether a process of group `pgid` still runs. `kill(-pgid, 0)` cannot
/// tell: the zombie leader is still a member, so /proc is read.
fn group_alive(pgid: Pid) -> bool {
    group_alive_in(std::path::Path::new("/proc"), pgid.as_raw_nonzero().get())
}

/// [`group_alive`] on a /proc at `proc`: a process of the group with a task
/// that has not ended. The process's own state is its main thread's: a
/// process whose main thread exited shows Z while its other threads run.
fn group_alive_in(proc: &std::path::Path, pgid: i32) -> bool {
    // Without /proc, assume it does: SIGKILL after the grace period, then the reap cannot hang.
    let Ok(dir) = std::fs::read_dir(proc) else { return true };
    // (state, pgrp): the fields after the command name in a `stat`.
    let state_and_group = |stat: &std::path::Path| {
        let stat = std::fs::read_to_string(stat).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        let f: Vec<&str> = rest.split_whitespace().take(3).collect();
        Some((f.first()? == &"Z", f.get(2)?.parse::<i32>().ok()?))
    };
    let numeric = |e: &std::fs::DirEntry| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
    dir.flatten().filter(numeric).any(|e| match state_and_group(&e.path().join("stat")) {
        Some((false, g)) => g == pgid,
        // Only a group member's threads are read: few processes are zombies.
        Some((true, g)) if g == pgid => std::fs::read_dir(e.path().join("task")).is_ok_and(|tasks| {
            tasks.flatten().any(|t| state_and_group(&t.path().join("stat")).is_some_and(|(zombie, _)| !zombie))
        }),
        _ => false,
    })
}

/// A signal's name, for the few a load's end involves; others by number.
pub fn signal_name(sig: i32) -> String {
    match sig {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        6 => "SIGABRT".into(),
        9 => "SIGKILL".into(),
        11 => "SIGSEGV".into(),
        13 => "SIGPIPE".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_lives_while_a_thread_of_a_zombie_leader_runs() {
        let proc = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let p = proc.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // Process 7 of group 7: its main thread has exited (Z), thread 8 sleeps.
        put("7/stat", "7 (a b) Z 1 7 7 0");
        put("7/task/7/stat", "7 (a b) Z 1 7 7 0");
        put("7/task/8/stat", "8 (a b) S 1 7 7 0");
        // Another group's running process, and not a process.
        put("9/stat", "9 (c) R 1 9 9 0");
        put("self/stat", "1 (d) R 0 7 7 0");
        assert!(group_alive_in(proc.path(), 7));
        put("7/task/8/stat", "8 (a b) Z 1 7 7 0");
        assert!(!group_alive_in(proc.path(), 7));
        put("10/stat", "10 (e) S 7 7 7 0");
        assert!(group_alive_in(proc.path(), 7));
        assert!(!group_alive_in(proc.path(), 8));
    }
}

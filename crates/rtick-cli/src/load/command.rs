//! `--load-cmd`: any command as a load, through `sh -c`, in a process group
//! of its own — so that a terminal's Ctrl-C reaches rtick alone (which then
//! ends the load in order), and so that the whole group, with whatever the
//! command started, can be ended at once: SIGTERM, then SIGKILL after
//! [`GRACE`] for a group that ignores it.
//!
//! A watcher thread notices when the command exits by itself, and when.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

use crate::export::json::LoadCommandJson;

/// How long the group has to end after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
/// How often the watcher looks at the command.
const POLL: Duration = Duration::from_millis(20);

/// A running command.
#[derive(Debug)]
pub struct Command {
    stop: Arc<AtomicBool>,
    watcher: JoinHandle<LoadCommandJson>,
}

impl Command {
    /// Starts `sh -c cmd` in a new process group; standard input and output
    /// are /dev/null (rtick's output stays its own), standard error is rtick's.
    pub fn spawn(cmd: &str) -> Result<Command> {
        let mut sh = std::process::Command::new("sh");
        // Spawned from the main thread, which lives as long as rtick: if rtick
        // is killed with SIGKILL (no chance to end the group), the kernel
        // kills `sh` — and the command, when sh runs it by exec — with it.
        rtick::rt::kill_with_parent(&mut sh);
        let child = sh
            .args(["-c", cmd])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("--load-cmd: cannot start sh -c '{cmd}'"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let json = LoadCommandJson { pid: Some(child.id()), ..LoadCommandJson::planned(cmd) };
        let flag = stop.clone();
        let watcher = std::thread::Builder::new()
            .name("load-cmd".into())
            .spawn(move || watch(child, json, &flag))
            .context("starting the --load-cmd watcher thread")?;
        Ok(Command { stop, watcher })
    }

    /// Ends the command's group and says how it ended.
    pub fn stop(self) -> LoadCommandJson {
        self.stop.store(true, Relaxed);
        self.watcher.join().unwrap_or_else(|_| LoadCommandJson::planned("(the watcher thread panicked)"))
    }
}

/// Waits for the stop flag (noting an early exit), then ends the group.
fn watch(mut child: Child, mut json: LoadCommandJson, stop: &AtomicBool) -> LoadCommandJson {
    let started = Instant::now();
    let pgid = Pid::from_child(&child);
    let mut status: Option<ExitStatus> = None;
    while !stop.load(Relaxed) {
        if status.is_none() {
            if let Ok(Some(s)) = child.try_wait() {
                status = Some(s);
                json.exited_early_after_ns = Some(started.elapsed().as_nanos() as i64);
            }
        }
        std::thread::sleep(POLL);
    }
    json.ran_ns = started.elapsed().as_nanos() as i64;
    // The group outlives its leader while anything the command started runs.
    let group_alive = || test_kill_process_group(pgid).is_ok();
    if status.is_none() || group_alive() {
        let _ = kill_process_group(pgid, Signal::TERM);
        json.stopped_with.push("SIGTERM".into());
        let deadline = Instant::now() + GRACE;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            if status.is_some() && !group_alive() {
                break;
            }
            if Instant::now() >= deadline {
                let _ = kill_process_group(pgid, Signal::KILL);
                json.stopped_with.push("SIGKILL".into());
                if status.is_none() {
                    status = child.wait().ok();
                }
                break;
            }
            std::thread::sleep(POLL);
        }
    }
    if let Some(s) = status {
        json.exit_code = s.code();
        json.exit_signal = s.signal();
    }
    json
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

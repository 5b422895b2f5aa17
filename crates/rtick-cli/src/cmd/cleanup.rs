//! `rtick cleanup`: removes what rtick processes killed with SIGKILL left —
//! tracefs instances that still trace, cgroups whose `--load-cmd` still
//! runs, temporary output files — and the warning every measuring command
//! prints about them, naming this command.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use rtick::leftovers::{Leftover, LeftoverKind};
use rtick::system::SysRoot;

use crate::cli::CleanupArgs;
use crate::Usage;

/// Finds and removes the leftovers; exit 1 when one could not be removed.
pub fn run(a: &CleanupArgs) -> Result<ExitCode> {
    if let Some(d) = a.dirs.iter().find(|d| !d.is_dir()) {
        return Err(Usage(format!("DIR: {} is not a directory", d.display())).into());
    }
    let dirs = if a.dirs.is_empty() { vec![PathBuf::from(".")] } else { a.dirs.clone() };
    let root = rtick::ktrace::root(a.tracefs.as_deref());
    let mut found = rtick::leftovers::find(&root, &SysRoot::default());
    found.extend(dirs.iter().flat_map(|d| rtick::leftovers::temp_files(d)));
    if found.is_empty() {
        println!("nothing left by a killed rtick");
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for l in &found {
        // Described first: a cgroup's processes are gone after.
        let what = describe(l);
        if a.dry_run {
            println!("would remove {what}");
            continue;
        }
        match l.remove() {
            Ok(()) => println!("removed {what}"),
            Err(e) => {
                eprintln!("rtick: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// What a leftover is, for people: its path, whose it was, what it is.
fn describe(l: &Leftover) -> String {
    format!("{} (rtick {}): {}", l.path.display(), l.pid, phrase(&l.kind))
}

/// The kind of leftover in words, shared by `rtick cleanup` and the warnings.
fn phrase(kind: &LeftoverKind) -> String {
    match kind {
        LeftoverKind::Instance => "a tracefs instance, still tracing".into(),
        LeftoverKind::Cgroup { pids } if pids.is_empty() => "the empty cgroup of a --load-cmd".into(),
        LeftoverKind::Cgroup { pids } => format!("the cgroup of a --load-cmd still running: {}", pid_list(pids)),
        LeftoverKind::TempFile => "a temporary output file, never completed".into(),
    }
}

fn pid_list(pids: &[i32]) -> String {
    let list: Vec<String> = pids.iter().map(|p| format!("{p} ({})", comm(*p))).collect();
    format!("{} {}", rtick::text::noun(pids.len() as u64, "pid"), list.join(", "))
}

/// A process's command name, for a warning ("?" when unreadable).
fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map_or_else(|_| "?".into(), |c| c.trim().to_string())
}

/// The warnings a measuring command prints about what killed rticks left:
/// instances under `tracefs` (default /sys/kernel/tracing), cgroups, and
/// temporary files in the current directory. Each names the command that
/// removes it.
pub fn warnings(tracefs: Option<&Path>) -> Vec<String> {
    let root = rtick::ktrace::root(tracefs);
    let mut found = rtick::leftovers::find(&root, &SysRoot::default());
    found.extend(rtick::leftovers::temp_files(Path::new(".")));
    let cmd = match tracefs {
        Some(t) if !found.is_empty() && root != rtick::ktrace::root(None) => {
            format!("rtick cleanup --tracefs {}", t.display())
        }
        _ => "rtick cleanup".into(),
    };
    found
        .iter()
        .map(|l| {
            let (cost, verb) = match &l.kind {
                LeftoverKind::Instance => (" (slowing what is measured)", "removes it"),
                LeftoverKind::Cgroup { pids } if !pids.is_empty() => (" (a load on what is measured)", "ends it"),
                _ => ("", "removes it"),
            };
            format!(
                "{} was left by an rtick that no longer runs (pid {}): {}{cost}: `{cmd}` {verb}",
                l.path.display(),
                l.pid,
                phrase(&l.kind)
            )
        })
        .collect()
}

//! A child process that does not outlive its parent: `PR_SET_PDEATHSIG`,
//! set in the child between fork and exec.
//!
//! rtick ends the commands it starts (`measure --load-cmd`) in order at
//! every exit it controls; this covers the one it does not: rtick killed
//! with SIGKILL. The kernel then sends the child SIGKILL when the thread
//! that forked it ends, so spawn from a thread that lives as long as the
//! child should (the main thread).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the child of `cmd` receive SIGKILL when the spawning thread ends.
/// A parent that died before the child set it is noticed too: the spawn
/// then fails with ESRCH instead of leaving an orphan.
pub fn kill_with_parent(cmd: &mut Command) -> &mut Command {
    // getppid() in the child is the parent's pid (the process, not the thread).
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child after fork, before exec: it
    // calls only prctl and getppid, which are async-signal-safe, allocates
    // nothing and touches no lock; io::Error::from_raw_os_error and
    // last_os_error do not allocate.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    /// Spawns `sleep 100` from a thread that then ends, and says how it ended.
    fn sleep_from_a_thread_that_ends(kill: bool) -> Option<i32> {
        let mut child = std::thread::spawn(move || {
            let mut cmd = Command::new("sleep");
            cmd.arg("100");
            if kill {
                kill_with_parent(&mut cmd);
            }
            cmd.spawn().unwrap()
        })
        .join()
        .unwrap();
        // The kernel kills it as the thread ends; give it a moment.
        for _ in 0..200 {
            if let Some(s) = child.try_wait().unwrap() {
                return s.signal();
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        None
    }

    #[test]
    fn the_child_is_killed_when_the_spawning_thread_ends() {
        assert_eq!(sleep_from_a_thread_that_ends(true), Some(libc::SIGKILL));
        // And without it, the child lives on (the test kills it).
        assert_eq!(sleep_from_a_thread_that_ends(false), None);
    }
}

//! A child process that does not outlive its parent: `PR_SET_PDEATHSIG`,
//! set in the child between fork and exec.
//!
//! rtick ends the commands it starts (`measure --load-cmd`) in order at
//! every exit it controls; this covers the child itself at the one it does
//! not: rtick killed with SIGKILL. The kernel then sends the child SIGKILL
//! when the thread that forked it ends, so spawn from a thread that lives as
//! long as the child should (the main thread). What the child forked is not
//! covered: a cgroup of rtick's own holds that ([`join_cgroup`]).
//!
//! The same place confines such a child to a set of CPUs
//! (`--load-cpus`), before it runs anything.

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

/// Confines the child of `cmd` to `cpus` (`sched_setaffinity` between fork
/// and exec): the program and every process it starts inherit the set.
/// EINVAL for a CPU beyond `CPU_SETSIZE`, before anything is spawned.
pub fn set_child_affinity<'a>(cmd: &'a mut Command, cpus: &[usize]) -> io::Result<&'a mut Command> {
    // Built here, in the parent: the closure only reads this copy.
    let set = super::sched::cpu_set(cpus)?;
    // SAFETY: the closure runs in the child after fork, before exec. It calls
    // only sched_setaffinity, which POSIX does not list as async-signal-safe,
    // but glibc's (and musl's) wrapper is the bare system call: it allocates
    // nothing and takes no lock, so the lone thread of the forked child cannot
    // deadlock on a lock another thread of the parent held at the fork. The
    // cpu_set_t it reads was built before the fork and is of the size passed
    // (pid 0: the child itself); last_os_error does not allocate.
    Ok(unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    })
}

/// Moves the child of `cmd` into the cgroup whose `cgroup.procs` is open
/// as `procs` (writing "0" there between fork and exec moves the writer):
/// the program and every process it starts are born in that cgroup.
pub fn join_cgroup(cmd: &mut Command, procs: std::os::fd::OwnedFd) -> &mut Command {
    use std::os::fd::AsRawFd;
    // SAFETY: the closure runs in the child after fork, before exec. It
    // calls only write(2), which is async-signal-safe, on a descriptor the
    // closure owns (open until the exec closes it: O_CLOEXEC), from a static
    // one-byte buffer; it allocates nothing and takes no lock;
    // last_os_error does not allocate.
    unsafe {
        cmd.pre_exec(move || {
            if libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                return Err(io::Error::last_os_error());
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
    fn the_child_runs_on_the_cpus_given() {
        let allowed = crate::sys::sched::affinity().unwrap();
        // Confined to one CPU already, the child would show it without the feature.
        if allowed.len() < 2 {
            return crate::sys::skip::skip("this test process may run on one CPU only (taskset?)", false);
        }
        let cpu = *allowed.last().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
        let out = set_child_affinity(&mut cmd, &[cpu]).unwrap().output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("Cpus_allowed_list:\t{cpu}\n"));
        assert_eq!(
            set_child_affinity(&mut Command::new("true"), &[usize::MAX]).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn the_child_is_killed_when_the_spawning_thread_ends() {
        assert_eq!(sleep_from_a_thread_that_ends(true), Some(libc::SIGKILL));
        // And without it, the child lives on (the test kills it).
        assert_eq!(sleep_from_a_thread_that_ends(false), None);
    }
}

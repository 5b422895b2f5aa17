//! Whether a process exists, whoever owns it: `kill(pid, 0)`, which sends
//! nothing. Unlike a look in `/proc`, it sees processes that `/proc` hides
//! (`hidepid`, systemd's `ProtectProc=invisible`).

/// Whether a process with `pid` exists in this pid namespace.
pub fn exists(pid: i32) -> bool {
    // 0 and negative pids name process groups, not one process.
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing (the kernel only checks the pid and
    // the permission); `pid` is positive, so it names a single process.
    let r = unsafe { libc::kill(pid, 0) };
    // EPERM: it exists, we may not signal it.
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends SIGKILL to the process `pid` (positive: never a group); a
/// process already gone is not an error worth reporting.
pub fn kill(pid: i32) {
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) with a positive pid signals that one process and
    // touches no memory of ours.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_init_exist_and_a_free_pid_does_not() {
        assert!(exists(std::process::id() as i32));
        assert!(exists(1));
        assert!(!exists(0) && !exists(-1));
        let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
        let free = (1..100).map(|k| max - k).find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
        assert!(!exists(free.unwrap()));
    }
}

//! Memory locking and prefaulting (seed 002): page faults are latency.

use std::io;

use super::check_ret;

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`.
pub fn lock_all() -> io::Result<()> {
    // SAFETY: mlockall takes flags only.
    check_ret(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) })?;
    Ok(())
}

/// `munlockall()`.
pub fn unlock_all() -> io::Result<()> {
    // SAFETY: munlockall takes no arguments.
    check_ret(unsafe { libc::munlockall() })?;
    Ok(())
}

/// Tells glibc's malloc never to return memory to the kernel and never to
/// serve allocations with their own mmap, so heap pages touched once stay
/// mapped (and, after `mlockall`, locked) for the life of the process.
pub fn keep_heap() {
    // SAFETY: mallopt takes two integers; failure only means the option is unknown.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
        libc::mallopt(libc::M_MMAP_MAX, 0);
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: a plain query.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

//! Memory locking and prefaulting: page faults are latency. Also
//! the sizes that bound a prefault: physical memory, RLIMIT_MEMLOCK, and the
//! calling thread's stack.

use std::io;
use std::mem::MaybeUninit;

use super::{check_code, check_ret};

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

/// Physical memory in bytes (`_SC_PHYS_PAGES` × page size); `None` when
/// the system does not say.
pub fn physical_memory() -> Option<u64> {
    // SAFETY: a plain query.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    u64::try_from(pages).ok().filter(|p| *p > 0).map(|p| p.saturating_mul(page_size() as u64))
}

/// The soft RLIMIT_MEMLOCK in bytes; `None` when unlimited.
pub fn memlock_limit() -> io::Result<Option<u64>> {
    let mut lim = MaybeUninit::<libc::rlimit>::uninit();
    // SAFETY: lim is a valid out pointer for getrlimit.
    check_ret(unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, lim.as_mut_ptr()) })?;
    // SAFETY: getrlimit succeeded and filled lim.
    let cur = unsafe { lim.assume_init() }.rlim_cur;
    Ok((cur != libc::RLIM_INFINITY).then_some(cur))
}

/// The calling thread's stack as `pthread_getattr_np` reports it: its lowest
/// usable address (above the guard page) and its size. For a thread glibc
/// created these are the stack it allocated; for the main thread glibc
/// derives them from RLIMIT_STACK and the mapping in /proc/self/maps.
pub fn thread_stack() -> io::Result<(usize, usize)> {
    let mut attr = MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: on success pthread_getattr_np initialises attr for the given thread.
    check_code(unsafe { libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) })?;
    let mut addr: *mut libc::c_void = std::ptr::null_mut();
    let mut size: libc::size_t = 0;
    // SAFETY: attr was initialised just above; addr and size are valid out
    // pointers; attr is destroyed once, after its last use.
    let code = unsafe {
        let code = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        code
    };
    check_code(code)?;
    Ok((addr as usize, size))
}

/// Bytes of the calling thread's stack below the caller's frame: how deep
/// it can still grow (the stack grows down on every architecture Linux
/// runs rtick on). Out of line, so that its frame sits just below the caller's.
#[inline(never)]
pub fn stack_left() -> io::Result<usize> {
    let (low, size) = thread_stack()?;
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    if here < low || here - low > size {
        return Err(io::Error::other(format!(
            "this frame ({here:#x}) is outside the stack pthread_getattr_np reports ({low:#x}, {size} bytes)"
        )));
    }
    Ok(here - low)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread gets at least the stack it asked for (glibc may hand it a
    /// larger one from its cache of ended threads' stacks), and the frame of
    /// the caller lies in it.
    #[test]
    fn a_spawned_thread_stack_holds_its_frames() {
        let size = 512 << 10;
        std::thread::Builder::new()
            .stack_size(size)
            .spawn(move || {
                let (low, reported) = thread_stack().unwrap();
                assert!(reported >= size - (64 << 10), "{reported}");
                let local = 0u8;
                let here = std::hint::black_box(&local) as *const u8 as usize;
                assert!(low < here && here < low + reported, "{here:#x} in {low:#x} + {reported}");
                let left = stack_left().unwrap();
                assert!(left > size - (64 << 10) && left < here - low, "{left} of {reported}");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// Against what /proc says of the same limits.
    #[test]
    fn memory_limits_are_read() {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let kb: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:")?.trim().strip_suffix(" kB")?.parse().ok())
            .unwrap();
        assert_eq!(physical_memory(), Some(kb * 1024), "glibc's _SC_PHYS_PAGES is sysinfo's totalram, as MemTotal");
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let soft = limits.lines().find_map(|l| l.strip_prefix("Max locked memory")?.split_whitespace().next()).unwrap();
        let want = if soft == "unlimited" { None } else { Some(soft.parse::<u64>().unwrap()) };
        assert_eq!(memlock_limit().unwrap(), want);
    }
}

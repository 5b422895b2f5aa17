//! Timeouts of calls that wait for file descriptors, used with none: ppoll,
//! pselect. A signal returns EINTR to the caller, which recomputes the
//! remaining time to its deadline.

use std::io;

use super::last_error;
use crate::time::Nanos;

/// `ppoll(NULL, 0, timeout, NULL)`.
#[inline]
pub fn ppoll(timeout: Nanos) -> io::Result<()> {
    let ts = timeout.to_timespec();
    // SAFETY: no fds are passed (NULL, 0); ts is valid; a NULL sigmask leaves the mask alone.
    let r = unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) };
    if r < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// `pselect(0, NULL, NULL, NULL, timeout, NULL)`.
#[inline]
pub fn pselect(timeout: Nanos) -> io::Result<()> {
    let ts = timeout.to_timespec();
    // SAFETY: no fd sets are passed; ts is valid; a NULL sigmask leaves the mask alone.
    let r = unsafe {
        libc::pselect(0, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), &ts, std::ptr::null())
    };
    if r < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// `usleep(µs)`.
#[inline]
pub fn usleep(us: u32) -> io::Result<()> {
    // SAFETY: plain call.
    if unsafe { libc::usleep(us) } < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// The raw `nanosleep` system call (glibc's `nanosleep()` is a
/// `clock_nanosleep` system call these days; cyclictest --system means this one).
#[inline]
pub fn sys_nanosleep(span: Nanos) -> io::Result<()> {
    let mut req = span.to_timespec();
    loop {
        let mut rem = std::mem::MaybeUninit::<libc::timespec>::uninit();
        // SAFETY: req is valid and rem a valid out pointer, as nanosleep(2) takes them.
        let r = unsafe { libc::syscall(libc::SYS_nanosleep, &req as *const libc::timespec, rem.as_mut_ptr()) };
        if r == 0 {
            return Ok(());
        }
        let e = last_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
        // SAFETY: on EINTR the kernel wrote the remaining time.
        req = unsafe { rem.assume_init() };
    }
}

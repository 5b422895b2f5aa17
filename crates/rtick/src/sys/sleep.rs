//! Relative sleeps on no chosen clock: `usleep`, and the raw `nanosleep`
//! system call (the sleeps on a clock are `clock_nanosleep`, in `clock`).

use std::io;

use super::last_error;
use crate::time::Nanos;

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

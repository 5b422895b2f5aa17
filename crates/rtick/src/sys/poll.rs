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

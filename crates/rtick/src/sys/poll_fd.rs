//! Waiting until one of several file descriptors is readable: `poll(2)`.
//! The kernel-trace reader waits on its per-CPU `trace_pipe_raw` files and
//! on the socket that asks it to stop.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::last_error;
use crate::time::Nanos;

/// Waits up to `timeout` for input on any of `fds`; `ready[i]` says whether
/// `fds[i]` is readable (or at its end, or in error: a read then tells
/// which). Returns how many are; 0 on timeout or when a signal interrupted
/// the wait.
pub fn wait_readable(fds: &[BorrowedFd<'_>], timeout: Nanos, ready: &mut Vec<bool>) -> io::Result<usize> {
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    // Rounded up, so a short timeout does not become a busy loop.
    let ms = (timeout.as_ns().max(0) + 999_999) / 1_000_000;
    let ms = libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX);
    // SAFETY: pfds is a valid array of pfds.len() pollfd structs, which poll
    // reads and writes only within; the fds are borrowed, so open.
    let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    ready.clear();
    if r < 0 {
        let e = last_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            ready.resize(fds.len(), false);
            return Ok(0);
        }
        return Err(e);
    }
    ready.extend(pfds.iter().map(|p| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0));
    Ok(r as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn reports_which_descriptor_is_readable_and_times_out() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let (_c, d) = UnixStream::pair().unwrap();
        let mut ready = Vec::new();
        assert_eq!(wait_readable(&[b.as_fd(), d.as_fd()], Nanos::from_ms(1), &mut ready).unwrap(), 0);
        assert_eq!(ready, [false, false]);
        a.write_all(b"x").unwrap();
        assert_eq!(wait_readable(&[b.as_fd(), d.as_fd()], Nanos::from_secs(5), &mut ready).unwrap(), 1);
        assert_eq!(ready, [true, false]);
    }
}

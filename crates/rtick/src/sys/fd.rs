//! File-descriptor timers: timerfd, and epoll around it.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::{check_ret, last_error};
use crate::time::{Nanos, Time};

/// A timerfd (`timerfd_create`), closed on drop.
#[derive(Debug)]
pub struct TimerFd(OwnedFd);

impl TimerFd {
    /// Creates a timerfd on `clock` (blocking reads).
    pub fn new(clock: libc::clockid_t) -> io::Result<TimerFd> {
        // SAFETY: plain call; a returned fd is fresh and owned by us.
        let fd = check_ret(unsafe { libc::timerfd_create(clock, libc::TFD_CLOEXEC) })?;
        // SAFETY: fd was just returned by timerfd_create and is owned by nobody else.
        Ok(TimerFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Arms it to expire at `first` (absolute) and every `interval` after;
    /// `first` of zero disarms (and resets the expiration count).
    pub fn arm(&self, first: Time, interval: Nanos) -> io::Result<()> {
        let spec = libc::itimerspec { it_interval: interval.to_timespec(), it_value: first.to_timespec() };
        // SAFETY: the fd is live; spec is valid; the old value may be NULL.
        check_ret(unsafe {
            libc::timerfd_settime(self.0.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        })?;
        Ok(())
    }

    /// Blocks until an expiration and returns how many happened since the last read.
    #[inline]
    pub fn read(&self) -> io::Result<u64> {
        let mut n = 0u64;
        loop {
            // SAFETY: n is a valid 8-byte buffer, the size a timerfd read needs.
            let r = unsafe { libc::read(self.0.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
            if r == 8 {
                return Ok(n);
            }
            let e = last_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl AsFd for TimerFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// An epoll instance, closed on drop.
#[derive(Debug)]
pub struct Epoll(OwnedFd);

impl Epoll {
    /// `epoll_create1(EPOLL_CLOEXEC)`.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain call; a returned fd is fresh and owned by us.
        let fd = check_ret(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fd was just returned by epoll_create1 and is owned by nobody else.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for input. A borrowed fd, not a raw number: the caller
    /// can only name a descriptor it holds open.
    pub fn add(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let fd = fd.as_raw_fd();
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
        // SAFETY: both fds are live (ours, and a borrowed one); ev is valid for the call.
        check_ret(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// `epoll_wait` without timeout; returns the number of ready fds, repeating on EINTR.
    #[inline]
    pub fn wait(&self) -> io::Result<usize> {
        let mut ev = MaybeUninit::<libc::epoll_event>::uninit();
        loop {
            // SAFETY: ev has room for the one event asked for.
            let r = unsafe { libc::epoll_wait(self.0.as_raw_fd(), ev.as_mut_ptr(), 1, -1) };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = last_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    /// `epoll_pwait2` with a nanosecond timeout (Linux 5.11+); returns ready
    /// fds (0 on timeout). EINTR is returned to the caller, which recomputes
    /// the remaining time.
    #[inline]
    pub fn pwait2(&self, timeout: Nanos) -> io::Result<usize> {
        let ts = timeout.to_timespec();
        let mut ev = MaybeUninit::<libc::epoll_event>::uninit();
        // SAFETY: raw epoll_pwait2(epfd, events, maxevents, timeout, sigmask, sigsetsize):
        // ev has room for one event, ts is valid, a NULL sigmask leaves the mask alone.
        let r = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.0.as_raw_fd(),
                ev.as_mut_ptr(),
                1,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                8usize,
            )
        };
        if r < 0 {
            Err(last_error())
        } else {
            Ok(r as usize)
        }
    }
}

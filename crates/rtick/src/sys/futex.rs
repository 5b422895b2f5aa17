//! `FUTEX_WAIT_BITSET` with an absolute timeout, and a condition variable on
//! a chosen clock (`pthread_cond_timedwait`).

use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::AtomicU32;

use super::{check_code, last_error};
use crate::time::Time;

/// Waits on `word` (while it holds `expected`) until the absolute `deadline`
/// on CLOCK_MONOTONIC, or CLOCK_REALTIME when `realtime`. `Ok` on timeout
/// (or a wake-up); EINTR, and EAGAIN when the word does not hold `expected`,
/// return to the caller as errors.
#[inline]
pub fn wait_bitset_until(word: &AtomicU32, expected: u32, deadline: Time, realtime: bool) -> io::Result<()> {
    let ts = deadline.to_timespec();
    let op = libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG | if realtime { libc::FUTEX_CLOCK_REALTIME } else { 0 };
    // SAFETY: futex(uaddr, op, val, timeout, uaddr2, val3): uaddr points to a
    // live, aligned u32 (AtomicU32 has u32's layout); ts is valid; uaddr2 is unused.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        )
    };
    if r == 0 {
        return Ok(()); // woken (nobody wakes it; treated as a spurious return)
    }
    let e = last_error();
    match e.raw_os_error() {
        Some(libc::ETIMEDOUT) => Ok(()),
        _ => Err(e),
    }
}

/// A mutex and a condition variable whose timed waits use `clock`. The
/// pthread objects live in boxes so they never move. `Send` by its fields
/// (a condition variable nobody waits on is bound to no thread), not `Sync`.
pub struct ClockCondvar {
    mutex: Box<UnsafeCell<libc::pthread_mutex_t>>,
    cond: Box<UnsafeCell<libc::pthread_cond_t>>,
}

impl std::fmt::Debug for ClockCondvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClockCondvar")
    }
}

impl ClockCondvar {
    /// A condition variable whose timeouts are on `clock` (MONOTONIC or REALTIME).
    pub fn new(clock: libc::clockid_t) -> io::Result<ClockCondvar> {
        let mutex = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        let cond = Box::new(UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER));
        let mut attr = std::mem::MaybeUninit::<libc::pthread_condattr_t>::uninit();
        // SAFETY: attr is initialised by pthread_condattr_init before use and
        // destroyed after; cond is a valid, unmoving pthread_cond_t.
        unsafe {
            check_code(libc::pthread_condattr_init(attr.as_mut_ptr()))?;
            let set = check_code(libc::pthread_condattr_setclock(attr.as_mut_ptr(), clock));
            let init = set.and_then(|_| check_code(libc::pthread_cond_init(cond.get(), attr.as_ptr())));
            libc::pthread_condattr_destroy(attr.as_mut_ptr());
            init?;
        }
        Ok(ClockCondvar { mutex, cond })
    }

    /// Waits on the condition variable until `deadline` (absolute, on the clock
    /// it was made with); spurious wake-ups wait again.
    #[inline]
    pub fn wait_until(&mut self, deadline: Time) -> io::Result<()> {
        let ts = deadline.to_timespec();
        // SAFETY: mutex and cond are initialised and never move; the mutex is
        // locked around the wait as pthread_cond_timedwait requires.
        unsafe {
            check_code(libc::pthread_mutex_lock(self.mutex.get()))?;
            let mut rc;
            loop {
                rc = libc::pthread_cond_timedwait(self.cond.get(), self.mutex.get(), &ts);
                if rc != 0 {
                    break;
                }
            }
            libc::pthread_mutex_unlock(self.mutex.get());
            if rc == libc::ETIMEDOUT {
                Ok(())
            } else {
                check_code(rc)
            }
        }
    }
}

impl Drop for ClockCondvar {
    fn drop(&mut self) {
        // SAFETY: both objects were initialised and nobody waits on them any more.
        unsafe {
            libc::pthread_cond_destroy(self.cond.get());
            libc::pthread_mutex_destroy(self.mutex.get());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Nanos;

    #[test]
    fn futex_and_condvar_time_out_at_the_deadline() {
        let c = crate::sys::clock::PosixClock::Monotonic;
        let w = AtomicU32::new(0);
        let d = super::super::clock::now(c) + Nanos::from_us(300);
        wait_bitset_until(&w, 0, d, false).unwrap();
        assert!(super::super::clock::now(c) >= d);
        let mut cv = ClockCondvar::new(c.raw()).unwrap();
        let d = super::super::clock::now(c) + Nanos::from_us(300);
        cv.wait_until(d).unwrap();
        assert!(super::super::clock::now(c) >= d);
    }

    /// The kernel refuses to wait on a word that does not hold the value
    /// expected (EAGAIN), and says so, rather than sleep until the deadline.
    #[test]
    fn futex_on_a_changed_word_is_eagain() {
        let w = AtomicU32::new(1);
        // A deadline far off: were the mismatch ignored, this would time out, Ok.
        let d = super::super::clock::now(crate::sys::clock::PosixClock::Monotonic) + Nanos::from_secs(30);
        let e = wait_bitset_until(&w, 0, d, false).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN), "{e}");
    }
}

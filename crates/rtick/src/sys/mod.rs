//! The only place in the crate that calls into libc with `unsafe`.
//!
//! Each function wraps one kernel interface, returns typed results, and
//! carries a `// SAFETY:` comment on every unsafe block. Callers above this
//! layer never see raw pointers or errno.

pub mod child;
pub mod claim;
pub mod clock;
pub mod deadline;
pub mod fd;
pub mod futex;
pub mod mem;
pub mod poll;
pub mod poll_fd;
pub mod process;
pub mod sched;
pub mod signal;
pub mod sleep;
pub mod stdio;
pub mod timer;
pub mod tsc;

/// The rule of every test crate for a test that cannot run on this machine
/// (it fails under CI), for the unit tests of the kernel interfaces too.
#[cfg(test)]
#[path = "../../tests/support/skip.rs"]
pub(crate) mod skip;

use std::io;

/// The errno of the last failed call, as an `io::Error`.
pub(crate) fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// Turns a returned error *code* (pthread and clock_nanosleep style) into a result.
pub(crate) fn check_code(code: libc::c_int) -> io::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(code))
    }
}

/// Turns a `-1 and errno` return into a result.
pub(crate) fn check_ret(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(last_error())
    } else {
        Ok(ret)
    }
}

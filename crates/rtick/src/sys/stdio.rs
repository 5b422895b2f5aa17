//! Standard output, diverted: for a program whose machine-readable output
//! goes to stdout (`--json -`) while its report for people goes to stderr.

use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};

use super::check_ret;

/// Duplicates standard output, then points descriptor 1 at standard error.
/// Returns the original standard output. Fails (EBADF) when descriptor 1 or
/// 2 is closed, changing nothing.
pub fn divert_stdout_to_stderr() -> io::Result<OwnedFd> {
    // Held until 1 is replaced: no write through std's Stdout is in flight.
    let mut out = io::stdout().lock();
    out.flush()?;
    let original = out.as_fd().try_clone_to_owned()?;
    // SAFETY: dup2 takes two numbers and touches no memory. A closed 2 makes
    // it fail with EBADF (returned; 1 unchanged); else it replaces 1 in one
    // step. Descriptor 1 is open (cloned above) and belongs to std's Stdout,
    // whose lock is held: std opens /dev/null on any of 0-2 closed at start,
    // so no OwnedFd of this process can be holding number 1.
    check_ret(unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) })?;
    Ok(original)
}

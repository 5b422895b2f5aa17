//! Standard output, diverted: for a program whose machine-readable output
//! goes to stdout (`--json -`) while its report for people goes to stderr.

use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};

use super::check_ret;

/// Duplicates standard output, then points descriptor 1 at standard error.
/// Returns the original standard output.
pub fn divert_stdout_to_stderr() -> io::Result<OwnedFd> {
    io::stdout().flush()?;
    let original = io::stdout().as_fd().try_clone_to_owned()?;
    // SAFETY: dup2 on two descriptors this process has open (0-2 are always
    // open, and the clone above proved 1 is); it replaces 1 atomically.
    check_ret(unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) })?;
    Ok(original)
}

//! Typed errors: which call failed, why, and what would fix it.

use std::io;

/// Everything the library can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed. `fix` says what would make it succeed.
    // The OS error is part of the message, not a `#[source]`: printers that
    // walk the source chain would otherwise repeat it.
    #[error("{call} failed: {os}{}", fix_suffix(.fix))]
    Sys {
        /// The failing call, e.g. `sched_setscheduler(SCHED_FIFO, 90)`.
        call: String,
        /// The OS error.
        os: io::Error,
        /// What would fix it, e.g. "run as root or grant CAP_SYS_NICE".
        fix: String,
    },
    /// A configuration value was rejected before anything ran.
    #[error("{0}")]
    Invalid(String),
    /// A wake-up came after the following deadline, with `OverrunPolicy::Fail`.
    /// The schedule has already skipped to the next future deadline.
    #[error("overrun at cycle {cycle}: woke {latency_ns} ns late, {missed} deadlines skipped")]
    Overrun {
        /// The cycle (grid index) of the late wake-up.
        cycle: u64,
        /// Its latency.
        latency_ns: i64,
        /// Deadlines skipped.
        missed: u64,
    },
    /// A measuring thread panicked: a bug in rtick (please report it with
    /// the message).
    #[error("measuring thread {thread} panicked: {message}")]
    Panicked {
        /// The thread's index.
        thread: usize,
        /// The panic's message.
        message: String,
    },
    /// A mechanism cannot run on this system or in this configuration.
    #[error("{mechanism} is unavailable: {reason}")]
    Unavailable {
        /// The mechanism's command-line name.
        mechanism: &'static str,
        /// Why.
        reason: String,
    },
}

fn fix_suffix(fix: &str) -> String {
    if fix.is_empty() {
        String::new()
    } else {
        format!(" — {fix}")
    }
}

impl Error {
    /// A failed call with an explicit fix.
    pub fn sys(call: impl Into<String>, source: io::Error, fix: impl Into<String>) -> Error {
        Error::Sys { call: call.into(), os: source, fix: fix.into() }
    }

    /// Whether this is a permission problem (EPERM / EACCES).
    pub fn is_permission(&self) -> bool {
        matches!(self, Error::Sys { os, .. }
            if matches!(os.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)))
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

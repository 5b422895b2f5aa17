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
    /// A measuring thread panicked: a bug in rtick, which the message says
    /// together with the panic's own (on one line) and how to report it.
    #[error(
        "measuring thread {thread} panicked: {}; this is a bug in rtick: please report it with the command line",
        one_line(.message)
    )]
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

/// A panic message on one line (a multi-line one keeps its lines, joined).
fn one_line(message: &str) -> String {
    message.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" / ")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_reported_as_a_bug_on_one_line() {
        let e = Error::Panicked { thread: 2, message: "slot 5 of 4".into() };
        assert_eq!(
            e.to_string(),
            "measuring thread 2 panicked: slot 5 of 4; this is a bug in rtick: please report it with the command line"
        );
        let e = Error::Panicked { thread: 0, message: "assertion failed\n  left: 1\n right: 2\n".into() };
        assert_eq!(
            e.to_string(),
            "measuring thread 0 panicked: assertion failed / left: 1 / right: 2; \
             this is a bug in rtick: please report it with the command line"
        );
    }
}

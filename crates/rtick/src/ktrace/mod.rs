//! The kernel's own account of each wake-up: trace events of the measured
//! CPUs, read in binary from a tracefs instance of rtick's own.
//!
//! Explaining a latency needs what the kernel did between the deadline and
//! the thread's clock read: when the timer interrupt came, when the thread
//! was woken, who ran before it was switched in. The trace events
//! ([`Tracepoint`]) say it; this module gets them into rtick exactly and
//! cheaply, on any kernel with the ordinary events (no timerlat tracer):
//!
//! - [`format`](mod@format): field offsets from each event's `format` file and the page
//!   and record headers, resolved once;
//! - [`page`]: the ring-buffer pages of `per_cpu/cpuN/trace_pipe_raw`,
//!   with timestamps rebuilt as the kernel does and lost events counted;
//! - [`events`]: the typed events the analysis reads;
//! - [`instance`]: `instances/rtick-<pid>`, never the global trace;
//! - [`kallsyms`]: kernel addresses named from `/proc/kallsyms`;
//! - [`stack`]: the kernel stack where each wake-up was due (or where a
//!   task gave a CPU back);
//! - [`reader`]: the thread that drains the buffers during the run;
//! - [`Session`]: all of it from start to [`Capture`];
//! - [`Stream`]: the same instance read by its owner as it goes, for a
//!   monitor that runs for months.
//!
//! ```no_run
//! use rtick::ktrace::{Options, Session};
//! use std::path::Path;
//!
//! let session = Session::start(Path::new("/sys/kernel/tracing"), &[1], &Options::default())?;
//! // … run the measurement on CPU 1 …
//! let capture = session.stop()?;
//! assert!(!capture.lost.any(), "events lost: {:?}", capture.lost);
//! for e in &capture.cpu(1).unwrap().events {
//!     println!("{} {:?}", e.ts.0, e.kind);
//! }
//! # Ok::<(), rtick::ktrace::Error>(())
//! ```
//!
//! Timestamps are CLOCK_MONOTONIC nanoseconds ([`Time`](crate::Time)): the
//! instance's trace clock is `mono`, the clock of rtick's deadlines.

use std::io;
use std::path::{Path, PathBuf};

mod comm;
mod decode;
pub mod events;
mod filter;
pub mod format;
mod idle_watch;
pub mod instance;
pub mod ipi_send;
pub mod kallsyms;
pub mod page;
pub mod reader;
mod session;
pub mod stack;
mod stream;
mod tick;
mod vectors;

pub use events::{
    softirq_name, Comm, Event, EventKind, Ipi, IpiSend, Switch, Targets, TickDependency, Tracepoint, Wakeup,
};
pub use filter::kernel_filters_pids;
pub use idle_watch::IdleWatch;
pub use instance::{remove_instance, BufferStats};
pub use ipi_send::{Sender, Senders, MAX_SENDS};
pub(crate) use reader::keep_off;
pub use reader::ReadCounts;
pub use session::{Capture, CpuEvents, LostEvents, Options, Session, DEFAULT_BUFFER_KB};
pub use stream::Stream;

/// Where tracefs is mounted by convention, and looked for last.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The tracefs root to use: `dir` when given, else where /proc/mounts says
/// tracefs is mounted ([`TRACEFS`] first), else [`TRACEFS`], for the error
/// that opening it will give to say how to mount it. Access is not checked
/// here: opening a file in it says whether it is permitted.
pub fn root(dir: Option<&Path>) -> PathBuf {
    match dir {
        Some(d) => d.to_path_buf(),
        None => mounted(&std::fs::read_to_string("/proc/mounts").unwrap_or_default())
            .unwrap_or_else(|| PathBuf::from(TRACEFS)),
    }
}

/// The tracefs mount point in the text of /proc/mounts: [`TRACEFS`] when it
/// is one, else the first listed.
fn mounted(mounts: &str) -> Option<PathBuf> {
    let points: Vec<&str> = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"tracefs")).then_some(*f.get(1)?)
        })
        .collect();
    points.iter().find(|p| **p == TRACEFS).or(points.first()).map(PathBuf::from)
}

/// Why kernel tracing cannot run: each message one line, with its fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No tracefs at the path: not mounted, or no such directory.
    #[error("tracefs is not mounted at {}: mount -t tracefs nodev {}", .0.display(), .0.display())]
    NotMounted(PathBuf),
    /// tracefs is there but this process may not use it.
    #[error("no access to tracefs at {} ({os}): run as root (tracefs files are root's, mode 0640), or give rtick CAP_DAC_OVERRIDE", .path.display())]
    NotPermitted {
        /// The tracefs root.
        path: PathBuf,
        /// What the kernel said.
        os: io::Error,
    },
    /// Our instance's name is taken.
    #[error(
        "the tracefs instance {} already exists (another rtick with this pid, or one that was killed): rmdir {}",
        .0.display(), .0.display()
    )]
    InstanceExists(PathBuf),
    /// A tracefs file could not be read or written.
    #[error("{what} failed: {os}")]
    Io {
        /// What was done, naming the file.
        what: String,
        /// What the kernel said.
        os: io::Error,
    },
    /// A tracefs file did not read as expected.
    #[error("{}: {what}", .path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        what: String,
    },
    /// A request that cannot be met (no CPU, an unknown CPU, no `mono` clock…).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, os: io::Error) -> Error {
        Error::Io { what: what.into(), os }
    }
}

/// Results of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for crate::Error {
    fn from(e: Error) -> crate::Error {
        let msg = e.to_string();
        match e {
            Error::NotMounted(p) => crate::Error::sys(
                format!("opening tracefs at {}", p.display()),
                io::Error::from_raw_os_error(libc::ENOENT),
                format!("mount -t tracefs nodev {}", p.display()),
            ),
            Error::NotPermitted { path, os } => crate::Error::sys(
                format!("opening tracefs at {}", path.display()),
                os,
                "run as root (tracefs files are root's, mode 0640), or give rtick CAP_DAC_OVERRIDE",
            ),
            Error::InstanceExists(p) => crate::Error::sys(
                format!("mkdir {}", p.display()),
                io::Error::from_raw_os_error(libc::EEXIST),
                format!("another rtick with this pid, or one that was killed: rmdir {}", p.display()),
            ),
            Error::Io { what, os } => crate::Error::sys(what, os, ""),
            Error::Format { .. } | Error::Invalid(_) => crate::Error::Invalid(msg),
        }
    }
}

#[cfg(test)]
mod tests;

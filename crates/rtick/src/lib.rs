//! # rtick — precise periodic wake-ups on Linux
//!
//! rtick measures how precisely a thread wakes at planned times with every
//! Linux wait mechanism, and gives applications the very loop it measured.
//!
//! ## The loop for applications
//!
//! [`periodic::Periodic`] wakes a thread at absolute deadlines
//! `first + k·period` with the mechanism of your choice, handles overruns
//! (skip, catch-up or fail — drawn in [`schedule`]), lets the period change,
//! shift or follow a reference clock while it runs, and keeps lock-free
//! telemetry. [`rt::Setup`] makes the thread real-time and undoes it on drop:
//!
//! ```no_run
//! use rtick::periodic::{Periodic, Start};
//! use rtick::rt::{Policy, Setup};
//! use rtick::Nanos;
//!
//! let mut lp = Periodic::builder()
//!     .period(Nanos::from_ms(1))
//!     .start(Start::Aligned)
//!     .setup(Setup::new().policy(Policy::Fifo, 80).lock_memory(8 << 20, 256 << 10))
//!     .build()?;
//! for _ in 0..1000 {
//!     let tick = lp.wait()?; // allocates nothing, takes no lock
//!     if tick.missed > 0 { /* catch up on skipped work */ }
//! }
//! # Ok::<(), rtick::Error>(())
//! ```
//!
//! ## Measuring
//!
//! - [`wait`]: the mechanisms (`clock_nanosleep`, POSIX timers, itimers,
//!   spinning, hybrid …) behind one [`wait::Waiter`] trait, and the one table
//!   of their names and capabilities ([`wait::KINDS`]);
//! - [`schedule`]: the absolute-deadline grid and the overrun policy;
//! - [`rt`]: scheduling policy and priority, affinity, memory locking,
//!   `/dev/cpu_dma_latency`, timer slack;
//! - [`session`]: what a run takes from the system (with its fallbacks) and gives back;
//! - [`stats`]: signed HdrHistograms with exact moments;
//! - [`measure`]: the engine behind `rtick measure`;
//! - [`system`]: what the system says about its timers;
//! - [`ktrace`]: the kernel's trace events of the measured CPUs, read from
//!   rtick's own tracefs instance, for explaining each wake-up's latency;
//! - [`audit`]: everything on the machine that stands between a thread and
//!   precise wake-ups, with evidence and remedy;
//! - [`clock_survey`] and [`drift`]: what reading time costs; how periodic timers err.
//!
//! All times are signed integer nanoseconds ([`Nanos`], [`Time`]).
//!
//! A measurement run, as `rtick measure` makes it:
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use rtick::measure::{run, MeasureConfig};
//! use rtick::Nanos;
//!
//! rtick::wait::block_timer_signals().unwrap();
//! let cfg = MeasureConfig { duration: Some(Nanos::from_secs(1)), ..Default::default() };
//! let report = run(&cfg, &AtomicBool::new(false), None, |_| {}).unwrap();
//! let s = report.results[0].latency.summary();
//! println!("p99 {} ns over {} wake-ups", s.percentiles[2], s.count);
//! ```

#![deny(unsafe_code)]
// Library code never prints: it returns what happened, and its user says it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro))]

pub mod attach;
pub mod audit;
pub mod cfs;
pub mod cgroup;
pub mod child_cgroup;
pub mod clock;
pub mod clock_survey;
pub mod drift;
pub mod error;
pub mod explain;
pub mod ktrace;
pub mod leftovers;
pub mod measure;
pub mod noise;
pub mod periodic;
pub mod rt;
pub mod schedule;
pub mod session;
pub mod stats;
// The one place that calls the C library: every unsafe block is here.
#[allow(unsafe_code)]
mod sys;
pub mod system;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod time;
pub mod tsc_clock;
pub mod wait;

pub use clock::ClockId;
pub use error::{Error, Result};
pub use schedule::OverrunPolicy;
pub use time::{Nanos, Time};
pub use wait::Mechanism;

/// Facts read directly from the kernel that callers outside the crate need.
pub mod info {
    use crate::time::Nanos;

    /// The calling thread's timer slack.
    pub fn timer_slack() -> Option<Nanos> {
        crate::sys::sched::timer_slack().ok()
    }
    /// CPU time (user + system) used so far by the calling thread.
    pub fn thread_cpu_time() -> Nanos {
        crate::sys::sched::thread_cpu_time()
    }
    /// Online CPUs.
    pub fn online_cpus() -> usize {
        crate::sys::sched::online_cpus()
    }
    /// CPUs the calling thread may run on. A failed read is an error, never
    /// an empty list: callers divide work among these CPUs.
    pub fn allowed_cpus() -> crate::Result<Vec<usize>> {
        crate::sys::sched::affinity().map_err(|e| {
            // The only way it fails for the calling thread: the kernel's CPU
            // mask is larger than the fixed 1024-CPU set libc gives us.
            let fix = if e.raw_os_error() == Some(libc::EINVAL) {
                "this kernel allows more than 1024 CPUs (CPU_SETSIZE); boot with nr_cpus=1024 or fewer"
            } else {
                ""
            };
            crate::Error::sys("sched_getaffinity", e, fix)
        })
    }
    /// For command-line programs: let a closed output pipe end the process
    /// quietly, as C tools do, instead of a panic in `println!`.
    pub fn default_sigpipe() {
        crate::sys::signal::default_sigpipe()
    }
    /// The soft RLIMIT_RTPRIO (`None`: unlimited).
    pub fn rlimit_rtprio() -> Option<u64> {
        crate::sys::sched::rlimit_rtprio()
    }
}

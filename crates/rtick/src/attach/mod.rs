//! `rtick attach`: the lateness of an unmodified program's timed waits.
//!
//! Every timed wait of a thread (a `clock_nanosleep`, a `nanosleep`, an
//! `epoll_wait` or futex timeout…) arms an hrtimer whose
//! `timer:hrtimer_start` event carries the time the program asked for
//! (`softexpires`) and the latest the kernel may fire it (`expires`, the
//! request plus the thread's timer slack). Following that timer to its
//! expiry, the thread's `sched_waking`, its switch-in and its system call's
//! exit gives the wait's **lateness** (back in user space − requested) in
//! the four phases `measure --explain` uses ([`Phases`](crate::explain::Phases)).
//!
//! - [`target`]: the threads to follow (a pid's, a list of tids, a
//!   program's name) and what /proc says of each;
//! - [`bases`]: the clock a timer runs on, turned into CLOCK_MONOTONIC;
//! - [`waits`]: the events turned into each thread's timed and
//!   event-driven wake-ups;
//! - [`merge`]: the CPUs' events merged in time order as they are read;
//! - [`stats`]: a thread's waits as bounded statistics;
//! - [`worst`]: a thread's worst timed waits, explained as they end;
//! - [`cycle`]: a thread's cycle: period, jitter, compute, margin;
//! - [`overruns`]: a thread's largest overruns, each with its cause;
//! - [`stacks`]: when the kernel stacks are taken (while waits run late);
//! - [`feed`]: each event taken, each wait that ends counted and ranked;
//! - [`observe`]: what watches the run as it goes (its waits, spikes and
//!   threads);
//! - [`summary`]: the figures per thread and the findings;
//! - [`attached`]: what the run found, and why it ended;
//! - [`run`](mod@run): the trace from start to its end (a duration,
//!   Ctrl-C, or the target's exit), read as it runs.
//!
//! The trace is rtick's own tracefs instance, read as it runs
//! ([`explain::Live`](crate::explain::Live)), with
//! [`Tracepoint::ATTACH`](crate::ktrace::Tracepoint::ATTACH) on the CPUs
//! the target may run on, its system calls' exits filtered to its threads.

pub mod attached;
pub mod bases;
pub mod cycle;
pub mod feed;
pub mod merge;
pub mod observe;
pub mod overruns;
pub mod run;
pub mod stacks;
pub mod stats;
pub mod summary;
pub mod target;
#[cfg(test)]
mod testing;
pub mod timers;
pub mod waits;
pub mod worst;

pub use cycle::CycleSummary;
pub use feed::SPIKES_PER_READ;
pub use observe::{Observer, Polled};
pub use overruns::{ComputeSplit, Overrun, OverrunCause};
pub use run::{attach, AttachOptions, Attached, End};
pub use stats::ThreadStats;
pub use summary::{findings, ThreadSummary};
pub use target::{Spec, Target, TargetError, ThreadInfo};
pub use waits::{EventWake, Follower, ThreadWaits, TimedWait, Wake, Waker};
pub use worst::WorstWait;

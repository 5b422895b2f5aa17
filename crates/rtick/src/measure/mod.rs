//! The measurement engine behind `rtick measure`.
//!
//! One thread per [`crate::rt::ThreadSetup`] applies its real-time setup,
//! builds a waiter for every mechanism, touches its stack, and waits at a
//! start gate. Then all run the same [`slices`] (a mechanism at a time, in
//! turn or interleaved), each slice the absolute-deadline loop of `engine`,
//! with a barrier between slices. The caller's thread watches progress
//! atomics and calls back with snapshots; it never touches the measuring
//! threads' data.

mod config;
mod engine;
mod progress;
mod runner;
pub mod slices;
mod trace;
mod tracemark;

pub use config::{HistogramSpec, MeasureConfig, MAX_HISTOGRAM_BUCKETS};
pub use engine::ThreadResult;
pub use progress::{Progress, ThreadSnapshot};
pub use runner::{run, BreakEvent, MeasureReport, Unavailable};
pub use trace::{trace_rings, TraceConsumer, TraceProducer, TraceRow};
pub use tracemark::TraceMark;

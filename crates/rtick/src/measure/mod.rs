//! The measurement engine behind `rtick measure`.
//!
//! For each mechanism in turn, one thread per [`ThreadSetup`] applies its
//! real-time setup, builds its waiter, touches its stack, and waits at a start
//! gate; then all run the absolute-deadline loop of [`engine`] and record each
//! wake-up's latency. The caller's thread watches progress atomics and calls
//! back with snapshots; it never touches the measuring threads' data.

mod config;
mod engine;
mod progress;
mod runner;
mod trace;

pub use config::{HistogramSpec, MeasureConfig};
pub use engine::ThreadResult;
pub use progress::{Progress, ThreadSnapshot};
pub use runner::{run, BreakEvent, MeasureReport};
pub use trace::{trace_rings, TraceConsumer, TraceProducer, TraceRow};

//! The per-wake-up trace (the planned-vs-actual record).
//!
//! Each measuring thread pushes rows into its own preallocated lock-free
//! single-producer ring; a non-real-time writer drains them. A full ring
//! drops the row and counts it; nothing is lost silently.

use crate::time::Time;
use crate::wait::Mechanism;

/// One wake-up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceRow {
    /// Thread index.
    pub thread: u32,
    /// The mechanism.
    pub mechanism: Mechanism,
    /// The grid index k of the deadline (planned = first + k·interval for
    /// absolute mechanisms; skipped periods leave gaps).
    pub cycle: u64,
    /// Planned wake-up time.
    pub planned: Time,
    /// Actual wake-up time.
    pub actual: Time,
}

/// The measuring thread's end of a trace ring.
pub type TraceProducer = rtrb::Producer<TraceRow>;
/// The writer's end of a trace ring.
pub type TraceConsumer = rtrb::Consumer<TraceRow>;

/// One ring of `capacity` rows per thread.
pub fn trace_rings(threads: usize, capacity: usize) -> (Vec<TraceProducer>, Vec<TraceConsumer>) {
    (0..threads).map(|_| rtrb::RingBuffer::new(capacity.max(1))).unzip()
}

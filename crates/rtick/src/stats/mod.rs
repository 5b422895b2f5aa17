//! Latency statistics: a signed HdrHistogram, exact moments, and
//! cyclictest-style fixed-width buckets.
//!
//! Recording allocates nothing: every histogram is sized before the loop.

mod buckets;
mod histogram;
mod summary;

pub use buckets::BucketHistogram;
pub use histogram::SignedHistogram;
pub use summary::{LatencyStats, Summary, PERCENTILES, PERCENTILE_LABELS};

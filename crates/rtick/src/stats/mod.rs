//! Latency statistics: a signed HdrHistogram, exact moments,
//! cyclictest-style fixed-width buckets, and the nearest-rank percentile
//! every figure is taken with.
//!
//! Recording allocates nothing: every histogram is sized before the loop.

mod buckets;
mod histogram;
pub mod percentile;
mod summary;

pub use buckets::BucketHistogram;
pub use histogram::SignedHistogram;
pub use summary::{LatencyStats, Summary, PERCENTILES, PERCENTILE_LABELS};

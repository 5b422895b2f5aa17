//! Output files: JSON results, the CSV trace, cyclictest histograms.
//! Every file is written under a temporary name and renamed when complete.

pub mod atomic;
pub mod distinct;
pub mod hdrlog;
pub mod histogram;
pub mod trace;

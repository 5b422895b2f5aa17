//! Output files: JSON results, the CSV traces, cyclictest and oslat histograms.
//! Every file is written under a temporary name and renamed when complete.

pub mod atomic;
pub mod distinct;
pub mod gaps;
pub mod hdrlog;
pub mod histogram;
pub mod oslat;
pub mod trace;

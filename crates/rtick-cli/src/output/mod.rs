//! What `rtick` prints on the terminal.

pub mod attach;
pub mod baseline;
pub mod columns;
pub mod explain;
pub mod header;
pub mod noise;
pub mod noise_attach;
pub mod noise_tick;
pub mod phases;
pub mod progress;
pub mod recommend;
pub mod table;

pub use rtick_model::units::{fmt_latency, unit};

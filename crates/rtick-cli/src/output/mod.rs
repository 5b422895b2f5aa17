//! What `rtick` prints on the terminal.

pub mod columns;
pub mod explain;
pub mod header;
pub mod phases;
pub mod progress;
pub mod recommend;
pub mod table;

/// A latency for display: µs with one decimal (three below 1 µs), or integer ns with -N.
pub fn fmt_latency(ns: i64, nsecs: bool) -> String {
    if nsecs {
        ns.to_string()
    } else if ns.abs() < 1000 {
        // Below a microsecond (spin, hybrid) one decimal would show 0.0.
        format!("{:.3}", ns as f64 / 1e3)
    } else {
        format!("{:.1}", ns as f64 / 1e3)
    }
}

/// The unit label matching [`fmt_latency`].
pub fn unit(nsecs: bool) -> &'static str {
    if nsecs {
        "ns"
    } else {
        "µs"
    }
}

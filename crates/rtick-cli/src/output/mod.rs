//! What `rtick` prints on the terminal.

pub mod header;
pub mod progress;
pub mod recommend;
pub mod table;

/// A latency for display: µs with one decimal, or integer ns with -N.
pub fn fmt_latency(ns: i64, nsecs: bool) -> String {
    if nsecs {
        ns.to_string()
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

//! rtick's run model: what a run *is* once measured, as data.
//!
//! It owns the JSON run file's schema (`json`: the serde types that are the
//! schema, and [`json::SCHEMA_VERSION`]), the columns of the CSV trace
//! (`trace_csv`), the readers that turn saved files — rtick's JSON and
//! traces, cyclictest's JSON and histograms — into one model (`read`), the
//! kernel phases of an explained run (`breakdown`), `--fail-if` gates
//! parsed and evaluated on the JSON types (`gates`), the comparison with a
//! baseline (`baseline`) and of load phases (`phases`), and the parsing and
//! display of times (`units`).
//!
//! It depends on the `rtick` library only. It may not touch the system,
//! write files, or print: it returns data (and the one-line texts of its
//! verdicts and errors). Rendering — tables, plots, Prometheus text — and
//! writing files stay in the command-line crate.

#![forbid(unsafe_code)]

pub mod baseline;
pub mod breakdown;
pub mod gates;
pub mod json;
pub mod noise_gates;
pub mod phases;
pub mod read;
pub mod trace_csv;
pub mod units;

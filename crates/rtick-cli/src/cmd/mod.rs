//! One module per subcommand: thin glue between the command line, the
//! library and the exporters.

pub mod assets;
pub mod attach;
pub mod audit;
pub mod cleanup;
pub mod clocks;
pub mod drift;
pub mod explain;
pub mod explain_ab;
pub mod load;
pub mod measure;
pub mod mechanisms;
pub mod monitor;
pub mod noise;
pub mod phases;
pub mod plan;
pub mod report;
pub mod report_runs;
mod warnings;

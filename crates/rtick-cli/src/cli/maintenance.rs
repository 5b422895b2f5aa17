//! The options of the maintenance subcommands: `rtick cleanup` and the
//! hidden `rtick generate-assets`.

use std::path::PathBuf;

use clap::Args;

/// Options of `rtick cleanup`.
#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// Directories to look for temporary output files (.NAME.PID.XXXXXX.rtick-tmp) in [default: the current directory].
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// The tracefs directory to look for instances in [default: /sys/kernel/tracing].
    #[arg(long, value_name = "DIR")]
    pub tracefs: Option<PathBuf>,

    /// List what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Options of the hidden `rtick generate-assets`.
#[derive(Debug, Args)]
pub struct AssetsArgs {
    /// Directory to write man/man1/*.1 and completions/* into (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

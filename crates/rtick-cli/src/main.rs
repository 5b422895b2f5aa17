//! `rtick`: precise periodic timing on Linux.
//!
//! Exit status: 0 success, 1 run-time failure, 2 usage error, 3 a check
//! failed (`audit` found a failure, `measure --fail-if` a violation, `report
//! --baseline` a regression).

#![forbid(unsafe_code)]

mod cli;
mod cmd;
mod export;
mod mock;
mod output;
mod plot;
mod units;

use std::process::ExitCode;

use clap::Parser;

/// Exit status when a check fails: a failing audit finding, a `--fail-if`
/// violation, a regression against `--baseline`.
pub const EXIT_FAIL: u8 = 3;

/// A usage error: printed in one line, exit status 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Usage {}

/// A flag that Ctrl-C (SIGINT) and SIGTERM set: long commands check it and
/// stop cleanly, writing what they have.
pub fn stop_flag() -> anyhow::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    use anyhow::Context;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop)).context("installing the Ctrl-C handler")?;
    }
    Ok(stop)
}

/// The values clap would list on its error's next line (a `ValueEnum`
/// option's kinds), for the one line printed: " (one of: a, b)".
fn valid(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(v)) if !v.is_empty() => format!(" (one of: {})", v.join(", ")),
        _ => String::new(),
    }
}

fn main() -> ExitCode {
    rtick::info::default_sigpipe();
    // Before any thread exists: the timer signals must be blocked in every
    // thread for the signal-based mechanisms to receive them with sigwaitinfo.
    if let Err(e) = rtick::wait::block_timer_signals() {
        eprintln!("rtick: {e}");
        return ExitCode::from(1);
    }
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(e.kind(), DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand) {
                let _ = e.print();
                return ExitCode::from(if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 });
            }
            // One line: clap's first line names the option and what is accepted.
            let text = e.render().to_string();
            let mut lines = text.lines();
            let first = lines.next().unwrap_or("invalid arguments").trim_start_matches("error: ");
            // "…required arguments were not provided:" lists them on the next lines.
            let listed: Vec<&str> = match first.ends_with(':') {
                true => lines.take_while(|l| !l.trim().is_empty()).map(str::trim).collect(),
                false => Vec::new(),
            };
            eprintln!("rtick: {first}{}{}{}", if listed.is_empty() { "" } else { " " }, listed.join(", "), valid(&e));
            return ExitCode::from(2);
        }
    };
    let result = match &cli.command {
        cli::Command::Measure(a) => cmd::measure::run(a),
        cli::Command::Audit(a) => cmd::audit::run(a),
        cli::Command::Clocks(a) => cmd::clocks::run(a).map(|_| ExitCode::SUCCESS),
        cli::Command::Drift(a) => cmd::drift::run(a).map(|_| ExitCode::SUCCESS),
        cli::Command::Report(a) => cmd::report::run(a),
        cli::Command::Attach(a) => cmd::attach::run(a),
        cli::Command::Noise(a) => cmd::noise::run(a),
        cli::Command::Monitor(a) => cmd::monitor::run(a).map(|_| ExitCode::SUCCESS),
        cli::Command::Mechanisms => {
            cmd::mechanisms::run();
            Ok(ExitCode::SUCCESS)
        }
        cli::Command::Cleanup(a) => cmd::cleanup::run(a),
        cli::Command::GenerateAssets(a) => cmd::assets::run(a).map(|_| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(u) = e.downcast_ref::<Usage>() {
                eprintln!("rtick: {u}");
                return ExitCode::from(2);
            }
            // anyhow's alternate form joins the context chain on one line.
            eprintln!("rtick: {e:#}");
            ExitCode::from(1)
        }
    }
}

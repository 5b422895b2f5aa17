//! `rtick audit`: print the findings grouped by area, write JSON, and exit 3
//! when any finding fails.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Result;
use rtick::audit::{self, Finding, Options, Status, AREAS};
use rtick::system::SysRoot;
use serde::{Deserialize, Serialize};

use crate::cli::AuditArgs;
use crate::export::atomic::AtomicFile;
use crate::Usage;

/// Exit status when a finding fails.
pub use crate::EXIT_FAIL;

/// The JSON file (docs/json.md).
#[derive(Debug, Serialize, Deserialize)]
pub struct AuditFile {
    pub rtick_version: String,
    pub verdict: String,
    pub findings: Vec<Finding>,
}

fn paint(s: Status, color: bool) -> String {
    let name = format!("{:<4}", s.name());
    if !color {
        return name;
    }
    let code = match s {
        Status::Ok => "32",
        Status::Info => "36",
        Status::Warn => "33",
        Status::Fail => "1;31",
    };
    format!("\x1b[{code}m{name}\x1b[0m")
}

/// Renders findings grouped by area.
pub fn render(findings: &[Finding], color: bool, verbose: bool) -> String {
    let mut out = String::new();
    for (area, heading) in AREAS {
        let here: Vec<&Finding> = findings.iter().filter(|f| f.area == *area).collect();
        if here.is_empty() {
            continue;
        }
        out += &format!("{heading}\n");
        for f in here {
            out += &format!("  {}  {}\n", paint(f.status, color), f.title);
            let show = verbose || matches!(f.status, Status::Warn | Status::Fail);
            if show && !f.evidence.is_empty() {
                out += &format!("        evidence: {}\n", f.evidence);
            }
            if show && !f.impact.is_empty() {
                out += &format!("        impact:   {}\n", f.impact);
            }
            if show && !f.remedy.is_empty() {
                out += &format!("        remedy:   {}\n", f.remedy);
            }
        }
    }
    out
}

pub fn run(a: &AuditArgs) -> Result<ExitCode> {
    if let Some(dir) = &a.sysroot {
        if !dir.is_dir() {
            return Err(Usage(format!("--sysroot: {} is not a directory", dir.display())).into());
        }
    }
    let json = AtomicFile::create_opt("--json", a.json.as_deref())?;
    let root = a.sysroot.as_ref().map_or_else(SysRoot::default, SysRoot::new);
    let findings = audit::run(&root, &Options { run_commands: a.sysroot.is_none() });
    let verdict = audit::verdict(&findings);
    print!("{}", render(&findings, std::io::stdout().is_terminal(), a.verbose));
    println!("\nverdict: {verdict}");
    if let Some(f) = json {
        let file = AuditFile { rtick_version: env!("CARGO_PKG_VERSION").into(), verdict, findings: findings.clone() };
        f.write_json(&file)?;
        f.commit()?;
    }
    Ok(if findings.iter().any(|f| f.status == Status::Fail) { ExitCode::from(EXIT_FAIL) } else { ExitCode::SUCCESS })
}

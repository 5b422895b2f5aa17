//! `rtick audit`: everything on this machine that stands between a thread
//! and precise wake-ups, with the evidence read and the exact remedy.
//!
//! Findings are data, not errors. Every check reads files through a
//! [`SysRoot`], so a fixture tree can stand in for a machine; a missing or
//! unreadable file yields an `info` finding saying what could not be read,
//! never a guess. The only command run (`ethtool -c`) is skipped under a
//! sysroot. Nothing is written.

mod access;
mod boot;
mod cgroups;
mod damon;
mod kernel;
mod noise;
mod overhead;
mod power;
mod read;
mod rt_groups;
mod sched_mem;
mod timers;

use serde::{Deserialize, Serialize};

use crate::system::SysRoot;

/// The kernel's build configuration (it moved to [`crate::system`]; kept
/// here for the code that names it `audit::KernelConfig`).
pub use crate::system::KernelConfig;

const UNREADABLE: &str = "unreadable or missing: ";

/// How a finding bears on precise timing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Fine for precise timing.
    Ok,
    /// Information: neither good nor bad, or not readable here.
    Info,
    /// Costs precision; worth fixing.
    Warn,
    /// Stands in the way of precise timing.
    Fail,
}

impl Status {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Info => "info",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier, `area.name`.
    pub id: String,
    /// The area, for grouping.
    pub area: String,
    /// Its status.
    pub status: Status,
    /// One line.
    pub title: String,
    /// The values read, and where from.
    pub evidence: String,
    /// What it does to timing.
    pub impact: String,
    /// The exact command, sysctl or boot parameter (empty when nothing to do).
    pub remedy: String,
}

impl Finding {
    pub(crate) fn new(id: &str, status: Status, title: impl Into<String>) -> Finding {
        Finding {
            id: id.to_string(),
            area: id.split('.').next().unwrap_or(id).to_string(),
            status,
            title: title.into(),
            evidence: String::new(),
            impact: String::new(),
            remedy: String::new(),
        }
    }
    pub(crate) fn evidence(mut self, e: impl Into<String>) -> Self {
        self.evidence = e.into();
        self
    }
    pub(crate) fn impact(mut self, i: impl Into<String>) -> Self {
        self.impact = i.into();
        self
    }
    pub(crate) fn remedy(mut self, r: impl Into<String>) -> Self {
        self.remedy = r.into();
        self
    }

    /// An `info` finding for a file that could not be read.
    pub(crate) fn unreadable(id: &str, what: &str, paths: &[&str]) -> Finding {
        Finding::new(id, Status::Info, format!("{what}: could not be read"))
            .evidence(format!("{UNREADABLE}{}", paths.join(", ")))
            .impact("unknown: this check needs that file")
    }

    /// Whether the check could not read what it needed.
    pub fn is_unreadable(&self) -> bool {
        self.evidence.starts_with(UNREADABLE)
    }
}

/// What the audit may do besides reading files.
#[derive(Clone, Debug)]
pub struct Options {
    /// Run commands (`ethtool -c`); off under a sysroot.
    pub run_commands: bool,
}

/// Every check, in area order.
pub fn run(root: &SysRoot, opts: &Options) -> Vec<Finding> {
    let ctx = read::Context::new(root, opts);
    let mut out = Vec::new();
    timers::check(&ctx, &mut out);
    kernel::check(&ctx, &mut out);
    overhead::check(&ctx, &mut out);
    boot::check(&ctx, &mut out);
    power::check(&ctx, &mut out);
    sched_mem::check(&ctx, &mut out);
    cgroups::check(&ctx, &mut out);
    rt_groups::check(&ctx, &mut out);
    access::check(&ctx, &mut out);
    noise::check(&ctx, &mut out);
    damon::check(&ctx, &mut out);
    out
}

/// The areas in display order, with their headings.
pub const AREAS: &[(&str, &str)] = &[
    ("timers", "High-resolution timers"),
    ("clocksource", "Clocksource"),
    ("kernel", "Kernel"),
    ("boot", "Boot parameters"),
    ("power", "Power management"),
    ("sched", "Scheduler"),
    ("memory", "Memory"),
    ("permissions", "Permissions"),
    ("noise", "Noise"),
    ("environment", "Environment"),
];

/// A one-line verdict over `findings`.
pub fn verdict(findings: &[Finding]) -> String {
    let count = |s: Status| findings.iter().filter(|f| f.status == s).count();
    let (fail, warn) = (count(Status::Fail), count(Status::Warn));
    let unread = findings.iter().filter(|f| f.is_unreadable()).count();
    let plural = |n: usize, w: &str| crate::text::count(n as u64, w);
    let tail = if unread > 0 { format!(" ({} could not be read)", plural(unread, "check")) } else { String::new() };
    if count(Status::Ok) == 0 && fail == 0 && warn == 0 {
        return format!("cannot tell: nothing could be checked{tail}");
    }
    let verdict = if fail > 0 {
        format!("not ready for precise timing: {} and {}", plural(fail, "failure"), plural(warn, "warning"))
    } else if warn > 0 {
        // Not every warning can be fixed (a hypervisor, a CPU): the findings say which can.
        format!("usable for precise timing, with {} (see their remedies, where there is one)", plural(warn, "warning"))
    } else {
        "ready for precise timing".to_string()
    };
    verdict + &tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_does_not_promise_every_warning_can_be_fixed() {
        let warn = |id| Finding::new(id, Status::Warn, "w");
        let ok = Finding::new("ok", Status::Ok, "fine");
        assert_eq!(
            verdict(&[warn("a"), ok.clone(), warn("b")]),
            "usable for precise timing, with 2 warnings (see their remedies, where there is one)"
        );
        assert_eq!(verdict(std::slice::from_ref(&ok)), "ready for precise timing");
        assert_eq!(
            verdict(&[Finding::new("f", Status::Fail, "f"), warn("a"), ok]),
            "not ready for precise timing: 1 failure and 1 warning"
        );
    }
}

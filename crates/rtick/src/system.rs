//! Facts about the running system that bear on timing, read from /proc and
//! /sys under a root directory (`/` normally; a fixture tree in tests).
//!
//! Each fact that both the audit and `rtick measure` need has one typed
//! reading here: the preemption model ([`PreemptModel`]), high-resolution
//! timers per CPU ([`HresActive`]) and the hypervisor ([`VirtSigns`]); the
//! `/dev/cpu_dma_latency` limit is [`crate::rt::DmaLatencyLimit`], beside
//! the guard that holds a request.

pub mod cpustat;
mod hres;
mod hypervisor;
mod kconfig;
mod preempt;

use std::fs;
use std::path::{Path, PathBuf};

pub use hres::{CpuHres, HresActive, TIMER_LIST};
pub use hypervisor::{Hypervisor, VirtSigns, Virtualization, DMI, VM_VENDORS};
pub use kconfig::KernelConfig;
pub use preempt::{debugfs_mode, Preempt, PreemptInputs, PreemptModel, PreemptSource, DEBUGFS_PREEMPT};

/// What the measurement header and warnings need to know about the system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemInfo {
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (build string: SMP, PREEMPT_DYNAMIC, PREEMPT_RT …).
    pub kernel_version: String,
    /// The current clocksource.
    pub clocksource: Option<String>,
    /// Available clocksources.
    pub clocksources_available: Vec<String>,
    /// `.hres_active` per CPU in /proc/timer_list (`None`: unreadable).
    pub hres: Option<HresActive>,
    /// The preemption model.
    pub preempt: PreemptModel,
    /// Online CPUs.
    pub cpus: usize,
    /// Whether it runs under a hypervisor, and which.
    pub virtualization: Virtualization,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (−1: no RT throttling).
    pub rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub rt_period_us: Option<i64>,
}

/// Reads files under a root directory.
#[derive(Clone, Debug)]
pub struct SysRoot(PathBuf);

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot(PathBuf::from("/"))
    }
}

impl SysRoot {
    /// A root at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SysRoot(dir.into())
    }
    /// The path of absolute path `p` under this root.
    pub fn path(&self, p: &str) -> PathBuf {
        self.0.join(p.trim_start_matches('/'))
    }
    /// The file's content, trimmed; `None` when missing or unreadable.
    pub fn read(&self, p: &str) -> Option<String> {
        fs::read_to_string(self.path(p)).ok().map(|s| s.trim().to_string())
    }
    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.0
    }
}

impl SystemInfo {
    /// Reads everything from the live system.
    pub fn read() -> SystemInfo {
        Self::read_from(&SysRoot::default())
    }

    /// Reads everything under `root`.
    pub fn read_from(root: &SysRoot) -> SystemInfo {
        let cs = CLOCKSOURCE_DIR;
        let cpus =
            root.read("/sys/devices/system/cpu/online").and_then(|s| parse_cpu_list(&s)).map(|v| v.len()).unwrap_or(0);
        let cmdline = root.read("/proc/cmdline");
        SystemInfo {
            kernel_release: root.read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            kernel_version: root.read("/proc/sys/kernel/version").unwrap_or_default(),
            clocksource: current_clocksource(root),
            clocksources_available: root
                .read(&format!("{cs}/available_clocksource"))
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            hres: HresActive::read(root),
            preempt: PreemptModel::read(root, cmdline.as_deref(), KernelConfig::read(root).as_ref()),
            cpus,
            virtualization: VirtSigns::read(root).virtualization(),
            rt_runtime_us: root.read("/proc/sys/kernel/sched_rt_runtime_us").and_then(|s| s.parse().ok()),
            rt_period_us: root.read("/proc/sys/kernel/sched_rt_period_us").and_then(|s| s.parse().ok()),
        }
    }

    /// Whether high-resolution timers are active on every CPU listed
    /// (`None`: unknown).
    pub fn hres_active(&self) -> Option<bool> {
        self.hres.as_ref().and_then(HresActive::all_active)
    }

    /// The hypervisor, when virtualised.
    pub fn hypervisor(&self) -> Option<&Hypervisor> {
        self.virtualization.hypervisor()
    }

    /// Whether a SCHED_FIFO/RR thread that never sleeps gets throttled.
    pub fn rt_throttled(&self) -> bool {
        matches!(self.rt_runtime_us, Some(r) if r >= 0)
    }
}

/// Where the kernel lists its clocksources.
pub const CLOCKSOURCE_DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// The clocksource the kernel reads its clocks from (`tsc`, `kvm-clock` …).
pub fn current_clocksource(root: &SysRoot) -> Option<String> {
    root.read(&format!("{CLOCKSOURCE_DIR}/current_clocksource"))
}

/// A boot parameter of a kernel command line: `Some("")` for a bare flag,
/// `Some(value)`, or `None`. The last occurrence wins, as in the kernel.
pub fn boot_param<'a>(cmdline: &'a str, name: &str) -> Option<&'a str> {
    cmdline.split_whitespace().rev().find_map(|w| match w.split_once('=') {
        Some((k, v)) if k == name => Some(v),
        None if w == name => Some(""),
        _ => None,
    })
}

/// The CPU flags of the first processor in /proc/cpuinfo's text (`flags`
/// on x86, `Features` on Arm); `None` when no such line is there.
pub fn cpu_flags(cpuinfo: &str) -> Option<Vec<&str>> {
    let line = cpuinfo.lines().find(|l| l.starts_with("flags") || l.starts_with("Features"))?;
    Some(line.split_once(':')?.1.split_whitespace().collect())
}

/// Parses a kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a > 4096 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Writes CPUs as the kernel writes a CPU list (`0-3,8,10-11`): what
/// [`parse_cpu_list`] reads, and what a user can paste into a kernel
/// parameter or a setting such as `IRQBALANCE_BANNED_CPULIST`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let first = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        out.push(if cpus[i] == first { first.to_string() } else { format!("{first}-{}", cpus[i]) });
        i += 1;
    }
    out.join(",")
}

/// Points standard output at standard error and returns the original
/// standard output: for `--json -`, so that the JSON alone goes down a pipe
/// while the report for people still reaches the terminal.
pub fn divert_stdout_to_stderr() -> std::io::Result<std::os::fd::OwnedFd> {
    crate::sys::stdio::divert_stdout_to_stderr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn boot_params() {
        let c = "root=/dev/sda1 quiet isolcpus=1 preempt=none isolcpus=domain,2-3";
        assert_eq!(boot_param(c, "isolcpus"), Some("domain,2-3"), "the last wins");
        assert_eq!(boot_param(c, "quiet"), Some(""));
        assert_eq!(boot_param(c, "preempt"), Some("none"));
        assert_eq!(boot_param(c, "pre"), None);
        assert_eq!(boot_param("", "quiet"), None);
    }

    #[test]
    fn cpu_flag_lines() {
        assert_eq!(cpu_flags("processor\t: 0\nflags\t\t: fpu tsc\n"), Some(vec!["fpu", "tsc"]));
        assert_eq!(cpu_flags("Features\t: fp asimd\n"), Some(vec!["fp", "asimd"]));
        assert_eq!(cpu_flags("processor\t: 0\n"), None);
        assert_eq!(cpu_flags("flags without a colon"), None);
    }

    #[test]
    fn cpu_lists_are_written_as_the_kernel_writes_them() {
        assert_eq!(format_cpu_list(&[2, 3]), "2-3");
        assert_eq!(format_cpu_list(&[11, 0, 1, 2, 3, 8, 10, 3]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[1, 3]), "1,3");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[]), "");
        for list in ["0-3,8,10-11", "7", "0,2,4-5"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(list).unwrap()), list);
        }
    }

    #[test]
    fn fixture_tree() {
        // Removed on drop, so a failing assertion leaves nothing behind.
        let tree = tempfile::tempdir().unwrap();
        let d = tree.path();
        let w = |p: &str, c: &str| {
            let f = d.join(p.trim_start_matches('/'));
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, c).unwrap();
        };
        w("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC");
        w("/sys/kernel/debug/sched/preempt", "none voluntary (full) lazy\n");
        w("/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
        w("/proc/cpuinfo", "flags\t: fpu tsc hypervisor\n");
        w("/sys/devices/system/cpu/online", "0-1\n");
        // No CPU listed: unknown (this said "not active on every CPU").
        w("/proc/timer_list", "Timer List Version: v0.9\n");
        let s = SystemInfo::read_from(&SysRoot::new(d));
        assert_eq!(
            s.preempt,
            PreemptModel { model: Some(Preempt::Full), dynamic: true, source: PreemptSource::Debugfs }
        );
        assert!(s.rt_throttled());
        assert_eq!(s.cpus, 2);
        assert_eq!(s.hypervisor(), Some(&Hypervisor { name: None }));
        assert_eq!(s.hres, Some(HresActive::default()));
        assert_eq!(s.hres_active(), None);
    }

    #[test]
    fn empty_tree_reads_nothing_without_panicking() {
        let s = SystemInfo::read_from(&SysRoot::new("/nonexistent-rtick-root"));
        assert_eq!(s.clocksource, None);
        assert_eq!(s.preempt.model, None);
        assert_eq!(s.hres_active(), None);
        assert_eq!(s.virtualization, Virtualization::Unknown);
        assert!(!s.rt_throttled());
    }
}

//! Facts about the running system that bear on timing, read from /proc and
//! /sys under a root directory (`/` normally; a fixture tree in tests).

use std::fs;
use std::path::{Path, PathBuf};

/// What the measurement header and warnings need to know about the system.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemInfo {
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (build string: SMP, PREEMPT_DYNAMIC, PREEMPT_RT …).
    pub kernel_version: String,
    /// The current clocksource.
    pub clocksource: Option<String>,
    /// Available clocksources.
    pub clocksources_available: Vec<String>,
    /// CPUs whose `.hres_active` is 1, and CPUs listed, in /proc/timer_list.
    pub hres: Option<(usize, usize)>,
    /// The preemption model, e.g. `PREEMPT_RT`, `full (PREEMPT_DYNAMIC)`.
    pub preempt: String,
    /// Online CPUs.
    pub cpus: usize,
    /// The hypervisor, when running virtualised (its name where /sys or DMI gives one).
    pub hypervisor: Option<String>,
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
        let cs = "/sys/devices/system/clocksource/clocksource0";
        let kernel_version = root.read("/proc/sys/kernel/version").unwrap_or_default();
        let cpus =
            root.read("/sys/devices/system/cpu/online").and_then(|s| parse_cpu_list(&s)).map(|v| v.len()).unwrap_or(0);
        SystemInfo {
            kernel_release: root.read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            clocksource: root.read(&format!("{cs}/current_clocksource")),
            clocksources_available: root
                .read(&format!("{cs}/available_clocksource"))
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            hres: root.read("/proc/timer_list").map(|t| parse_hres(&t)),
            preempt: preempt_model(root, &kernel_version),
            cpus,
            hypervisor: hypervisor(root),
            rt_runtime_us: root.read("/proc/sys/kernel/sched_rt_runtime_us").and_then(|s| s.parse().ok()),
            rt_period_us: root.read("/proc/sys/kernel/sched_rt_period_us").and_then(|s| s.parse().ok()),
            kernel_version,
        }
    }

    /// Whether high-resolution timers are active on every CPU listed.
    pub fn hres_active(&self) -> Option<bool> {
        self.hres.map(|(active, cpus)| cpus > 0 && active == cpus)
    }

    /// Whether a SCHED_FIFO/RR thread that never sleeps gets throttled.
    pub fn rt_throttled(&self) -> bool {
        matches!(self.rt_runtime_us, Some(r) if r >= 0)
    }
}

/// Counts `.hres_active : 1` per CPU section of /proc/timer_list.
fn parse_hres(text: &str) -> (usize, usize) {
    let (mut cpus, mut active) = (0, 0);
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("cpu:") {
            cpus += 1;
        } else if let Some(v) = l.strip_prefix(".hres_active") {
            if v.trim_start_matches([' ', ':', '\t']).trim() == "1" {
                active += 1;
            }
        }
    }
    (active, cpus)
}

fn preempt_model(root: &SysRoot, version: &str) -> String {
    if root.read("/sys/kernel/realtime").as_deref() == Some("1") || version.contains("PREEMPT_RT") {
        return "PREEMPT_RT".into();
    }
    if version.contains("PREEMPT_DYNAMIC") {
        // debugfs shows the current mode in parentheses: "none voluntary (full) lazy".
        let mode = root.read("/sys/kernel/debug/sched/preempt").and_then(|s| {
            let start = s.find('(')?;
            let end = s[start..].find(')')?;
            Some(s[start + 1..start + end].to_string())
        });
        return match mode {
            Some(m) => format!("{m} (PREEMPT_DYNAMIC)"),
            None => "dynamic (PREEMPT_DYNAMIC; current mode needs debugfs)".into(),
        };
    }
    if version.contains("PREEMPT") {
        return "full (PREEMPT)".into();
    }
    if version.is_empty() {
        "unknown".into()
    } else {
        "none or voluntary".into()
    }
}

fn hypervisor(root: &SysRoot) -> Option<String> {
    if let Some(t) = root.read("/sys/hypervisor/type").filter(|t| !t.is_empty()) {
        return Some(t);
    }
    let flagged = root
        .read("/proc/cpuinfo")
        .map(|c| c.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor")))
        .unwrap_or(false);
    if !flagged {
        return None;
    }
    let dmi = ["/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"]
        .iter()
        .filter_map(|p| root.read(p))
        .find(|s| !s.is_empty());
    Some(dmi.unwrap_or_else(|| "unnamed, per the CPU hypervisor flag".into()))
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
    fn hres_parse() {
        let t = "cpu: 0\n clock 0:\n  .hres_active    : 1\ncpu: 1\n  .hres_active    : 0\n";
        assert_eq!(parse_hres(t), (1, 2));
    }

    #[test]
    fn fixture_tree() {
        let d = std::env::temp_dir().join(format!("rtick-sys-{}", std::process::id()));
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
        let s = SystemInfo::read_from(&SysRoot::new(&d));
        assert_eq!(s.preempt, "full (PREEMPT_DYNAMIC)");
        assert!(s.rt_throttled());
        assert_eq!(s.cpus, 2);
        assert_eq!(s.hypervisor.as_deref(), Some("unnamed, per the CPU hypervisor flag"));
        assert_eq!(s.hres, None);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn empty_tree_reads_nothing_without_panicking() {
        let s = SystemInfo::read_from(&SysRoot::new("/nonexistent-rtick-root"));
        assert_eq!(s.clocksource, None);
        assert_eq!(s.preempt, "unknown");
        assert!(!s.rt_throttled());
    }
}

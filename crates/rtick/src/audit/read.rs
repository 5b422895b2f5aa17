//! Reading what the checks need: files under the root, the kernel config,
//! the boot command line, CPU flags, and the process's own status and cgroup.

use super::Options;
use crate::cgroup::{cpu_cgroup, CpuCgroup};
use crate::system::{boot_param, cpu_flags, parse_cpu_list, KernelConfig, PreemptModel, SysRoot};

pub(crate) struct Context<'a> {
    pub root: &'a SysRoot,
    pub opts: &'a Options,
    pub cmdline: Option<String>,
    pub config: Option<KernelConfig>,
    pub cpuinfo: Option<String>,
    pub status: Option<String>,
    /// This process's cpu cgroup (its real-time budget).
    pub cpu_cgroup: Option<CpuCgroup>,
    /// The preemption model.
    pub preempt: PreemptModel,
}

impl<'a> Context<'a> {
    pub fn new(root: &'a SysRoot, opts: &'a Options) -> Self {
        let cmdline = root.read("/proc/cmdline");
        let config = KernelConfig::read(root);
        let preempt = PreemptModel::read(root, cmdline.as_deref(), config.as_ref());
        Context {
            root,
            opts,
            cmdline,
            config,
            cpuinfo: root.read("/proc/cpuinfo"),
            status: root.read("/proc/self/status"),
            cpu_cgroup: cpu_cgroup(root),
            preempt,
        }
    }

    pub fn read(&self, p: &str) -> Option<String> {
        self.root.read(p)
    }

    /// A boot parameter: `Some("")` for a bare flag, `Some(value)`, or `None`.
    pub fn param(&self, name: &str) -> Option<String> {
        boot_param(self.cmdline.as_deref()?, name).map(str::to_string)
    }

    /// The CPU flags of the first processor in /proc/cpuinfo.
    pub fn cpu_flags(&self) -> Option<Vec<&str>> {
        cpu_flags(self.cpuinfo.as_deref()?)
    }

    /// Online CPUs.
    pub fn cpus(&self) -> Option<Vec<usize>> {
        self.read("/sys/devices/system/cpu/online").and_then(|s| parse_cpu_list(&s))
    }

    /// CPUs isolated from the scheduler (kernel's view, else isolcpus=).
    pub fn isolated(&self) -> Vec<usize> {
        if let Some(v) = self.read("/sys/devices/system/cpu/isolated").and_then(|s| parse_cpu_list(&s)) {
            return v;
        }
        self.param("isolcpus").and_then(|v| parse_cpu_list(strip_isolcpus_flags(&v))).unwrap_or_default()
    }

    /// A field of /proc/self/status, e.g. `CapEff`.
    pub fn status_field(&self, key: &str) -> Option<String> {
        self.status.as_deref()?.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == key).then(|| v.trim().to_string())
        })
    }

    /// Whether the effective capability set holds capability `bit`.
    pub fn has_cap(&self, bit: u32) -> Option<bool> {
        let hex = self.status_field("CapEff")?;
        let v = u64::from_str_radix(&hex, 16).ok()?;
        Some(v & (1 << bit) != 0)
    }

    /// The effective user id.
    pub fn euid(&self) -> Option<u32> {
        self.status_field("Uid")?.split_whitespace().nth(1)?.parse().ok()
    }

    /// A soft limit from /proc/self/limits: `Some(None)` for unlimited.
    pub fn limit(&self, name: &str) -> Option<Option<u64>> {
        let text = self.read("/proc/self/limits")?;
        let line = text.lines().find(|l| l.starts_with(name))?;
        let soft = line[name.len()..].split_whitespace().next()?;
        Some(if soft == "unlimited" { None } else { Some(soft.parse().ok()?) })
    }
}

/// `isolcpus=` may start with flags (`domain,managed_irq,2-3`); keep the CPUs.
pub(crate) fn strip_isolcpus_flags(v: &str) -> &str {
    let first_digit = v.find(|c: char| c.is_ascii_digit()).unwrap_or(v.len());
    &v[first_digit..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolcpus_flags() {
        assert_eq!(strip_isolcpus_flags("domain,managed_irq,2-3"), "2-3");
        assert_eq!(strip_isolcpus_flags("1,3"), "1,3");
    }
}

//! Whether this system runs under a hypervisor, and which: the CPU's
//! `hypervisor` flag, `/sys/hypervisor/type`, and the DMI names virtual
//! machines report. The one reading of this fact: the audit and
//! `rtick measure`'s warnings both use it.

use std::fmt;

use super::{cpu_flags, SysRoot};

/// DMI vendor or product names that mark a virtual machine on their own
/// (some hypervisors hide the CPU flag).
pub const VM_VENDORS: [&str; 8] =
    ["QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Microsoft Corporation", "Amazon EC2", "Google"];

/// The DMI files read.
pub const DMI: [&str; 2] = ["/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"];

/// What the system shows of a hypervisor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VirtSigns {
    /// The CPU flag `hypervisor`; `None` when /proc/cpuinfo lists no flags.
    pub cpu_flag: Option<bool>,
    /// `/sys/hypervisor/type` (Xen guests), when present and not empty.
    pub hypervisor_type: Option<String>,
    /// [`DMI`] names, those present and not empty, in that order.
    pub dmi: Vec<String>,
}

/// A hypervisor this system runs under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hypervisor {
    /// Its name (`/sys/hypervisor/type`, else DMI); `None` when only the CPU
    /// flag tells.
    pub name: Option<String>,
}

/// Whether the system is virtualised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Virtualization {
    /// Under a hypervisor.
    Guest(Hypervisor),
    /// No sign of one, with the CPU flags readable.
    BareMetal,
    /// No sign of one, but the CPU flags could not be read.
    Unknown,
}

impl VirtSigns {
    /// Reads the signs under `root`.
    pub fn read(root: &SysRoot) -> VirtSigns {
        VirtSigns::parse(
            root.read("/proc/cpuinfo").as_deref(),
            root.read("/sys/hypervisor/type").as_deref(),
            DMI.iter().filter_map(|p| root.read(p)).collect(),
        )
    }

    /// The signs in /proc/cpuinfo's text, /sys/hypervisor/type's and the DMI names.
    pub fn parse(cpuinfo: Option<&str>, hypervisor_type: Option<&str>, dmi: Vec<String>) -> VirtSigns {
        VirtSigns {
            cpu_flag: cpuinfo.and_then(cpu_flags).map(|f| f.contains(&"hypervisor")),
            hypervisor_type: hypervisor_type.map(str::trim).filter(|t| !t.is_empty()).map(str::to_string),
            dmi: dmi.into_iter().map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect(),
        }
    }

    /// Whether a DMI name is a known virtual machine's.
    pub fn dmi_names_vm(&self) -> bool {
        self.dmi.iter().any(|d| VM_VENDORS.iter().any(|v| d.contains(v)))
    }

    /// What the signs say.
    pub fn virtualization(&self) -> Virtualization {
        if self.cpu_flag == Some(true) || self.hypervisor_type.is_some() || self.dmi_names_vm() {
            let name = self.hypervisor_type.clone().or_else(|| self.dmi.first().cloned());
            Virtualization::Guest(Hypervisor { name })
        } else if self.cpu_flag.is_none() {
            Virtualization::Unknown
        } else {
            Virtualization::BareMetal
        }
    }
}

impl Virtualization {
    /// The hypervisor, when virtualised.
    pub fn hypervisor(&self) -> Option<&Hypervisor> {
        match self {
            Virtualization::Guest(h) => Some(h),
            _ => None,
        }
    }

    /// A one-word label (a Prometheus label value): `none`, `unknown`, the
    /// hypervisor's name in lower case with `-` for anything but letters and
    /// digits (`qemu`, `xen`, `microsoft-corporation`), or
    /// `unknown-hypervisor` when only the CPU flag tells.
    pub fn token(&self) -> String {
        match self {
            Virtualization::BareMetal => "none".into(),
            Virtualization::Unknown => "unknown".into(),
            Virtualization::Guest(Hypervisor { name: None }) => "unknown-hypervisor".into(),
            Virtualization::Guest(Hypervisor { name: Some(n) }) => {
                let words: Vec<String> = n
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_ascii_lowercase)
                    .collect();
                if words.is_empty() {
                    "unknown-hypervisor".into()
                } else {
                    words.join("-")
                }
            }
        }
    }
}

/// Its name, or that only the CPU flag tells.
impl fmt::Display for Hypervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name.as_deref().unwrap_or("unnamed, per the CPU hypervisor flag"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGGED: &str = "processor\t: 0\nflags\t\t: fpu tsc hypervisor\n";
    const BARE: &str = "processor\t: 0\nflags\t\t: fpu tsc\n";

    fn guest(name: Option<&str>) -> Virtualization {
        Virtualization::Guest(Hypervisor { name: name.map(str::to_string) })
    }

    #[test]
    fn tokens_are_one_word() {
        assert_eq!(Virtualization::BareMetal.token(), "none");
        assert_eq!(Virtualization::Unknown.token(), "unknown");
        assert_eq!(guest(None).token(), "unknown-hypervisor");
        assert_eq!(guest(Some("KVM")).token(), "kvm");
        assert_eq!(guest(Some("Microsoft Corporation")).token(), "microsoft-corporation");
        assert_eq!(guest(Some(" (?)")).token(), "unknown-hypervisor");
    }

    #[test]
    fn named_by_sys_hypervisor_then_dmi() {
        let dmi = vec!["QEMU\n".to_string(), "Standard PC\n".to_string()];
        let s = VirtSigns::parse(Some(FLAGGED), Some("xen\n"), dmi.clone());
        assert_eq!(s.virtualization(), guest(Some("xen")));
        let s = VirtSigns::parse(Some(FLAGGED), None, dmi);
        assert_eq!(
            s,
            VirtSigns { cpu_flag: Some(true), hypervisor_type: None, dmi: vec!["QEMU".into(), "Standard PC".into()] }
        );
        assert_eq!(s.virtualization(), guest(Some("QEMU")));
    }

    #[test]
    fn flag_alone_is_an_unnamed_guest() {
        let v = VirtSigns::parse(Some(FLAGGED), Some(""), vec![String::new()]).virtualization();
        assert_eq!(v, guest(None));
        assert_eq!(v.hypervisor().unwrap().to_string(), "unnamed, per the CPU hypervisor flag");
    }

    #[test]
    fn a_vm_vendor_without_the_flag_is_a_guest() {
        let v = VirtSigns::parse(Some(BARE), None, vec!["VMware, Inc.".into()]).virtualization();
        assert_eq!(v, guest(Some("VMware, Inc.")));
    }

    #[test]
    fn bare_metal_needs_readable_flags() {
        let s = VirtSigns::parse(Some(BARE), None, vec!["LENOVO".into(), "21CB".into()]);
        assert_eq!(s.virtualization(), Virtualization::BareMetal);
        assert_eq!(s.virtualization().hypervisor(), None);
        // No flags line (a malformed or unreadable cpuinfo): unknown, not bare metal.
        assert_eq!(VirtSigns::parse(Some("processor : 0\n"), None, vec![]).virtualization(), Virtualization::Unknown);
        assert_eq!(VirtSigns::parse(None, None, vec!["LENOVO".into()]).virtualization(), Virtualization::Unknown);
    }
}

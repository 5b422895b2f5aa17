//! The kernel's build configuration (`CONFIG_*`): a fact about the system
//! that the preemption model, the audit and the drift analysis read.

use std::collections::HashMap;
use std::io::Read;

use super::SysRoot;

/// The kernel build configuration (`CONFIG_*`), from /proc/config.gz or
/// `/boot/config-<release>`.
#[derive(Clone, Debug, Default)]
pub struct KernelConfig {
    values: HashMap<String, String>,
    /// Where it was read from.
    pub source: String,
}

impl KernelConfig {
    /// Parses `CONFIG_X=y` lines and `# CONFIG_X is not set` comments.
    pub fn parse(text: &str, source: &str) -> KernelConfig {
        let mut values = HashMap::new();
        for line in text.lines() {
            if let Some((k, v)) = line.split_once('=') {
                if k.starts_with("CONFIG_") {
                    values.insert(k.to_string(), v.trim_matches('"').to_string());
                }
            } else if let Some(rest) = line.strip_prefix("# ") {
                if let Some(k) = rest.strip_suffix(" is not set") {
                    values.insert(k.to_string(), "n".into());
                }
            }
        }
        KernelConfig { values, source: source.to_string() }
    }

    /// Reads `/proc/config.gz`, else `/boot/config-<release>`, under `root`.
    pub fn read(root: &SysRoot) -> Option<KernelConfig> {
        read_config(root)
    }

    /// A value (`y`, `m`, `n`, a number …); `None` when the option is absent.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Whether the option is built in.
    pub fn is_y(&self, key: &str) -> bool {
        self.get(key) == Some("y")
    }
}

fn read_config(root: &SysRoot) -> Option<KernelConfig> {
    if let Ok(f) = std::fs::File::open(root.path("/proc/config.gz")) {
        let mut text = String::new();
        if flate2::read::GzDecoder::new(f).read_to_string(&mut text).is_ok() {
            return Some(KernelConfig::parse(&text, "/proc/config.gz"));
        }
    }
    let release = root.read("/proc/sys/kernel/osrelease")?;
    let path = format!("/boot/config-{release}");
    root.read(&path).map(|t| KernelConfig::parse(&t, &path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_config_parse() {
        let c = KernelConfig::parse("CONFIG_HZ=250\n# CONFIG_PREEMPT_RT is not set\nCONFIG_NO_HZ_IDLE=y\n", "x");
        assert_eq!(c.get("CONFIG_HZ"), Some("250"));
        assert_eq!(c.get("CONFIG_PREEMPT_RT"), Some("n"));
        assert!(c.is_y("CONFIG_NO_HZ_IDLE"));
        assert_eq!(c.get("CONFIG_X"), None);
    }
}

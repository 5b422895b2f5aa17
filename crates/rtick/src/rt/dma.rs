//! `/dev/cpu_dma_latency`: the PM QoS CPU latency request.
//!
//! A request holds only while the file stays open. Writing 0 keeps every CPU
//! out of deep C-states (whose exit latency shows up as wake-up latency).
//! Reading the device gives the limit in force: [`DmaLatencyLimit`], the one
//! reading of it (the audit and `rtick measure` both use it).

use std::fs::{File, OpenOptions};
use std::io::Write;

use crate::error::{Error, Result};
use crate::system::SysRoot;

/// The device.
pub const DMA_LATENCY_PATH: &str = "/dev/cpu_dma_latency";

/// The value the kernel reports when nobody asked for anything: 2000 s.
pub const PM_QOS_DEFAULT_US: i32 = 2_000_000_000;

/// A held `/dev/cpu_dma_latency` request, released on drop.
#[derive(Debug)]
pub struct DmaLatency {
    _file: File,
    requested_us: i32,
}

impl DmaLatency {
    /// Opens the device and requests `us` microseconds of maximum wake-up latency.
    pub fn hold(us: i32) -> Result<DmaLatency> {
        let fix = "run as root (the device is root-only), or leave --dma-latency unset";
        let mut f = OpenOptions::new()
            .write(true)
            .open(DMA_LATENCY_PATH)
            .map_err(|e| Error::sys(format!("open({DMA_LATENCY_PATH})"), e, fix))?;
        f.write_all(&us.to_ne_bytes()).map_err(|e| Error::sys(format!("write({DMA_LATENCY_PATH})"), e, fix))?;
        Ok(DmaLatency { _file: f, requested_us: us })
    }

    /// The value requested.
    pub fn requested_us(&self) -> i32 {
        self.requested_us
    }

    /// The limit in force on the live system (`None`: unreadable).
    pub fn current() -> Option<DmaLatencyLimit> {
        DmaLatencyLimit::read(&SysRoot::default())
    }
}

/// The CPU wake-up latency limit in force: the smallest request held, or
/// [`PM_QOS_DEFAULT_US`] when nobody holds one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DmaLatencyLimit {
    us: i32,
}

impl DmaLatencyLimit {
    /// Reads [`DMA_LATENCY_PATH`] under `root`; `None` when it cannot be
    /// read (it is root-only) or does not hold a value.
    pub fn read(root: &SysRoot) -> Option<DmaLatencyLimit> {
        Self::parse(&std::fs::read(root.path(DMA_LATENCY_PATH)).ok()?)
    }

    /// The device's content: one native-endian `i32` (the kernel's read
    /// gives exactly 4 bytes); `None` for anything else.
    pub fn parse(bytes: &[u8]) -> Option<DmaLatencyLimit> {
        Some(DmaLatencyLimit { us: i32::from_ne_bytes(bytes.try_into().ok()?) })
    }

    /// The limit in µs.
    pub fn us(self) -> i32 {
        self.us
    }

    /// Whether no request is held: the kernel's default, every C-state allowed.
    pub fn is_unconstrained(self) -> bool {
        self.us >= PM_QOS_DEFAULT_US
    }
}

impl From<i32> for DmaLatencyLimit {
    fn from(us: i32) -> Self {
        DmaLatencyLimit { us }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_native_bytes_or_unknown() {
        let default = DmaLatencyLimit::parse(&2_000_000_000i32.to_ne_bytes()).unwrap();
        assert_eq!((default.us(), default.is_unconstrained()), (2_000_000_000, true));
        let held = DmaLatencyLimit::parse(&0i32.to_ne_bytes()).unwrap();
        assert_eq!((held.us(), held.is_unconstrained()), (0, false));
        assert_eq!(DmaLatencyLimit::parse(&55i32.to_ne_bytes()), Some(DmaLatencyLimit::from(55)));
        assert_eq!(DmaLatencyLimit::parse(b""), None);
        assert_eq!(DmaLatencyLimit::parse(b"ab"), None, "short");
        assert_eq!(DmaLatencyLimit::parse(b"0x00000000\n"), None, "text is what one writes, never what one reads");
    }

    #[test]
    fn read_under_a_root() {
        let d = tempfile::tempdir().unwrap();
        let root = SysRoot::new(d.path());
        assert_eq!(DmaLatencyLimit::read(&root), None, "missing");
        std::fs::create_dir(d.path().join("dev")).unwrap();
        std::fs::write(d.path().join("dev/cpu_dma_latency"), 20i32.to_ne_bytes()).unwrap();
        assert_eq!(DmaLatencyLimit::read(&root).map(DmaLatencyLimit::us), Some(20));
    }
}

//! `/dev/cpu_dma_latency`: the PM QoS CPU latency request.
//!
//! A request holds only while the file stays open. Writing 0 keeps every CPU
//! out of deep C-states (whose exit latency shows up as wake-up latency).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use crate::error::{Error, Result};

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

    /// The system's current effective value (µs), read from the device.
    pub fn current() -> Option<i32> {
        Self::current_from(Path::new(DMA_LATENCY_PATH))
    }

    /// As [`DmaLatency::current`], from another path (for tests and sysroots).
    pub fn current_from(path: &Path) -> Option<i32> {
        let mut buf = [0u8; 4];
        File::open(path).ok()?.read_exact(&mut buf).ok()?;
        Some(i32::from_ne_bytes(buf))
    }
}

//! tracefs for the tests that trace the kernel: shared, like `skip.rs`, by
//! the test crates that include it by path. They need root and tracefs,
//! mounted here when it is not.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the tests look for tracefs (and mount it).
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The tracefs root, mounted; or why a test cannot trace, and whether the
/// kernel lacks the feature (the one reason that may skip under CI).
pub fn tracefs() -> Result<PathBuf, (&'static str, bool)> {
    let root = Path::new(TRACEFS);
    if !root.exists() {
        return Err(("this kernel has no tracefs", true));
    }
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Uid:")?.split_whitespace().nth(1)?.parse::<u32>().ok()));
    if uid != Some(0) {
        return Err(("kernel tracing needs root", false));
    }
    // Tests run in parallel: one mounts, the others wait for it (two mounts at once fail).
    static MOUNTING: Mutex<()> = Mutex::new(());
    let _one = MOUNTING.lock().unwrap_or_else(|p| p.into_inner());
    if !root.join("instances").exists() {
        let _ = std::process::Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).status();
        if !root.join("instances").exists() {
            return Err(("could not mount tracefs", false));
        }
    }
    Ok(root.to_path_buf())
}

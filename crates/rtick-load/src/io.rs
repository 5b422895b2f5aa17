//! `io`: writes and `fdatasync` to a temporary file — block-layer work,
//! its interrupts and completion wake-ups. The file has no name
//! (`O_TMPFILE`, through the tempfile crate): nothing is left on disk,
//! even if rtick is killed.

use std::io::{Seek, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::workers::{KindCounters, Workers};

/// One write (the worker's buffer).
pub(crate) const BLOCK: usize = 256 << 10;
/// Written between syncs.
const PER_SYNC: usize = 4;
/// The file is rewritten from its start beyond this: bounded disk use.
const FILE_SIZE: u64 = 64 << 20;

/// Where the files go: `$TMPDIR`, else `/var/tmp` (a disk, where `/tmp`
/// is often memory and a sync does nothing).
fn directory() -> PathBuf {
    match std::env::var_os("TMPDIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ if std::path::Path::new("/var/tmp").is_dir() => PathBuf::from("/var/tmp"),
        _ => std::env::temp_dir(),
    }
}

pub fn start(w: &mut Workers, workers: usize, counters: &Arc<KindCounters>) -> Result<String> {
    let dir = directory();
    for i in 0..workers {
        // Created here, so that an unwritable directory stops the start.
        let mut file = tempfile::tempfile_in(&dir)
            .with_context(|| format!("--load io: cannot create a temporary file in {} (set TMPDIR)", dir.display()))?;
        let cpu = w.next_cpu();
        w.spawn(format!("load-io{i}"), cpu, counters, move |ctx| {
            let block = vec![0x5Au8; BLOCK];
            ctx.ready();
            let mut written = 0u64;
            while ctx.running() {
                for _ in 0..PER_SYNC {
                    file.write_all(&block)?;
                }
                file.sync_data()?;
                ctx.add((PER_SYNC * BLOCK) as u64);
                written += (PER_SYNC * BLOCK) as u64;
                if written >= FILE_SIZE {
                    file.rewind()?;
                    written = 0;
                }
            }
            Ok(())
        })?;
    }
    Ok(format!("{} KiB writes, fdatasync every {} KiB, in {}", BLOCK >> 10, (PER_SYNC * BLOCK) >> 10, dir.display()))
}

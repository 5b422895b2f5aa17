//! `memory`: copies over a buffer larger than the last-level cache, so
//! every pass goes to memory: bandwidth taken from the measured CPUs and
//! cache lines evicted under them.
//!
//! The cache size comes from sysfs (`cpu0/cache/index*/size` of the
//! highest level), read once when the load starts.

use std::sync::Arc;

use anyhow::{Context, Result};
use rtick::system::SysRoot;

use crate::workers::{KindCounters, Workers};

/// Copied per step, between looks at the stop flag.
const CHUNK: usize = 256 << 10;
/// The buffer when no cache size can be read: more than any common LLC.
const FALLBACK_BUFFER: usize = 64 << 20;

/// The last-level cache, as sysfs describes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LastLevelCache {
    pub level: u32,
    pub bytes: usize,
}

impl LastLevelCache {
    /// The highest-level data or unified cache of CPU 0 under `root`.
    pub fn read(root: &SysRoot) -> Option<LastLevelCache> {
        let dir = root.path("/sys/devices/system/cpu/cpu0/cache");
        let mut best: Option<LastLevelCache> = None;
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|n| n.starts_with("index")) else { continue };
            let base = format!("/sys/devices/system/cpu/cpu0/cache/{name}");
            let field = |f: &str| root.read(&format!("{base}/{f}"));
            if field("type").as_deref() == Some("Instruction") {
                continue;
            }
            let (Some(level), Some(bytes)) =
                (field("level").and_then(|l| l.parse().ok()), field("size").and_then(|s| parse_size(&s)))
            else {
                continue;
            };
            if best.is_none_or(|b| (level, bytes) > (b.level, b.bytes)) {
                best = Some(LastLevelCache { level, bytes });
            }
        }
        best
    }
}

/// A sysfs cache size: `8192K`, `32M`, or plain bytes.
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult).filter(|&b| b > 0)
}

/// `300 MiB`, or `1536 KiB` when not whole MiB.
fn size_text(bytes: usize) -> String {
    if bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// The smallest buffer, and the step of every size: whole MiB, two
/// chunks each way.
const MIN_BUFFER: usize = 1 << 20;
const _: () = assert!(MIN_BUFFER % (2 * CHUNK) == 0, "each half is whole chunks");

/// A memory worker's buffer: twice the last-level cache (two halves, each
/// the size of the cache, so a pass cannot stay in it), unless the loads'
/// memory cap leaves each worker less.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Its size, whole MiB.
    pub bytes: usize,
    /// The cache it follows; `None` when sysfs does not say.
    pub llc: Option<LastLevelCache>,
    /// The cap (bytes for all loads) that cut it below twice the cache.
    pub capped_by: Option<usize>,
}

impl Buffer {
    /// The buffer for `llc` within `share` bytes (a worker's share of
    /// `cap`), never below 1 MiB.
    pub fn fit(llc: Option<LastLevelCache>, share: usize, cap: usize) -> Buffer {
        let wanted = llc.map_or(FALLBACK_BUFFER, |c| 2 * c.bytes.max(CHUNK)).next_multiple_of(MIN_BUFFER);
        let room = (share / MIN_BUFFER * MIN_BUFFER).max(MIN_BUFFER);
        let bytes = wanted.min(room);
        Buffer { bytes, llc, capped_by: (bytes < wanted).then_some(cap) }
    }

    /// `512 MiB buffer per worker (L3 cache 300 MiB × 2, capped to fit 1024 MiB for all loads)`.
    pub fn describe(&self) -> String {
        let cache = match self.llc {
            Some(c) => format!("L{} cache {} × 2", c.level, size_text(c.bytes)),
            None => "cache size unreadable".into(),
        };
        let capped =
            self.capped_by.map_or(String::new(), |cap| format!(", capped to fit {} for all loads", size_text(cap)));
        format!("{} buffer per worker ({cache}{capped})", size_text(self.bytes))
    }
}

pub fn start(w: &mut Workers, workers: usize, buffer: Buffer, counters: &Arc<KindCounters>) -> Result<String> {
    let half = buffer.bytes / 2;
    for i in 0..workers {
        let cpu = w.next_cpu();
        w.spawn(format!("load-memory{i}"), cpu, counters, move |ctx| {
            let mut buf = Vec::new();
            buf.try_reserve_exact(2 * half)
                .with_context(|| {
                    format!("cannot allocate {} MiB (locked memory limit? try --no-mlock)", (2 * half) >> 20)
                })
                .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
            // Touched now, before the run: page faults are not the load.
            buf.resize(2 * half, 1u8);
            let (a, b) = buf.split_at_mut(half);
            ctx.ready();
            let mut forward = true;
            while ctx.running() {
                for at in (0..half).step_by(CHUNK) {
                    let (src, dst) = if forward {
                        (&a[at..at + CHUNK], &mut b[at..at + CHUNK])
                    } else {
                        (&b[at..at + CHUNK], &mut a[at..at + CHUNK])
                    };
                    dst.copy_from_slice(src);
                    ctx.add(CHUNK as u64);
                    if !ctx.running() {
                        break;
                    }
                }
                forward = !forward;
            }
            std::hint::black_box(&buf);
            Ok(())
        })?;
    }
    Ok(buffer.describe())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_level_is_the_highest_data_or_unified_cache() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("sys/devices/system/cpu/cpu0/cache");
        for (i, level, kind, size) in [
            (0, "1", "Data", "32K"),
            (1, "1", "Instruction", "64K"),
            (2, "2", "Unified", "512K"),
            (3, "3", "Unified", "8192K"),
        ] {
            let d = c.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [("level", level), ("type", kind), ("size", size)] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        let root = SysRoot::new(dir.path());
        assert_eq!(LastLevelCache::read(&root), Some(LastLevelCache { level: 3, bytes: 8 << 20 }));
        std::fs::remove_dir_all(c.join("index3")).unwrap();
        assert_eq!(LastLevelCache::read(&root), Some(LastLevelCache { level: 2, bytes: 512 << 10 }));
        assert_eq!(LastLevelCache::read(&SysRoot::new(dir.path().join("none"))), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8192K"), Some(8 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!((parse_size(""), parse_size("K"), parse_size("0K"), parse_size("x")), (None, None, None, None));
    }
}

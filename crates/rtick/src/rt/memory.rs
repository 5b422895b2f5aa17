//! `mlockall` with prefaulting (seed 002), undone on drop.

use crate::error::{Error, Result};
use crate::sys::mem;

/// Heap touched after locking by default: 8 MiB.
pub const DEFAULT_HEAP_PREFAULT: usize = 8 << 20;
/// Stack touched by each measuring thread by default: 256 KiB.
pub const DEFAULT_STACK_PREFAULT: usize = 256 << 10;

/// Process memory locked with `mlockall(MCL_CURRENT|MCL_FUTURE)`; unlocked on drop.
#[derive(Debug)]
pub struct MemoryLock {
    heap_prefaulted: usize,
}

impl MemoryLock {
    /// Locks all current and future memory, tells malloc to keep what it gets,
    /// and touches `heap_prefault` bytes of heap so later allocations find
    /// resident pages.
    pub fn lock(heap_prefault: usize) -> Result<MemoryLock> {
        mem::lock_all().map_err(|e| {
            Error::sys(
                "mlockall(MCL_CURRENT|MCL_FUTURE)",
                e,
                "run as root or grant CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK (ulimit -l unlimited); --no-mlock to run without",
            )
        })?;
        mem::keep_heap();
        let page = mem::page_size();
        let mut buf = vec![0u8; heap_prefault];
        for i in (0..buf.len()).step_by(page) {
            // A volatile-like write the optimiser keeps: each touch faults one page in.
            buf[i] = 1;
        }
        std::hint::black_box(&mut buf);
        drop(buf);
        Ok(MemoryLock { heap_prefaulted: heap_prefault })
    }

    /// Bytes of heap touched.
    pub fn heap_prefaulted(&self) -> usize {
        self.heap_prefaulted
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        let _ = mem::unlock_all();
    }
}

/// Touches `bytes` of the calling thread's stack so that its pages are mapped
/// (and locked, after `mlockall(MCL_FUTURE)`) before the measured loop runs.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 16 << 10;
    fn touch(left: usize) {
        let mut buf = [0u8; CHUNK];
        std::hint::black_box(&mut buf);
        if left > CHUNK {
            touch(left - CHUNK);
        }
        std::hint::black_box(&buf);
    }
    touch(bytes);
}

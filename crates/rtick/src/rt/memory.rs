//! `mlockall` with prefaulting, undone on drop, and the bounds of
//! what may be prefaulted: a heap prefault that exceeds the memory the
//! process may lock, or a stack prefault that exceeds the thread's stack,
//! would end the process (an aborted allocation, a stack overflow) instead of
//! failing with an error.

use crate::error::{Error, Result};
use crate::sys::mem;

/// Heap touched after locking by default: 8 MiB.
pub const DEFAULT_HEAP_PREFAULT: usize = 8 << 20;
/// Stack touched by each measuring thread by default: 256 KiB.
pub const DEFAULT_STACK_PREFAULT: usize = 256 << 10;
/// The largest stack prefault of a thread spawned with std's default stack
/// (2 MiB, as `std::thread` documents): a quarter of it, leaving room for
/// what the thread has used before and will call after.
pub const MAX_SPAWNED_STACK_PREFAULT: usize = 512 << 10;
const _: () = assert!(DEFAULT_STACK_PREFAULT <= MAX_SPAWNED_STACK_PREFAULT, "measure's default must pass its bound");

/// Bytes as MiB, rounded up, for messages.
fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// Checks a heap prefault before anything is locked: at most half of the
/// physical memory, so that the system keeps the rest (locked pages cannot
/// be reclaimed).
pub fn check_heap_prefault(bytes: usize) -> Result<()> {
    let Some(phys) = mem::physical_memory() else { return Ok(()) };
    if bytes as u64 > phys / 2 {
        return Err(Error::Invalid(format!(
            "a heap prefault of {} MiB is more than half of the {} MiB of physical memory: prefault less",
            mib(bytes as u64),
            mib(phys)
        )));
    }
    Ok(())
}

/// The largest stack prefault the calling thread can take: half of its
/// stack below the caller's frame (the other half stays for the loop's own
/// calls and signal handlers). Read with `pthread_getattr_np`, which for the
/// main thread derives the stack from RLIMIT_STACK.
pub fn stack_prefault_limit() -> Result<usize> {
    mem::stack_left()
        .map(|left| left / 2)
        .map_err(|e| Error::sys("pthread_getattr_np (the calling thread's stack)", e, "give no stack prefault (0)"))
}

/// Checks a stack prefault against [`stack_prefault_limit`] of the calling
/// thread: call it in the thread that will prefault.
pub fn check_stack_prefault(bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let limit = stack_prefault_limit()?;
    if bytes > limit {
        return Err(Error::Invalid(format!(
            "a stack prefault of {} KiB is more than half of the {} KiB left on this thread's stack: \
             prefault at most {} KiB, or run on a thread with a larger stack (ulimit -s for the main thread)",
            bytes.div_ceil(1 << 10),
            (limit * 2) >> 10,
            limit >> 10
        )));
    }
    Ok(())
}

/// Process memory locked with `mlockall(MCL_CURRENT|MCL_FUTURE)`; unlocked on drop.
#[derive(Debug)]
pub struct MemoryLock {
    heap_prefaulted: usize,
}

impl MemoryLock {
    /// Locks all current and future memory, tells malloc to keep what it gets,
    /// and touches `heap_prefault` bytes of heap so later allocations find
    /// resident pages. A prefault over half the physical memory is refused
    /// before anything is locked; one that the memory the process may lock
    /// (RLIMIT_MEMLOCK) cannot hold fails and unlocks again.
    pub fn lock(heap_prefault: usize) -> Result<MemoryLock> {
        check_heap_prefault(heap_prefault)?;
        mem::lock_all().map_err(|e| {
            Error::sys(
                "mlockall(MCL_CURRENT|MCL_FUTURE)",
                e,
                "run as root or grant CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK (ulimit -l unlimited); --no-mlock to run without",
            )
        })?;
        // From here on, an early return unlocks (drop).
        let mut lock = MemoryLock { heap_prefaulted: 0 };
        mem::keep_heap();
        // With MCL_FUTURE every allocation is locked as it is made: beyond
        // RLIMIT_MEMLOCK (without CAP_IPC_LOCK) malloc fails, which
        // try_reserve reports instead of aborting.
        let mut buf: Vec<u8> = Vec::new();
        if buf.try_reserve_exact(heap_prefault).is_err() {
            return Err(Error::Invalid(format!(
                "a heap prefault of {} MiB cannot be allocated with memory locked: it exceeds RLIMIT_MEMLOCK ({}); \
                 raise it (ulimit -l), grant CAP_IPC_LOCK, or prefault less",
                mib(heap_prefault as u64),
                match mem::memlock_limit() {
                    Ok(Some(l)) => format!("{} KiB", l >> 10),
                    Ok(None) => "unlimited".into(),
                    Err(_) => "unreadable".into(),
                }
            )));
        }
        let page = mem::page_size();
        for b in buf.spare_capacity_mut().iter_mut().step_by(page) {
            // Each touch faults one page in.
            b.write(1);
        }
        std::hint::black_box(&mut buf);
        drop(buf);
        lock.heap_prefaulted = heap_prefault;
        Ok(lock)
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
///
/// Never more than [`stack_prefault_limit`]: a larger request (which
/// [`check_stack_prefault`] rejects beforehand) is cut to it, and nothing is
/// touched when the stack cannot be read. So whatever `bytes` is, the stack
/// cannot overflow.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    if bytes == 0 {
        return;
    }
    let Ok(limit) = stack_prefault_limit() else { return };
    touch_stack(bytes.min(limit));
}

/// Touches `bytes` of stack below the caller in frames of [`STACK_CHUNK`]:
/// Rust has no `alloca`, so each frame is one call deeper. The depth is
/// `bytes / STACK_CHUNK`, and `bytes` was bounded by the stack left.
#[inline(never)]
fn touch_stack(bytes: usize) {
    let mut buf = [0u8; STACK_CHUNK];
    std::hint::black_box(&mut buf);
    if bytes > STACK_CHUNK {
        touch_stack(bytes - STACK_CHUNK);
    }
    // Keeps the buffer alive across the deeper call, so frames cannot overlap.
    std::hint::black_box(&buf);
}

/// The frame [`touch_stack`] touches at each level.
const STACK_CHUNK: usize = 16 << 10;

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread with a small stack: the limit is half of what is left of
    /// it, a larger prefault is refused by the check and cut by the prefault
    /// itself (which, asked for everything, overflowed the stack).
    #[test]
    fn stack_prefaults_stay_within_the_thread_stack() {
        let size = 256 << 10;
        std::thread::Builder::new()
            .stack_size(size)
            .spawn(move || {
                let limit = stack_prefault_limit().unwrap();
                // glibc may give the thread a larger stack than asked for (a cached one).
                let (_, stack) = mem::thread_stack().unwrap();
                assert!(limit > size / 2 - (32 << 10) && limit < stack / 2, "{limit} of {stack}");
                // The limit is measured where it is asked for: a few frames
                // deeper, a little less is left.
                let slack = 16 << 10;
                check_stack_prefault(limit - slack).unwrap();
                check_stack_prefault(0).unwrap();
                let e = check_stack_prefault(limit + slack).unwrap_err().to_string();
                assert!(e.contains("more than half of the") && e.contains("left on this thread's stack"), "{e}");
                assert_eq!(e.lines().count(), 1, "{e}");
                prefault_stack(limit - slack);
                prefault_stack(usize::MAX);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// The bound `MeasureConfig` checks fits on a measuring thread's stack
    /// (std's 2 MiB).
    #[test]
    fn the_spawned_thread_bound_fits_std_threads() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| check_stack_prefault(MAX_SPAWNED_STACK_PREFAULT).unwrap())
            .unwrap()
            .join()
            .unwrap();
    }

    /// Half the physical memory is refused before anything is locked (it
    /// was `vec![0; n]`, which aborts the process when the allocation fails).
    #[test]
    fn a_heap_prefault_beyond_physical_memory_is_refused() {
        let phys = mem::physical_memory().unwrap();
        for bytes in [usize::MAX, (phys / 2 + 1) as usize] {
            let e = MemoryLock::lock(bytes).unwrap_err();
            assert!(matches!(e, Error::Invalid(_)), "{e:?}");
            let e = e.to_string();
            assert!(e.contains("MiB of physical memory: prefault less"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        check_heap_prefault((phys / 2) as usize).unwrap();
        check_heap_prefault(DEFAULT_HEAP_PREFAULT).unwrap();
    }
}

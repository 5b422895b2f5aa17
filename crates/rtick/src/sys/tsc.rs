//! The x86-64 time-stamp counter, and a clock read forced through the kernel.

use crate::time::Time;

/// `rdtsc`, on x86-64.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86-64 CPU and has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// `rdtsc` fenced on both sides (`lfence`): it reads the counter only after
/// every earlier load has completed, and later instructions wait for it. A
/// timestamp taken after seeing another thread's value is then causally after it.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn rdtsc_ordered() -> u64 {
    // SAFETY: lfence (SSE2) and rdtsc exist on every x86-64 CPU and touch no memory.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        let t = core::arch::x86_64::_rdtsc();
        core::arch::x86_64::_mm_lfence();
        t
    }
}

/// `rdtscp` (waits for earlier instructions; also returns the CPU id), on x86-64.
/// Callers check the `rdtscp` CPU flag first.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn rdtscp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: the caller checked the rdtscp flag; aux is a valid out pointer.
    unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
}

/// `clock_gettime` through the system call instead of the vDSO: the cost a
/// read would have if the vDSO could not serve it.
#[inline]
pub fn syscall_now(clock: libc::clockid_t) -> Time {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: raw clock_gettime(clock, &ts); ts is a valid out pointer.
    unsafe { libc::syscall(libc::SYS_clock_gettime, clock, &mut ts as *mut libc::timespec) };
    Time::from_timespec(&ts)
}

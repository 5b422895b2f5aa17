//! The x86-64 time-stamp counter.

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

/// Proof that the CPU has `rdtscp` (an instruction older x86-64 CPUs lack:
/// executing it there faults): the only way to the instruction is through a
/// value [`Rdtscp::detect`] returned, as divan does with its TSC timer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rdtscp(());

impl Rdtscp {
    /// `Some` when CPUID says the CPU has `rdtscp` (leaf 0x8000_0001, EDX bit 27).
    #[cfg(target_arch = "x86_64")]
    pub fn detect() -> Option<Rdtscp> {
        use core::arch::x86_64::__cpuid;
        // SAFETY: cpuid exists on every x86-64 CPU and only reads identification
        // registers; a leaf above the maximum returns data, never faults. (The
        // intrinsic is a safe fn since Rust 1.87; the MSRV needs the block.)
        #[allow(unused_unsafe)]
        let (max_ext, ext) = unsafe { (__cpuid(0x8000_0000).eax, __cpuid(0x8000_0001).edx) };
        (max_ext >= 0x8000_0001 && ext & (1 << 27) != 0).then_some(Rdtscp(()))
    }

    /// Never: no other architecture has the instruction.
    #[cfg(not(target_arch = "x86_64"))]
    pub fn detect() -> Option<Rdtscp> {
        None
    }

    /// `rdtscp`: the TSC, read after every earlier instruction has executed.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub fn read(self) -> u64 {
        let mut aux = 0u32;
        // SAFETY: self exists only if `detect` saw the rdtscp CPUID flag; aux is
        // a valid out pointer (it receives IA32_TSC_AUX, the CPU id).
        unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdtscp_matches_cpuinfo_and_counts_up() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let flag = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "rdtscp"));
        assert_eq!(Rdtscp::detect().is_some(), flag && cfg!(target_arch = "x86_64"));
        #[cfg(target_arch = "x86_64")]
        if let Some(r) = Rdtscp::detect() {
            let a = r.read();
            assert_ne!(r.read(), a, "the TSC moves between two reads");
        }
    }
}

//! `rtick_rt_*`: real-time setup of the calling thread, restored by a guard.

use rtick_core::rt::{Policy, Setup, SetupGuard};
use rtick_core::Nanos;

use crate::types::*;
use crate::{guard, invalid, status_of, Bound};

/// A real-time setup in force (opaque); rtick_rt_restore undoes it, in the
/// thread that applied it.
#[derive(Debug)]
pub struct rtick_rt_guard {
    /// The setup, bound to the thread whose policy, affinity and slack it restores.
    inner: Bound<SetupGuard>,
}

/// Fills `cfg` with "change nothing".
///
/// # Safety
///
/// `cfg` is NULL or points to a writable `rtick_rt_config`.
#[no_mangle]
pub unsafe extern "C" fn rtick_rt_config_init(cfg: *mut rtick_rt_config) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; the caller passes a writable struct.
        let cfg = unsafe { cfg.as_mut() }.ok_or_else(|| invalid("rtick_rt_config_init: cfg is NULL"))?;
        *cfg = rtick_rt_config {
            policy: rtick_policy::RTICK_POLICY_UNCHANGED as i32,
            priority: 0,
            cpus: std::ptr::null(),
            n_cpus: 0,
            lock_memory: 0,
            heap_prefault: 8 << 20,
            stack_prefault: 256 << 10,
            dma_latency_us: -1,
            timer_slack_ns: 0,
        };
        Ok(())
    })
}

/// The most CPUs an affinity can name (`CPU_SETSIZE`).
const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

/// The setup `c` asks for, every value checked (the stack prefault against
/// the calling thread's stack: call it in the thread that applies it).
///
/// # Safety
///
/// `c.cpus` is NULL or points to `c.n_cpus` readable `u32`s.
pub(crate) unsafe fn setup_of(c: &rtick_rt_config) -> Result<Setup, rtick_status> {
    let mut s = Setup::new();
    if c.policy == rtick_policy::RTICK_POLICY_UNCHANGED as i32 && c.priority != 0 {
        return Err(invalid(&format!(
            "rtick_rt_config: priority {} without a policy (RTICK_POLICY_UNCHANGED): give a policy, or priority 0",
            c.priority
        )));
    }
    if c.policy != rtick_policy::RTICK_POLICY_UNCHANGED as i32 {
        let p = match c.policy {
            0 => Policy::Other,
            1 => Policy::Fifo,
            2 => Policy::Rr,
            3 => Policy::Batch,
            5 => Policy::Idle,
            p => return Err(invalid(&format!("rtick_rt_config: unknown policy {p}"))),
        };
        s = s.policy(p, c.priority);
    }
    if c.n_cpus > 0 {
        if c.cpus.is_null() {
            return Err(invalid("rtick_rt_config: cpus is NULL but n_cpus is not 0"));
        }
        if c.n_cpus > MAX_CPUS {
            return Err(invalid(&format!(
                "rtick_rt_config: n_cpus {} is more than the {MAX_CPUS} CPUs an affinity can name",
                c.n_cpus
            )));
        }
        // SAFETY: n_cpus readable values at cpus (this function's contract;
        // checked for NULL); at most MAX_CPUS of them, far below isize::MAX bytes.
        let cpus = unsafe { std::slice::from_raw_parts(c.cpus, c.n_cpus) };
        s = s.affinity(&cpus.iter().map(|&c| c as usize).collect::<Vec<_>>());
    }
    if c.lock_memory != 0 {
        s = s.lock_memory(c.heap_prefault, c.stack_prefault);
    }
    if c.dma_latency_us >= 0 {
        s = s.dma_latency(c.dma_latency_us);
    }
    if c.timer_slack_ns != 0 {
        s = s.timer_slack(Nanos(c.timer_slack_ns));
    }
    s.validate().map_err(|e| status_of(&e))?;
    Ok(s)
}

/// Applies `cfg` to the calling thread (and the process, for memory and
/// cpu_dma_latency). On failure nothing stays changed.
///
/// # Safety
///
/// `cfg` is NULL or points to a valid `rtick_rt_config` (`cpus`: NULL or
/// `n_cpus` readable `uint32_t`); `out` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn rtick_rt_apply(cfg: *const rtick_rt_config, out: *mut *mut rtick_rt_guard) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; the caller passes valid pointers.
        let (cfg, out) = unsafe { (cfg.as_ref(), out.as_mut()) };
        let cfg = cfg.ok_or_else(|| invalid("rtick_rt_apply: cfg is NULL"))?;
        let out = out.ok_or_else(|| invalid("rtick_rt_apply: out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: cfg's cpus holds n_cpus values (this function's contract).
        let g = unsafe { setup_of(cfg) }?.apply().map_err(|e| status_of(&e))?;
        *out = Box::into_raw(Box::new(rtick_rt_guard { inner: Bound::new(g) }));
        Ok(())
    })
}

/// Undoes a setup and frees the guard (NULL is ignored). From a thread other
/// than the one that applied it: RTICK_ERR_THREAD, and nothing is undone
/// (it would change that other thread).
///
/// # Safety
///
/// `g` is NULL or a guard from rtick_rt_apply not yet freed (on RTICK_OK it
/// is freed: do not use it again).
#[no_mangle]
pub unsafe extern "C" fn rtick_rt_restore(g: *mut rtick_rt_guard) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; g comes from rtick_rt_apply and is not
        // freed yet. Only the wrapper is borrowed: the check reads its owner.
        let Some(gd) = (unsafe { g.as_ref() }) else { return Ok(()) };
        gd.inner.check("rtick_rt_restore", "rt guard")?;
        // SAFETY: g comes from rtick_rt_apply and is freed once, here, in its
        // thread, with no other call on it in progress.
        drop(unsafe { Box::from_raw(g) });
        Ok(())
    })
}

//! SCHED_DEADLINE through `sched_setattr`.

use std::io;

use super::last_error;
use crate::time::Nanos;

/// SCHED_DEADLINE's policy number.
pub const SCHED_DEADLINE: u32 = 6;

/// The kernel's `struct sched_attr` (SCHED_ATTR_SIZE_VER0, 48 bytes).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Makes the calling thread SCHED_DEADLINE with `runtime` every `period`
/// (relative deadline = period).
pub fn set_deadline(runtime: Nanos, period: Nanos) -> io::Result<()> {
    set_deadline_full(runtime, period, period)
}

/// SCHED_DEADLINE with an explicit relative deadline.
pub fn set_deadline_full(runtime: Nanos, deadline: Nanos, period: Nanos) -> io::Result<()> {
    set_deadline_of(0, runtime, deadline, period)
}

/// Makes thread `tid` (0: the calling thread) SCHED_DEADLINE.
pub fn set_deadline_of(tid: libc::pid_t, runtime: Nanos, deadline: Nanos, period: Nanos) -> io::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: SCHED_DEADLINE,
        runtime: runtime.as_ns() as u64,
        deadline: deadline.as_ns() as u64,
        period: period.as_ns() as u64,
        ..Default::default()
    };
    // SAFETY: sched_setattr(tid, attr, flags 0); attr is a valid struct
    // sched_attr of the size it declares; an unknown tid only returns ESRCH.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0u32) };
    if r < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

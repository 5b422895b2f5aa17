//! `rtick_periodic_*`: the loop, and telemetry handles for other threads.

use std::ffi::{c_char, CStr};
use std::sync::Arc;

use rtick_core::periodic::{Periodic, Start, SyncConfig, Telemetry};
use rtick_core::{Mechanism, Nanos, Time};

use crate::types::*;
use crate::values::{self, MAX_TIME_NS};
use crate::{guard, invalid, status_of, Bound};

/// A periodic loop (opaque). Bound to the thread that created it: every
/// rtick_periodic_* call on it from another thread returns RTICK_ERR_THREAD.
#[derive(Debug)]
pub struct rtick_periodic {
    /// The loop, and the creating thread: the Rust loop is not `Send` (its
    /// timer signals that thread, its real-time setup is that thread's),
    /// which C cannot be told, so each call checks, without touching the
    /// loop until the check has passed.
    inner: Bound<Periodic>,
}

/// A handle on a loop's telemetry, usable from any thread (opaque).
#[derive(Debug)]
pub struct rtick_telemetry_handle {
    inner: Arc<Telemetry>,
}

/// Fills `cfg` with the defaults: 1 ms, clock_nanosleep, CLOCK_MONOTONIC,
/// skip, start now, hybrid slack auto, sync kp 0.1 ki 0.01 max step 5 µs.
///
/// # Safety
///
/// `cfg` is NULL or points to a writable `rtick_periodic_config`.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_config_init(cfg: *mut rtick_periodic_config) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; the caller passes a writable struct.
        let cfg = unsafe { cfg.as_mut() }.ok_or_else(|| invalid("rtick_periodic_config_init: cfg is NULL"))?;
        let s = SyncConfig::default();
        *cfg = rtick_periodic_config {
            period_ns: 1_000_000,
            mechanism: rtick_mechanism::RTICK_MECH_CLOCK_NANOSLEEP as i32,
            clock: rtick_clock::RTICK_CLOCK_MONOTONIC as i32,
            overrun: rtick_overrun::RTICK_OVERRUN_SKIP as i32,
            start: rtick_start::RTICK_START_NOW as i32,
            start_ns: 0,
            hybrid_slack_ns: RTICK_HYBRID_SLACK_AUTO,
            sync_kp: s.kp,
            sync_ki: s.ki,
            sync_max_step_ns: s.max_step.as_ns(),
            sync_offset_ns: s.offset.as_ns(),
        };
        Ok(())
    })
}

/// Creates a loop in the calling thread (which will run it): applies `rt`
/// (may be NULL; undone by rtick_periodic_free), builds the wait mechanism
/// and arms the first deadline. On success `*out` owns the loop. The loop is
/// bound to this thread: call every rtick_periodic_* function on it, free
/// included, from here (another thread gets RTICK_ERR_THREAD); other threads
/// read its telemetry through rtick_periodic_telemetry_handle.
///
/// # Safety
///
/// `cfg` and `rt` are NULL or point to valid configs (`rt->cpus`: NULL or
/// `rt->n_cpus` readable `uint32_t`); `out` is NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_create(
    cfg: *const rtick_periodic_config,
    rt: *const rtick_rt_config,
    out: *mut *mut rtick_periodic,
) -> rtick_status {
    const WHAT: &str = "rtick_periodic_create";
    guard(|| {
        // SAFETY: checked for NULL; the caller passes valid structs.
        let (cfg, out) = unsafe { (cfg.as_ref(), out.as_mut()) };
        let cfg = cfg.ok_or_else(|| invalid("rtick_periodic_create: cfg is NULL"))?;
        let out = out.ok_or_else(|| invalid("rtick_periodic_create: out is NULL"))?;
        *out = std::ptr::null_mut();
        let mechanism = mechanism_from_i32(cfg.mechanism)
            .ok_or_else(|| invalid(&format!("rtick_periodic_create: unknown mechanism {}", cfg.mechanism)))?;
        let clock = clock_from_i32(cfg.clock)
            .ok_or_else(|| invalid(&format!("rtick_periodic_create: unknown clock {}", cfg.clock)))?;
        let overrun = overrun_from_i32(cfg.overrun)
            .ok_or_else(|| invalid(&format!("rtick_periodic_create: unknown overrun policy {}", cfg.overrun)))?;
        let start = match cfg.start {
            0 => Start::Now,
            1 => Start::Aligned,
            2 => Start::At(values::time(WHAT, "start_ns", cfg.start_ns)?),
            s => return Err(invalid(&format!("rtick_periodic_create: unknown start {s}"))),
        };
        let mut b = Periodic::builder()
            .period(values::length(WHAT, "period_ns", cfg.period_ns, 1)?)
            .mechanism(mechanism)
            .clock(clock)
            .overrun(overrun)
            .start(start)
            .hybrid_slack(values::hybrid_slack(WHAT, cfg.hybrid_slack_ns)?)
            .sync(SyncConfig {
                kp: values::gain(WHAT, "sync_kp", cfg.sync_kp)?,
                ki: values::gain(WHAT, "sync_ki", cfg.sync_ki)?,
                max_step: values::length(WHAT, "sync_max_step_ns", cfg.sync_max_step_ns, 0)?,
                offset: values::signed_length(WHAT, "sync_offset_ns", cfg.sync_offset_ns)?,
            });
        // SAFETY: checked for NULL inside; the caller passes a valid struct.
        if let Some(rt) = unsafe { rt.as_ref() } {
            // SAFETY: rt's cpus holds n_cpus values (this function's contract).
            b = b.setup(unsafe { crate::rt::setup_of(rt) }?);
        }
        let inner = b.build().map_err(|e| status_of(&e))?;
        *out = Box::into_raw(Box::new(rtick_periodic { inner: Bound::new(inner) }));
        Ok(())
    })
}

/// Waits for the next deadline; fills `tick` (may be NULL). With
/// RTICK_OVERRUN_FAIL, an overrun returns RTICK_ERR_OVERRUN (the loop has
/// already skipped ahead; keep calling).
///
/// # Safety
///
/// `p` is NULL or a loop from rtick_periodic_create not yet freed; `tick` is
/// NULL or points to a writable `rtick_tick`.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_wait(p: *mut rtick_periodic, tick: *mut rtick_tick) -> rtick_status {
    // SAFETY: p is NULL or a live loop (this function's contract); only the
    // wrapper is borrowed, as `with_loop` says.
    with_loop(unsafe { p.as_ref() }, "rtick_periodic_wait", |l| {
        let t = l.wait().map_err(|e| status_of(&e))?;
        // SAFETY: checked for NULL; the caller passes a writable struct.
        if let Some(out) = unsafe { tick.as_mut() } {
            *out = rtick_tick {
                cycle: t.cycle,
                deadline_ns: t.deadline.as_ns(),
                woke_ns: t.woke.as_ns(),
                latency_ns: t.latency.as_ns(),
                missed: t.missed,
                clock_step_ns: t.clock_step.as_ns(),
            };
        }
        Ok(())
    })
}

/// Runs `f` on the loop `p` points to, once the call is let through: from
/// the loop's thread, and not from inside another call on it. A shared
/// reference to the wrapper asserts nothing about the loop inside its
/// UnsafeCell, which its owner may hold as `&mut` right now (in
/// rtick_periodic_wait): only `enter` makes a reference to the loop, after
/// the owner check.
fn with_loop(
    p: Option<&rtick_periodic>,
    what: &str,
    f: impl FnOnce(&mut Periodic) -> Result<(), rtick_status>,
) -> rtick_status {
    guard(|| {
        let p = p.ok_or_else(|| invalid(&format!("{what}: loop is NULL")))?;
        p.inner.enter(what, "loop", f)
    })
}

/// Changes the period (1 ns to 73 years) from the last deadline on.
///
/// # Safety
///
/// `p` is NULL or a loop from rtick_periodic_create not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_set_period(p: *mut rtick_periodic, period_ns: i64) -> rtick_status {
    const WHAT: &str = "rtick_periodic_set_period";
    // SAFETY: p is NULL or a live loop (this function's contract); only the
    // wrapper is borrowed, as `with_loop` says.
    with_loop(unsafe { p.as_ref() }, WHAT, |l| {
        let period = values::length(WHAT, "period_ns", period_ns, 1)?;
        l.set_period(period).map_err(|e| status_of(&e))
    })
}

/// Moves every following deadline by `by_ns` (negative: earlier); the next
/// deadline must stay a time on the clock (0 to 146 years).
///
/// # Safety
///
/// `p` is NULL or a loop from rtick_periodic_create not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_shift(p: *mut rtick_periodic, by_ns: i64) -> rtick_status {
    // SAFETY: p is NULL or a live loop (this function's contract); only the
    // wrapper is borrowed, as `with_loop` says.
    with_loop(unsafe { p.as_ref() }, "rtick_periodic_shift", |l| {
        let next = l.next_deadline().as_ns();
        if !next.checked_add(by_ns).is_some_and(|t| (0..=MAX_TIME_NS).contains(&t)) {
            return Err(invalid(&format!(
                "rtick_periodic_shift: by_ns {by_ns} would move the next deadline ({next} ns) off the clock \
                 (0 to {MAX_TIME_NS} ns): shift by less"
            )));
        }
        l.shift(Nanos(by_ns)).map_err(|e| status_of(&e))
    })
}

/// Feeds the reference clock's reading at the last deadline (ns, at most
/// 146 years either way) to the PI controller; the bounded shift applied
/// goes to `correction_ns` (may be NULL).
///
/// # Safety
///
/// `p` is NULL or a loop from rtick_periodic_create not yet freed;
/// `correction_ns` is NULL or points to a writable `int64_t`.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_sync(
    p: *mut rtick_periodic,
    reference_ns: i64,
    correction_ns: *mut i64,
) -> rtick_status {
    // SAFETY: p is NULL or a live loop (this function's contract); only the
    // wrapper is borrowed, as `with_loop` says.
    with_loop(unsafe { p.as_ref() }, "rtick_periodic_sync", |l| {
        if !(-MAX_TIME_NS..=MAX_TIME_NS).contains(&reference_ns) {
            return Err(invalid(&format!(
                "rtick_periodic_sync: reference_ns {reference_ns} is out of range: give -{MAX_TIME_NS} to {MAX_TIME_NS} ns"
            )));
        }
        let c = l.sync_to(Time(reference_ns)).map_err(|e| status_of(&e))?;
        // SAFETY: checked for NULL; the caller passes a writable int64_t.
        if let Some(out) = unsafe { correction_ns.as_mut() } {
            *out = c.as_ns();
        }
        Ok(())
    })
}

/// The loop's telemetry, from the thread that runs it (others: RTICK_ERR_THREAD;
/// they use a telemetry handle).
///
/// # Safety
///
/// `p` is NULL or a loop from rtick_periodic_create not yet freed; `out` is
/// NULL or points to a writable `rtick_telemetry`.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_telemetry(p: *const rtick_periodic, out: *mut rtick_telemetry) -> rtick_status {
    // SAFETY: checked for NULL; the caller passes a writable struct.
    let Some(out) = (unsafe { out.as_mut() }) else {
        return guard(|| Err(invalid("rtick_periodic_telemetry: out is NULL")));
    };
    // SAFETY: p is NULL or a live loop (this function's contract); only the
    // wrapper is borrowed, as `with_loop` says.
    with_loop(unsafe { p.as_ref() }, "rtick_periodic_telemetry", |l| {
        *out = telemetry_of(&l.telemetry().snapshot());
        Ok(())
    })
}

/// A handle on the loop's telemetry that other threads may read while the
/// loop runs (free it with rtick_telemetry_handle_free; it outlives the loop).
/// Made in the loop's thread; the handle itself may go to any thread.
///
/// # Safety
///
/// `p` is NULL or a loop from rtick_periodic_create not yet freed; `out` is
/// NULL or points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_telemetry_handle(
    p: *const rtick_periodic,
    out: *mut *mut rtick_telemetry_handle,
) -> rtick_status {
    // SAFETY: checked for NULL; the caller passes a writable pointer.
    let Some(out) = (unsafe { out.as_mut() }) else {
        return guard(|| Err(invalid("rtick_periodic_telemetry_handle: out is NULL")));
    };
    // SAFETY: p is NULL or a live loop (this function's contract); only the
    // wrapper is borrowed, as `with_loop` says.
    with_loop(unsafe { p.as_ref() }, "rtick_periodic_telemetry_handle", |l| {
        *out = Box::into_raw(Box::new(rtick_telemetry_handle { inner: l.telemetry() }));
        Ok(())
    })
}

/// A snapshot through a telemetry handle (any thread).
///
/// # Safety
///
/// `h` is NULL or a handle from rtick_periodic_telemetry_handle not yet
/// freed; `out` is NULL or points to a writable `rtick_telemetry`.
#[no_mangle]
pub unsafe extern "C" fn rtick_telemetry_snapshot(
    h: *const rtick_telemetry_handle,
    out: *mut rtick_telemetry,
) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; h comes from rtick_periodic_telemetry_handle, out is writable.
        let (h, out) = unsafe { (h.as_ref(), out.as_mut()) };
        let h = h.ok_or_else(|| invalid("rtick_telemetry_snapshot: handle is NULL"))?;
        let out = out.ok_or_else(|| invalid("rtick_telemetry_snapshot: out is NULL"))?;
        *out = telemetry_of(&h.inner.snapshot());
        Ok(())
    })
}

/// Frees a telemetry handle (NULL is ignored).
///
/// # Safety
///
/// `h` is NULL or a handle from rtick_periodic_telemetry_handle not yet freed
/// (it is freed here: do not use it again).
#[no_mangle]
pub unsafe extern "C" fn rtick_telemetry_handle_free(h: *mut rtick_telemetry_handle) {
    if !h.is_null() {
        // SAFETY: h comes from rtick_periodic_telemetry_handle and is freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(unsafe { Box::from_raw(h) })));
    }
}

/// Frees the loop, disarms its timer and undoes its real-time setup (NULL is
/// ignored). From a thread other than the loop's: RTICK_ERR_THREAD, and the
/// loop is not freed (its setup is that thread's to undo).
///
/// # Safety
///
/// `p` is NULL or a loop from rtick_periodic_create not yet freed (on
/// RTICK_OK it is freed: do not use it again).
#[no_mangle]
pub unsafe extern "C" fn rtick_periodic_free(p: *mut rtick_periodic) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; p comes from rtick_periodic_create and is
        // not freed yet. Only the wrapper is borrowed, as in `with_loop`.
        let Some(lp) = (unsafe { p.as_ref() }) else { return Ok(()) };
        lp.inner.check("rtick_periodic_free", "loop")?;
        // SAFETY: p comes from rtick_periodic_create and is freed once, here:
        // the check passed, so this is the loop's thread and no other call on
        // the loop is in progress (no reference to it is alive).
        drop(unsafe { Box::from_raw(p) });
        Ok(())
    })
}

/// Looks a mechanism up by its command-line name ("clock_nanosleep", "hybrid", …).
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `out` is NULL or points to a
/// writable `int32_t`.
#[no_mangle]
pub unsafe extern "C" fn rtick_mechanism_from_name(name: *const c_char, out: *mut i32) -> rtick_status {
    guard(|| {
        if name.is_null() || out.is_null() {
            return Err(invalid("rtick_mechanism_from_name: NULL argument"));
        }
        // SAFETY: name is a NUL-terminated string per the API contract; checked for NULL.
        let s = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        let m = Mechanism::parse(&s).filter(|m| !m.info().hidden).ok_or_else(|| {
            invalid(&format!("unknown mechanism '{s}'; one of: {}", Mechanism::public_names().join(", ")))
        })?;
        let i = (0..32).find(|&i| mechanism_from_i32(i) == Some(m)).unwrap_or(-1);
        // SAFETY: checked for NULL; the caller passes a writable int32_t.
        unsafe { *out = i };
        Ok(())
    })
}

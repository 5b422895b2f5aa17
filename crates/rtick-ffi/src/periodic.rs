//! `rtick_periodic_*`: the loop, and telemetry handles for other threads.

use std::ffi::{c_char, CStr};
use std::sync::Arc;

use rtick_core::periodic::{Periodic, Start, SyncConfig, Telemetry};
use rtick_core::wait::HybridSlack;
use rtick_core::{Mechanism, Nanos, Time};

use crate::types::*;
use crate::{guard, invalid, status_of, Owner};

/// A periodic loop (opaque). Bound to the thread that created it: every
/// rtick_periodic_* call on it from another thread returns RTICK_ERR_THREAD.
#[derive(Debug)]
pub struct rtick_periodic {
    inner: Periodic,
    /// The creating thread: the Rust loop is not `Send` (its timer signals
    /// that thread, its real-time setup is that thread's), which C cannot be
    /// told, so each call checks.
    owner: Owner,
}

/// A handle on a loop's telemetry, usable from any thread (opaque).
#[derive(Debug)]
pub struct rtick_telemetry_handle {
    inner: Arc<Telemetry>,
}

/// Fills `cfg` with the defaults: 1 ms, clock_nanosleep, CLOCK_MONOTONIC,
/// skip, start now, hybrid slack auto, sync kp 0.1 ki 0.01 max step 5 µs.
#[no_mangle]
pub extern "C" fn rtick_periodic_config_init(cfg: *mut rtick_periodic_config) -> rtick_status {
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
            hybrid_slack_ns: 0,
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
#[no_mangle]
pub extern "C" fn rtick_periodic_create(
    cfg: *const rtick_periodic_config,
    rt: *const rtick_rt_config,
    out: *mut *mut rtick_periodic,
) -> rtick_status {
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
            2 => Start::At(Time(cfg.start_ns)),
            s => return Err(invalid(&format!("rtick_periodic_create: unknown start {s}"))),
        };
        let mut b = Periodic::builder()
            .period(Nanos(cfg.period_ns))
            .mechanism(mechanism)
            .clock(clock)
            .overrun(overrun)
            .start(start)
            .hybrid_slack(if cfg.hybrid_slack_ns > 0 {
                HybridSlack::Fixed(Nanos(cfg.hybrid_slack_ns))
            } else {
                HybridSlack::Auto
            })
            .sync(SyncConfig {
                kp: cfg.sync_kp,
                ki: cfg.sync_ki,
                max_step: Nanos(cfg.sync_max_step_ns),
                offset: Nanos(cfg.sync_offset_ns),
            });
        // SAFETY: checked for NULL inside; the caller passes a valid struct.
        if let Some(rt) = unsafe { rt.as_ref() } {
            b = b.setup(crate::rt::setup_of(rt)?);
        }
        let inner = b.build().map_err(|e| status_of(&e))?;
        *out = Box::into_raw(Box::new(rtick_periodic { inner, owner: Owner::current() }));
        Ok(())
    })
}

/// Waits for the next deadline; fills `tick` (may be NULL). With
/// RTICK_OVERRUN_FAIL, an overrun returns RTICK_ERR_OVERRUN (the loop has
/// already skipped ahead; keep calling).
#[no_mangle]
pub extern "C" fn rtick_periodic_wait(p: *mut rtick_periodic, tick: *mut rtick_tick) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; p comes from rtick_periodic_create.
        let p = unsafe { p.as_mut() }.ok_or_else(|| invalid("rtick_periodic_wait: loop is NULL"))?;
        p.owner.check("rtick_periodic_wait", "loop")?;
        let t = p.inner.wait().map_err(|e| status_of(&e))?;
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

fn with_loop(
    p: *mut rtick_periodic,
    what: &str,
    f: impl FnOnce(&mut Periodic) -> Result<(), rtick_status>,
) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; p comes from rtick_periodic_create.
        let p = unsafe { p.as_mut() }.ok_or_else(|| invalid(&format!("{what}: loop is NULL")))?;
        p.owner.check(what, "loop")?;
        f(&mut p.inner)
    })
}

/// Changes the period (> 0) from the last deadline on.
#[no_mangle]
pub extern "C" fn rtick_periodic_set_period(p: *mut rtick_periodic, period_ns: i64) -> rtick_status {
    with_loop(p, "rtick_periodic_set_period", |l| l.set_period(Nanos(period_ns)).map_err(|e| status_of(&e)))
}

/// Moves every following deadline by `by_ns` (negative: earlier).
#[no_mangle]
pub extern "C" fn rtick_periodic_shift(p: *mut rtick_periodic, by_ns: i64) -> rtick_status {
    with_loop(p, "rtick_periodic_shift", |l| l.shift(Nanos(by_ns)).map_err(|e| status_of(&e)))
}

/// Feeds the reference clock's reading at the last deadline to the PI
/// controller; the bounded shift applied goes to `correction_ns` (may be NULL).
#[no_mangle]
pub extern "C" fn rtick_periodic_sync(
    p: *mut rtick_periodic,
    reference_ns: i64,
    correction_ns: *mut i64,
) -> rtick_status {
    with_loop(p, "rtick_periodic_sync", |l| {
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
#[no_mangle]
pub extern "C" fn rtick_periodic_telemetry(p: *const rtick_periodic, out: *mut rtick_telemetry) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; p comes from rtick_periodic_create, out is writable.
        let (p, out) = unsafe { (p.as_ref(), out.as_mut()) };
        let p = p.ok_or_else(|| invalid("rtick_periodic_telemetry: loop is NULL"))?;
        let out = out.ok_or_else(|| invalid("rtick_periodic_telemetry: out is NULL"))?;
        p.owner.check("rtick_periodic_telemetry", "loop")?;
        *out = telemetry_of(&p.inner.telemetry().snapshot());
        Ok(())
    })
}

/// A handle on the loop's telemetry that other threads may read while the
/// loop runs (free it with rtick_telemetry_handle_free; it outlives the loop).
/// Made in the loop's thread; the handle itself may go to any thread.
#[no_mangle]
pub extern "C" fn rtick_periodic_telemetry_handle(
    p: *const rtick_periodic,
    out: *mut *mut rtick_telemetry_handle,
) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; p comes from rtick_periodic_create, out is writable.
        let (p, out) = unsafe { (p.as_ref(), out.as_mut()) };
        let p = p.ok_or_else(|| invalid("rtick_periodic_telemetry_handle: loop is NULL"))?;
        let out = out.ok_or_else(|| invalid("rtick_periodic_telemetry_handle: out is NULL"))?;
        p.owner.check("rtick_periodic_telemetry_handle", "loop")?;
        *out = Box::into_raw(Box::new(rtick_telemetry_handle { inner: p.inner.telemetry() }));
        Ok(())
    })
}

/// A snapshot through a telemetry handle (any thread).
#[no_mangle]
pub extern "C" fn rtick_telemetry_snapshot(
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
#[no_mangle]
pub extern "C" fn rtick_telemetry_handle_free(h: *mut rtick_telemetry_handle) {
    if !h.is_null() {
        // SAFETY: h comes from rtick_periodic_telemetry_handle and is freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(unsafe { Box::from_raw(h) })));
    }
}

/// Frees the loop, disarms its timer and undoes its real-time setup (NULL is
/// ignored). From a thread other than the loop's: RTICK_ERR_THREAD, and the
/// loop is not freed (its setup is that thread's to undo).
#[no_mangle]
pub extern "C" fn rtick_periodic_free(p: *mut rtick_periodic) -> rtick_status {
    guard(|| {
        // SAFETY: checked for NULL; p comes from rtick_periodic_create and is not freed yet.
        let Some(lp) = (unsafe { p.as_ref() }) else { return Ok(()) };
        lp.owner.check("rtick_periodic_free", "loop")?;
        // SAFETY: p comes from rtick_periodic_create and is freed once, here.
        drop(unsafe { Box::from_raw(p) });
        Ok(())
    })
}

/// Looks a mechanism up by its command-line name ("clock_nanosleep", "hybrid", …).
#[no_mangle]
pub extern "C" fn rtick_mechanism_from_name(name: *const c_char, out: *mut i32) -> rtick_status {
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

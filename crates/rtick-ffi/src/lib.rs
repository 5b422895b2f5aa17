//! The C API of rtick: the isochronous loop (`rtick_periodic_*`), its
//! telemetry, and real-time setup (`rtick_rt_*`).
//!
//! Every function returns an `rtick_status` (0 on success); on failure
//! `rtick_last_error_message()` gives a one-line message naming the cause and
//! the fix, valid in the calling thread until its next rtick call. NULL
//! pointers are reported as `RTICK_ERR_INVALID`, never dereferenced; a panic
//! never crosses into C (`RTICK_ERR_PANIC`).
//!
//! Enumerations cross as `int32_t`, never as a Rust enum: C may pass any
//! number, and one outside the enumeration is `RTICK_ERR_INVALID`.
//!
//! A loop and an rt guard belong to the thread that created them (their
//! timer signals it, their setup is its own): called from another thread
//! they refuse with `RTICK_ERR_THREAD` and change nothing. The calls are
//! not async-signal-safe: one made from a signal handler that interrupted a
//! call on the same object is refused the same way.
//!
//! Pointer contract: every pointer argument is checked for NULL; a non-NULL
//! pointer must point to a valid object of its type (for `rtick_periodic*`
//! and the other opaque handles: one returned by this library and not yet
//! freed). Rust cannot check that, so the functions taking pointers are
//! `unsafe extern "C"`, each with its `# Safety` section.

#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]

mod periodic;
mod rt;
mod types;
mod values;

use std::cell::{RefCell, UnsafeCell};
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU64, Ordering};

pub use periodic::*;
pub use rt::*;
use rtick_core::Error;
pub use types::*;

thread_local! {
    /// The last failed call's message; `None` after a success, so that a
    /// successful call (rtick_periodic_wait in the loop) allocates nothing.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

fn clear_error() {
    LAST_ERROR.with(|e| e.borrow_mut().take());
}

/// The status for a library error, after recording its message.
fn status_of(e: &Error) -> rtick_status {
    set_error(&e.to_string());
    match e {
        Error::Invalid(_) => rtick_status::RTICK_ERR_INVALID,
        Error::Unavailable { .. } => rtick_status::RTICK_ERR_UNAVAILABLE,
        Error::Overrun { .. } => rtick_status::RTICK_ERR_OVERRUN,
        e if e.is_permission() => rtick_status::RTICK_ERR_PERMISSION,
        _ => rtick_status::RTICK_ERR_SYSTEM,
    }
}

/// An invalid-argument status with `msg`.
fn invalid(msg: &str) -> rtick_status {
    set_error(msg);
    rtick_status::RTICK_ERR_INVALID
}

/// Runs `f`, turning an error into its status and a panic into RTICK_ERR_PANIC.
fn guard(f: impl FnOnce() -> Result<(), rtick_status>) -> rtick_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            clear_error();
            rtick_status::RTICK_OK
        }
        Ok(Err(s)) => s,
        Err(_) => {
            set_error("internal error: a panic was caught at the C boundary (please report it)");
            rtick_status::RTICK_ERR_PANIC
        }
    }
}

/// The message of the last failed call in this thread ("" after a success).
/// The pointer stays valid until the thread's next rtick call.
#[no_mangle]
pub extern "C" fn rtick_last_error_message() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_deref().map_or(c"".as_ptr(), |m| m.as_ptr()))
}

/// Blocks the signals the signal-based mechanisms wait for, in the calling
/// thread and the threads it creates afterwards. Call it first in main(),
/// before creating any thread, when using posix-timer, itimer or
/// posix-timer-handler.
#[no_mangle]
pub extern "C" fn rtick_block_timer_signals() -> rtick_status {
    guard(|| rtick_core::wait::block_timer_signals().map_err(|e| status_of(&e)))
}

/// Reads `clock` (an rtick_clock) into `*out_ns`, in nanoseconds (vDSO read).
/// An unknown clock is RTICK_ERR_INVALID.
///
/// # Safety
///
/// `out_ns` is NULL or points to a writable `int64_t`.
#[no_mangle]
pub unsafe extern "C" fn rtick_now_ns(clock: i32, out_ns: *mut i64) -> rtick_status {
    guard(|| {
        let c = clock_from_i32(clock).ok_or_else(|| invalid(&format!("rtick_now_ns: unknown clock {clock}")))?;
        // SAFETY: checked for NULL; the caller passes a writable int64_t.
        let out = unsafe { out_ns.as_mut() }.ok_or_else(|| invalid("rtick_now_ns: out_ns is NULL"))?;
        *out = c.now().as_ns();
        Ok(())
    })
}

/// A number for the calling thread, never reused by another thread (unlike a
/// `pthread_t`, which a new thread may get once the old one has ended). A
/// thread-local read: no system call, so `rtick_periodic_wait` can check it.
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

/// The thread that created an object; calls from any other are refused.
#[derive(Debug)]
struct Owner(u64);

impl Owner {
    fn current() -> Owner {
        Owner(thread_token())
    }

    /// `RTICK_ERR_THREAD` (with its message) unless called from the owner.
    fn check(&self, what: &str, object: &str) -> Result<(), rtick_status> {
        if self.0 == thread_token() {
            return Ok(());
        }
        set_error(&format!(
            "{what}: called from a thread other than the one that created the {object}; \
             call it from that thread (the {object} is bound to it)"
        ));
        Err(rtick_status::RTICK_ERR_THREAD)
    }
}

/// An object C reaches through a raw pointer, bound to the thread that
/// created it. The owner check reads only `owner` and `busy`, through a
/// shared reference to this wrapper, which asserts nothing about `inner`
/// (it is in an `UnsafeCell`): a refused call from another thread makes no
/// reference to the object while its owner holds `&mut` to it (inside
/// rtick_periodic_wait, say). Only a call that passes the check makes one.
#[derive(Debug)]
struct Bound<T> {
    owner: Owner,
    /// Set while the owner thread is inside a call on the object, so that a
    /// second call from that thread (a signal handler interrupting the
    /// first) is refused instead of making a second `&mut`. Written only by
    /// the owner thread; atomic because a signal handler may read it.
    busy: AtomicBool,
    inner: UnsafeCell<T>,
}

/// Clears [`Bound::busy`] when the call ends, by return or by unwinding.
struct Leave<'a>(&'a AtomicBool);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        // The object is not touched after this point (a signal handler runs
        // between instructions of this thread: only the compiler may reorder).
        compiler_fence(Ordering::SeqCst);
        self.0.store(false, Ordering::Relaxed);
    }
}

impl<T> Bound<T> {
    fn new(inner: T) -> Bound<T> {
        Bound { owner: Owner::current(), busy: AtomicBool::new(false), inner: UnsafeCell::new(inner) }
    }

    /// Refuses (`RTICK_ERR_THREAD`, with its message) a call from another
    /// thread, or from this one while it is inside another call on the object.
    fn check(&self, what: &str, object: &str) -> Result<(), rtick_status> {
        self.owner.check(what, object)?;
        if self.busy.load(Ordering::Relaxed) {
            set_error(&format!(
                "{what}: called while this thread is inside another rtick call on the {object} \
                 (from a signal handler?); rtick calls are not async-signal-safe: make it after that call returns"
            ));
            return Err(rtick_status::RTICK_ERR_THREAD);
        }
        Ok(())
    }

    /// Runs `f` on the object once [`Bound::check`] lets the call through.
    fn enter<R>(
        &self,
        what: &str,
        object: &str,
        f: impl FnOnce(&mut T) -> Result<R, rtick_status>,
    ) -> Result<R, rtick_status> {
        self.check(what, object)?;
        self.busy.store(true, Ordering::Relaxed);
        let _leave = Leave(&self.busy);
        // The flag is set before the object is touched.
        compiler_fence(Ordering::SeqCst);
        // SAFETY: this `&mut` is the only reference to the object while `f`
        // runs. Other threads make none: they stop at the owner check, which
        // reads only `owner`. In this thread, `busy` was clear, so no other
        // call on the object is in progress further up the stack; a signal
        // handler that interrupts this one finds it set and is refused; and
        // `f` runs library code that never calls back into C. The pointer is
        // valid: `self` is a live wrapper (the pointer contract).
        f(unsafe { &mut *self.inner.get() })
    }
}

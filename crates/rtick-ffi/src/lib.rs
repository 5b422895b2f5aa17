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
//! they refuse with `RTICK_ERR_THREAD` and change nothing.

//!
//! Pointer contract: every pointer argument is checked for NULL; a non-NULL
//! pointer must point to a valid object of its type (for `rtick_periodic*`
//! and the other opaque handles: one returned by this library and not yet
//! freed). The functions are the C ABI and meant to be called from C, hence
//! safe `extern "C"` signatures rather than `unsafe fn`.

#![allow(non_camel_case_types)]
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod periodic;
mod rt;
mod types;

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

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
#[no_mangle]
pub extern "C" fn rtick_now_ns(clock: i32, out_ns: *mut i64) -> rtick_status {
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

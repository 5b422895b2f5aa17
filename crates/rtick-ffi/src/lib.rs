//! The C API of rtick: the isochronous loop (`rtick_periodic_*`), its
//! telemetry, and real-time setup (`rtick_rt_*`).
//!
//! Every function returns an `rtick_status` (0 on success); on failure
//! `rtick_last_error_message()` gives a one-line message naming the cause and
//! the fix, valid in the calling thread until its next rtick call. NULL
//! pointers are reported as `RTICK_ERR_INVALID`, never dereferenced; a panic
//! never crosses into C (`RTICK_ERR_PANIC`).

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

pub use periodic::*;
pub use rt::*;
use rtick_core::Error;
pub use types::*;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
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
            set_error("");
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
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Blocks the signals the signal-based mechanisms wait for, in the calling
/// thread and the threads it creates afterwards. Call it first in main(),
/// before creating any thread, when using posix-timer, itimer or
/// posix-timer-handler.
#[no_mangle]
pub extern "C" fn rtick_block_timer_signals() -> rtick_status {
    guard(|| rtick_core::wait::block_timer_signals().map_err(|e| status_of(&e)))
}

/// The current time of `clock` in nanoseconds (vDSO read), or -1 for an unknown clock.
#[no_mangle]
pub extern "C" fn rtick_now_ns(clock: rtick_clock) -> i64 {
    catch_unwind(|| clock_of(clock).map_or(-1, |c| c.now().as_ns())).unwrap_or(-1)
}

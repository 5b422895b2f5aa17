//! Process-wide kernel resources that one owner at a time may use: the
//! process has one ITIMER_REAL (and one of each itimer), and a signal handler
//! can only record into statics. Two users of one of them would silently
//! share it, each seeing the other's expirations, so each has an [`InUse`]
//! flag and its user holds the [`Claim`] that flag grants once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a process-wide resource is in use: one `static` per resource.
#[derive(Debug)]
pub struct InUse(AtomicBool);

impl InUse {
    /// Not in use.
    pub const fn new() -> InUse {
        InUse(AtomicBool::new(false))
    }

    /// The resource, unless another [`Claim`] on it is alive.
    pub fn claim(&'static self) -> Option<Claim> {
        self.0.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).ok().map(|_| Claim(self))
    }
}

/// The one claim on a resource; released on drop (after the owner's own
/// `Drop` has put the resource back, since fields drop after it).
#[derive(Debug)]
pub struct Claim(&'static InUse);

impl Drop for Claim {
    fn drop(&mut self) {
        self.0 .0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_at_a_time_and_again_after_drop() {
        static FLAG: InUse = InUse::new();
        let first = FLAG.claim().expect("a free resource is granted");
        assert!(FLAG.claim().is_none(), "a second claim was granted while the first lives");
        drop(first);
        let again = FLAG.claim().expect("granted again once the first claim dropped");
        drop(again);
    }
}

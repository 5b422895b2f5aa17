//! Signal masks and synchronous signal waits for the signal-based timers.
//!
//! A timer signal waited for with `sigwaitinfo` must be blocked in *every*
//! thread, or the kernel may deliver a process-directed one (SIGALRM from
//! `setitimer`) to a thread that does not wait for it, whose default action
//! ends the process. Block them before any thread is spawned.

use std::io;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

use super::check_code;
use super::claim::{Claim, InUse};
use super::clock::PosixClock;
use crate::time::Time;

/// The signal rtick's POSIX timers use: the first real-time signal glibc leaves free.
pub fn timer_signal() -> libc::c_int {
    libc::SIGRTMIN()
}

/// The signal of the timer delivered to an asynchronous handler.
pub fn handler_signal() -> libc::c_int {
    libc::SIGRTMIN() + 1
}

/// What the asynchronous handler saw last: the clock reading it took on
/// entry, the timer overrun it was told about, and how many times it ran.
/// Atomics are async-signal-safe; the handler does nothing else. A signal
/// handler can reach no data but statics, so there is one set per process,
/// read only through the [`HandlerGuard`] that [`HANDLER_IN_USE`] grants once.
static HANDLER_CLOCK: AtomicI32 = AtomicI32::new(libc::CLOCK_MONOTONIC);
/// Clock reading (ns) at the handler's entry.
static HANDLER_TIME: AtomicI64 = AtomicI64::new(0);
/// `si_overrun` of the last signal.
static HANDLER_OVERRUN: AtomicU32 = AtomicU32::new(0);
/// Times the handler ran.
static HANDLER_RUNS: AtomicU64 = AtomicU64::new(0);
/// Whether a [`HandlerGuard`] is alive: a second one would share the
/// statics above and each would see the other's signals.
static HANDLER_IN_USE: InUse = InUse::new();

extern "C" fn timer_handler(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // A checked read: clock_gettime is async-signal-safe, and the id came
    // from a PosixClock, so it does not fail.
    if let Ok(t) = super::clock::read(HANDLER_CLOCK.load(Ordering::Relaxed)) {
        HANDLER_TIME.store(t.as_ns(), Ordering::Relaxed);
    }
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler
    // (checked for NULL all the same).
    if let Some(info) = unsafe { info.as_ref() } {
        HANDLER_OVERRUN.store(timer_overrun(info), Ordering::Relaxed);
    }
    HANDLER_RUNS.fetch_add(1, Ordering::Release);
}

/// rtick's timer handler, installed: the one per process (see
/// [`install_timer_handler`]). Reads what the handler saw; restores the
/// signal's previous disposition on drop, after which another may be installed.
pub struct HandlerGuard {
    signo: libc::c_int,
    old: libc::sigaction,
    /// Released after `drop` has restored the old disposition.
    _claim: Claim,
}

impl std::fmt::Debug for HandlerGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HandlerGuard({})", self.signo)
    }
}

/// Installs rtick's timer handler (SA_SIGINFO) for `signo`, reading `clock`
/// on entry. One per process: while a [`HandlerGuard`] lives, another
/// install fails with [`io::ErrorKind::ResourceBusy`].
pub fn install_timer_handler(signo: libc::c_int, clock: PosixClock) -> io::Result<HandlerGuard> {
    let Some(claim) = HANDLER_IN_USE.claim() else {
        return Err(io::Error::new(io::ErrorKind::ResourceBusy, "rtick's timer signal handler is already installed"));
    };
    // On failure the claim drops here, and another install may try again.
    install(signo, clock, claim)
}

fn install(signo: libc::c_int, clock: PosixClock, claim: Claim) -> io::Result<HandlerGuard> {
    HANDLER_CLOCK.store(clock.raw(), Ordering::Relaxed);
    // SAFETY: sigaction is plain data; all-zero is a valid starting value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = timer_handler as *const () as usize;
    sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    let mut old = MaybeUninit::<libc::sigaction>::uninit();
    // SAFETY: sa_mask is a valid sigset to empty; sa and old are valid pointers.
    let ret = unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(signo, &sa, old.as_mut_ptr())
    };
    super::check_ret(ret)?;
    // SAFETY: sigaction succeeded and wrote the old disposition.
    Ok(HandlerGuard { signo, old: unsafe { old.assume_init() }, _claim: claim })
}

impl HandlerGuard {
    /// Times the handler ran (since the process started).
    #[inline]
    pub fn runs(&self) -> u64 {
        HANDLER_RUNS.load(Ordering::Acquire)
    }

    /// The clock reading the handler took on its last entry.
    #[inline]
    pub fn last_entry(&self) -> Time {
        Time(HANDLER_TIME.load(Ordering::Relaxed))
    }

    /// The `si_overrun` of the last signal the handler ran for.
    #[inline]
    pub fn last_overrun(&self) -> u32 {
        HANDLER_OVERRUN.load(Ordering::Relaxed)
    }
}

impl Drop for HandlerGuard {
    fn drop(&mut self) {
        // SAFETY: restores the disposition saved when the handler was installed.
        unsafe { libc::sigaction(self.signo, &self.old, std::ptr::null_mut()) };
    }
}

/// `sigsuspend(mask)`: sleeps with `mask` as the thread's signal mask until
/// a handler ran, then restores the mask. The one system call of the wait;
/// the mask is computed beforehand ([`SigSet::current_without`]).
#[inline]
pub fn suspend(mask: &SigSet) {
    // SAFETY: mask is a valid sigset_t. sigsuspend always returns -1/EINTR
    // after a handler ran; there is nothing else to report.
    unsafe { libc::sigsuspend(&mask.0) };
}

/// A set of signals.
#[derive(Copy, Clone)]
pub struct SigSet(libc::sigset_t);

impl std::fmt::Debug for SigSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigSet")
    }
}

impl SigSet {
    /// A set holding `signals`.
    pub fn of(signals: &[libc::c_int]) -> SigSet {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigemptyset initialises the set it is given.
        unsafe { libc::sigemptyset(set.as_mut_ptr()) };
        // SAFETY: initialised just above.
        let mut set = unsafe { set.assume_init() };
        for &s in signals {
            // SAFETY: set is initialised; an invalid signal number only returns EINVAL.
            unsafe { libc::sigaddset(&mut set, s) };
        }
        SigSet(set)
    }
}

impl SigSet {
    /// The calling thread's signal mask now.
    pub fn current() -> SigSet {
        let mut cur = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: a NULL new set only queries the mask into cur, and with
        // SIG_BLOCK (a valid `how`) and valid pointers pthread_sigmask cannot fail.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), cur.as_mut_ptr());
            SigSet(cur.assume_init())
        }
    }

    /// The calling thread's mask without `signo`: for [`suspend`] to let
    /// `signo` in (and what the thread already lets in), and nothing else.
    pub fn current_without(signo: libc::c_int) -> SigSet {
        let mut set = SigSet::current();
        // SAFETY: set is initialised; an invalid signal number only returns EINVAL.
        unsafe { libc::sigdelset(&mut set.0, signo) };
        set
    }

    /// Whether `signal` is in the set.
    pub fn contains(&self, signal: libc::c_int) -> bool {
        // SAFETY: the set is initialised; an invalid signal number returns -1.
        unsafe { libc::sigismember(&self.0, signal) == 1 }
    }
}

/// Blocks `signals` in the calling thread (and in threads it spawns later);
/// returns the previous mask.
pub fn block(signals: &[libc::c_int]) -> io::Result<SigSet> {
    let set = SigSet::of(signals);
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: both pointers are valid; pthread_sigmask returns an error code.
    check_code(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set.0, old.as_mut_ptr()) })?;
    // SAFETY: pthread_sigmask succeeded and wrote the old mask.
    Ok(SigSet(unsafe { old.assume_init() }))
}

/// Restores a mask returned by [`block`].
#[cfg(test)]
pub fn set_mask(mask: &SigSet) -> io::Result<()> {
    // SAFETY: mask is a valid sigset; the old-mask pointer may be NULL.
    check_code(unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &mask.0, std::ptr::null_mut()) })
}

/// Whether `signal` is blocked in the calling thread.
pub fn is_blocked(signal: libc::c_int) -> bool {
    SigSet::current().contains(signal)
}

/// For a POSIX timer's signal (`SI_TIMER`): the expirations merged into it
/// (`si_overrun`); 0 for any other signal.
fn timer_overrun(info: &libc::siginfo_t) -> u32 {
    if info.si_code != libc::SI_TIMER {
        return 0;
    }
    // SAFETY: si_code SI_TIMER says the kernel filled the union's timer member,
    // which is what libc's accessor reads.
    let overrun = unsafe { info.si_overrun() };
    overrun.max(0) as u32
}

/// What a synchronous wait for a signal returned.
#[derive(Copy, Clone, Debug)]
pub struct Received {
    /// For POSIX timer signals: expirations merged into this one because the
    /// previous signal was still pending (`si_overrun`).
    pub timer_overrun: u32,
}

/// Waits for one of `set` with `sigwaitinfo`, repeating on EINTR.
#[inline]
pub fn wait(set: &SigSet) -> io::Result<Received> {
    loop {
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: set is a valid sigset and info a valid out pointer.
        let ret = unsafe { libc::sigwaitinfo(&set.0, info.as_mut_ptr()) };
        if ret < 0 {
            let err = super::last_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        // SAFETY: it was zeroed (a valid siginfo_t), then filled by sigwaitinfo.
        let info = unsafe { info.assume_init() };
        return Ok(Received { timer_overrun: timer_overrun(&info) });
    }
}

/// Restores the default action of SIGPIPE (Rust programs start with it
/// ignored, which turns a closed pipe into a panic in `println!`).
pub fn default_sigpipe() {
    // SAFETY: SIG_DFL is a valid disposition for SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Waits up to `timeout` for one of `set` (`sigtimedwait`): what came, or
/// `None` when nothing did (EAGAIN) or a handled signal interrupted the
/// wait (EINTR); any other failure (an invalid timeout) is an error.
pub fn wait_within(set: &SigSet, timeout: crate::time::Nanos) -> io::Result<Option<Received>> {
    let ts = timeout.to_timespec();
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: set and ts are valid; info is a valid out pointer.
    if unsafe { libc::sigtimedwait(&set.0, info.as_mut_ptr(), &ts) } < 0 {
        return nothing_came(super::last_error());
    }
    // SAFETY: it was zeroed (a valid siginfo_t), then filled by sigtimedwait.
    let info = unsafe { info.assume_init() };
    Ok(Some(Received { timer_overrun: timer_overrun(&info) }))
}

/// A failed `sigtimedwait`: nothing came when it timed out (EAGAIN) or a
/// handled signal interrupted it (EINTR); any other failure is an error.
fn nothing_came<T>(e: io::Error) -> io::Result<Option<T>> {
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) => Ok(None),
        _ => Err(e),
    }
}

/// Dequeues every pending signal of `set` without waiting (they must be
/// blocked): what a disarmed timer left behind must not wake the next wait.
pub fn drain(set: &SigSet) {
    let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    loop {
        // SAFETY: set and zero are valid; a NULL siginfo pointer is allowed.
        let ret = unsafe { libc::sigtimedwait(&set.0, std::ptr::null_mut(), &zero) };
        if ret < 0 && super::last_error().raw_os_error() != Some(libc::EINTR) {
            return; // EAGAIN: nothing pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real POSIX timer whose signal stays pending while it expires again:
    /// the overrun read through libc's accessor counts the merged expirations.
    #[test]
    fn timer_overrun_counts_merged_expirations() {
        use crate::sys::timer::{gettid, Notify, PosixTimer};
        use crate::time::Nanos;
        std::thread::spawn(|| {
            let signo = timer_signal();
            block(&[signo]).unwrap();
            let set = SigSet::of(&[signo]);
            let t = PosixTimer::create(libc::CLOCK_MONOTONIC, Notify::Thread { signo, tid: gettid() }).unwrap();
            let now = PosixClock::Monotonic.now();
            t.arm_periodic(now + Nanos::from_ms(1), Nanos::from_ms(1)).unwrap();
            // Expirations at 1, 2, 3 … ms; by 20 ms the first signal is still
            // pending and the later ones were merged into it.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let got = wait(&set).unwrap();
            t.disarm().unwrap();
            drain(&set);
            assert!(got.timer_overrun >= 10, "overrun {}", got.timer_overrun);
            // Any other signal reports no overrun.
            // SAFETY: raising a blocked signal at the calling thread only makes it pending.
            unsafe { libc::raise(signo) };
            assert_eq!(wait(&set).unwrap().timer_overrun, 0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_wait_that_cannot_be_made_is_an_error_not_nothing() {
        use crate::time::Nanos;
        std::thread::spawn(|| {
            let sig = libc::SIGUSR2;
            block(&[sig]).unwrap();
            let set = SigSet::of(&[sig]);
            assert!(matches!(wait_within(&set, Nanos::from_ms(1)), Ok(None)), "nothing came");
            // SAFETY: raising a blocked signal at the calling thread only makes it pending.
            unsafe { libc::raise(sig) };
            assert!(matches!(wait_within(&set, Nanos::from_ms(1)), Ok(Some(_))), "it came");
        })
        .join()
        .unwrap();
        let failed = |errno| nothing_came::<Received>(io::Error::from_raw_os_error(errno));
        assert!(matches!(failed(libc::EAGAIN), Ok(None)), "timed out");
        assert!(matches!(failed(libc::EINTR), Ok(None)), "interrupted");
        for errno in [libc::EINVAL, libc::EFAULT] {
            assert_eq!(failed(errno).unwrap_err().raw_os_error(), Some(errno), "not a wait that saw nothing");
        }
    }

    #[test]
    fn drain_removes_pending_signals() {
        let sig = libc::SIGUSR1;
        std::thread::spawn(move || {
            block(&[sig]).unwrap();
            // SAFETY: raising a blocked signal at the calling thread only makes it pending.
            unsafe { libc::raise(sig) };
            let set = SigSet::of(&[sig]);
            drain(&set);
            let mut pending = MaybeUninit::<libc::sigset_t>::uninit();
            // SAFETY: pending is a valid out pointer.
            unsafe { libc::sigpending(pending.as_mut_ptr()) };
            // SAFETY: sigpending filled it.
            assert_eq!(unsafe { libc::sigismember(pending.as_ptr(), sig) }, 0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_suspend_mask_lets_only_its_signal_in() {
        std::thread::spawn(|| {
            let (a, b) = (libc::SIGUSR1, libc::SIGUSR2);
            block(&[a, b]).unwrap();
            let mask = SigSet::current_without(a);
            assert!(!mask.contains(a) && mask.contains(b));
            assert!(is_blocked(a), "computing the mask changes nothing");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn block_and_restore() {
        let sig = libc::SIGUSR2;
        let old = block(&[sig]).unwrap();
        assert!(is_blocked(sig));
        set_mask(&old).unwrap();
        assert!(!is_blocked(sig));
    }
}

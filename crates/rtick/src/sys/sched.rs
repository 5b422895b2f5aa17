//! Scheduling policy and priority, `sched_yield`, CPU affinity, timer slack
//! and per-thread CPU time.
//!
//! All of these act on the *calling thread* (Linux `sched_setscheduler(0, …)`,
//! `sched_setaffinity(0, …)` and `PR_SET_TIMERSLACK` are per thread).

use std::io;
use std::mem::MaybeUninit;

use super::check_ret;
use crate::time::Nanos;

/// Sets the calling thread's policy (`SCHED_*`) and priority.
pub fn set_scheduler(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    set_scheduler_of(0, policy, priority)
}

/// Sets thread `tid`'s policy and priority (`tid` 0: the calling thread).
pub fn set_scheduler_of(tid: libc::pid_t, policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: param is a valid sched_param; tid is a thread id (0: the calling
    // thread); an unknown one only returns ESRCH.
    check_ret(unsafe { libc::sched_setscheduler(tid, policy, &param) })?;
    Ok(())
}

/// The calling thread's policy and priority.
pub fn scheduler() -> io::Result<(libc::c_int, libc::c_int)> {
    scheduler_of(0)
}

/// Thread `tid`'s policy and priority (`tid` 0: the calling thread).
pub fn scheduler_of(tid: libc::pid_t) -> io::Result<(libc::c_int, libc::c_int)> {
    // SAFETY: a plain query; an unknown tid only returns ESRCH.
    let policy = super::check_ret(unsafe { libc::sched_getscheduler(tid) })?;
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: param is a valid out pointer.
    super::check_ret(unsafe { libc::sched_getparam(tid, &mut param) })?;
    Ok((policy, param.sched_priority))
}

/// The CPU set of `cpus`; EINVAL for a CPU beyond `CPU_SETSIZE`.
pub(crate) fn cpu_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data and all-zero is an empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: cpu was checked to be below CPU_SETSIZE, the size of set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(set)
}

/// Pins the calling thread to the CPUs in `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus)?;
    // SAFETY: set is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    check_ret(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data and all-zero is an empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid out buffer of the size passed.
    check_ret(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: every index tested is below CPU_SETSIZE, the size of set.
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`). Zero would
/// mean "reset to the default", so the smallest settable slack is 1 ns.
pub fn set_timer_slack(slack: Nanos) -> io::Result<()> {
    let ns = slack.as_ns().max(1) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long argument.
    check_ret(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) })?;
    Ok(())
}

/// The calling thread's timer slack.
pub fn timer_slack() -> io::Result<Nanos> {
    // SAFETY: PR_GET_TIMERSLACK takes no argument and returns the slack.
    let ret = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    Ok(Nanos(check_ret(ret)? as i64))
}

/// Whose CPU time [`cpu_times`] reads: the only two `getrusage` takes
/// that this module asks for, so no other `who` can reach the call.
#[derive(Copy, Clone)]
enum Usage {
    Thread,
    Process,
}

/// (user, system) CPU time of the calling thread or of the process.
fn cpu_times(who: Usage) -> (Nanos, Nanos) {
    let who = match who {
        Usage::Thread => libc::RUSAGE_THREAD,
        Usage::Process => libc::RUSAGE_SELF,
    };
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out pointer. Linux fails getrusage only for an
    // unknown `who` (EINVAL) or a bad pointer (EFAULT), neither possible
    // here; had it failed, ru would still hold zeros, never uninit memory.
    unsafe { libc::getrusage(who, &mut ru) };
    // time_t and suseconds_t are narrower than i64 on 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    let us = |tv: libc::timeval| Nanos::from_us(tv.tv_sec as i64 * 1_000_000 + tv.tv_usec as i64);
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// CPU time (user + system) consumed by the calling thread (`getrusage(RUSAGE_THREAD)`).
pub fn thread_cpu_time() -> Nanos {
    let (user, system) = cpu_times(Usage::Thread);
    user + system
}

/// CPU time used by the whole process: (user, user + system) (`getrusage(RUSAGE_SELF)`).
pub fn process_cpu_time() -> (Nanos, Nanos) {
    let (user, system) = cpu_times(Usage::Process);
    (user, user + system)
}

/// The number of CPUs configured and online (`sysconf(_SC_NPROCESSORS_ONLN)`).
pub fn online_cpus() -> usize {
    // SAFETY: a plain query.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// The soft RLIMIT_RTPRIO (`None` when unlimited).
pub fn rlimit_rtprio() -> Option<u64> {
    let mut rl = MaybeUninit::<libc::rlimit>::uninit();
    // SAFETY: rl is a valid out pointer.
    let ret = unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, rl.as_mut_ptr()) };
    if ret != 0 {
        return Some(0);
    }
    // SAFETY: getrlimit succeeded.
    let cur = unsafe { rl.assume_init() }.rlim_cur;
    (cur != libc::RLIM_INFINITY).then_some(cur)
}

/// `sched_yield()`: for a SCHED_DEADLINE thread, sleep until the next period.
#[inline]
pub fn yield_now() {
    // SAFETY: plain call; it cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// The length of a USER_HZ tick, the unit of `/proc/stat` (`sysconf(_SC_CLK_TCK)`).
pub fn clock_tick() -> Nanos {
    // SAFETY: sysconf takes a constant and touches no memory.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Nanos(1_000_000_000 / if hz > 0 { hz as i64 } else { 100 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_slack_round_trip_in_a_thread() {
        std::thread::spawn(|| {
            set_timer_slack(Nanos(1)).unwrap();
            assert_eq!(timer_slack().unwrap(), Nanos(1));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn cpu_time_grows_when_busy() {
        let a = thread_cpu_time();
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        assert!(thread_cpu_time() > a);
    }

    /// The kernel's own account of the calling thread's CPUs.
    fn cpus_allowed_list() -> Vec<usize> {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("Cpus_allowed_list");
        crate::system::parse_cpu_list(list.trim()).unwrap_or_else(|| panic!("cannot parse {list:?}"))
    }

    #[test]
    fn affinity_is_what_the_kernel_lists() {
        std::thread::spawn(|| {
            let all = affinity().unwrap();
            assert_eq!(all, cpus_allowed_list());
            // Narrowed to one CPU (the last allowed), both say that CPU alone.
            let last = *all.last().unwrap();
            set_affinity(&[last]).unwrap();
            assert_eq!(affinity().unwrap(), [last]);
            assert_eq!(cpus_allowed_list(), [last]);
        })
        .join()
        .unwrap();
    }
}

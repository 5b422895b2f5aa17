//! The C types: status codes, enumerations and plain structs.

use rtick_core::periodic::{SeriesSummary, Snapshot};
use rtick_core::{ClockId, Mechanism, OverrunPolicy};

/// What a call returns: 0 on success, a negative code on failure.
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum rtick_status {
    RTICK_OK = 0,
    /// An argument was invalid (NULL, out of range, unknown name).
    RTICK_ERR_INVALID = -1,
    /// A system call failed.
    RTICK_ERR_SYSTEM = -2,
    /// The mechanism cannot run on this system.
    RTICK_ERR_UNAVAILABLE = -3,
    /// A wake-up came after the following deadline (RTICK_OVERRUN_FAIL).
    RTICK_ERR_OVERRUN = -4,
    /// Missing privilege (CAP_SYS_NICE, CAP_IPC_LOCK, root).
    RTICK_ERR_PERMISSION = -5,
    /// Called from a thread other than the one that created the loop or rt
    /// guard (they are bound to it), or from a signal handler that
    /// interrupted a call on it; nothing was done.
    RTICK_ERR_THREAD = -6,
    /// A bug in rtick (a panic caught at the boundary).
    RTICK_ERR_PANIC = -99,
}

/// How to wait for a deadline (see `rtick mechanisms`).
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum rtick_mechanism {
    RTICK_MECH_CLOCK_NANOSLEEP = 0,
    RTICK_MECH_CLOCK_NANOSLEEP_REL = 1,
    RTICK_MECH_NANOSLEEP = 2,
    RTICK_MECH_POSIX_TIMER = 3,
    RTICK_MECH_ITIMER = 4,
    RTICK_MECH_SPIN = 5,
    RTICK_MECH_HYBRID = 6,
    RTICK_MECH_TIMERFD = 7,
    RTICK_MECH_TIMERFD_EPOLL = 8,
    RTICK_MECH_PPOLL = 9,
    RTICK_MECH_PSELECT = 10,
    RTICK_MECH_EPOLL_PWAIT2 = 11,
    RTICK_MECH_FUTEX = 12,
    RTICK_MECH_CONDVAR = 13,
    RTICK_MECH_USLEEP = 14,
    RTICK_MECH_STD_SLEEP = 15,
    RTICK_MECH_POSIX_TIMER_HANDLER = 16,
    RTICK_MECH_SCHED_DEADLINE = 17,
}

/// The clock of the deadlines.
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum rtick_clock {
    RTICK_CLOCK_MONOTONIC = 0,
    RTICK_CLOCK_REALTIME = 1,
    RTICK_CLOCK_TAI = 2,
    RTICK_CLOCK_BOOTTIME = 3,
}

/// What to do after an overrun.
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum rtick_overrun {
    /// Jump to the next future deadline; count the missed ones.
    RTICK_OVERRUN_SKIP = 0,
    /// Serve every deadline, late ones back to back.
    RTICK_OVERRUN_CATCH_UP = 1,
    /// As skip, and rtick_periodic_wait returns RTICK_ERR_OVERRUN.
    RTICK_OVERRUN_FAIL = 2,
}

/// When the first deadline falls.
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum rtick_start {
    /// One period from now.
    RTICK_START_NOW = 0,
    /// The next multiple of the period on the clock.
    RTICK_START_ALIGNED = 1,
    /// At `start_ns` on the clock.
    RTICK_START_AT = 2,
}

/// A scheduling policy.
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum rtick_policy {
    /// Leave the thread's policy alone.
    RTICK_POLICY_UNCHANGED = -1,
    RTICK_POLICY_OTHER = 0,
    RTICK_POLICY_FIFO = 1,
    RTICK_POLICY_RR = 2,
    RTICK_POLICY_BATCH = 3,
    RTICK_POLICY_IDLE = 5,
}

/// `rtick_periodic_config.hybrid_slack_ns` that calibrates the slack at start.
pub const RTICK_HYBRID_SLACK_AUTO: i64 = 0;

/// A periodic loop's configuration; fill it with rtick_periodic_config_init first.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rtick_periodic_config {
    /// The period in ns (1 ns to 73 years).
    pub period_ns: i64,
    /// An rtick_mechanism.
    pub mechanism: i32,
    /// An rtick_clock.
    pub clock: i32,
    /// An rtick_overrun.
    pub overrun: i32,
    /// An rtick_start.
    pub start: i32,
    /// With RTICK_START_AT: the first deadline, ns on the clock (0 to 146 years).
    pub start_ns: i64,
    /// RTICK_MECH_HYBRID's slack in ns (1 ns to 73 years), or
    /// RTICK_HYBRID_SLACK_AUTO to calibrate it; negative is an error.
    pub hybrid_slack_ns: i64,
    /// rtick_periodic_sync: proportional gain (finite, 0 or more).
    pub sync_kp: f64,
    /// rtick_periodic_sync: integral gain (finite, 0 or more).
    pub sync_ki: f64,
    /// rtick_periodic_sync: largest shift per cycle, ns (0 to 73 years).
    pub sync_max_step_ns: i64,
    /// rtick_periodic_sync: wanted phase of the deadlines in the reference cycle, ns (±73 years).
    pub sync_offset_ns: i64,
}

/// One wake-up.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct rtick_tick {
    /// Grid index of the deadline.
    pub cycle: u64,
    /// The deadline waited for, ns on the clock.
    pub deadline_ns: i64,
    /// When the thread ran again.
    pub woke_ns: i64,
    /// woke_ns − deadline_ns.
    pub latency_ns: i64,
    /// Deadlines skipped between the previous tick and this one.
    pub missed: u64,
    /// On CLOCK_REALTIME/TAI: how far the clock was set since the previous
    /// tick (0: no step). Not an overrun; this tick stays out of telemetry.
    pub clock_step_ns: i64,
}

/// Figures of one series, in ns.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct rtick_series {
    pub count: u64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub mean_ns: f64,
    pub p50_ns: i64,
    pub p90_ns: i64,
    pub p99_ns: i64,
    pub p99_9_ns: i64,
    pub p99_99_ns: i64,
    pub p99_999_ns: i64,
}

/// A loop's telemetry at one moment.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct rtick_telemetry {
    pub cycles: u64,
    pub overruns: u64,
    pub missed: u64,
    /// Wake-up latency.
    pub latency: rtick_series,
    /// Actual period − period.
    pub period: rtick_series,
    /// From a wake-up to the next wait.
    pub execution: rtick_series,
}

/// Real-time setup; fill it with rtick_rt_config_init first.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct rtick_rt_config {
    /// An rtick_policy (RTICK_POLICY_UNCHANGED leaves it).
    pub policy: i32,
    /// 1–99 for FIFO/RR, 0 otherwise (and with RTICK_POLICY_UNCHANGED).
    pub priority: i32,
    /// CPUs to pin the thread to (NULL or n_cpus 0: leave the affinity).
    pub cpus: *const u32,
    /// How many CPUs `cpus` holds (at most 1024, CPU_SETSIZE).
    pub n_cpus: usize,
    /// Non-zero: mlockall and prefault heap_prefault / stack_prefault bytes.
    pub lock_memory: i32,
    /// Heap touched after locking (0: 8 MiB); at most half the physical
    /// memory, and within RLIMIT_MEMLOCK without CAP_IPC_LOCK.
    pub heap_prefault: usize,
    /// Stack of the calling thread touched (0: none); at most half of what
    /// is left of that thread's stack (for the main thread: of RLIMIT_STACK).
    pub stack_prefault: usize,
    /// Hold /dev/cpu_dma_latency at this many µs; negative leaves it.
    pub dma_latency_us: i32,
    /// The thread's timer slack in ns; 0 leaves it.
    pub timer_slack_ns: i64,
}

pub(crate) fn clock_from_i32(c: i32) -> Option<ClockId> {
    Some(match c {
        0 => ClockId::Monotonic,
        1 => ClockId::Realtime,
        2 => ClockId::Tai,
        3 => ClockId::Boottime,
        _ => return None,
    })
}

/// The C number of a mechanism is its position among the public rows of the
/// mechanism table (`rtick::wait::KINDS`, which only ever grows at the end).
pub(crate) fn mechanism_from_i32(m: i32) -> Option<Mechanism> {
    let i = usize::try_from(m).ok()?;
    rtick_core::wait::KINDS.iter().filter(|k| !k.hidden).nth(i).map(|k| k.mechanism)
}

pub(crate) fn overrun_from_i32(o: i32) -> Option<OverrunPolicy> {
    Some(match o {
        0 => OverrunPolicy::Skip,
        1 => OverrunPolicy::CatchUp,
        2 => OverrunPolicy::Fail,
        _ => return None,
    })
}

fn series(s: &SeriesSummary) -> rtick_series {
    let p = s.percentiles;
    rtick_series {
        count: s.count,
        min_ns: s.min,
        max_ns: s.max,
        mean_ns: s.mean,
        p50_ns: p[0],
        p90_ns: p[1],
        p99_ns: p[2],
        p99_9_ns: p[3],
        p99_99_ns: p[4],
        p99_999_ns: p[5],
    }
}

pub(crate) fn telemetry_of(s: &Snapshot) -> rtick_telemetry {
    rtick_telemetry {
        cycles: s.cycles,
        overruns: s.overruns,
        missed: s.missed,
        latency: series(&s.latency),
        period: series(&s.period),
        execution: series(&s.execution),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_numbers_name_the_right_mechanisms() {
        use rtick_mechanism::*;
        let pairs = [
            (RTICK_MECH_CLOCK_NANOSLEEP, "clock_nanosleep"),
            (RTICK_MECH_CLOCK_NANOSLEEP_REL, "clock_nanosleep-rel"),
            (RTICK_MECH_NANOSLEEP, "nanosleep"),
            (RTICK_MECH_POSIX_TIMER, "posix-timer"),
            (RTICK_MECH_ITIMER, "itimer"),
            (RTICK_MECH_SPIN, "spin"),
            (RTICK_MECH_HYBRID, "hybrid"),
            (RTICK_MECH_TIMERFD, "timerfd"),
            (RTICK_MECH_TIMERFD_EPOLL, "timerfd-epoll"),
            (RTICK_MECH_PPOLL, "ppoll"),
            (RTICK_MECH_PSELECT, "pselect"),
            (RTICK_MECH_EPOLL_PWAIT2, "epoll-pwait2"),
            (RTICK_MECH_FUTEX, "futex"),
            (RTICK_MECH_CONDVAR, "condvar"),
            (RTICK_MECH_USLEEP, "usleep"),
            (RTICK_MECH_STD_SLEEP, "std-sleep"),
            (RTICK_MECH_POSIX_TIMER_HANDLER, "posix-timer-handler"),
            (RTICK_MECH_SCHED_DEADLINE, "sched-deadline"),
        ];
        for (c, name) in pairs {
            assert_eq!(mechanism_from_i32(c as i32).map(|m| m.name()), Some(name), "{c:?}");
        }
        assert_eq!(pairs.len(), Mechanism::public_names().len(), "every public mechanism has a C number");
        assert_eq!(mechanism_from_i32(pairs.len() as i32), None);
        assert_eq!(mechanism_from_i32(-1), None);
    }
}

//! Systematic error of periodic timers: ticks counted against the time they
//! should cover (periodic itimers have been seen 10 % and 50 % off).
//!
//! Each case arms one periodic mechanism for a while, counts what it
//! delivers, and compares with elapsed / period on the timer's own time base:
//! wall time, or, for ITIMER_VIRTUAL and ITIMER_PROF, the process's CPU time
//! (a busy thread keeps the process on the CPU while they count).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use std::os::fd::AsFd;

use crate::sys::fd::TimerFd;
use crate::sys::poll_fd::wait_readable;
use crate::sys::signal::{self, SigSet};
use crate::sys::timer::{self, Itimer, Notify, PosixTimer};
use crate::sys::{clock, sched};
use crate::system::SysRoot;
use crate::time::{Nanos, Time};

/// A periodic mechanism whose drift can be measured.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DriftMechanism {
    /// setitimer(ITIMER_REAL): SIGALRM on wall time.
    ItimerReal,
    /// setitimer(ITIMER_VIRTUAL): SIGVTALRM on user CPU time.
    ItimerVirtual,
    /// setitimer(ITIMER_PROF): SIGPROF on user + system CPU time.
    ItimerProf,
    /// A timerfd with a kernel interval.
    Timerfd,
    /// A POSIX timer with a kernel interval (overruns from si_overrun).
    PosixTimer,
    /// Work, then a relative sleep of one period: the drifting pattern.
    RelativeLoop,
    /// Work, then clock_nanosleep(TIMER_ABSTIME) to the next deadline.
    AbsoluteLoop,
}

impl DriftMechanism {
    /// All of them, in display order.
    pub const ALL: [DriftMechanism; 7] = [
        DriftMechanism::ItimerReal,
        DriftMechanism::ItimerVirtual,
        DriftMechanism::ItimerProf,
        DriftMechanism::Timerfd,
        DriftMechanism::PosixTimer,
        DriftMechanism::RelativeLoop,
        DriftMechanism::AbsoluteLoop,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            DriftMechanism::ItimerReal => "itimer-real",
            DriftMechanism::ItimerVirtual => "itimer-virtual",
            DriftMechanism::ItimerProf => "itimer-prof",
            DriftMechanism::Timerfd => "timerfd",
            DriftMechanism::PosixTimer => "posix-timer",
            DriftMechanism::RelativeLoop => "relative-loop",
            DriftMechanism::AbsoluteLoop => "absolute-loop",
        }
    }

    /// Looks a name up.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Whether it counts CPU time (and needs the process busy).
    pub fn cpu_time(self) -> bool {
        matches!(self, DriftMechanism::ItimerVirtual | DriftMechanism::ItimerProf)
    }

    /// Whether the kernel reports its merged expirations (timerfd counts,
    /// si_overrun): only then are `overruns` measured.
    pub fn reports_overruns(self) -> bool {
        matches!(self, DriftMechanism::Timerfd | DriftMechanism::PosixTimer)
    }

    /// The signals its measurement waits for; block them in every thread first.
    pub fn signals() -> [libc::c_int; 4] {
        [libc::SIGALRM, libc::SIGVTALRM, libc::SIGPROF, signal::timer_signal()]
    }
}

impl fmt::Display for DriftMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One measurement.
#[derive(Copy, Clone, Debug)]
pub struct DriftCase {
    /// The mechanism.
    pub mechanism: DriftMechanism,
    /// The period asked for.
    pub period: Nanos,
    /// How long to count.
    pub duration: Nanos,
    /// Simulated work per cycle for the loops.
    pub work: Nanos,
}

/// What a case measured.
#[derive(Clone, Debug, PartialEq)]
pub struct DriftResult {
    /// The mechanism.
    pub mechanism: DriftMechanism,
    /// The period asked for.
    pub period: Nanos,
    /// Ticks delivered (for kernel interval timers including expirations
    /// reported as overruns).
    pub ticks: u64,
    /// elapsed / period.
    pub expected_ticks: f64,
    /// Time covered, on the timer's own time base.
    pub elapsed: Nanos,
    /// Whether `elapsed` is process CPU time (else wall time).
    pub cpu_time: bool,
    /// Expirations the kernel reported merged (posix-timer, timerfd).
    pub overruns: u64,
    /// (ticks − expected) / expected, in percent.
    pub error_percent: f64,
    /// The same in parts per million.
    pub error_ppm: f64,
}

impl DriftResult {
    fn new(
        mechanism: DriftMechanism,
        period: Nanos,
        ticks: u64,
        elapsed: Nanos,
        cpu_time: bool,
        overruns: u64,
    ) -> Self {
        let expected = elapsed.as_ns() as f64 / period.as_ns() as f64;
        let err = if expected > 0.0 { (ticks as f64 - expected) / expected } else { 0.0 };
        DriftResult {
            mechanism,
            period,
            ticks,
            expected_ticks: expected,
            elapsed,
            cpu_time,
            overruns,
            error_percent: err * 100.0,
            error_ppm: err * 1e6,
        }
    }
}

/// How long a wait of a case runs before it looks at the stop flag again:
/// a stop ends a case within about this, whatever the period.
pub const STOP_CHECK: Nanos = Nanos::from_ms(50);

/// Runs one case, or stops it within [`STOP_CHECK`] once `stop` is set:
/// `None` then (a count cut short covers neither the duration nor whole
/// periods, so it is no result). The signals of [`DriftMechanism::signals`]
/// must be blocked in every thread of the process.
pub fn run_case(case: &DriftCase, stop: &AtomicBool) -> Result<Option<DriftResult>> {
    if case.period <= Nanos::ZERO || case.duration <= Nanos::ZERO {
        return Err(Error::Invalid("period and duration must be greater than zero".into()));
    }
    if case.period > case.duration {
        return Err(Error::Invalid(format!(
            "a period of {} is longer than the duration {}: not one tick would be counted; give a longer duration",
            case.period, case.duration
        )));
    }
    match case.mechanism {
        DriftMechanism::ItimerReal => itimer(case, Itimer::Real, libc::SIGALRM, stop),
        DriftMechanism::ItimerVirtual => itimer(case, Itimer::Virtual, libc::SIGVTALRM, stop),
        DriftMechanism::ItimerProf => itimer(case, Itimer::Prof, libc::SIGPROF, stop),
        DriftMechanism::Timerfd => timerfd(case, stop),
        DriftMechanism::PosixTimer => posix_timer(case, stop),
        DriftMechanism::RelativeLoop | DriftMechanism::AbsoluteLoop => sleep_loop(case, stop),
    }
}

fn stopped(stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
}

/// A `sigtimedwait` that failed other than by timing out or being interrupted.
fn sigtimedwait(e: std::io::Error) -> Error {
    Error::sys("sigtimedwait", e, "")
}

fn mono() -> Time {
    crate::ClockId::Monotonic.now()
}

fn spin_for(d: Nanos) {
    let end = mono() + d;
    while mono() < end {
        std::hint::spin_loop();
    }
}

/// Counts an itimer's signals. The timer is claimed first: the process has
/// one of each, and an `itimer` loop (ITIMER_REAL) alive at the same time
/// would share it, so this fails instead of counting the other's signals.
fn itimer(case: &DriftCase, which: Itimer, signo: libc::c_int, stop: &AtomicBool) -> Result<Option<DriftResult>> {
    if !signal::is_blocked(signo) {
        return Err(Error::Invalid(format!("signal {signo} must be blocked before measuring {}", case.mechanism)));
    }
    if !timer::itimer_keeps(case.period) {
        return Err(Error::Invalid(format!(
            "{}: setitimer counts whole microseconds, so a period of {} ns cannot be kept; use a multiple of 1 µs",
            case.mechanism,
            case.period.as_ns()
        )));
    }
    let timer = which.claim().map_err(|e| match e.kind() {
        std::io::ErrorKind::ResourceBusy => Error::Unavailable {
            mechanism: case.mechanism.name(),
            reason: format!(
                "one {} per process, and an itimer loop or another drift measurement is using it; drop it first",
                which.name()
            ),
        },
        _ => Error::sys("setitimer", e, ""),
    })?;
    let set = SigSet::of(&[signo]);
    signal::drain(&set);
    // CPU-time timers advance only while the process runs: keep it busy.
    while_busy(case.mechanism.cpu_time(), || {
        let (wall0, cpu0) = (mono(), sched::process_cpu_time());
        timer.arm(case.period, case.period).map_err(|e| Error::sys(format!("setitimer({})", which.name()), e, ""))?;
        let mut ticks = 0u64;
        while mono() - wall0 < case.duration && !stopped(stop) {
            if signal::wait_within(&set, STOP_CHECK).map_err(sigtimedwait)?.is_some() {
                ticks += 1;
            }
        }
        let (wall1, cpu1) = (mono(), sched::process_cpu_time());
        timer.disarm().map_err(|e| Error::sys(format!("setitimer({}, 0)", which.name()), e, ""))?;
        signal::drain(&set);
        if stopped(stop) {
            return Ok(None);
        }
        let elapsed = match case.mechanism {
            DriftMechanism::ItimerVirtual => cpu1.0 - cpu0.0,
            DriftMechanism::ItimerProf => cpu1.1 - cpu0.1,
            _ => wall1 - wall0,
        };
        Ok(Some(DriftResult::new(case.mechanism, case.period, ticks, elapsed, case.mechanism.cpu_time(), 0)))
    })
}

/// Runs `count` while, when `busy`, a second thread spins to keep the
/// process on the CPU. The spinner stops on every way out of `count` — an
/// error returned early or a panic too — or the scope would wait for it forever.
fn while_busy<T>(busy: bool, count: impl FnOnce() -> T) -> T {
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Relaxed);
        }
    }
    let spinning = AtomicBool::new(busy);
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&spinning);
        if busy {
            s.spawn(|| {
                while spinning.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        count()
    })
}

/// Counts a timerfd's expirations; it is read only once poll says it is
/// readable, so that a stop is seen between ticks however far apart.
fn timerfd(case: &DriftCase, stop: &AtomicBool) -> Result<Option<DriftResult>> {
    let tfd = TimerFd::new(libc::CLOCK_MONOTONIC).map_err(|e| Error::sys("timerfd_create", e, ""))?;
    let t0 = mono();
    tfd.arm(t0 + case.period, case.period).map_err(|e| Error::sys("timerfd_settime", e, ""))?;
    let (mut ticks, mut merged, mut last) = (0u64, 0u64, t0);
    let mut ready = Vec::with_capacity(1);
    while last - t0 < case.duration {
        if stopped(stop) {
            return Ok(None);
        }
        let n =
            wait_readable(&[tfd.as_fd()], STOP_CHECK, &mut ready).map_err(|e| Error::sys("poll(timerfd)", e, ""))?;
        if n == 0 {
            continue;
        }
        let n = tfd.read().map_err(|e| Error::sys("read(timerfd)", e, ""))?;
        ticks += n;
        merged += n.saturating_sub(1);
        last = mono();
    }
    Ok(Some(DriftResult::new(case.mechanism, case.period, ticks, last - t0, false, merged)))
}

fn posix_timer(case: &DriftCase, stop: &AtomicBool) -> Result<Option<DriftResult>> {
    let signo = signal::timer_signal();
    signal::block(&[signo]).map_err(|e| Error::sys("pthread_sigmask", e, ""))?;
    let set = SigSet::of(&[signo]);
    signal::drain(&set);
    let t = PosixTimer::create(libc::CLOCK_MONOTONIC, Notify::Thread { signo, tid: timer::gettid() })
        .map_err(|e| Error::sys("timer_create", e, ""))?;
    let t0 = mono();
    t.arm_periodic(t0 + case.period, case.period).map_err(|e| Error::sys("timer_settime", e, ""))?;
    let (mut ticks, mut merged, mut last) = (0u64, 0u64, t0);
    while last - t0 < case.duration && !stopped(stop) {
        let Some(got) = signal::wait_within(&set, STOP_CHECK).map_err(sigtimedwait)? else { continue };
        ticks += 1 + got.timer_overrun as u64;
        merged += got.timer_overrun as u64;
        last = mono();
    }
    drop(t);
    signal::drain(&set);
    if stopped(stop) {
        return Ok(None);
    }
    Ok(Some(DriftResult::new(case.mechanism, case.period, ticks, last - t0, false, merged)))
}

/// Work, then a sleep. The relative loop's sleep is one relative
/// clock_nanosleep of the period when that is no longer than
/// [`STOP_CHECK`]; a longer one sleeps to now + period in steps.
fn sleep_loop(case: &DriftCase, stop: &AtomicBool) -> Result<Option<DriftResult>> {
    let t0 = mono();
    let mut next = t0 + case.period;
    let mut ticks = 0u64;
    let mut last = t0;
    let nanosleep = |e| Error::sys("clock_nanosleep", e, "");
    while last - t0 < case.duration {
        if stopped(stop) {
            return Ok(None);
        }
        spin_for(case.work);
        let slept = match case.mechanism {
            DriftMechanism::RelativeLoop if case.period <= STOP_CHECK => {
                clock::sleep_for(libc::CLOCK_MONOTONIC, case.period).map_err(nanosleep)?;
                true
            }
            DriftMechanism::RelativeLoop => sleep_until_unless(mono() + case.period, stop).map_err(nanosleep)?,
            _ => sleep_until_unless(next, stop).map_err(nanosleep)?,
        };
        if !slept {
            return Ok(None);
        }
        next += case.period;
        ticks += 1;
        last = mono();
    }
    Ok(Some(DriftResult::new(case.mechanism, case.period, ticks, last - t0, false, 0)))
}

/// Sleeps until `deadline` (absolute, CLOCK_MONOTONIC) in steps of at most
/// [`STOP_CHECK`]; false if `stop` was set first.
fn sleep_until_unless(deadline: Time, stop: &AtomicBool) -> std::io::Result<bool> {
    loop {
        let now = mono();
        if now >= deadline {
            return Ok(true);
        }
        if stopped(stop) {
            return Ok(false);
        }
        let step = if deadline - now > STOP_CHECK { now + STOP_CHECK } else { deadline };
        clock::sleep_until(libc::CLOCK_MONOTONIC, step)?;
    }
}

/// Why a mechanism errs as it does, inferred from its kind, the period, the
/// kernel's HZ and (for the loops) the simulated work.
pub fn explain(m: DriftMechanism, period: Nanos, hz: Option<u32>, work: Nanos) -> String {
    match m {
        DriftMechanism::ItimerVirtual | DriftMechanism::ItimerProf => {
            let which = if m == DriftMechanism::ItimerProf { "ITIMER_PROF" } else { "ITIMER_VIRTUAL" };
            let Some(hz) = hz.filter(|h| *h > 0) else {
                return format!("{which} is checked at scheduler ticks (HZ unknown here): periods shorter than a tick lose ticks");
            };
            let tick = Nanos(1_000_000_000 / hz as i64);
            if period < tick {
                let lost = 100.0 * (1.0 - period.as_ns() as f64 / tick.as_ns() as f64);
                format!(
                    "{which} is accounted in scheduler ticks: with CONFIG_HZ={hz} a tick is {tick}, and the timer fires at most once per tick, so a {period} period loses about {lost:.0} % of its ticks"
                )
            } else {
                format!("{which} is checked at every scheduler tick ({tick} at CONFIG_HZ={hz}); each expiry advances by exactly one period, so a {period} period fires up to a tick late but loses no ticks")
            }
        }
        DriftMechanism::ItimerReal => {
            "ITIMER_REAL runs on a high-resolution timer (since Linux 2.6.16) and is re-armed on the same grid: no rounding to ticks; a tick is lost only when the previous SIGALRM was still pending, since standard signals do not queue".into()
        }
        DriftMechanism::Timerfd | DriftMechanism::PosixTimer => {
            "a kernel interval timer on a high-resolution timer: the kernel keeps the grid and counts expirations it could not deliver, so none are lost".into()
        }
        DriftMechanism::RelativeLoop => {
            let share = 100.0 * work.as_ns() as f64 / (period + work).as_ns() as f64;
            format!(
                "each cycle lasts the work ({work}) + the relative sleep ({period}) + the wake-up latency, so it loses at least {share:.1} % of the cycles, and more with every late wake-up: the lag adds up cycle after cycle and is never caught up; use absolute deadlines"
            )
        }
        DriftMechanism::AbsoluteLoop => {
            "absolute deadlines (clock_nanosleep TIMER_ABSTIME): work and latency do not accumulate, so there is no drift".into()
        }
    }
}

/// The kernel's HZ: CONFIG_HZ from the kernel config, else measured from the
/// jiffies counter in /proc/timer_list over 200 ms.
pub fn detect_hz(root: &SysRoot) -> Option<u32> {
    if let Some(hz) =
        crate::system::KernelConfig::read(root).and_then(|c| c.get("CONFIG_HZ").and_then(|v| v.parse().ok()))
    {
        return Some(hz);
    }
    let jiffies = || {
        root.read("/proc/timer_list")?
            .lines()
            .find_map(|l| l.strip_prefix("jiffies:").and_then(|v| v.trim().parse::<u64>().ok()))
    };
    let (a, t0) = (jiffies()?, mono());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (b, t1) = (jiffies()?, mono());
    let hz = (b - a) as f64 / ((t1 - t0).as_ns() as f64 / 1e9);
    // Round to the HZ values kernels are built with.
    [100u32, 250, 300, 1000].into_iter().min_by(|x, y| (*x as f64 - hz).abs().total_cmp(&(*y as f64 - hz).abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explanations_follow_hz() {
        let e = explain(DriftMechanism::ItimerProf, Nanos::from_us(1000), Some(250), Nanos::ZERO);
        assert!(e.contains("CONFIG_HZ=250") && e.contains("4.00 ms") && e.contains("75 %"), "{e}");
        let e = explain(DriftMechanism::ItimerVirtual, Nanos::from_us(100), Some(1000), Nanos::ZERO);
        assert!(e.contains("90 %"), "{e}");
        let e = explain(DriftMechanism::ItimerProf, Nanos::from_us(10_000), Some(250), Nanos::ZERO);
        assert!(e.contains("loses no ticks"), "{e}");
        let e = explain(DriftMechanism::ItimerProf, Nanos::from_us(1000), None, Nanos::ZERO);
        assert!(e.contains("HZ unknown"), "{e}");
        let e = explain(DriftMechanism::RelativeLoop, Nanos::from_us(1000), Some(250), Nanos::from_us(50));
        assert!(e.contains("4.8 %"), "{e}");
    }

    #[test]
    fn result_arithmetic() {
        let r = DriftResult::new(DriftMechanism::Timerfd, Nanos::from_ms(1), 750, Nanos::from_secs(1), false, 0);
        assert_eq!(r.expected_ticks, 1000.0);
        assert!((r.error_percent + 25.0).abs() < 1e-9);
        assert!((r.error_ppm + 250_000.0).abs() < 1e-6);
    }

    /// Runs `f` on a thread of its own; `None` when it has not returned
    /// within `limit` (it would otherwise hang the test).
    fn within<T: Send + 'static>(limit: std::time::Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit).ok()
    }

    #[test]
    fn a_failing_count_stops_the_busy_thread_and_returns_its_error() {
        let limit = std::time::Duration::from_secs(20);
        let got = within(limit, || while_busy(true, || Err::<(), _>(Error::Invalid("setitimer refused".into()))));
        let err = got.expect("while_busy hung after an early error: the spinner was never told to stop");
        assert_eq!(err.unwrap_err().to_string(), "setitimer refused");
        // A panic in the measurement propagates instead of hanging too.
        let got = within(limit, || {
            std::panic::catch_unwind(|| while_busy(true, || -> u32 { panic!("measurement panicked") }))
        });
        assert!(got.expect("while_busy hung after a panic").is_err());
        assert_eq!(within(limit, || while_busy(true, || 7)), Some(7));
    }

    #[test]
    fn names_are_the_command_line_names() {
        let names = [
            (DriftMechanism::ItimerReal, "itimer-real"),
            (DriftMechanism::ItimerVirtual, "itimer-virtual"),
            (DriftMechanism::ItimerProf, "itimer-prof"),
            (DriftMechanism::Timerfd, "timerfd"),
            (DriftMechanism::PosixTimer, "posix-timer"),
            (DriftMechanism::RelativeLoop, "relative-loop"),
            (DriftMechanism::AbsoluteLoop, "absolute-loop"),
        ];
        assert_eq!(names.map(|n| n.0), DriftMechanism::ALL);
        for (m, name) in names {
            assert_eq!((m.name(), m.to_string()), (name, name.to_string()));
            assert_eq!(DriftMechanism::parse(name), Some(m));
        }
        assert_eq!(DriftMechanism::parse("itimer"), None);
    }

    /// An itimer repeats in whole microseconds: a finer period is refused
    /// before any timer is armed (it would count a different period).
    #[test]
    fn itimer_periods_must_be_whole_microseconds() {
        std::thread::spawn(|| {
            signal::block(&[libc::SIGVTALRM]).unwrap();
            for ns in [500, 1_500] {
                let case = DriftCase {
                    mechanism: DriftMechanism::ItimerVirtual,
                    period: Nanos(ns),
                    duration: Nanos::from_ms(10),
                    work: Nanos::ZERO,
                };
                let e = run_case(&case, &AtomicBool::new(false)).unwrap_err();
                assert!(e.to_string().contains(&format!("a period of {ns} ns cannot be kept")), "{e}");
            }
        })
        .join()
        .unwrap();
    }

    /// A period of 10 s counted for 20 s: a stop set 200 ms in ends the
    /// case within a few checks, not the period, and yields no result.
    #[test]
    fn a_stop_ends_every_wait_within_a_few_checks() {
        use std::sync::Arc;
        use std::time::{Duration, Instant};
        for mechanism in [
            DriftMechanism::Timerfd,
            DriftMechanism::PosixTimer,
            DriftMechanism::RelativeLoop,
            DriftMechanism::AbsoluteLoop,
        ] {
            let stop = Arc::new(AtomicBool::new(false));
            let setter = Arc::clone(&stop);
            let case = DriftCase {
                mechanism,
                period: Nanos::from_secs(10),
                duration: Nanos::from_secs(20),
                work: Nanos::ZERO,
            };
            let got = within(Duration::from_secs(60), move || {
                let t0 = Instant::now();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(200));
                    setter.store(true, Ordering::Relaxed);
                });
                (run_case(&case, &stop).map_err(|e| e.to_string()), t0.elapsed())
            });
            let (res, took) = got.unwrap_or_else(|| panic!("{mechanism}: still waiting a minute after the stop"));
            assert_eq!(res, Ok(None), "{mechanism}");
            // Generous for a loaded VM, yet far under the 10 s period.
            assert!(took < Duration::from_secs(5), "{mechanism}: took {took:?} to stop");
        }
    }

    #[test]
    fn a_period_longer_than_the_duration_is_refused() {
        let case = DriftCase {
            mechanism: DriftMechanism::Timerfd,
            period: Nanos::from_secs(4),
            duration: Nanos::from_secs(1),
            work: Nanos::ZERO,
        };
        let e = run_case(&case, &AtomicBool::new(false)).unwrap_err().to_string();
        assert!(e.contains("longer than the duration"), "{e}");
    }
}

//! Turns `rtick measure` and `rtick monitor` arguments into a validated run
//! configuration: [`loop_plan`] the loop both share, [`plan`] measure's bounds
//! and outputs on top.
//! Pure apart from reading which CPUs exist: every usage error is found here,
//! before anything is created or changed.

use rtick::measure::{HistogramSpec, MeasureConfig, MAX_HISTOGRAM_BUCKETS};
use rtick::rt::{Policy, ThreadSetup, DEFAULT_STACK_PREFAULT};
use rtick::wait::HybridSlack;
use rtick::{ClockId, Mechanism, Nanos};

use crate::cli::{LoopArgs, MeasureArgs};
use crate::Usage;

/// Default priority with the default fifo policy.
pub const DEFAULT_PRIORITY: i32 = 90;
/// Default duration when neither --duration nor --loops is given.
pub const DEFAULT_DURATION: Nanos = Nanos::from_secs(10);
/// Default duration per mechanism with --compare.
pub const DEFAULT_COMPARE_DURATION: Nanos = Nanos::from_secs(3);

/// A validated plan.
#[derive(Debug)]
pub struct Plan {
    pub cfg: MeasureConfig,
    /// --policy or --priority was given: no silent fallback.
    pub policy_explicit: bool,
    pub mlock: bool,
    pub mlock_explicit: bool,
}

/// The CPUs that exist and those this process may use.
#[derive(Debug, Clone)]
pub struct Cpus {
    pub online: usize,
    pub allowed: Vec<usize>,
}

impl Cpus {
    /// Reads them; an affinity that cannot be read is an error, not an empty list.
    pub fn detect() -> rtick::Result<Cpus> {
        let allowed = rtick::info::allowed_cpus()?;
        Ok(Cpus { online: rtick::info::online_cpus().max(allowed.iter().max().map_or(0, |m| m + 1)), allowed })
    }
}

fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

pub fn plan(a: &MeasureArgs, cpus: &Cpus) -> Result<Plan, Usage> {
    let mut plan = loop_plan(&a.looping, a.compare, cpus)?;
    if let (true, [only]) = (a.compare, plan.cfg.mechanisms.as_slice()) {
        let other = if *only == Mechanism::ClockNanosleep { Mechanism::Timerfd } else { Mechanism::ClockNanosleep };
        return Err(usage(format!(
            "--compare needs at least 2 mechanisms, and -m names only {only}: add another (-m {only},{other}) or leave -m out to compare them all"
        )));
    }
    let duration = match (a.duration, a.loops) {
        (None, None) if a.compare => Some(DEFAULT_COMPARE_DURATION),
        (None, None) => Some(DEFAULT_DURATION),
        (d, _) => d,
    };
    let unit_ns = if a.nsecs { 1 } else { 1000 };
    let histogram = a.histogram.as_ref().map(|_| HistogramSpec {
        buckets: (a.histogram_max.as_ns() / unit_ns).clamp(1, MAX_HISTOGRAM_BUCKETS as i64) as usize,
        unit_ns,
    });
    let cfg = &mut plan.cfg;
    cfg.waiters = a.mock.waiters(&cfg.mechanisms)?;
    cfg.loops = a.loops;
    cfg.duration = duration;
    cfg.breaktrace = a.breaktrace;
    cfg.warm_up = a.warm_up.unwrap_or(Nanos::ZERO);
    cfg.histogram = histogram;
    cfg.interleave = a.compare.then_some(a.slice);
    cfg.validate().map_err(|e| usage(e.to_string()))?;
    Ok(plan)
}

/// The loop `measure` and `monitor` share, unbounded (no duration, no loop
/// count); `all_by_default`: no -m means every mechanism (measure --compare).
/// The caller adds its bounds, then validates the whole.
pub fn loop_plan(a: &LoopArgs, all_by_default: bool, cpus: &Cpus) -> Result<Plan, Usage> {
    let mechanisms = mechanisms(a, all_by_default)?;
    if let HybridSlack::Fixed(v) = a.hybrid_slack {
        if v >= a.interval {
            return Err(usage(format!("--hybrid-slack: {v} is not shorter than the interval {}", a.interval)));
        }
    }
    if let Some(res) = a.clock.resolution() {
        above_resolution(a.interval, a.clock, res)?;
    }
    let (policy, priority) = policy(a)?;
    let setups = pinning(a, thread_count(a, cpus)?, cpus)?
        .into_iter()
        .map(|cpus| ThreadSetup { policy, priority, cpus, timer_slack: Some(a.timer_slack) })
        .collect();
    let cfg = MeasureConfig {
        mechanisms,
        interval: a.interval,
        loops: None,
        duration: None,
        threads: setups,
        clock: a.clock,
        overrun: a.overrun,
        hybrid_slack: a.hybrid_slack,
        breaktrace: None,
        tracemark: None,
        histogram: None,
        stack_prefault: DEFAULT_STACK_PREFAULT,
        interleave: None,
        rest_after_spinning: None,
        // (The mock's waiters, in test builds, are the caller's.)
        ..Default::default()
    };
    Ok(Plan {
        cfg,
        policy_explicit: a.policy.is_some() || a.priority.is_some(),
        mlock: !a.no_mlock,
        mlock_explicit: a.mlock,
    })
}

/// An interval shorter than the clock's resolution (`clock_getres`: 1 ns
/// with high-resolution timers, a tick without) cannot be kept.
fn above_resolution(interval: Nanos, clock: ClockId, res: Nanos) -> Result<(), Usage> {
    match interval < res {
        true => Err(usage(format!(
            "-i/--interval: {interval} is below the resolution of {} ({res}, from clock_getres); give at least {res}",
            clock.kernel_name()
        ))),
        false => Ok(()),
    }
}

/// The mechanisms named, in order, each once (`all`: every public one).
fn mechanisms(a: &LoopArgs, all_by_default: bool) -> Result<Vec<Mechanism>, Usage> {
    let names = match &a.mechanisms {
        Some(n) => n.clone(),
        None if all_by_default => vec!["all".to_string()],
        None => vec![Mechanism::ClockNanosleep.name().to_string()],
    };
    let mut mechanisms = Vec::new();
    for name in &names {
        let name = name.trim();
        let found: Vec<Mechanism> = if name == "all" {
            rtick::wait::KINDS.iter().filter(|k| !k.hidden).map(|k| k.mechanism).collect()
        } else {
            vec![Mechanism::parse(name).ok_or_else(|| {
                usage(format!(
                    "-m/--mechanism: unknown mechanism '{name}'; one of: {}, all",
                    Mechanism::public_names().join(", ")
                ))
            })?]
        };
        for m in found {
            if !mechanisms.contains(&m) {
                mechanisms.push(m);
            }
        }
    }
    Ok(mechanisms)
}

/// The scheduling policy and priority: fifo 90 unless told otherwise; a
/// priority goes with a real-time policy only.
fn policy(a: &LoopArgs) -> Result<(Policy, i32), Usage> {
    let (policy, priority) = match (a.policy, a.priority) {
        (None, None) => (Policy::Fifo, DEFAULT_PRIORITY),
        (None, Some(p)) => (Policy::Fifo, p),
        (Some(pol), None) => (pol, if pol.is_realtime() { DEFAULT_PRIORITY } else { 0 }),
        (Some(pol), Some(p)) => (pol, p),
    };
    if policy.is_realtime() && !(1..=99).contains(&priority) {
        return Err(usage(format!("-p/--priority: {priority} is outside 1–99 for {policy}")));
    }
    if !policy.is_realtime() && priority != 0 {
        return Err(usage(format!(
            "-p/--priority: {policy} takes no priority (got {priority}); use --policy fifo or rr"
        )));
    }
    Ok((policy, priority))
}

/// How many measuring threads: -t N, or one per allowed CPU with -t alone or -S.
fn thread_count(a: &LoopArgs, cpus: &Cpus) -> Result<usize, Usage> {
    match (a.smp, a.threads) {
        (true, _) | (false, Some(None)) => Ok(cpus.allowed.len().max(1)),
        (false, Some(Some(0))) => Err(usage("-t/--threads: 0 threads; give at least 1, or -t alone for one per CPU")),
        (false, Some(Some(n))) if n > 1024 => Err(usage(format!("-t/--threads: {n} is more than 1024 threads"))),
        (false, Some(Some(n))) => Ok(n),
        (false, None) => Ok(1),
    }
}

/// The CPU of each thread: -a's CPUs, or with -a alone or -S the allowed
/// CPUs, in turn; none (anywhere) without either.
fn pinning(a: &LoopArgs, threads: usize, cpus: &Cpus) -> Result<Vec<Vec<usize>>, Usage> {
    let (option, list) = match (&a.affinity, a.smp) {
        (Some(Some(set)), _) => ("-a/--affinity", cpu_list("-a/--affinity", set, cpus)?),
        (Some(None), _) => ("-a/--affinity", cpus.allowed.clone()),
        (None, true) => ("-S/--smp", cpus.allowed.clone()),
        (None, false) => return Ok(vec![Vec::new(); threads]),
    };
    if list.is_empty() {
        return Err(usage(format!("{option}: no CPU is allowed to this process (see taskset -p)")));
    }
    // Round-robin by cycling: no division, whatever the list.
    Ok(list.iter().cycle().take(threads).map(|&c| vec![c]).collect())
}

/// The CPU list of `option` (-a, --load-cpus), each CPU checked to exist and to be allowed.
pub fn cpu_list(option: &str, set: &str, cpus: &Cpus) -> Result<Vec<usize>, Usage> {
    let list = rtick::system::parse_cpu_list(set)
        .ok_or_else(|| usage(format!("{option}: '{set}' is not a CPU list such as 0-3,6")))?;
    for &c in &list {
        if c >= cpus.online {
            let have = match cpus.online {
                0 => "no online CPU is known".to_string(),
                n => format!("this machine has CPUs 0-{}", n - 1),
            };
            return Err(usage(format!("{option}: CPU {c} does not exist ({have})")));
        }
        if !cpus.allowed.contains(&c) {
            return Err(usage(format!("{option}: CPU {c} is not allowed to this process (see taskset -p)")));
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn args(extra: &[&str]) -> MeasureArgs {
        let cli = Cli::try_parse_from([&["rtick", "measure"], extra].concat()).expect("valid arguments");
        match cli.command {
            Command::Measure(a) => *a,
            other => panic!("not measure: {other:?}"),
        }
    }

    #[test]
    fn no_allowed_cpu_is_a_usage_error_not_a_division_by_zero() {
        for cpus in [Cpus { online: 0, allowed: vec![] }, Cpus { online: 4, allowed: vec![] }] {
            for extra in [&["-S"][..], &["-a"], &["-a", "-t", "3"], &["-t", "-a"], &["-a", "1"]] {
                let e = plan(&args(extra), &cpus).expect_err("no CPU to pin to");
                assert!(e.0.starts_with("-a/--affinity: ") || e.0.starts_with("-S/--smp: "), "{extra:?}: {e}");
                assert_eq!(e.0.lines().count(), 1, "{e}");
            }
        }
    }

    #[test]
    fn an_interval_below_the_clock_resolution_is_refused() {
        let tick = Nanos::from_ms(4);
        let e = above_resolution(Nanos::from_ms(1), ClockId::Monotonic, tick).expect_err("1 ms < a 4 ms tick");
        assert!(e.0.starts_with("-i/--interval: 1.00 ms is below the resolution of CLOCK_MONOTONIC (4.00 ms"), "{e}");
        assert!(above_resolution(tick, ClockId::Monotonic, tick).is_ok());
        // This machine's clock, through the plan.
        let res = ClockId::Monotonic.resolution().expect("clock_getres(CLOCK_MONOTONIC)");
        let cpus = Cpus { online: 1, allowed: vec![0] };
        let at = |ns: i64| plan(&args(&["-i", &format!("{ns}ns")]), &cpus).map(|_| ());
        assert!(at(res.as_ns()).is_ok());
        if res > Nanos(1) {
            assert!(at(res.as_ns() - 1).unwrap_err().0.contains("below the resolution"));
        }
    }

    #[test]
    fn threads_are_pinned_round_robin() {
        let cpus = Cpus { online: 4, allowed: vec![1, 2, 3] };
        let pins = |extra: &[&str]| -> Vec<Vec<usize>> {
            plan(&args(extra), &cpus).unwrap().cfg.threads.into_iter().map(|t| t.cpus).collect()
        };
        assert_eq!(pins(&["-S"]), [vec![1], vec![2], vec![3]]);
        assert_eq!(pins(&["-a", "3,1", "-t", "5"]), [vec![3], vec![1], vec![3], vec![1], vec![3]]);
        assert_eq!(pins(&["-t", "2"]), [Vec::<usize>::new(), vec![]]);
        assert!(plan(&args(&["-a", "0"]), &cpus).unwrap_err().0.contains("not allowed"));
        assert!(plan(&args(&["-a", "4"]), &cpus).unwrap_err().0.contains("CPUs 0-3"));
    }
}

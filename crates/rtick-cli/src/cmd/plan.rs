//! Turns `rtick measure` arguments into a validated run configuration.
//! Pure apart from reading which CPUs exist: every usage error is found here,
//! before anything is created or changed.

use rtick::measure::{HistogramSpec, MeasureConfig};
use rtick::rt::{Policy, ThreadSetup, DEFAULT_STACK_PREFAULT};
use rtick::wait::HybridSlack;
use rtick::{ClockId, Mechanism, Nanos, OverrunPolicy};

use crate::cli::MeasureArgs;
use crate::units::{parse_time, Plain};
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
    pub fn detect() -> Cpus {
        let allowed = rtick::info::allowed_cpus();
        Cpus { online: rtick::info::online_cpus().max(allowed.iter().max().map_or(0, |m| m + 1)), allowed }
    }
}

fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

pub fn plan(a: &MeasureArgs, cpus: &Cpus) -> Result<Plan, Usage> {
    let names = match &a.mechanisms {
        Some(n) => n.clone(),
        None if a.compare => vec!["all".to_string()],
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
    let clock = ClockId::parse(&a.clock).ok_or_else(|| {
        usage(format!("-c/--clock: unknown clock '{}'; one of: monotonic, realtime, tai, boottime", a.clock))
    })?;
    let overrun = OverrunPolicy::parse(&a.overrun)
        .ok_or_else(|| usage(format!("--overrun: unknown policy '{}'; one of: skip, catch-up", a.overrun)))?;
    let hybrid_slack = if a.hybrid_slack.trim() == "auto" {
        HybridSlack::Auto
    } else {
        let v = parse_time(&a.hybrid_slack, Plain::Micros, false)
            .map_err(|e| usage(format!("--hybrid-slack: {e}; give auto or a time such as 50us")))?;
        if v >= a.interval {
            return Err(usage(format!("--hybrid-slack: {v} is not shorter than the interval {}", a.interval)));
        }
        HybridSlack::Fixed(v)
    };

    let policy =
        match &a.policy {
            Some(p) => Some(Policy::parse(p).ok_or_else(|| {
                usage(format!("--policy: unknown policy '{p}'; one of: other, batch, idle, fifo, rr"))
            })?),
            None => None,
        };
    let (policy, priority) = match (policy, a.priority) {
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

    let threads = match (a.smp, a.threads) {
        (true, _) | (false, Some(None)) => cpus.allowed.len().max(1),
        (false, Some(Some(0))) => {
            return Err(usage("-t/--threads: 0 threads; give at least 1, or -t alone for one per CPU"))
        }
        (false, Some(Some(n))) if n > 1024 => {
            return Err(usage(format!("-t/--threads: {n} is more than 1024 threads")))
        }
        (false, Some(Some(n))) => n,
        (false, None) => 1,
    };
    let pin: Vec<Vec<usize>> = match (&a.affinity, a.smp) {
        (Some(Some(set)), _) => {
            let list = rtick::system::parse_cpu_list(set)
                .ok_or_else(|| usage(format!("-a/--affinity: '{set}' is not a CPU list such as 0-3,6")))?;
            for &c in &list {
                if c >= cpus.online {
                    return Err(usage(format!(
                        "-a/--affinity: CPU {c} does not exist (this machine has CPUs 0-{})",
                        cpus.online - 1
                    )));
                }
                if !cpus.allowed.contains(&c) {
                    return Err(usage(format!(
                        "-a/--affinity: CPU {c} is not allowed to this process (see taskset -p)"
                    )));
                }
            }
            (0..threads).map(|i| vec![list[i % list.len()]]).collect()
        }
        (Some(None), _) | (None, true) => (0..threads).map(|i| vec![cpus.allowed[i % cpus.allowed.len()]]).collect(),
        (None, false) => vec![Vec::new(); threads],
    };
    let setups =
        pin.into_iter().map(|cpus| ThreadSetup { policy, priority, cpus, timer_slack: Some(a.timer_slack) }).collect();

    let duration = match (a.duration, a.loops) {
        (None, None) if a.compare => Some(DEFAULT_COMPARE_DURATION),
        (None, None) => Some(DEFAULT_DURATION),
        (d, _) => d,
    };
    let unit_ns = if a.nsecs { 1 } else { 1000 };
    let histogram = a
        .histogram
        .as_ref()
        .map(|_| HistogramSpec { buckets: (a.histogram_max.as_ns() / unit_ns).clamp(1, 10_000_000) as usize, unit_ns });
    #[cfg(feature = "mock")]
    let mock = crate::mock::script(&a.mock, &mechanisms)?;
    #[allow(unused_mut)]
    let mut cfg = MeasureConfig {
        mechanisms,
        interval: a.interval,
        loops: a.loops,
        duration,
        threads: setups,
        clock,
        overrun,
        hybrid_slack,
        breaktrace: a.breaktrace,
        tracemark: None,
        histogram,
        stack_prefault: DEFAULT_STACK_PREFAULT,
        interleave: a.compare.then_some(a.slice),
        rest_after_spinning: None,
        // (The mock's script, in test builds; rtick may have the feature when this crate has not.)
        ..Default::default()
    };
    #[cfg(feature = "mock")]
    {
        cfg.mock = mock;
    }
    cfg.validate().map_err(|e| usage(e.to_string()))?;
    Ok(Plan {
        cfg,
        policy_explicit: a.policy.is_some() || a.priority.is_some(),
        mlock: !a.no_mlock,
        mlock_explicit: a.mlock,
    })
}

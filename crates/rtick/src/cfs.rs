//! CFS bandwidth control of a thread's cgroup: its CPU quota and the
//! throttling its `cpu.stat` counts, on cgroup v1 (`cpu.cfs_quota_us`,
//! `throttled_time` in ns) and v2 (`cpu.max`, `throttled_usec`). A cgroup
//! that used up its quota has its SCHED_OTHER threads held off the CPU
//! until the next period, however soon they were due (Kubernetes CPU limits
//! do this to latency-sensitive pods, even below their average limit).
//!
//! [`CfsWatch`] samples the counters of a cgroup and of its ancestors with a
//! quota (an ancestor's quota throttles its children) while a run goes on,
//! so that a spike can be matched to the throttling around it.

use std::sync::Arc;

use crate::cgroup::CpuCgroup;
use crate::system::SysRoot;
use crate::time::{Nanos, Time};

/// The throttling counters of a cgroup's `cpu.stat`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuStat {
    /// Enforcement periods that elapsed with the cgroup runnable.
    pub nr_periods: u64,
    /// Of them, those in which it was throttled.
    pub nr_throttled: u64,
    /// Time its run queues spent throttled, added over the CPUs.
    pub throttled: Nanos,
}

impl CpuStat {
    /// From `cpu.stat`'s text: `throttled_usec` (v2) or `throttled_time`
    /// (v1, ns); `None` without the counters (v2 without the cpu controller).
    pub fn parse(text: &str) -> Option<CpuStat> {
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.split_once(' ').filter(|(k, _)| *k == key).and_then(|(_, v)| v.trim().parse().ok()))
        };
        let throttled = match (field("throttled_usec"), field("throttled_time")) {
            (Some(us), _) => Nanos::from_us(i64::try_from(us).ok()?),
            (None, Some(ns)) => Nanos(i64::try_from(ns).ok()?),
            (None, None) => return None,
        };
        Some(CpuStat { nr_periods: field("nr_periods")?, nr_throttled: field("nr_throttled")?, throttled })
    }

    /// The counts since `before`.
    pub fn since(&self, before: &CpuStat) -> CpuStat {
        CpuStat {
            nr_periods: self.nr_periods.saturating_sub(before.nr_periods),
            nr_throttled: self.nr_throttled.saturating_sub(before.nr_throttled),
            throttled: (self.throttled - before.throttled).max(Nanos::ZERO),
        }
    }
}

/// A cgroup's CPU quota: `runtime` of CPU time every `period`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Quota {
    /// CPU time allowed per period, over all its CPUs.
    pub runtime: Nanos,
    /// The enforcement period.
    pub period: Nanos,
}

impl Quota {
    /// v2 `cpu.max`: `max 100000` (no quota: `Some(None)`) or `50000 100000`.
    pub fn parse_max(text: &str) -> Option<Option<Quota>> {
        let mut it = text.split_whitespace();
        let (runtime, period) = (it.next()?, it.next().unwrap_or("100000"));
        let period = Nanos::from_us(period.parse().ok()?);
        match runtime {
            "max" => Some(None),
            r => Some(Some(Quota { runtime: Nanos::from_us(r.parse().ok()?), period })),
        }
    }

    /// v1 `cpu.cfs_quota_us` (-1: no quota) and `cpu.cfs_period_us`.
    pub fn from_v1(quota_us: &str, period_us: &str) -> Option<Option<Quota>> {
        let quota: i64 = quota_us.trim().parse().ok()?;
        let period = Nanos::from_us(period_us.trim().parse().ok()?);
        Some((quota >= 0).then(|| Quota { runtime: Nanos::from_us(quota), period }))
    }
}

impl std::fmt::Display for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} every {}", self.runtime, self.period)
    }
}

/// One cgroup's bandwidth control, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bandwidth {
    /// Its path inside the hierarchy.
    pub path: Arc<str>,
    /// The directory holding its files.
    pub dir: String,
    /// Its quota (`None`: unlimited).
    pub quota: Option<Quota>,
    /// Its counters.
    pub stat: CpuStat,
    /// cgroup v2.
    pub v2: bool,
}

impl Bandwidth {
    /// The cgroup at `path` (files in `dir`); `None` when its files cannot
    /// be read (no bandwidth control there).
    pub fn read(root: &SysRoot, path: &str, dir: &str, v2: bool) -> Option<Bandwidth> {
        let file = |f: &str| root.read(&format!("{dir}/{f}"));
        let quota = if v2 {
            Quota::parse_max(&file("cpu.max")?)?
        } else {
            Quota::from_v1(&file("cpu.cfs_quota_us")?, &file("cpu.cfs_period_us")?)?
        };
        let stat = CpuStat::parse(&file("cpu.stat")?)?;
        Some(Bandwidth { path: path.into(), dir: dir.to_string(), quota, stat, v2 })
    }

    /// The file its quota is set in.
    pub fn quota_file(&self) -> String {
        format!("{}/{}", self.dir, if self.v2 { "cpu.max" } else { "cpu.cfs_quota_us" })
    }

    /// `cg` and those of its ancestors (below the root, which has no quota)
    /// that have a quota, nearest first; empty without bandwidth control.
    pub fn chain(root: &SysRoot, cg: &CpuCgroup) -> Vec<Bandwidth> {
        let mut out = Vec::new();
        let (mut path, mut dir) = (cg.path.clone(), cg.dir.clone());
        while path != "/" {
            let own = path == cg.path;
            if let Some(b) = Bandwidth::read(root, &path, &dir, cg.v2).filter(|b| own || b.quota.is_some()) {
                out.push(b);
            }
            // Up one level in both; a namespaced mount ends where its dir does.
            let (Some((p, _)), Some((d, _))) = (path.rsplit_once('/'), dir.rsplit_once('/')) else { break };
            if dir.trim_end_matches('/') == cg.mount.trim_end_matches('/') {
                break;
            }
            (path, dir) = (if p.is_empty() { "/".into() } else { p.into() }, d.into());
        }
        out
    }
}

/// A cgroup's throttling counts over a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Throttling {
    /// The cgroup's path.
    pub path: Arc<str>,
    /// Its quota.
    pub quota: Option<Quota>,
    /// The file its quota is set in.
    pub quota_file: String,
    /// The counts over the run.
    pub delta: CpuStat,
}

/// One reading of one watched cgroup's throttled time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ThrottleSample {
    /// When (CLOCK_MONOTONIC).
    pub at: Time,
    /// The cgroup (index into [`CfsRun::throttling`]).
    pub cgroup: usize,
    /// Its throttled time so far.
    pub throttled: Nanos,
}

/// The throttling counters of a thread's cgroup, sampled during a run.
#[derive(Debug)]
pub struct CfsWatch {
    root: SysRoot,
    first: Vec<Bandwidth>,
    /// The samples so far (no counts yet: [`CfsWatch::finish`] gives them).
    run: CfsRun,
}

impl CfsWatch {
    /// Watches `cg` and its ancestors with a quota; `None` without
    /// bandwidth control (no cpu controller, or counters unreadable).
    pub fn start(root: SysRoot, cg: &CpuCgroup) -> Option<CfsWatch> {
        let first = Bandwidth::chain(&root, cg);
        if first.is_empty() {
            return None;
        }
        let throttling = first
            .iter()
            .map(|b| Throttling {
                path: b.path.clone(),
                quota: b.quota,
                quota_file: b.quota_file(),
                delta: CpuStat::default(),
            })
            .collect();
        let mut w = CfsWatch { root, first, run: CfsRun { throttling, samples: Vec::new() } };
        w.sample();
        Some(w)
    }

    /// Reads each watched cgroup's throttled time now.
    pub fn sample(&mut self) {
        let at = crate::clock::ClockId::Monotonic.now();
        for (i, b) in self.first.iter().enumerate() {
            if let Some(s) = self.root.read(&format!("{}/cpu.stat", b.dir)).and_then(|t| CpuStat::parse(&t)) {
                self.run.samples.push(ThrottleSample { at, cgroup: i, throttled: s.throttled });
            }
        }
    }

    /// The samples so far, to match a spike with as the run goes on
    /// ([`CfsRun::throttled_around`]); its counts are zero until
    /// [`CfsWatch::finish`].
    pub fn run(&self) -> &CfsRun {
        &self.run
    }

    /// Forgets the samples that no spike planned at `from` or later needs,
    /// so that a run that never ends keeps a bounded window of them (as
    /// its window of trace events): per cgroup, those before its latest
    /// sample at or before `from` (the sample before such a spike).
    /// What [`CfsRun::throttled_around`] says of such a spike is unchanged.
    pub fn forget_before(&mut self, from: Time) {
        let keep: Vec<Time> = (0..self.first.len())
            .map(|i| {
                let before = self.run.samples.iter().filter(|s| s.cgroup == i && s.at <= from).map(|s| s.at);
                before.max().unwrap_or(from)
            })
            .collect();
        self.run.samples.retain(|s| s.at >= keep[s.cgroup]);
    }

    /// Samples a last time; the counts over the run.
    pub fn finish(mut self) -> CfsRun {
        self.sample();
        for (t, b) in self.run.throttling.iter_mut().zip(&self.first) {
            let now = self.root.read(&format!("{}/cpu.stat", b.dir)).and_then(|t| CpuStat::parse(&t));
            t.delta = now.map(|n| n.since(&b.stat)).unwrap_or_default();
        }
        self.run
    }
}

/// The kernel's priority of the first SCHED_OTHER (CFS) level: 100–139
/// are fair tasks, below them real-time ones.
pub const FAIR_PRIO: i32 = 100;

/// A run's CFS throttling: each watched cgroup's counts, and the samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CfsRun {
    /// The thread's cgroup first, then its ancestors with a quota.
    pub throttling: Vec<Throttling>,
    /// The throttled time of each, sampled.
    pub samples: Vec<ThrottleSample>,
}

impl CfsRun {
    /// The cgroup throttled longest between the samples around `[from, to]`,
    /// if it was throttled at least `least` then.
    pub fn throttled_around(&self, from: Time, to: Time, least: Nanos) -> Option<(Arc<str>, Nanos)> {
        let over = |i: usize| {
            let mine: Vec<&ThrottleSample> = self.samples.iter().filter(|s| s.cgroup == i).collect();
            let before = mine.iter().rev().find(|s| s.at <= from)?;
            let after = mine.iter().find(|s| s.at >= to)?;
            Some(after.throttled - before.throttled)
        };
        let best = (0..self.throttling.len()).filter_map(|i| Some((i, over(i)?))).max_by_key(|&(_, d)| d)?;
        (best.1 >= least && best.1 > Nanos::ZERO).then(|| (self.throttling[best.0].path.clone(), best.1))
    }

    /// The cgroup to blame for a thread of kernel priority `prio` kept
    /// off its CPU, runnable, for `held` within `[from, to]`: a fair
    /// (SCHED_OTHER) thread whose cgroup was throttled for at least half
    /// that time around it (`cpu.stat` adds a run queue's throttled time
    /// when it is unthrottled, so the first sample after counts it).
    pub fn blamed(&self, prio: i32, from: Time, to: Time, held: Nanos) -> Option<Arc<str>> {
        if prio < FAIR_PRIO {
            return None;
        }
        self.throttled_around(from, to, Nanos(held.as_ns() / 2)).map(|(cgroup, _)| cgroup)
    }
}

mod threads;
pub use threads::{CfsWatches, MAX_CGROUPS};

#[cfg(test)]
mod tests;

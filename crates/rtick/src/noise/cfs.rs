//! CFS bandwidth throttling as a source of noise: a SCHED_OTHER spinner
//! (or followed thread) left runnable while a cgroup of its was out of its
//! CPU quota (`cpu.max`, `cpu.cfs_quota_us`) waited for the next period,
//! whoever ran meanwhile (often the idle task). The cgroup's `cpu.stat`
//! is sampled after each read of the trace, so every task's run attributed
//! in that round has a sample after it ([`crate::cfs::CfsWatch`]), and a
//! run is matched as a spike of `measure --explain` is
//! ([`CfsRun::throttled_around`]).

use super::attribute::Attributor;
use super::source::Source;
use crate::cfs::{CfsRun, CfsWatch, FAIR_PRIO};
use crate::system::SysRoot;
use crate::time::{Nanos, Time};

/// How long the samples are kept behind the last read: a task's run that
/// started earlier is matched with no sample before it (not at all).
const KEEP: Nanos = Nanos::from_secs(2);

/// The watch of the cpu cgroup of `proc` (`self`, or a thread as
/// `PID/task/TID`) and its ancestors with a quota; `None` without
/// bandwidth control.
pub(super) fn watch(proc: &str) -> Option<CfsWatch> {
    let sys = SysRoot::default();
    crate::cgroup::cpu_cgroup_of(&sys, proc).and_then(|cg| CfsWatch::start(sys, &cg))
}

/// Samples `watch` after a read up to `upto` and hands the samples to
/// each of `attrs`, forgetting those no run needs any more.
pub(super) fn sample<'a>(watch: Option<&mut CfsWatch>, upto: Time, attrs: impl Iterator<Item = &'a mut Attributor>) {
    let Some(w) = watch else { return };
    w.sample();
    w.forget_before(upto - KEEP);
    attrs.for_each(|a| a.set_cfs(w.run()));
}

/// `task`, a task's run from `span.0` to `span.1` (`net` of it), or CFS
/// throttling when the spinner was SCHED_OTHER and left runnable
/// (`other_runnable`) and a cgroup of its was throttled around the run
/// for at least half of it.
pub(super) fn source_of(
    run: Option<&CfsRun>,
    task: Source,
    span: (Time, Time),
    net: Nanos,
    other_runnable: bool,
) -> Source {
    let thread = matches!(task, Source::Thread { .. } | Source::OtherThreads);
    // The spinner is SCHED_OTHER (`other_runnable`): the one rule of a spike's.
    match run.filter(|_| other_runnable && thread) {
        Some(run) => run.blamed(FAIR_PRIO, span.0, span.1, net).map_or(task, Source::CfsThrottling),
        None => task,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfs::ThrottleSample;
    use crate::ktrace::Comm;
    use std::sync::Arc;

    fn run(throttled_ms: &[(i64, i64)]) -> CfsRun {
        let samples = throttled_ms
            .iter()
            .map(|&(at, t)| ThrottleSample { at: Time(at * 1_000_000), cgroup: 0, throttled: Nanos::from_ms(t) })
            .collect();
        let throttling = vec![crate::cfs::Throttling {
            path: Arc::from("/box"),
            quota: None,
            quota_file: String::new(),
            delta: Default::default(),
        }];
        CfsRun { throttling, samples }
    }

    /// An idle stretch of a runnable SCHED_OTHER spinner while its cgroup
    /// was throttled for at least half of it is the cgroup's throttling;
    /// not when the cgroup was throttled less, not for a real-time (or
    /// sleeping) spinner, not without samples.
    #[test]
    fn a_runnable_spinner_s_idle_stretch_in_a_throttled_cgroup_is_cfs_throttling() {
        let idle = Source::Thread { comm: Comm::new(b"swapper/1"), pid: 0, prio: 120 };
        let r = run(&[(0, 0), (100, 60)]);
        let span = (Time(10_000_000), Time(90_000_000));
        let cfs = Source::CfsThrottling(Arc::from("/box"));
        assert_eq!(source_of(Some(&r), idle.clone(), span, Nanos::from_ms(80), true), cfs);
        assert_eq!(
            source_of(Some(&r), idle.clone(), span, Nanos::from_ms(130), true),
            idle,
            "throttled less than half"
        );
        assert_eq!(source_of(Some(&r), idle.clone(), span, Nanos::from_ms(80), false), idle, "FIFO or asleep");
        assert_eq!(source_of(None, idle.clone(), span, Nanos::from_ms(80), true), idle, "no samples");
        let late = (Time(90_000_000), Time(120_000_000));
        assert_eq!(source_of(Some(&r), idle.clone(), late, Nanos::from_ms(30), true), idle, "no sample after it yet");
        assert_eq!(source_of(Some(&r), Source::Nmi, span, Nanos::from_ms(80), true), Source::Nmi, "not a task's run");
    }
}

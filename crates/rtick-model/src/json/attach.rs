//! The JSON file of `rtick attach --json`: its own schema (docs/json.md,
//! "rtick attach"), built from the library's [`Attached`] by [`AttachFile::of`].

use rtick::attach::{Attached, CycleSummary, End, Overrun, OverrunCause, Target, ThreadSummary};
use rtick::explain::Culprit;
use serde::{Deserialize, Serialize};

pub use super::attach_spike::{AttachSpikeJson, CulpritJson};
use super::{CauseJson, CfsJson, GatesJson, KernelPhaseJson, ResultJson, SystemJson, SCHEMA_VERSION};

/// The whole file.
#[derive(Debug, Serialize, Deserialize)]
pub struct AttachFile {
    pub rtick_version: String,
    pub schema_version: u32,
    /// "attach".
    pub command: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub elapsed_ns: i64,
    /// When tracing began (CLOCK_MONOTONIC ns): the file's times less this
    /// are since the start (0 in files written before it was recorded).
    #[serde(default)]
    pub started_ns: i64,
    /// "duration", "interrupted" (Ctrl-C or SIGTERM) or "target_exited".
    pub ended_by: String,
    /// The duration asked for (-D); null: until Ctrl-C or the target's exit.
    #[serde(default)]
    pub duration_ns: Option<i64>,
    pub system: SystemJson,
    pub target: TargetJson,
    /// The CPUs traced: those the target's threads may run on.
    pub cpus: Vec<usize>,
    /// The CPUs rtick read the trace on; null when the target may run on
    /// every CPU rtick may (it shared them).
    #[serde(default)]
    pub reader_cpus: Option<Vec<usize>>,
    /// Kernel events recorded on them.
    pub events: u64,
    /// Events the ring buffer or the reader lost (0 unless the trace is incomplete).
    pub lost_events: u64,
    /// Losses of unknown size besides (pages marked as following lost
    /// events without a count, pages that did not decode); absent in files
    /// of rtick versions before it.
    #[serde(default)]
    pub lost_gaps: u64,
    /// Trace events this kernel lacks.
    pub missing_events: Vec<String>,
    /// One per thread seen, in tid order.
    pub threads: Vec<AttachedThreadJson>,
    /// Each cause across the threads' explained spikes, most spikes first,
    /// as `explain.causes` of a run file (absent without any, and in files
    /// of rtick versions before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<CauseJson>,
    /// One line each, with its fix.
    pub findings: Vec<String>,
    /// What limited the run's view, a sentence each (too many threads for
    /// the kernel's filter, an unreadable /proc/kallsyms).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The CFS bandwidth control of the threads' cgroups (at most 8) and of
    /// their ancestors with a quota, with their throttling over the run, as
    /// `explain.cfs` of a run file (absent without bandwidth control, and in
    /// files of rtick versions before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cfs: Vec<CfsJson>,
    /// How long the kernel stack trigger was set over the run: from the
    /// first late wait of a spell to 10 s after its last (0: never). Null
    /// without stacks (a note says why), and in files of rtick versions
    /// before it (stacks were taken all the run).
    #[serde(default)]
    pub stacks_armed_ns: Option<i64>,
    /// How many times it was set (null as `stacks_armed_ns`).
    #[serde(default)]
    pub stacks_armed_times: Option<u64>,
    /// Each thread with a timed wait, its lateness as a `measure` results
    /// row (`mechanism`: its comm, `thread` and `tid`: its tid): what
    /// --fail-if checks (null in files of rtick versions before it).
    #[serde(default)]
    pub results: Option<Vec<ResultJson>>,
    /// With --fail-if: its conditions, checked against each thread's lateness, and the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<GatesJson>,
}

/// What was attached to.
#[derive(Debug, Serialize, Deserialize)]
pub struct TargetJson {
    pub pid: i32,
    pub comm: String,
    /// All its threads (false: only the --tid list).
    pub whole_process: bool,
}

/// One thread, its settings and its waits.
#[derive(Debug, Serialize, Deserialize)]
pub struct AttachedThreadJson {
    pub tid: i32,
    pub comm: String,
    /// SCHED_FIFO …; null for a policy rtick has no name for.
    pub policy: Option<String>,
    pub rt_priority: i32,
    pub nice: i32,
    pub affinity: Vec<usize>,
    pub timer_slack_ns: Option<u64>,
    pub timed_waits: u64,
    /// p50, p90, p99, max of the timed waits' lateness; null without any.
    pub lateness_ns: Option<[i64; 4]>,
    pub slack_p50_ns: Option<i64>,
    /// p50 of the slack the kernel took (min(expired, expires) − softexpires).
    pub slack_taken_p50_ns: Option<i64>,
    /// irq_delay, wakeup_path, scheduling, return_to_user (empty without timed waits).
    pub phases_ns: Vec<KernelPhaseJson>,
    pub event_driven: u64,
    /// p50 and max of their scheduling latency (waking → running).
    pub event_scheduling_ns: Option<[i64; 2]>,
    /// (waker, count), most frequent first: "irq", "softirq", or "comm/pid".
    pub wakers: Vec<(String, u64)>,
    /// Waits that returned without a recorded wake-up.
    pub unmatched: u64,
    /// Still waiting on its timer when tracing stopped.
    #[serde(default)]
    pub in_progress: bool,
    /// The kernel function it was blocked in when tracing stopped
    /// (/proc/TID/wchan: hrtimer_nanosleep, do_epoll_wait …); null when running or gone.
    #[serde(default)]
    pub blocked_in: Option<String>,
    /// Its worst timed waits (at most --explain-top), the worst first, explained.
    #[serde(default)]
    pub spikes: Vec<AttachSpikeJson>,
    /// Its cycle, found from its timed waits.
    pub cycle: CycleJson,
    /// Its lateness over time, for --plot (null without a timed wait, or
    /// in a file written before it was recorded).
    #[serde(default)]
    pub over_time: Option<OverTimeJson>,
}

/// A thread's timed waits in time buckets: each bucket's worst wait.
#[derive(Debug, Serialize, Deserialize)]
pub struct OverTimeJson {
    /// The first bucket's start (CLOCK_MONOTONIC ns).
    pub start_ns: i64,
    /// Each bucket's width: 5 ms doubled until the run fits 400 buckets.
    pub width_ns: i64,
    /// The buckets with a wait, in time order.
    pub buckets: Vec<BucketJson>,
}

/// One time bucket: how many timed waits asked for a time in it, and the latest of them.
#[derive(Debug, Serialize, Deserialize)]
pub struct BucketJson {
    /// Its place: it begins at start_ns + index × width_ns.
    pub index: usize,
    pub waits: u64,
    pub lateness_ns: i64,
    /// Its phases: irq_delay, wakeup_path, scheduling, return_to_user.
    pub phases_ns: [i64; 4],
}

impl AttachedThreadJson {
    /// How the lines name it: "tid comm"; the exited threads' pooled row
    /// (tid 0) by its comm alone, "3 exited threads".
    pub fn label(&self) -> String {
        rtick::attach::target::label(self.tid, &self.comm)
    }
}

/// A thread's cycle (docs/attach.md, "The cycle").
#[derive(Debug, Serialize, Deserialize)]
pub struct CycleJson {
    /// Timed waits it was found from.
    pub waits: u64,
    /// The interval nearly all its requests are apart (or multiples of);
    /// null: no fixed period.
    pub period_ns: Option<i64>,
    /// Periods skipped (requests k periods apart count k − 1).
    pub skipped: u64,
    /// p50, p99, max of |Δexit − Δrequested| of successive waits.
    pub jitter_ns: Option<[i64; 3]>,
    /// p50, p99, max of back in user space → asleep in the next wait.
    pub compute_ns: Option<[i64; 3]>,
    /// min, p1, p50 of the next wait's request − the time it went to sleep for it.
    pub margin_ns: Option<[i64; 3]>,
    /// Waits armed after their own request.
    pub overruns: u64,
    /// The largest of them (at most 5), the largest first, with their cause.
    pub worst_overruns: Vec<OverrunJson>,
}

/// One overrun and its cause.
#[derive(Debug, Serialize, Deserialize)]
pub struct OverrunJson {
    /// The time asked for (CLOCK_MONOTONIC ns), and when it was asked.
    pub requested_ns: i64,
    pub armed_ns: i64,
    /// armed − requested.
    pub overrun_ns: i64,
    /// [`OverrunCause::kind`]: "compute" (the work alone outlasted the
    /// interval), "preempted", "cfs_throttled", "rt_throttled", "blocked"
    /// (the time off the CPU in the cycle made it overrun), "late_wake"
    /// (the wait before was late), "unknown" (no wait before it traced).
    pub cause_kind: String,
    /// The cause, one line (a late wake's explanation as a spike's line).
    pub cause: String,
    /// What the late wait before is blamed on, when its explanation names
    /// one; the task that held the CPU longest while a compute phase was preempted.
    pub culprit: Option<CulpritJson>,
    /// A compute phase's [ran, preempted, blocked, waking] ns, when its switches were held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_split_ns: Option<[i64; 4]>,
    /// The culprit task's cgroup; for "cfs_throttled", the thread's own that was throttled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
}

impl CycleJson {
    fn of(c: &CycleSummary, overruns: &[Overrun]) -> CycleJson {
        let ns = |v: Option<[rtick::Nanos; 3]>| v.map(|v| v.map(|n| n.as_ns()));
        CycleJson {
            waits: c.waits,
            period_ns: c.period.map(|p| p.as_ns()),
            skipped: c.skipped,
            jitter_ns: ns(c.jitter),
            compute_ns: ns(c.compute),
            margin_ns: ns(c.margin),
            overruns: c.overruns,
            worst_overruns: overruns.iter().map(OverrunJson::of).collect(),
        }
    }
}

impl OverrunJson {
    /// Overrun `o`.
    pub fn of(o: &Overrun) -> OverrunJson {
        let (mut culprit, mut split, mut cgroup) = (None, None, None);
        match &o.cause {
            OverrunCause::Compute { split: Some(s), .. } => {
                // The task and cgroup the cause names: a preemptor, or the throttled cgroup.
                let by = s.preemptor();
                culprit = by.map(|t| CulpritJson::of(&Culprit::Task(t.clone())));
                split = Some([s.off.ran, s.off.preempted, s.off.blocked, s.off.waking].map(|n| n.as_ns()));
                let theirs = by.and(s.cgroup.clone());
                cgroup = s.cfs.clone().or(theirs).map(|c| c.to_string());
            }
            OverrunCause::LateWake { explained, .. } => {
                let spike = explained.as_ref().as_ref().ok();
                culprit = spike.and_then(|s| s.cause.culprit()).map(|c| CulpritJson::of(&c));
                cgroup = spike.and_then(|s| s.cgroup.as_deref()).map(str::to_string);
            }
            OverrunCause::Compute { split: None, .. } | OverrunCause::Unknown => {}
        }
        OverrunJson {
            requested_ns: o.wait.requested.0,
            armed_ns: o.wait.armed.0,
            overrun_ns: o.wait.overrun().as_ns(),
            cause_kind: o.cause.kind().into(),
            cause: o.cause.text(),
            culprit,
            compute_split_ns: split,
            cgroup,
        }
    }
}

impl AttachFile {
    /// The result rows --fail-if checks (none in a file of an rtick before them).
    pub fn rows(&self) -> &[ResultJson] {
        self.results.as_deref().unwrap_or_default()
    }

    /// When tracing began (CLOCK_MONOTONIC), if the file records it.
    pub fn started(&self) -> Option<rtick::Time> {
        (self.started_ns != 0).then_some(rtick::Time(self.started_ns))
    }

    /// The file of the attach `a` to `target` for `duration` (-D):
    /// figures, not a row per wait (those are --trace's).
    pub fn of(
        a: &Attached,
        target: &Target,
        duration: Option<rtick::Nanos>,
        system: SystemJson,
        started_at: String,
    ) -> AttachFile {
        AttachFile {
            rtick_version: env!("CARGO_PKG_VERSION").into(),
            schema_version: SCHEMA_VERSION,
            command: "attach".into(),
            started_at,
            elapsed_ns: a.elapsed.as_ns(),
            started_ns: a.started.0,
            ended_by: match a.end {
                End::Duration => "duration",
                End::Interrupted => "interrupted",
                End::TargetExited => "target_exited",
            }
            .into(),
            duration_ns: duration.map(|d| d.as_ns()),
            system,
            target: TargetJson { pid: target.pid, comm: target.comm.clone(), whole_process: target.whole_process },
            cpus: a.cpus.clone(),
            reader_cpus: a.reader_cpus.clone(),
            events: a.events as u64,
            lost_events: a.lost.count(),
            lost_gaps: a.lost.of_unknown_size(),
            missing_events: a.missing.iter().map(|m| m.to_string()).collect(),
            threads: a.threads.iter().map(|t| thread(t, a)).collect(),
            causes: a.causes().iter().map(Into::into).collect(),
            findings: rtick::attach::findings(&a.threads),
            notes: a.notes.clone(),
            cfs: a.cfs.iter().map(Into::into).collect(),
            stacks_armed_ns: a.stacks_armed.map(|(d, _)| d.as_ns()),
            stacks_armed_times: a.stacks_armed.map(|(_, n)| n),
            results: Some(lateness_rows(a)),
            gates: None,
        }
    }
}

/// Each thread's lateness as a result row (`mechanism`: its comm, `thread`
/// and `tid`: its tid), for --fail-if: threads with a timed wait only; the
/// figures of a measured loop's own (missed periods, CPU time) have no
/// value here; its overruns are its cycle's.
fn lateness_rows(a: &Attached) -> Vec<ResultJson> {
    let thread = |tid: i32| a.threads.iter().find(|t| t.thread.tid == tid);
    a.lateness
        .iter()
        .map(|(&tid, s)| {
            let comm = thread(tid).map(|t| t.thread.comm.clone()).unwrap_or_default();
            let mut r = ResultJson::with_figures(comm, tid as usize, s.count, s.min, s.max, s.mean);
            r.tid = Some(tid);
            r.stddev_ns = Some(s.stddev);
            r.percentiles_ns = Some(s.into());
            // Its waits armed after their own request (the cycle's).
            r.overruns = thread(tid).map(|t| t.cycle.overruns);
            r.early_wakeups = Some(s.negative);
            r.margin_min_ns = thread(tid).and_then(|t| t.cycle.margin).map(|[min, ..]| min.as_ns());
            r
        })
        .collect()
}

fn thread(s: &ThreadSummary, a: &Attached) -> AttachedThreadJson {
    let t = &s.thread;
    let ns = |v: &[rtick::Nanos]| v.iter().map(|n| n.as_ns()).collect::<Vec<_>>();
    let phases = s.phases.iter().flatten();
    AttachedThreadJson {
        tid: t.tid,
        comm: t.comm.clone(),
        policy: t.policy.map(|p| p.kernel_name().into()),
        rt_priority: t.rt_priority,
        nice: t.nice,
        affinity: t.affinity.clone(),
        timer_slack_ns: t.timer_slack_ns,
        timed_waits: s.timed,
        lateness_ns: s.lateness.map(|l| ns(&l).try_into().expect("four")),
        slack_p50_ns: s.slack_p50.map(|n| n.as_ns()),
        slack_taken_p50_ns: s.slack_taken_p50.map(|n| n.as_ns()),
        phases_ns: phases.map(|(name, summary)| KernelPhaseJson::of(name, *summary)).collect(),
        event_driven: s.event_driven,
        event_scheduling_ns: s.event_scheduling.map(|l| [l[0].as_ns(), l[1].as_ns()]),
        wakers: s
            .wakers
            .iter()
            .map(|(w, n)| (w.to_string(), *n))
            .chain((s.other_wakers > 0).then(|| ("others".to_string(), s.other_wakers)))
            .collect(),
        unmatched: s.unmatched,
        in_progress: s.in_progress,
        blocked_in: s.blocked_in.clone(),
        spikes: a
            .worst
            .get(&t.tid)
            .map_or_else(Vec::new, |w| w.iter().map(|w| AttachSpikeJson::of(w, a.started)).collect()),
        cycle: CycleJson::of(&s.cycle, a.overruns.get(&t.tid).map_or(&[], Vec::as_slice)),
        over_time: None,
    }
}

//! `rtick noise --attach TID`: the noise an application's own thread
//! suffers, from the trace events of the CPUs it may run on, with no
//! spinner of rtick's. Each CPU has a [`Follower`]; a switch to the thread
//! on one CPU ends its wait on any other (it migrated).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::cfs;
use super::follow::Follower;
use super::observe::{Live, Observer};
use super::run::{keep_off, steal_of, tick_note, CpuNoise, End, NoiseRun, BUFFER_KB, ROUND};
use super::spin::StepsUs;
use super::switch_stacks;
use super::tick::nohz_full_cpus;
use super::{NoiseOptions, Plan};
use crate::attach::{Spec, Target, ThreadInfo};
use crate::cfs::CfsWatch;
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::explain::{Cgroups, StealSample};
use crate::ktrace::{self, Event, EventKind, Options, Senders, Stream, Tracepoint};
use crate::rt::Policy;
use crate::system::{parse_cpu_list, SysRoot};
use crate::time::{Nanos, Time};

/// The thread to follow, checked, and the CPUs traced for it.
#[derive(Clone, Debug)]
pub struct AttachPlan {
    /// What /proc says of the thread.
    pub thread: ThreadInfo,
    /// Its CPUs (those it may run on, online), its policy and priority.
    pub plan: Plan,
    target: Target,
}

impl NoiseOptions {
    /// Checks thread `tid` before anything runs: a thread that does not
    /// exist, a kernel thread, or one of rtick's own are [`Error::Invalid`].
    pub fn plan_attach(&self, tid: i32) -> Result<AttachPlan> {
        self.check_times()?;
        let proc = Path::new("/proc");
        let bad = |e: crate::attach::TargetError| Error::Invalid(e.to_string());
        let target = Target::resolve_in(proc, &Spec::Tids(vec![tid]), std::process::id() as i32).map_err(bad)?;
        let thread = ThreadInfo::read(proc, tid).ok_or_else(|| bad(crate::attach::TargetError::NoSuch(tid)))?;
        let online = SysRoot::default().read("/sys/devices/system/cpu/online").and_then(|s| parse_cpu_list(&s));
        let cpus: Vec<usize> =
            thread.affinity.iter().copied().filter(|c| online.as_ref().is_none_or(|o| o.contains(c))).collect();
        if cpus.is_empty() {
            return Err(Error::Invalid(format!("thread {tid} may run on no online CPU: nothing to trace")));
        }
        let policy = thread.policy.unwrap_or(Policy::Other);
        let plan = Plan { cpus, cpu0_left_out: false, policy, priority: thread.rt_priority };
        Ok(AttachPlan { thread, plan, target })
    }
}

/// Follows `p.thread` until `opts.duration` passes, `stop` is set or it
/// exits, `observe` handed its gaps as they are known and each CPU after
/// every round, as [`run_observed`](super::run_observed) does a spinner's.
pub fn run_attached(
    p: &AttachPlan,
    opts: &NoiseOptions,
    stop: &AtomicBool,
    observe: &mut dyn Observer,
) -> Result<NoiseRun> {
    let cpus = &p.plan.cpus;
    let mut notes = Vec::new();
    let main = keep_off(cpus)?;
    if main.is_none() {
        notes.push(
            "every CPU rtick may use is traced: its trace reader runs on them, and its reads are part of the noise"
                .into(),
        );
    }
    let nohz_full = nohz_full_cpus(&SysRoot::default());
    notes.extend(tick_note(cpus, &nohz_full));
    let topts = Options { buffer_kb: BUFFER_KB, events: &Tracepoint::NOISE, ..Default::default() };
    let mut stream = Stream::start(&ktrace::root(opts.tracefs.as_deref()), cpus, &topts)?;
    if opts.stacks {
        notes.extend(switch_stacks::record(&mut stream, &[p.thread.tid]));
    }
    let t0 = ClockId::Monotonic.now();
    let (tid, prio) = (p.thread.tid, p.thread.kernel_prio());
    let mut f: Vec<Follower> = cpus.iter().map(|_| Follower::new(tid, prio, opts.threshold, t0)).collect();
    f.iter_mut().for_each(|f| f.attr.read_cgroups(Cgroups::system()));
    if let Some(i) = ThreadInfo::running_on(Path::new("/proc"), tid).and_then(|c| cpus.iter().position(|&x| x == c)) {
        f[i].running_at(t0);
    }
    let until = opts.duration.map(|d| t0 + d);
    let steal0 = StealSample::sample(cpus);
    let mut carry = Vec::new();
    let mut senders = Senders::new(true);
    // Its cgroups' CFS throttling, sampled after each read.
    let mut cfs = cfs::watch(&tid.to_string());
    let (end, t1) = loop {
        std::thread::sleep(ROUND);
        let watermark = ClockId::Monotonic.now();
        round(&mut stream, cpus, &mut f, &mut carry, &mut senders, watermark, cfs.as_mut())?;
        show(cpus, &mut f, watermark, observe);
        if stop.load(Ordering::Relaxed) {
            break (End::Interrupted, watermark);
        }
        if until.is_some_and(|u| watermark >= u) {
            break (End::Duration, watermark);
        }
        if p.target.threads(Path::new("/proc")).is_empty() {
            break (End::Exited, watermark);
        }
    };
    let steal1 = StealSample::sample(cpus);
    let lost: Vec<u64> =
        cpus.iter().map(|&c| stream.lost_on(c).map(|l| l.count_read())).collect::<std::result::Result<_, _>>()?;
    let missing = stream.missing_events().to_vec();
    stream.remove()?;
    drop(main);
    f.iter_mut().for_each(|o| o.finish(t1));
    show(cpus, &mut f, t1, observe);
    let figures = cpus.iter().zip(f).zip(lost).map(|((&cpu, f), lost_events)| {
        figures(cpu, tid, f, lost_events, steal_of(&steal0, &steal1, cpu), nohz_full.contains(&cpu))
    });
    // The CPUs it was never on say nothing (unless it was on none).
    let mut cpus: Vec<CpuNoise> = figures.collect();
    if cpus.iter().any(|c| c.runtime > Nanos::ZERO) {
        cpus.retain(|c| c.runtime > Nanos::ZERO || c.gaps > 0);
    }
    Ok(NoiseRun {
        cpus,
        threshold: opts.threshold,
        end,
        attribution: true,
        missing,
        memory_locked: false,
        notes,
        attached: Some(p.thread.clone()),
    })
}

/// Reads every CPU's events, hands those before `watermark` to the
/// followers in time order (later ones wait for the next round), and
/// attributes the gaps they close.
fn round(
    stream: &mut Stream,
    cpus: &[usize],
    f: &mut [Follower],
    carry: &mut Vec<(usize, Event)>,
    senders: &mut Senders,
    watermark: Time,
    cfs: Option<&mut CfsWatch>,
) -> Result<()> {
    let tid = f.first().map_or(0, Follower::tid);
    let mut fresh = std::mem::take(carry);
    stream.read(&mut |cpu, e| {
        senders.event(cpu, &e);
        if let Some(i) = cpus.iter().position(|&c| c == cpu) {
            fresh.push((i, e));
        }
    })?;
    cfs::sample(cfs, watermark, f.iter_mut().map(|o| &mut o.attr));
    // Stable: each CPU's events stay in its ring buffer's order.
    fresh.sort_by_key(|(_, e)| e.ts);
    for (i, e) in fresh {
        if e.ts >= watermark {
            carry.push((i, e));
            continue;
        }
        let switched_in = matches!(&e.kind, EventKind::SchedSwitch(sw) if sw.next_pid == tid);
        let from = senders.sender_of_entry(cpus[i], &e).cloned();
        let was_here = f[i].here_since().is_some();
        f[i].event_from(&e, from);
        // It runs on CPU i (switched in, or come by a switch not recorded:
        // out of idle): a wait anywhere else ends then.
        let arrived = f[i].here_since().filter(|_| !was_here);
        if let Some(at) = arrived.or(switched_in.then_some(e.ts)) {
            f.iter_mut().enumerate().filter(|(j, _)| *j != i).for_each(|(_, o)| o.left(at));
        }
    }
    // What the carried events (from the watermark on) can still match is kept.
    senders.forget_before(watermark);
    f.iter_mut().for_each(|o| o.settle(watermark));
    Ok(())
}

/// Each CPU's gaps attributed since the last look, then its state, to `observe`.
fn show(cpus: &[usize], f: &mut [Follower], now: Time, observe: &mut dyn Observer) {
    for (&cpu, o) in cpus.iter().zip(f) {
        for g in o.attr.observed.iter_mut().flat_map(|v| v.drain(..)) {
            observe.gap(cpu, &g);
        }
        observe.round(&Live { cpu, runtime: o.present_at(now), sources: &o.attr.sources });
    }
}

fn figures(cpu: usize, tid: i32, f: Follower, lost_events: u64, steal: Option<Nanos>, nohz_full: bool) -> CpuNoise {
    let unattributed = f.attr.dropped_gaps + f.attr.pending_gaps() as u64;
    let sources = f.attr.ranked();
    CpuNoise {
        cpu,
        tid,
        runtime: f.present,
        noise: f.noise,
        gaps: f.gaps.len(),
        max_gap: f.max_gap,
        gap_p50_p99: (Nanos(f.gaps.value_at_quantile(0.5)), Nanos(f.gaps.value_at_quantile(0.99))),
        iterations: 0,
        resolution: (Nanos::ZERO, Nanos::ZERO),
        sources,
        cgroups: f.attr.cgroups,
        senders: f.attr.senders,
        stacks: f.attr.stacks.into_frames(),
        below_threshold: f.attr.below_threshold,
        unattributed,
        dropped_instances: f.attr.dropped_instances,
        lost_events,
        steal,
        worst: f.attr.worst,
        nohz_full,
        tick: f.attr.tick,
        steps_us: StepsUs::default(),
    }
}

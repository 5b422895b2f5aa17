//! A noise run from start to end: memory locked, the trace started on the
//! measured CPUs, a spinner on each, the trace and the gaps merged per CPU
//! ten times a second, and the figures per CPU once it ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::attribute::GapRecord;
use super::cfs;
use super::observe::{Live, Observer, Unobserved};
use super::senders::SentBy;
use super::source::{Source, Tally};
use super::spin::{Spun, StepsUs};
use super::spinners::{Spinner, Spinners};
use super::switch_stacks;
use super::tick::{nohz_full_cpus, TickTally};
use super::{NoiseOptions, Plan};
use crate::attach::ThreadInfo;
use crate::cfs::CfsWatch;
use crate::clock::ClockId;
use crate::error::Result;
use crate::explain::StealSample;
use crate::ktrace::{self, Event, Options, Senders, Stream, Tracepoint};
use crate::rt::{Setup, SetupGuard};
use crate::session::{Request, Session};
use crate::system::{format_cpu_list, SysRoot};
use crate::time::{Nanos, Time};

/// How often the trace and the gaps are read.
pub(super) const ROUND: Duration = Duration::from_millis(100);
/// Trace buffer per measured CPU, KiB: tens of thousands of events (16 to
/// 64 bytes each) between two reads a tenth of a second apart.
pub(super) const BUFFER_KB: usize = 4096;

/// Why the run ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Its duration passed.
    Duration,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The thread followed (`--attach`) exited.
    Exited,
}

/// One CPU's figures.
#[derive(Clone, Debug)]
pub struct CpuNoise {
    /// The CPU.
    pub cpu: usize,
    /// The spinner's thread id.
    pub tid: i32,
    /// How long it spun.
    pub runtime: Nanos,
    /// The gaps' sum.
    pub noise: Nanos,
    /// How many gaps.
    pub gaps: u64,
    /// The longest.
    pub max_gap: Nanos,
    /// Gap p50, p99 (nearest rank, to the histogram's 3 digits).
    pub gap_p50_p99: (Nanos, Nanos),
    /// Loop iterations.
    pub iterations: u64,
    /// The loop's resolution: its shortest and median step.
    pub resolution: (Nanos, Nanos),
    /// Sources, most time first (empty without attribution).
    pub sources: Vec<(Source, Tally)>,
    /// The cgroup of each thread source not in the root (its container or
    /// unit), read while it ran.
    pub cgroups: HashMap<Source, Arc<str>>,
    /// Who sent each IPI source's IPIs, where the trace named them.
    pub senders: HashMap<Source, SentBy>,
    /// Per thread source, its kernel stack when its longest run gave the
    /// CPU back ([`switch_stacks`]), when recorded.
    pub stacks: HashMap<Source, Arc<[u64]>>,
    /// Kernel work between gaps (it delayed the spinner less than the threshold).
    pub below_threshold: Tally,
    /// Gaps not attributed: past the memory bounds.
    pub unattributed: u64,
    /// Kernel work seen in the trace but dropped past the memory bound
    /// (the gaps it fell in are attributed without it).
    pub dropped_instances: u64,
    /// Trace events lost on this CPU.
    pub lost_events: u64,
    /// The host's steal time of this CPU over the run, when /proc/stat says.
    pub steal: Option<Nanos>,
    /// The largest gaps with their sources.
    pub worst: Vec<GapRecord>,
    /// Whether the CPU is `nohz_full` (its tick may stop).
    pub nohz_full: bool,
    /// Its `timer:tick_stop` events: told on `nohz_full` CPUs.
    pub tick: TickTally,
    /// Every step of the loop by whole microseconds (oslat's histogram;
    /// empty with `--attach`, which runs no loop).
    pub steps_us: StepsUs,
}

impl CpuNoise {
    /// The share of the run the spinner had, percent.
    pub fn available_percent(&self) -> f64 {
        match self.runtime.as_ns() {
            0 => 0.0,
            r => 100.0 * (r - self.noise.as_ns()) as f64 / r as f64,
        }
    }
}

/// What a run found.
#[derive(Debug)]
pub struct NoiseRun {
    /// Per CPU, in order.
    pub cpus: Vec<CpuNoise>,
    /// The threshold.
    pub threshold: Nanos,
    /// Why it ended.
    pub end: End,
    /// Whether gaps were attributed.
    pub attribution: bool,
    /// Trace events this kernel lacks (`system:name`).
    pub missing: Vec<&'static str>,
    /// Whether memory was locked (it falls back to unlocked, with a note).
    pub memory_locked: bool,
    /// What limited the run, a sentence each.
    pub notes: Vec<String>,
    /// With `--attach`: the thread followed, instead of spinners.
    pub attached: Option<ThreadInfo>,
}

/// Runs `plan` until `opts.duration` passes or `stop` is set.
pub fn run(plan: &Plan, opts: &NoiseOptions, stop: &AtomicBool) -> Result<NoiseRun> {
    run_observed(plan, opts, stop, &mut Unobserved)
}

/// [`run`], with `observe` handed every gap as it is known and each CPU
/// after every round (ten times a second).
pub fn run_observed(
    plan: &Plan,
    opts: &NoiseOptions,
    stop: &AtomicBool,
    observe: &mut dyn Observer,
) -> Result<NoiseRun> {
    let mut notes = Vec::new();
    let main = keep_off(&plan.cpus)?;
    if main.is_none() && opts.attribution {
        notes.push(
            "every CPU rtick may use is measured: its trace reader runs on them, and its reads are part of the noise"
                .into(),
        );
    }
    let nohz_full = nohz_full_cpus(&SysRoot::default());
    notes.extend(tick_note(&plan.cpus, &nohz_full));
    let session = Session::take(&Request { mlock: true, ..Default::default() })?;
    notes.extend(session.fallbacks().iter().map(|f| f.to_string()));
    let memory_locked = session.memory().is_some();
    let (mut stream, stacks) = trace(plan, opts)?;
    let missing = stream.as_ref().map(|s| s.missing_events().to_vec()).unwrap_or_default();
    let until = opts.duration.map(|d| ClockId::Monotonic.now() + d + Nanos::from_ms(20));
    // Scoped: the spinners watch `stop` too. Whichever way this ends, the
    // spinners are stopped and joined (`Spinners`' drop) before it returns.
    let (cpus, end) = std::thread::scope(|scope| {
        // The stacks from the spinners' first gap on.
        let record = |tids: &[i32]| {
            notes.extend(stream.as_mut().filter(|_| stacks).and_then(|st| switch_stacks::record(st, tids)))
        };
        let mut spinners = Spinners::start(scope, plan, opts, until, stop, record)?;
        let mut senders = Senders::new(true);
        // The spinners' cgroups' CFS throttling, sampled after each read.
        let mut cfs = stream.as_ref().and_then(|_| cfs::watch("self"));
        let mut each_round = |sp: &mut [Spinner<'_>]| {
            round(sp, stream.as_mut(), &mut senders, cfs.as_mut(), observe)?;
            show(sp, observe);
            Ok(())
        };
        let steal0 = StealSample::sample(&plan.cpus);
        let end = spinners.measure(stop, &mut each_round)?;
        let steal1 = StealSample::sample(&plan.cpus);
        let spun = spinners.join()?;
        each_round(&mut spinners.0)?;
        let mut lost: HashMap<usize, u64> = HashMap::new();
        if let Some(st) = stream.as_ref() {
            for &c in &plan.cpus {
                lost.insert(c, st.lost_on(c)?.count_read());
            }
        }
        let cpus: Vec<CpuNoise> = (spinners.take().into_iter().zip(spun))
            .map(|(s, sp)| {
                let (steal, lost) = (steal_of(&steal0, &steal1, s.cpu), lost.get(&s.cpu).copied().unwrap_or(0));
                let nohz = nohz_full.contains(&s.cpu);
                figures(s, sp, opts.attribution, lost, steal, nohz)
            })
            .collect();
        Ok::<_, crate::Error>((cpus, end))
    })?;
    if let Some(mut st) = stream.take() {
        st.remove()?;
    }
    drop(session);
    drop(main);
    Ok(NoiseRun {
        cpus,
        threshold: opts.threshold,
        end,
        attribution: opts.attribution,
        missing,
        memory_locked,
        notes,
        attached: None,
    })
}

/// The trace of `plan`'s CPUs when gaps are attributed, and whether thread
/// sources get their kernel stacks (the symbols loaded before the run's
/// clock starts: a second or more on a busy CPU).
fn trace(plan: &Plan, opts: &NoiseOptions) -> Result<(Option<Stream>, bool)> {
    if !opts.attribution {
        return Ok((None, false));
    }
    let topts = Options { buffer_kb: BUFFER_KB, events: &Tracepoint::NOISE, ..Default::default() };
    let stream = Stream::start(&ktrace::root(opts.tracefs.as_deref()), &plan.cpus, &topts)?;
    if opts.stacks {
        switch_stacks::load_symbols();
    }
    Ok((Some(stream), opts.stacks))
}

/// Pins the calling thread (which reads the trace) off the measured CPUs
/// when another CPU is allowed; put back when the guard drops.
pub(super) fn keep_off(cpus: &[usize]) -> Result<Option<SetupGuard>> {
    let others: Vec<usize> = crate::info::allowed_cpus()?.into_iter().filter(|c| !cpus.contains(c)).collect();
    match others.is_empty() {
        true => Ok(None),
        false => Setup::new().affinity(&others).apply().map(Some),
    }
}

/// Reads the trace and the gaps, and attributes every gap both cover; each
/// IPI named with its sender from `senders` (every CPU's sends read first).
fn round(
    spinners: &mut [Spinner],
    stream: Option<&mut Stream>,
    senders: &mut Senders,
    cfs: Option<&mut CfsWatch>,
    observe: &mut dyn Observer,
) -> Result<()> {
    let watermark = ClockId::Monotonic.now();
    for s in spinners.iter_mut() {
        // Nothing counts before the spinner's first read (none yet: nothing at all).
        let start = s.shared.start.load(Ordering::Acquire);
        s.attr.begin(Time(if start == i64::MIN { i64::MAX } else { start }));
    }
    if let Some(st) = stream {
        let by_cpu: HashMap<usize, usize> = spinners.iter().enumerate().map(|(i, s)| (s.cpu, i)).collect();
        let mut fresh: Vec<Vec<Event>> = spinners.iter().map(|_| Vec::new()).collect();
        st.read(&mut |cpu, e| {
            senders.event(cpu, &e);
            if let Some(&i) = by_cpu.get(&cpu) {
                fresh[i].push(e);
            }
        })?;
        cfs::sample(cfs, watermark, spinners.iter_mut().map(|s| &mut s.attr));
        for (s, events) in spinners.iter_mut().zip(fresh) {
            // Events at or after the watermark wait for the next round, when
            // the gaps around them are known.
            for e in std::mem::take(&mut s.carry).into_iter().chain(events) {
                if e.ts < watermark {
                    s.attr.event_from(&e, senders.sender_of_entry(s.cpu, &e).cloned());
                } else {
                    s.carry.push(e);
                }
            }
        }
        // What the carried events (from the watermark on) can still match is kept.
        senders.forget_before(watermark);
    } else {
        watermark_only(spinners, observe);
        return Ok(());
    }
    for s in spinners.iter_mut() {
        let progress = Time(s.shared.progress.load(Ordering::Acquire));
        // The spinner ran at its progress (a clock read); the trace is read
        // up to the watermark: a switch to it out of idle the trace lacks
        // came before the earlier of the two.
        s.attr.spinner_read(progress.min(watermark));
        while let Ok(g) = s.ring.pop() {
            s.attr.gap(g);
        }
        s.attr.settle(progress.min(watermark));
        for g in s.attr.observed.iter_mut().flat_map(|v| v.drain(..)) {
            observe.gap(s.cpu, &g);
        }
    }
    Ok(())
}

/// Without attribution the gaps are only counted by the spinners: the
/// rings are emptied, each gap observed without sources.
fn watermark_only(spinners: &mut [Spinner], observe: &mut dyn Observer) {
    for s in spinners {
        while let Ok(gap) = s.ring.pop() {
            observe.gap(s.cpu, &GapRecord { gap, sources: Vec::new() });
        }
    }
}

/// Each CPU to `observe`, after a round.
fn show(spinners: &[Spinner], observe: &mut dyn Observer) {
    for s in spinners {
        let (start, progress) = (s.shared.start.load(Ordering::Acquire), s.shared.progress.load(Ordering::Acquire));
        let runtime = if start == i64::MIN || progress < start { Nanos::ZERO } else { Nanos(progress - start) };
        observe.round(&Live { cpu: s.cpu, runtime, sources: &s.attr.sources });
    }
}

pub(super) fn steal_of(before: &[StealSample], after: &[StealSample], cpu: usize) -> Option<Nanos> {
    let of = |v: &[StealSample]| v.iter().find(|s| s.cpu as usize == cpu).map(|s| s.steal);
    Some(of(after)? - of(before)?)
}

/// One line for the measured CPUs that are not `nohz_full`: their tick
/// runs (each of its interrupts is noise), there is no stop to tell.
pub(super) fn tick_note(cpus: &[usize], nohz_full: &[usize]) -> Option<String> {
    let ticking: Vec<usize> = cpus.iter().copied().filter(|c| !nohz_full.contains(c)).collect();
    let list = format_cpu_list(&ticking);
    let who = match ticking.len() {
        0 => return None,
        1 => format!("CPU {list} is not nohz_full: the tick runs"),
        _ => format!("CPUs {list} are not nohz_full: the tick runs on them"),
    };
    Some(format!("{who} (its local_timer interrupts are part of the noise)"))
}

fn figures(
    s: Spinner,
    sp: Spun,
    attribution: bool,
    lost_events: u64,
    steal: Option<Nanos>,
    nohz_full: bool,
) -> CpuNoise {
    let pending = if attribution { s.attr.pending_gaps() as u64 } else { 0 };
    CpuNoise {
        cpu: s.cpu,
        tid: s.tid,
        runtime: sp.end - sp.start,
        noise: sp.noise,
        gaps: sp.gaps.len(),
        max_gap: sp.max_gap,
        gap_p50_p99: (Nanos(sp.gaps.value_at_quantile(0.5)), Nanos(sp.gaps.value_at_quantile(0.99))),
        iterations: sp.iterations,
        resolution: sp.resolution,
        sources: if attribution { s.attr.ranked() } else { Vec::new() },
        cgroups: s.attr.cgroups,
        senders: s.attr.senders,
        stacks: s.attr.stacks.into_frames(),
        below_threshold: s.attr.below_threshold,
        unattributed: if attribution { sp.unqueued + s.attr.dropped_gaps + pending } else { 0 },
        dropped_instances: s.attr.dropped_instances,
        lost_events,
        steal,
        worst: s.attr.worst,
        nohz_full,
        tick: s.attr.tick,
        steps_us: sp.steps_us,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cpus_whose_tick_runs_get_the_note() {
        assert_eq!(tick_note(&[1, 2], &[1, 2, 3]), None);
        let one = tick_note(&[1, 2], &[2]).unwrap();
        assert!(one.starts_with("CPU 1 is not nohz_full: the tick runs ("), "{one}");
        let two = tick_note(&[1, 2, 3], &[]).unwrap();
        assert!(two.starts_with("CPUs 1-3 are not nohz_full: the tick runs on them"), "{two}");
    }
}

//! An attach from start to end: the trace of the target's CPUs read ten
//! times a second as it runs, its threads followed as they come and go, and
//! each wait taken into its thread's figures as it ends. Memory stays flat
//! however long it runs: the recent window of events is bounded in time
//! and count, the figures are histograms, and only each thread's worst
//! waits are kept, explained.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use super::attached::{Attached, End};
use super::bases::BaseOffsets;
use super::feed::Feed;
use super::merge::Merge;
use super::observe::{Observer, Polled};
use super::stacks::{StackArming, QUIET};
use super::stats::ThreadStats;
use super::summary::ThreadSummary;
use super::target::{Target, ThreadInfo};
use super::waits::Wake;
use crate::cfs::CfsWatches;
use crate::clock::ClockId;
use crate::error::{Error, Result};
use crate::explain::{Live, Recent, TraceBuffers};
use crate::ktrace::{self, kallsyms::Kallsyms, Event, Options, Tracepoint};
use crate::time::{Nanos, Time};

/// How often the trace is read, the target's threads listed (new ones get
/// their system calls traced from then on) and the end conditions checked.
const POLL: Duration = Duration::from_millis(100);

/// How long the recent window of events lasts: a wait is explained when it
/// ends, from the events since its thread last ran (a longer wait is
/// explained from as much of it as is held).
pub const KEEP: Nanos = Nanos::from_secs(2);

/// The most a read takes of one CPU's buffer, in pages (4 KiB: about 100
/// events): a reader behind the trace holds a bounded batch (40 000 events
/// a CPU) and reads again at once, and the kernel drops and counts what its
/// buffers cannot hold meanwhile.
const READ_PAGES: u64 = 400;

/// The events the recent window holds at most, all CPUs together: 32 MiB.
const WINDOW_BYTES: usize = 32 << 20;

/// How to attach.
#[derive(Clone, Debug, Default)]
pub struct AttachOptions {
    /// The tracefs root (the mounted one when `None`).
    pub tracefs: Option<PathBuf>,
    /// How long (until stopped or the target exits when `None`).
    pub duration: Option<Nanos>,
    /// Each thread's worst timed waits explained.
    pub explain_top: usize,
    /// Timed waits later than this are spikes, each explained as it ends
    /// ([`Observer::spike`]; at most [`SPIKES_PER_READ`](super::feed::SPIKES_PER_READ) a read).
    pub spike: Option<Nanos>,
}

/// Traces `target` until `opts.duration` passes, `stop` is set, or it
/// exits; `observer` is handed each wait as it ends, each spike, and the
/// target after every look at it.
pub fn attach(
    target: &Target,
    opts: &AttachOptions,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<Attached> {
    let mut run = Run::start(target, opts)?;
    let began = run.began;
    let mut emptied = true;
    let end = loop {
        // Behind the trace (a read stopped at READ_PAGES): read on at once.
        if emptied {
            std::thread::sleep(POLL);
        }
        // The threads first: a thread started meanwhile is followed even
        // when reading the trace takes the rest of the run.
        if !run.follow_new_threads()? {
            break End::TargetExited;
        }
        run.report(observer)?;
        emptied = run.pass(false, observer)?;
        if stop.load(Ordering::Relaxed) {
            break End::Interrupted;
        }
        if opts.duration.is_some_and(|d| began.elapsed() >= d.to_std()) {
            break End::Duration;
        }
    };
    let elapsed = Nanos::from_std(began.elapsed());
    let blocked: BTreeMap<i32, String> =
        run.tids.iter().filter_map(|&t| Some((t, ThreadInfo::blocked_in(run.proc, t)?))).collect();
    run.live.stream().stop_recording()?;
    while !run.pass(true, observer)? {}
    run.finish(end, elapsed, &blocked)
}

/// An attach in progress: its trace, the events read but not yet taken,
/// the threads followed.
struct Run<'a> {
    target: &'a Target,
    proc: &'static Path,
    live: Live,
    merge: Merge,
    feed: Feed,
    /// Every thread alive at the last look, as first read.
    seen: BTreeMap<i32, ThreadInfo>,
    /// Threads gone from /proc, from when: retired once every event
    /// recorded before then is taken.
    gone: Vec<(Time, Vec<i32>)>,
    /// The first thread that exited, as first read: the exited threads'
    /// row shows its settings.
    first_exited: Option<ThreadInfo>,
    /// The threads alive at the last look.
    tids: Vec<i32>,
    /// The threads retired since the observer was last told.
    retired: Vec<i32>,
    /// The most threads alive at once, and whether the kernel could filter their exits.
    most: usize,
    kernel_filtered: bool,
    /// When tracing began (CLOCK_MONOTONIC, and for the duration).
    started: Time,
    began: Instant,
    cpus: Vec<usize>,
    reader_cpus: Option<Vec<usize>>,
    window_events: usize,
    /// The CPUs outside `cpus` a thread was seen allowed on (noted once each).
    untraced: Vec<usize>,
    notes: Vec<String>,
}

impl<'a> Run<'a> {
    /// Starts tracing the CPUs `target`'s threads may run on.
    fn start(target: &'a Target, opts: &AttachOptions) -> Result<Run<'a>> {
        let proc = Path::new("/proc");
        let mut seen: BTreeMap<i32, ThreadInfo> = BTreeMap::new();
        let tids = target.threads(proc);
        note(proc, &tids, &mut seen);
        if seen.is_empty() {
            return Err(Error::Invalid(format!("{} ({}) exited before tracing began", target.pid, target.comm)));
        }
        let cpus = ThreadInfo::cpus_of(seen.values());
        // Off the target's CPUs before anything else runs: threads started
        // from here on inherit it.
        let reader_cpus = ktrace::keep_off(&cpus);
        let window_events = Recent::cap(WINDOW_BYTES / std::mem::size_of::<Event>() / cpus.len());
        let topts = Options {
            buffer_kb: TraceBuffers::for_cpus(cpus.len()).kb,
            events: &Tracepoint::ATTACH,
            syscall_pids: tids.clone(),
            stacks_from_start: false,
            ..Options::default()
        };
        let bases = BaseOffsets::read();
        let started = ClockId::Monotonic.now();
        let live = Live::start_with(&ktrace::root(opts.tracefs.as_deref()), &cpus, &topts, KEEP, window_events)?;
        let began = Instant::now();
        // Read while the first events wait in the kernel's buffers: tracing
        // began without waiting for it.
        let mut notes = Vec::new();
        let sleeper = match Kallsyms::load() {
            Ok(k) => k.address("hrtimer_wakeup"),
            Err(e) => {
                notes.push(format!("{e}: every hrtimer a thread armed was taken for a wait's, not only its sleeps'"));
                None
            }
        };
        // A wait late while its thread's cgroup was throttled for its CPU
        // quota is matched with it, as measure's spikes are.
        let cfs = CfsWatches::new(crate::system::SysRoot::default());
        let mut feed = Feed::new(sleeper, bases, opts.explain_top).with_spikes(opts.spike).with_cfs(cfs);
        if live.stream().has_stacks() {
            feed = feed.with_stack_arming(StackArming::new(QUIET));
        }
        notes.extend(live.stream().stacks_unavailable().map(|why| format!("no kernel stacks: {why}")));
        feed.follow_threads(&tids);
        let (most, kernel_filtered) = (tids.len(), ktrace::kernel_filters_pids(&tids, &cpus));
        Ok(Run {
            target,
            proc,
            live,
            merge: Merge::new(),
            feed,
            seen,
            gone: Vec::new(),
            first_exited: None,
            tids,
            retired: Vec::new(),
            most,
            kernel_filtered,
            started,
            began,
            cpus,
            reader_cpus,
            window_events,
            untraced: Vec::new(),
            notes,
        })
    }

    /// Reads the trace and takes, in time order, every event recorded
    /// before the read began (every one read, when `last` and the buffers
    /// were emptied). Whether they were: else more waits to be read now.
    fn pass(&mut self, last: bool, observer: &mut dyn Observer) -> Result<bool> {
        let Run { live, merge, feed, gone, retired, .. } = self;
        let (watermark, all) = live.read_each(READ_PAGES, &mut |cpu, e| merge.push(cpu, e))?;
        feed.new_read();
        // After the read: every wait taken below ended before this sample,
        // which counts the throttling that held it.
        if let Some(c) = feed.cfs_mut() {
            c.sample();
        }
        let watermark = if last && all { Time(i64::MAX) } else { watermark };
        // Into the window in the order taken: a wait's events are held when
        // it ends, however many one read brought.
        merge.release(watermark, &mut |cpu, e| {
            live.recent_mut().push(cpu, e.clone());
            if let Some(ended) = feed.take(cpu, &e, live.recent()) {
                observer.wait(ended.tid, &ended.wake);
                if let (Wake::Timed(t), Some(s)) = (&ended.wake, &ended.spike) {
                    observer.spike(ended.tid, t, s);
                }
            }
        });
        // The window keeps the last KEEP of what was taken, however far
        // behind the trace the reads are.
        live.recent_mut().advance(watermark);
        if let Some(c) = feed.cfs_mut() {
            c.forget_before(watermark - KEEP);
        }
        // Threads gone before the watermark: their last events are taken.
        gone.retain(|(at, tids)| {
            let done = *at <= watermark;
            if done {
                feed.retire(tids);
                retired.extend(tids);
            }
            !done
        });
        // Not once recording stopped: the instance goes with the trigger.
        if !last {
            self.tend_stacks(watermark)?;
        }
        Ok(all)
    }

    /// Sets or removes the stack trigger as late waits come and go
    /// ([`StackArming::tend`]); when the kernel refuses it, a note says so
    /// and no stack is taken from then on.
    fn tend_stacks(&mut self, upto: Time) -> Result<()> {
        let Some(a) = self.feed.stack_arming_mut() else { return Ok(()) };
        if let Err(why) = a.tend(self.live.stream(), upto)? {
            self.notes.push(format!("no kernel stacks: {why}"));
            self.feed.take_stack_arming();
        }
        Ok(())
    }

    /// Lists the target's threads: new ones are followed, exited ones leave
    /// the system call filter. `false` once the target has exited.
    fn follow_new_threads(&mut self) -> Result<bool> {
        let now = self.target.threads(self.proc);
        if now.is_empty() {
            return Ok(false);
        }
        if now != self.tids {
            let at = ClockId::Monotonic.now();
            let gone: Vec<i32> = self.tids.iter().copied().filter(|t| now.binary_search(t).is_err()).collect();
            for t in &gone {
                if let Some(i) = self.seen.remove(t) {
                    self.first_exited.get_or_insert(i);
                }
            }
            if !gone.is_empty() {
                self.gone.push((at, gone));
            }
            let new: Vec<i32> = now.iter().copied().filter(|t| !self.seen.contains_key(t)).collect();
            // A tid gone and back already is a new thread: the old one's
            // figures are retired now.
            let reused: Vec<i32> = new.iter().copied().filter(|t| self.gone.iter().any(|g| g.1.contains(t))).collect();
            for g in &mut self.gone {
                g.1.retain(|t| !reused.contains(t));
            }
            self.feed.retire(&reused);
            self.retired.extend(&reused);
            note(self.proc, &new, &mut self.seen);
            // Exited threads are dropped: the filter stays short, and a
            // reused tid is not followed.
            self.live.stream().set_syscall_pids(&now)?;
            // The new threads' exits are recorded from now on: their waits
            // are followed from then (the events taken lag the reads).
            self.feed.follow_threads_from(&new, at);
            self.most = self.most.max(now.len());
            self.kernel_filtered &= ktrace::kernel_filters_pids(&now, &self.cpus);
            self.tids = now;
        }
        let tids = std::mem::take(&mut self.tids);
        self.check_affinity(&tids);
        self.tids = tids;
        Ok(true)
    }

    /// Tells `observer` the threads followed, those retired since it was
    /// last told, and the events lost so far.
    fn report(&mut self, observer: &mut dyn Observer) -> Result<()> {
        let lost = self.live.stream().lost()?;
        observer.poll(&Polled { threads: &self.seen, retired: &self.retired, lost });
        self.retired.clear();
        Ok(())
    }

    /// Notes, once a CPU, a thread of `tids` allowed on a CPU not traced
    /// (started so, or moved by sched_setaffinity): the CPUs traced are
    /// those allowed when tracing began.
    fn check_affinity(&mut self, tids: &[i32]) {
        for &t in tids {
            let Some(allowed) = ThreadInfo::affinity_now(self.proc, t) else { continue };
            let new: Vec<usize> = allowed
                .into_iter()
                .filter(|c| self.cpus.binary_search(c).is_err() && !self.untraced.contains(c))
                .collect();
            if new.is_empty() {
                continue;
            }
            self.untraced.extend(&new);
            let comm = self.seen.get(&t).map_or("", |i| i.comm.as_str());
            self.notes.push(format!(
                "thread {t} ({comm}) may run on CPU {}, which rtick does not trace (only the CPUs the threads were allowed on when tracing began): its waits there are missed or counted unmatched; attach again to trace it",
                crate::system::format_cpu_list(&new)
            ));
        }
    }

    /// What the run found, its trace removed; `blocked`: the kernel
    /// function each thread was blocked in as it ended.
    fn finish(mut self, end: End, elapsed: Nanos, blocked: &BTreeMap<i32, String>) -> Result<Attached> {
        let lost = self.live.stream().lost()?;
        let missing = self.live.stream().missing_events().to_vec();
        drop(self.live);
        if !self.kernel_filtered {
            self.notes.push(format!(
                "{} threads at once are too many for the kernel's event filter: every system call exit on the traced CPUs was recorded and rtick kept the target's",
                self.most
            ));
        }
        for (_, tids) in std::mem::take(&mut self.gone) {
            self.feed.retire(&tids);
        }
        let cfs = self.feed.take_cfs();
        let stopped = self.started + elapsed;
        let stacks_armed = self.feed.take_stack_arming().map(|a| a.armed_for(stopped));
        self.notes.extend(cfs.as_ref().and_then(CfsWatches::note));
        let waiting: Vec<i32> = self.feed.in_progress().collect();
        let events = self.feed.events() as usize;
        let exited = self.first_exited.take().map(|first| {
            let (count, stats) = self.feed.exited();
            ThreadSummary::of(exited_row(first, count), stats)
        });
        let (gone, _) = self.feed.exited();
        let gone = (gone > 0).then(|| (0, self.feed.exited().1.lateness.clone()));
        let (stats, worst, overruns) = self.feed.finish();
        let lateness = stats
            .iter()
            .map(|(t, s)| (*t, &s.lateness))
            .chain(gone.as_ref().map(|(t, l)| (*t, l)))
            .filter(|(_, l)| l.count() > 0)
            .map(|(t, l)| (t, l.summary()))
            .collect();
        let none = ThreadStats::new();
        let threads = self
            .seen
            .into_values()
            .map(|t| ThreadSummary {
                blocked_in: blocked.get(&t.tid).cloned(),
                in_progress: waiting.contains(&t.tid),
                ..ThreadSummary::of(t.clone(), stats.get(&t.tid).unwrap_or(&none))
            })
            .chain(exited)
            .collect();
        Ok(Attached {
            threads,
            worst,
            overruns,
            lateness,
            end,
            started: self.started,
            elapsed,
            cpus: self.cpus,
            reader_cpus: self.reader_cpus,
            window_events: self.window_events,
            lost,
            missing,
            events,
            notes: self.notes,
            cfs: cfs.map(CfsWatches::finish).unwrap_or_default(),
            stacks_armed,
        })
    }
}

/// The row of the `count` threads that exited during the run, their
/// figures pooled: tid 0, named for how many they were, with the settings
/// of `first`, the first to exit.
fn exited_row(first: ThreadInfo, count: usize) -> ThreadInfo {
    ThreadInfo { tid: 0, comm: crate::text::count(count as u64, "exited thread"), ..first }
}

/// Reads the threads of `tids` not yet seen into `seen` (those already
/// seen keep what was read first).
fn note(proc: &Path, tids: &[i32], seen: &mut BTreeMap<i32, ThreadInfo>) {
    for &t in tids {
        if let Some(i) = ThreadInfo::read(proc, t) {
            seen.entry(t).or_insert(i);
        }
    }
}

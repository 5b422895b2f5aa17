//! An attach from start to end: the tracing session on the target's CPUs,
//! its threads followed as they come and go, and the waits found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::bases::BaseOffsets;
use super::summary::ThreadSummary;
use super::target::{Target, ThreadInfo};
use super::waits::{follow, ThreadWaits};
use crate::error::{Error, Result};
use crate::explain::TraceBuffers;
use crate::ktrace::{self, kallsyms::Kallsyms, Event, LostEvents, Options, Session, Tracepoint};
use crate::time::Nanos;

/// How often the target's threads are listed (new ones get their system
/// calls traced from then on) and the end conditions checked.
const POLL: Duration = Duration::from_millis(50);

/// How to attach.
#[derive(Clone, Debug, Default)]
pub struct AttachOptions {
    /// The tracefs root (the mounted one when `None`).
    pub tracefs: Option<PathBuf>,
    /// How long (until stopped or the target exits when `None`).
    pub duration: Option<Nanos>,
}

/// Why the attach ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Its duration passed.
    Duration,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The target exited.
    TargetExited,
}

/// What an attach found.
#[derive(Debug)]
pub struct Attached {
    /// Per thread seen (in tid order), its figures.
    pub threads: Vec<ThreadSummary>,
    /// Per thread, every wait.
    pub waits: BTreeMap<i32, ThreadWaits>,
    /// Why it ended.
    pub end: End,
    /// How long it traced.
    pub elapsed: Nanos,
    /// The CPUs traced (those the target's threads may run on).
    pub cpus: Vec<usize>,
    /// Events the kernel or the reader lost.
    pub lost: LostEvents,
    /// Trace events this kernel lacks.
    pub missing: Vec<&'static str>,
    /// Kernel events recorded.
    pub events: usize,
    /// What limited the run's view, a sentence each.
    pub notes: Vec<String>,
}

/// Traces `target` until `opts.duration` passes, `stop` is set, or it exits.
pub fn attach(target: &Target, opts: &AttachOptions, stop: &AtomicBool) -> Result<Attached> {
    let proc = Path::new("/proc");
    let mut seen: BTreeMap<i32, ThreadInfo> = BTreeMap::new();
    let mut live = target.threads(proc);
    note(proc, &live, &mut seen);
    if seen.is_empty() {
        return Err(Error::Invalid(format!("{} ({}) exited before tracing began", target.pid, target.comm)));
    }
    let mut cpus: Vec<usize> = seen.values().flat_map(|t| t.affinity.iter().copied()).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let buffers = TraceBuffers::for_cpus(cpus.len());
    let topts = Options {
        buffer_kb: buffers.kb,
        events: &Tracepoint::ATTACH,
        syscall_pids: live.clone(),
        ..Options::default()
    };
    let bases = BaseOffsets::read();
    let session = Session::start(&ktrace::root(opts.tracefs.as_deref()), &cpus, &topts)?;
    let began = Instant::now();
    let (mut most, mut kernel_filtered) = (live.len(), ktrace::kernel_filters_pids(&live));
    let end = loop {
        std::thread::sleep(POLL);
        if stop.load(Ordering::Relaxed) {
            break End::Interrupted;
        }
        if opts.duration.is_some_and(|d| began.elapsed() >= d.to_std()) {
            break End::Duration;
        }
        let now = target.threads(proc);
        if now.is_empty() {
            break End::TargetExited;
        }
        if now != live {
            let new: Vec<i32> = now.iter().copied().filter(|t| !seen.contains_key(t)).collect();
            note(proc, &new, &mut seen);
            // Exited threads are dropped: the filter stays short, and a
            // reused tid is not followed.
            session.set_syscall_pids(&now)?;
            most = most.max(now.len());
            kernel_filtered &= ktrace::kernel_filters_pids(&now);
            live = now;
        }
    };
    let elapsed = Nanos::from_std(began.elapsed());
    let blocked: BTreeMap<i32, String> =
        live.iter().filter_map(|&t| Some((t, ThreadInfo::blocked_in(proc, t)?))).collect();
    let missing = session.missing_events().to_vec();
    let capture = session.stop()?;
    let events: usize = capture.per_cpu.iter().map(|c| c.events.len()).sum();
    let mut all: Vec<(usize, &Event)> =
        capture.per_cpu.iter().flat_map(|c| c.events.iter().map(|e| (c.cpu, e))).collect();
    all.sort_by_key(|(_, e)| e.ts);
    let mut notes = Vec::new();
    if !kernel_filtered {
        notes.push(format!(
            "{most} threads at once are too many for the kernel's event filter: every system call exit on the traced CPUs was recorded and rtick kept the target's"
        ));
    }
    let sleeper = match Kallsyms::load() {
        Ok(k) => sleeper_fn(&k),
        Err(e) => {
            notes.push(format!("{e}: every hrtimer a thread armed was taken for a wait's, not only its sleeps'"));
            None
        }
    };
    let tids: Vec<i32> = seen.keys().copied().collect();
    let waits: BTreeMap<i32, ThreadWaits> = follow(&all, &tids, sleeper, &bases).into_iter().collect();
    let threads = seen
        .values()
        .map(|t| ThreadSummary {
            blocked_in: blocked.get(&t.tid).cloned(),
            ..ThreadSummary::of(t.clone(), &waits[&t.tid])
        })
        .collect();
    Ok(Attached { threads, waits, end, elapsed, cpus, lost: capture.lost, missing, events, notes })
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

/// The address of `hrtimer_wakeup`, the callback of every sleeper's timer.
fn sleeper_fn(k: &Kallsyms) -> Option<u64> {
    k.address("hrtimer_wakeup")
}

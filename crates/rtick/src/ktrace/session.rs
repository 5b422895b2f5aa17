//! A tracing session: rtick's own instance set up for the measured CPUs,
//! its reader draining it during the run, and the capture it leaves.
//!
//! ```text
//!  start: mkdir instances/rtick-<pid>, tracing_on 0, trace_clock mono,
//!         tracing_cpumask, buffer_size_kb, events (+ filters), reader, tracing_on 1
//!  stop:  tracing_on 0, reader drains and ends, per_cpu stats, events off, rmdir
//! ```
//!
//! In between, [`Session::pause`] and [`Session::resume`] switch the
//! session's events off and on, so one run can alternate traced and plain
//! stretches and show what tracing costs (`--explain-ab`).
//!
//! The instance goes away with the session: `stop`, `remove` or drop. On
//! Ctrl-C or SIGTERM `rtick measure` does not die: its handler sets a flag,
//! the run ends normally and the session is dropped like any other value.
//! Only SIGKILL leaves an instance behind; [`remove_stale`](super::remove_stale)
//! clears those of processes that no longer exist.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::events::{Decoder, Event, Tracepoint};
use super::filter::{filter, sender_cpus};
use super::format::{load_headers, EventFormat};
use super::instance::{BufferStats, Instance};
use super::reader::{ReadCounts, Reader, ReaderSetup};
use super::stack::Stacks;
use super::{Error, Result};
use crate::time::Nanos;

/// Ring-buffer size per traced CPU, KiB. Measured here: a 20 kHz
/// clock_nanosleep loop on one CPU makes nine events per wake-up (timer
/// start, interrupt entry and exit, expiry entry and exit, waking, wakeup,
/// switch in and out), 180 000 events or 7 MiB per second. 8 MiB hold over
/// a second of that, ten times the reader's drain interval: a reader held
/// off for most of a second still loses nothing.
pub const DEFAULT_BUFFER_KB: usize = 8192;
/// Ring-buffer size of a CPU recorded only for the IPIs it sends to the
/// measured ones, KiB: a send is 32 bytes, and even a TLB-shootdown storm
/// sends a few ten thousand a second.
const SENDER_KB: usize = 1024;

/// What a session records and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Ring-buffer size per traced CPU, KiB.
    pub buffer_kb: usize,
    /// The longest an event waits in the buffer before the reader drains it.
    pub drain_interval: Nanos,
    /// The events recorded: [`Tracepoint::ALL`], or [`Tracepoint::ATTACH`].
    pub events: &'static [Tracepoint],
    /// The threads whose system calls' exits are recorded
    /// ([`Tracepoint::SysExit`], when in `events`).
    pub syscall_pids: Vec<i32>,
    /// Whether to record the kernel stack where each timer wake-up was
    /// due ([`stack`](super::stack)), when `events` has `hrtimer_expire_entry`.
    pub stacks: bool,
    /// Whether the stack trigger is set from the start; else only
    /// [`Stream::arm_stacks`](super::Stream::arm_stacks) sets it (attach's
    /// late spells).
    pub stacks_from_start: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            buffer_kb: DEFAULT_BUFFER_KB,
            drain_interval: Nanos::from_ms(100),
            events: &Tracepoint::ALL,
            syscall_pids: Vec::new(),
            stacks: true,
            stacks_from_start: true,
        }
    }
}

/// One CPU's events and what its buffer and the reader counted. Events are
/// kept in memory: 80 bytes each, 14 MB per second of a 20 kHz run.
#[derive(Debug)]
pub struct CpuEvents {
    /// The CPU.
    pub cpu: usize,
    /// Its events, in timestamp order.
    pub events: Vec<Event>,
    /// The kernel's counters of its ring buffer after the run.
    pub buffer: BufferStats,
    /// What the reader counted.
    pub read: ReadCounts,
}

/// Events the analysis did not get, summed over the CPUs. Each counter is
/// a different way to lose events; any non-zero one means the trace has gaps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LostEvents {
    /// Overwritten in a full buffer before the reader came (kernel `overrun`).
    pub overrun: u64,
    /// Lost across a page boundary while a writer was interrupted.
    pub commit_overrun: u64,
    /// Dropped by a full buffer (kernel `dropped events`).
    pub dropped: u64,
    /// Counted by the pages' missed-events marks (the reader's view of the above).
    pub missed_in_pages: u64,
    /// Pages marked as following lost events without saying how many.
    pub uncounted_gaps: u64,
    /// Left in the buffer unread after the final drain.
    pub unread: u64,
    /// Pages that did not decode.
    pub corrupt_pages: u64,
    /// Records too short for their event's fields.
    pub malformed: u64,
}

impl LostEvents {
    /// Adds one CPU's losses: its buffer's counters after the run and what
    /// its reads counted.
    pub fn add(&mut self, buffer: &BufferStats, read: &ReadCounts) {
        self.overrun += buffer.overrun;
        self.commit_overrun += buffer.commit_overrun;
        self.dropped += buffer.dropped;
        self.unread += buffer.entries;
        self.missed_in_pages += read.missed;
        self.uncounted_gaps += read.missed_uncounted_pages;
        self.corrupt_pages += read.corrupt_pages;
        self.malformed += read.malformed;
    }

    /// Adds another CPU's (or set's) losses.
    pub fn add_cpu(&mut self, o: &LostEvents) {
        self.overrun += o.overrun;
        self.commit_overrun += o.commit_overrun;
        self.dropped += o.dropped;
        self.unread += o.unread;
        self.missed_in_pages += o.missed_in_pages;
        self.uncounted_gaps += o.uncounted_gaps;
        self.corrupt_pages += o.corrupt_pages;
        self.malformed += o.malformed;
    }

    /// [`LostEvents::count`] but for what is still unread: events recorded
    /// after a run's last read are not lost, only past its end.
    pub fn count_read(&self) -> u64 {
        LostEvents { unread: 0, ..*self }.count()
    }

    /// Losses of unknown size, outside [`LostEvents::count`]: pages marked
    /// as following lost events without a count, and pages that did not decode.
    pub fn of_unknown_size(&self) -> u64 {
        self.uncounted_gaps + self.corrupt_pages
    }

    /// Whether anything at all was lost.
    pub fn any(&self) -> bool {
        *self != LostEvents::default()
    }

    /// How many events are known lost: the buffer's own counts and the
    /// pages' marks are two views of the same losses, so the larger of the
    /// two, plus what was left unread or too short to decode. Gaps of
    /// unknown size and corrupt pages add to [`LostEvents::any`], not here.
    pub fn count(&self) -> u64 {
        (self.overrun + self.commit_overrun + self.dropped).max(self.missed_in_pages) + self.unread + self.malformed
    }
}

/// What a session recorded.
#[derive(Debug)]
pub struct Capture {
    /// Per traced CPU, in CPU order.
    pub per_cpu: Vec<CpuEvents>,
    /// Events lost, all CPUs together.
    pub lost: LostEvents,
    /// Events this kernel lacks (`system:name`): the phases they show are
    /// unavailable.
    pub missing_events: Vec<&'static str>,
    /// Why no kernel stacks were recorded, when asked for.
    pub stacks_unavailable: Option<String>,
}

impl Capture {
    /// The events of `cpu`.
    pub fn cpu(&self, cpu: usize) -> Option<&CpuEvents> {
        self.per_cpu.iter().find(|c| c.cpu == cpu)
    }
}

/// A running trace of the measured CPUs in rtick's own tracefs instance.
#[derive(Debug)]
pub struct Session {
    instance: Instance,
    reader: Option<Reader>,
    cpus: Vec<usize>,
    missing: Vec<&'static str>,
    paused: bool,
    events: &'static [Tracepoint],
    stacks: Stacks,
    /// The other CPUs, recorded for the IPIs they send to the measured ones.
    senders: Vec<usize>,
}

impl Session {
    /// Creates `instances/rtick-<pid>` under `tracefs` and starts recording
    /// the events of `opts` ([`Tracepoint::ALL`] by default) on `cpus`.
    pub fn start(tracefs: &Path, cpus: &[usize], opts: &Options) -> Result<Session> {
        let p = Prepared::new(tracefs, cpus, opts)?;
        let reader = Reader::spawn(p.files, p.setup)?;
        let session = Session {
            instance: p.instance,
            reader: Some(reader),
            cpus: p.cpus,
            missing: p.missing,
            paused: false,
            events: opts.events,
            stacks: p.stacks,
            senders: p.senders,
        };
        session.instance.write("tracing_on", "1")?;
        Ok(session)
    }

    /// The instance's directory.
    pub fn instance_dir(&self) -> &Path {
        self.instance.dir()
    }

    /// Events this kernel lacks, by `system:name`.
    pub fn missing_events(&self) -> &[&'static str] {
        &self.missing
    }

    /// Why no kernel stacks are recorded, when they were asked for.
    pub fn stacks_unavailable(&self) -> Option<&str> {
        self.stacks.unavailable()
    }

    /// Switches the session's events off: a plain stretch of the run, in
    /// which the kernel's tracepoints are disabled, not only the ring buffer
    /// (`tracing_on 0` would leave every probe running and discarding its
    /// event: cheaper than recording, but not a run without tracing). The
    /// kernel patches its code for that (static keys), which interrupts
    /// every CPU: wake-ups right at a switch are not plain either. Events
    /// already recorded stay and are read. Idempotent.
    pub fn pause(&mut self) -> Result<()> {
        if !self.paused {
            // A trigger keeps its event's probe running while the event is
            // off, and taking stacks. Its removal waits for an RCU grace
            // period (~100 ms): the switch's own time, which an A/B leaves out.
            self.stacks.disarm(&self.instance)?;
            self.switch_events("0")?;
            self.paused = true;
        }
        Ok(())
    }

    /// Switches the events [`Session::pause`] switched off back on. Idempotent.
    pub fn resume(&mut self) -> Result<()> {
        if self.paused {
            self.stacks.arm(&self.instance)?;
            self.switch_events("1")?;
            self.paused = false;
        }
        Ok(())
    }

    /// Whether the events are switched off.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Writes `value` to the `enable` file of each event the session
    /// enabled (one by one: the instance's `events/enable` would switch on
    /// every event the kernel has, not only the session's).
    fn switch_events(&self, value: &str) -> Result<()> {
        for tp in self.events.iter().filter(|t| !self.missing.contains(&t.full_name())) {
            self.instance.write(&format!("events/{}/{}/enable", tp.system(), tp.name()), value)?;
        }
        Ok(())
    }

    /// Records the system calls' exits of `pids` from now on (an attached
    /// process's threads as they come and go), replacing the list; all of
    /// them when the list is past the kernel's limit
    /// ([`kernel_filters_pids`](super::kernel_filters_pids)).
    pub fn set_syscall_pids(&self, pids: &[i32]) -> Result<()> {
        set_syscall_pids(&self.instance, self.events, &self.missing, &self.cpus, pids, !self.senders.is_empty())
    }

    /// Stops recording, collects every event and removes the instance.
    pub fn stop(mut self) -> Result<Capture> {
        self.instance.write("tracing_on", "0")?;
        let read = self.reader.take().map(Reader::finish).transpose()?.unwrap_or_default();
        let mut per_cpu = Vec::with_capacity(self.cpus.len());
        let mut lost = LostEvents::default();
        for r in read {
            let buffer = self.instance.buffer_stats(r.cpu)?;
            lost.add(&buffer, &r.counts);
            per_cpu.push(CpuEvents { cpu: r.cpu, events: r.events, buffer, read: r.counts });
        }
        self.instance.remove()?;
        let stacks_unavailable = self.stacks.unavailable().map(str::to_string);
        Ok(Capture { per_cpu, lost, missing_events: std::mem::take(&mut self.missing), stacks_unavailable })
    }

    /// Stops the reader and removes the instance, discarding the events.
    /// Idempotent; what drop does, for callers that want its errors.
    pub fn remove(&mut self) -> Result<()> {
        // The reader's files must be closed before the rmdir.
        let reader = self.reader.take().map(Reader::finish);
        self.instance.remove()?;
        reader.transpose().map(drop)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Records the system calls' exits of `pids` from now on in `instance`
/// (recording `events`, of which this kernel lacks `missing`, on `cpus`):
/// [`Session::set_syscall_pids`], [`Stream::set_syscall_pids`](super::Stream::set_syscall_pids).
pub(super) fn set_syscall_pids(
    instance: &Instance,
    events: &[Tracepoint],
    missing: &[&'static str],
    cpus: &[usize],
    pids: &[i32],
    senders: bool,
) -> Result<()> {
    let tp = Tracepoint::SysExit;
    if !events.contains(&tp) || missing.contains(&tp.full_name()) {
        return Ok(());
    }
    let f = filter(tp, cpus, pids, senders).unwrap_or_default();
    instance.write(&format!("events/{}/{}/filter", tp.system(), tp.name()), &f)
}

/// An instance set up for `cpus`, not yet recording, with its pipes open
/// and the decoder for its events: what a [`Session`] and a
/// [`Stream`](super::Stream) start from.
pub(super) struct Prepared {
    pub(super) instance: Instance,
    pub(super) files: Vec<(usize, File)>,
    pub(super) setup: ReaderSetup,
    pub(super) cpus: Vec<usize>,
    pub(super) missing: Vec<&'static str>,
    pub(super) stacks: Stacks,
    /// The other CPUs, recorded for the IPIs they send to `cpus` (their pipes in `files` too).
    pub(super) senders: Vec<usize>,
}

impl Prepared {
    pub(super) fn new(tracefs: &Path, cpus: &[usize], opts: &Options) -> Result<Prepared> {
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return Err(Error::Invalid("no CPU to trace".into()));
        }
        if opts.buffer_kb == 0 {
            return Err(Error::Invalid("the trace buffer size must be at least 1 KiB".into()));
        }
        let instance = Instance::create(tracefs, &format!("rtick-{}", std::process::id()))?;
        // Nothing records until everything is set.
        instance.write("tracing_on", "0")?;
        // CLOCK_MONOTONIC, the clock of rtick's deadlines.
        instance.set_clock("mono")?;
        if let Some(&c) = cpus.iter().find(|&&c| !instance.has(&format!("per_cpu/cpu{c}"))) {
            return Err(Error::Invalid(format!("CPU {c} has no trace buffer: it does not exist on this system")));
        }
        let senders = sender_cpus(&instance, &cpus, opts.events);
        let recorded: Vec<usize> = cpus.iter().chain(&senders).copied().collect();
        instance.set_cpumask(&recorded)?;
        size_buffers(&instance, &cpus, &senders, opts.buffer_kb)?;
        // The reader's poll wakes when a buffer is a quarter full (the
        // kernel's default is half), long before it could overflow.
        if instance.has("buffer_percent") {
            instance.write("buffer_percent", "25")?;
        }
        let (mut decoder, missing) = enable_events(&instance, &cpus, !senders.is_empty(), opts)?;
        // Not for a session without `hrtimer_expire_entry` (`rtick noise`'s):
        // a trigger would switch the event on.
        let stacks = opts.stacks && opts.events.contains(&Tracepoint::HrtimerExpireEntry);
        let only = (!senders.is_empty()).then_some(&cpus[..]);
        let stacks = Stacks::set_up(stacks, opts.stacks_from_start, &instance, &mut decoder, &missing, only);
        let (page, header) = load_headers(&instance.events_dir())?;
        let files = recorded.iter().map(|&c| Ok((c, open_pipe(&instance, c)?))).collect::<Result<Vec<_>>>()?;
        let setup = ReaderSetup { page, header, decoder, interval: opts.drain_interval, avoid_cpus: cpus.clone() };
        Ok(Prepared { instance, files, setup, cpus, missing, stacks, senders })
    }
}

/// The measured CPUs get `kb` each; the senders [`SENDER_KB`]; the others,
/// which record nothing, give their memory back (one page each).
fn size_buffers(instance: &Instance, cpus: &[usize], senders: &[usize], kb: usize) -> Result<()> {
    let dir = instance.dir().join("per_cpu");
    let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(format!("reading {}", dir.display()), e))?;
    let all = entries.flatten().filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse::<usize>().ok());
    for c in all {
        let rel = format!("per_cpu/cpu{c}/buffer_size_kb");
        if cpus.contains(&c) {
            instance.write(&rel, &kb.to_string())?;
        } else if senders.contains(&c) {
            instance.write(&rel, &SENDER_KB.min(kb).to_string())?;
        } else {
            // Best effort: a buffer left at its default only costs memory.
            let _ = instance.write(&rel, "4");
        }
    }
    Ok(())
}

/// Enables every event of `opts.events` this kernel has; returns the
/// decoder for them and the names of those it lacks.
pub(super) fn enable_events(
    instance: &Instance,
    cpus: &[usize],
    senders: bool,
    opts: &Options,
) -> Result<(Decoder, Vec<&'static str>)> {
    let events = instance.events_dir();
    let mut decoder = Decoder::new();
    let mut missing = Vec::new();
    for &tp in opts.events {
        let rel = format!("events/{}/{}", tp.system(), tp.name());
        if !instance.has(&rel) {
            missing.push(tp.full_name());
            continue;
        }
        let format = EventFormat::load(&events, tp.system(), tp.name())?;
        if decoder.add(tp, &format).is_err() {
            // A kernel whose event lacks a field the decoder reads: as good as absent.
            missing.push(tp.full_name());
            continue;
        }
        if let Some(filter) = filter(tp, cpus, &opts.syscall_pids, senders) {
            let path = format!("{rel}/filter");
            match instance.write(&path, &filter) {
                // A kernel that cannot filter on a cpumask: every such send, for the matching to sort out.
                Err(_) if tp == Tracepoint::IpiSendCpumask => instance.write(&path, "0")?,
                done => done?,
            }
        }
        instance.write(&format!("{rel}/enable"), "1")?;
    }
    Ok((decoder, missing))
}

fn open_pipe(instance: &Instance, cpu: usize) -> Result<File> {
    let path = instance.dir().join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-CPU losses add up field by field; what is still unread after a
    /// run's last read is not counted as lost by `count_read`.
    #[test]
    fn per_cpu_losses_add_up_and_unread_is_apart() {
        let one =
            LostEvents { overrun: 3, dropped: 1, missed_in_pages: 2, unread: 7, malformed: 1, ..Default::default() };
        let two = LostEvents { commit_overrun: 2, missed_in_pages: 9, uncounted_gaps: 1, ..Default::default() };
        let mut all = LostEvents::default();
        all.add_cpu(&one);
        all.add_cpu(&two);
        assert_eq!(
            all,
            LostEvents {
                overrun: 3,
                commit_overrun: 2,
                dropped: 1,
                missed_in_pages: 11,
                uncounted_gaps: 1,
                unread: 7,
                malformed: 1,
                ..Default::default()
            }
        );
        assert_eq!((one.count(), one.count_read()), (4 + 7 + 1, 4 + 1));
    }

    #[test]
    fn lost_events_are_counted_once() {
        assert_eq!(LostEvents::default().count(), 0);
        // The buffer counted 7, the pages marked the same 7: 7 lost, not 14.
        let l =
            LostEvents { overrun: 5, dropped: 2, missed_in_pages: 7, unread: 1, malformed: 1, ..Default::default() };
        assert_eq!(l.count(), 9);
        // A gap of unknown size counts nowhere but makes `any` true.
        let gap = LostEvents { uncounted_gaps: 1, ..Default::default() };
        assert_eq!((gap.count(), gap.any()), (0, true));
    }

    /// A fake instance holding `events/<sys>/<name>/{format,enable,filter}`
    /// for `present`, with this kernel's formats from the fixtures.
    fn fake_instance(root: &Path, present: &[Tracepoint]) -> Instance {
        std::fs::create_dir(root.join("instances")).unwrap();
        let inst = Instance::create(root, "rtick-test").unwrap();
        let formats = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ktrace/events");
        for tp in present {
            let dir = inst.events_dir().join(tp.system()).join(tp.name());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(formats.join(tp.system()).join(tp.name()).join("format"), dir.join("format")).unwrap();
            std::fs::write(dir.join("enable"), "").unwrap();
            std::fs::write(dir.join("filter"), "").unwrap();
        }
        inst
    }

    #[test]
    fn events_the_kernel_lacks_are_reported_missing_and_the_others_enabled() {
        let d = tempfile::tempdir().unwrap();
        let inst = fake_instance(d.path(), &[Tracepoint::SchedSwitch, Tracepoint::SchedWaking]);
        let (_, missing) = enable_events(&inst, &[1, 3], false, &Options::default()).unwrap();
        let want: Vec<_> = Tracepoint::ALL
            .iter()
            .filter(|t| !matches!(t, Tracepoint::SchedSwitch | Tracepoint::SchedWaking))
            .map(|t| t.full_name())
            .collect();
        assert_eq!(missing, want);
        let read = |rel: &str| std::fs::read_to_string(inst.dir().join(rel)).unwrap();
        assert_eq!(read("events/sched/sched_switch/enable"), "1");
        assert_eq!(read("events/sched/sched_switch/filter"), "", "every switch is kept");
        assert_eq!(read("events/sched/sched_waking/enable"), "1");
        assert_eq!(read("events/sched/sched_waking/filter"), "target_cpu == 1 || target_cpu == 3");
    }

    #[test]
    fn an_event_whose_format_lacks_a_field_read_counts_as_missing() {
        let d = tempfile::tempdir().unwrap();
        let inst = fake_instance(d.path(), &[Tracepoint::SchedSwitch]);
        let format = inst.events_dir().join("sched/sched_switch/format");
        let text = std::fs::read_to_string(&format).unwrap();
        std::fs::write(&format, text.replace("next_prio;", "next_priority;")).unwrap();
        let (_, missing) = enable_events(&inst, &[0], false, &Options::default()).unwrap();
        assert!(missing.contains(&"sched:sched_switch"));
        assert_eq!(std::fs::read_to_string(inst.dir().join("events/sched/sched_switch/enable")).unwrap(), "");
    }

    #[test]
    fn lost_events_are_any_non_zero_counter() {
        assert!(!LostEvents::default().any());
        assert!(LostEvents { unread: 1, ..Default::default() }.any());
    }
}

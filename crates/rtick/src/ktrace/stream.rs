//! A tracing session read by its owner, for as long as it runs: what
//! `rtick monitor --explain` keeps its recent window of events from.
//!
//! A [`Session`](super::Session) keeps every event of a run until it stops.
//! A monitor runs for months: its owner reads the buffers at its own pace
//! (ten times a second) and keeps what it needs. The instance is the same —
//! `instances/rtick-<pid>`, the `mono` clock, the same events and filters —
//! and goes away with the stream (drop), as a session's does.

use std::path::Path;

use super::events::{Event, Tracepoint};
use super::instance::Instance;
use super::reader::{drain, drain_up_to, Pipe, ReadCounts, ReaderSetup};
use super::session::{set_syscall_pids, LostEvents, Options, Prepared};
use super::stack::{StackTrigger, Stacks};
use super::Result;

/// A running trace of some CPUs, read on demand by [`Stream::read`].
#[derive(Debug)]
pub struct Stream {
    instance: Instance,
    pipes: Vec<Pipe>,
    setup: ReaderSetup,
    page: Vec<u8>,
    missing: Vec<&'static str>,
    events: &'static [Tracepoint],
    cpus: Vec<usize>,
    stacks: Stacks,
    /// Whether the other CPUs are recorded too, for the IPIs they send.
    senders: bool,
}

impl Stream {
    /// Creates `instances/rtick-<pid>` under `tracefs` and starts recording
    /// the events of `opts` on `cpus`. Nothing reads
    /// the buffers but [`Stream::read`]: call it often enough that a buffer
    /// of `opts.buffer_kb` does not fill in between (its `drain_interval` is
    /// not used).
    pub fn start(tracefs: &Path, cpus: &[usize], opts: &Options) -> Result<Stream> {
        let p = Prepared::new(tracefs, cpus, opts)?;
        let page = vec![0u8; p.setup.page.page_size];
        let pipes = p.files.into_iter().map(|(cpu, file)| Pipe::new(cpu, file)).collect();
        let stream = Stream {
            instance: p.instance,
            pipes,
            setup: p.setup,
            page,
            missing: p.missing,
            events: opts.events,
            cpus: p.cpus,
            stacks: p.stacks,
            senders: !p.senders.is_empty(),
        };
        stream.instance.write("tracing_on", "1")?;
        Ok(stream)
    }

    /// The measured CPUs, in order (the others recorded for the IPIs they
    /// send to them deliver those events to [`Stream::read`] too).
    pub fn cpus(&self) -> impl Iterator<Item = usize> + '_ {
        self.cpus.iter().copied()
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

    /// Whether kernel stacks can be recorded: asked for, and possible
    /// ([`Stream::stacks_unavailable`] says why not).
    pub fn has_stacks(&self) -> bool {
        self.stacks.ready()
    }

    /// Sets the stack trigger (see [`Options::stacks_from_start`]): every
    /// timer wake-up on the traced CPUs from now on records its stack.
    /// Cheap: `hrtimer_expire_entry` is already recorded. Does nothing
    /// without stacks ([`Stream::has_stacks`]).
    pub fn arm_stacks(&self) -> Result<()> {
        self.stacks.arm(&self.instance)
    }

    /// Removes the stack trigger. It returns after an RCU grace period
    /// (70–170 ms measured here): the caller waits that long.
    pub fn disarm_stacks(&self) -> Result<()> {
        self.stacks.disarm(&self.instance)
    }

    /// Reads everything each CPU's buffer holds now, handing every event to
    /// `sink` with its CPU, each CPU's in the ring buffer's order. Every
    /// event recorded before the call is read by it.
    pub fn read(&mut self, sink: &mut dyn FnMut(usize, Event)) -> Result<()> {
        let Stream { pipes, setup, page, .. } = self;
        for pipe in pipes {
            let cpu = pipe.cpu;
            drain(pipe, page, setup, &mut |e| sink(cpu, e))?;
        }
        Ok(())
    }

    /// Records from now on the kernel stack at each `event` that `filter`
    /// lets through (a [`StackTrigger::on`]), in place of the stack trigger
    /// the stream had. `Err`: why there are none (the addresses hidden by
    /// `kernel.kptr_restrict`, the event missing, the trigger refused), in
    /// one line; the stream goes on without.
    pub fn record_stacks(&mut self, event: Tracepoint, filter: &str) -> Result<(), String> {
        self.stacks.disarm(&self.instance).map_err(|e| e.to_string())?;
        let make = |_: &_| Ok(StackTrigger::on(event, filter));
        self.stacks = Stacks::set_up_on(&self.instance, &mut self.setup.decoder, &self.missing, true, event, make);
        self.stacks.unavailable().map_or(Ok(()), |why| Err(why.to_string()))
    }

    /// Records the system calls' exits of `pids` from now on, replacing
    /// the list, as [`Session::set_syscall_pids`](super::Session::set_syscall_pids) does.
    pub fn set_syscall_pids(&self, pids: &[i32]) -> Result<()> {
        set_syscall_pids(&self.instance, self.events, &self.missing, &self.cpus, pids, self.senders)
    }

    /// The events lost so far, all CPUs together: the buffers' counters
    /// now and what the reads counted (events still in a buffer count as
    /// unread: call it after a last [`Stream::read`] with recording off).
    pub fn lost(&self) -> Result<LostEvents> {
        let mut lost = LostEvents::default();
        for p in &self.pipes {
            lost.add_cpu(&self.lost_on(p.cpu)?);
        }
        Ok(lost)
    }

    /// The events lost so far on `cpu` (none if it is not traced), as
    /// [`Stream::lost`] counts them: its buffer's counters and what its
    /// reads counted.
    pub fn lost_on(&self, cpu: usize) -> Result<LostEvents> {
        let mut lost = LostEvents::default();
        if let Some(p) = self.pipes.iter().find(|p| p.cpu == cpu) {
            lost.add(&self.instance.buffer_stats(cpu)?, &p.counts);
        }
        Ok(lost)
    }

    /// Stops recording (the buffers keep what they hold, for a last read).
    pub fn stop_recording(&self) -> Result<()> {
        self.instance.write("tracing_on", "0")
    }

    /// [`Stream::read`], reading at most `max_pages` pages of each CPU's
    /// buffer: a reader slower than the trace then holds a bounded batch
    /// (the kernel drops what its buffer cannot hold, and counts it).
    /// Returns the CPUs whose buffer was not emptied: for them, only the
    /// events up to the last one handed over were read.
    pub fn read_up_to(&mut self, max_pages: u64, sink: &mut dyn FnMut(usize, Event)) -> Result<Vec<usize>> {
        let Stream { pipes, setup, page, .. } = self;
        let mut cut = Vec::new();
        for pipe in pipes {
            let cpu = pipe.cpu;
            if !drain_up_to(pipe, page, setup, max_pages, &mut |e| sink(cpu, e))? {
                cut.push(cpu);
            }
        }
        Ok(cut)
    }

    /// What the reads of `cpu` counted so far.
    pub fn counts(&self, cpu: usize) -> Option<ReadCounts> {
        self.pipes.iter().find(|p| p.cpu == cpu).map(|p| p.counts)
    }

    /// Stops recording and removes the instance. Idempotent; what drop
    /// does, for callers that want its errors.
    pub fn remove(&mut self) -> Result<()> {
        // The pipes must be closed before the rmdir.
        self.pipes.clear();
        self.instance.remove()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

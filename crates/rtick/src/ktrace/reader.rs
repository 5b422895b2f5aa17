//! The reader thread: drains each traced CPU's `trace_pipe_raw` while the
//! measurement runs, so the ring buffers never fill, and decodes the pages
//! into typed events kept in memory per CPU.
//!
//! It is an ordinary (not real-time) thread, kept off the measured CPUs
//! when the process may run elsewhere. It sleeps in `poll(2)` on the
//! non-blocking `trace_pipe_raw` files (the kernel wakes it when a buffer is
//! `buffer_percent` full) and on a socket that asks it to stop, and drains
//! every buffer at least once per drain interval. Each read takes one whole
//! page. Asked to stop, it drains what is left and returns.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;

use super::events::{Decoded, Decoder, Event};
use super::format::{PageLayout, RecordHeader};
use super::page::{Missed, Page};
use super::{Error, Result};
use crate::time::Nanos;

/// What the reader counted on one CPU, beside its events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCounts {
    /// Pages read.
    pub pages: u64,
    /// Data records found in them.
    pub records: u64,
    /// Events lost before a page, by the pages' missed-events counts.
    pub missed: u64,
    /// Pages flagged as following lost events without a count.
    pub missed_uncounted_pages: u64,
    /// Pages that did not decode (their remaining records are lost).
    pub corrupt_pages: u64,
    /// Records of an event not enabled by the session.
    pub unknown: u64,
    /// Records too short for their event's fields.
    pub malformed: u64,
}

impl ReadCounts {
    /// Losses of any kind the reads saw: events counted lost, pages marked
    /// as following lost events of unknown number, corrupt pages, malformed
    /// records. Non-zero means the events have gaps (`count` of
    /// [`super::LostEvents`] is the events known lost).
    pub fn losses(&self) -> u64 {
        self.missed + self.missed_uncounted_pages + self.corrupt_pages + self.malformed
    }
}

/// One CPU's events and counts, as the reader leaves them.
#[derive(Debug)]
pub struct CpuRead {
    /// The CPU.
    pub cpu: usize,
    /// Its events, in timestamp order.
    pub events: Vec<Event>,
    /// What the reader counted.
    pub counts: ReadCounts,
}

/// The running reader thread.
#[derive(Debug)]
pub struct Reader {
    stop: UnixStream,
    thread: JoinHandle<Result<Vec<CpuRead>>>,
}

/// How the reader decodes and how often it drains.
#[derive(Debug, Clone)]
pub struct ReaderSetup {
    /// The page header.
    pub page: PageLayout,
    /// The record header.
    pub header: RecordHeader,
    /// The typed events.
    pub decoder: Decoder,
    /// The longest the reader sleeps between drains.
    pub interval: Nanos,
    /// CPUs to keep the reader off (the measured ones).
    pub avoid_cpus: Vec<usize>,
}

impl Reader {
    /// Starts the thread on the opened (non-blocking) `trace_pipe_raw` of each CPU.
    pub fn spawn(files: Vec<(usize, File)>, setup: ReaderSetup) -> Result<Reader> {
        let (stop, wake) = UnixStream::pair().map_err(|e| Error::io("socketpair for the trace reader", e))?;
        wake.set_nonblocking(true).map_err(|e| Error::io("setting the trace reader's socket non-blocking", e))?;
        let thread = std::thread::Builder::new()
            .name("rtick-ktrace".into())
            .spawn(move || run(files, setup, wake))
            .map_err(|e| Error::io("spawning the trace reader thread", e))?;
        Ok(Reader { stop, thread })
    }

    /// Asks the thread to drain what is left and stop; returns what it read.
    pub fn finish(self) -> Result<Vec<CpuRead>> {
        // Closing our end makes the thread's end readable (at its end). A
        // write could raise SIGPIPE, which the CLI does not ignore, had the
        // thread already ended.
        let Reader { stop, thread } = self;
        drop(stop);
        match thread.join() {
            Ok(r) => r,
            Err(_) => Err(Error::Invalid("the trace reader thread panicked".into())),
        }
    }
}

/// One CPU's `trace_pipe_raw` and what was read from it: the reader
/// thread's and [`super::Stream`]'s.
#[derive(Debug)]
pub(super) struct Pipe {
    pub(super) cpu: usize,
    file: File,
    pub(super) counts: ReadCounts,
}

impl Pipe {
    pub(super) fn new(cpu: usize, file: File) -> Pipe {
        Pipe { cpu, file, counts: ReadCounts::default() }
    }
}

struct Cpu {
    pipe: Pipe,
    events: Vec<Event>,
}

fn run(files: Vec<(usize, File)>, mut setup: ReaderSetup, wake: UnixStream) -> Result<Vec<CpuRead>> {
    let _ = keep_off(&setup.avoid_cpus);
    let mut cpus: Vec<Cpu> =
        files.into_iter().map(|(cpu, file)| Cpu { pipe: Pipe::new(cpu, file), events: Vec::new() }).collect();
    let mut page = vec![0u8; setup.page.page_size];
    let mut ready = Vec::new();
    loop {
        let stop = {
            let mut fds: Vec<_> = cpus.iter().map(|c| c.pipe.file.as_fd()).collect();
            fds.push(wake.as_fd());
            crate::sys::poll_fd::wait_readable(&fds, setup.interval, &mut ready)
                .map_err(|e| Error::io("poll on trace_pipe_raw", e))?;
            ready.last().copied().unwrap_or(false)
        };
        // Every buffer is drained on each wake-up, ready or not: poll only
        // says a buffer passed `buffer_percent`, and the interval bounds how
        // long any event waits.
        for c in &mut cpus {
            let events = &mut c.events;
            drain(&mut c.pipe, &mut page, &mut setup, &mut |e| events.push(e))?;
        }
        if stop {
            break;
        }
    }
    Ok(cpus
        .into_iter()
        .map(|mut c| {
            // Stable: events of equal time keep the ring buffer's order.
            c.events.sort_by_key(|e| e.ts);
            CpuRead { cpu: c.pipe.cpu, events: c.events, counts: c.pipe.counts }
        })
        .collect())
}

/// Reads `c`'s buffer page by page until it is empty, handing each event
/// to `sink` in the ring buffer's order.
pub(super) fn drain(c: &mut Pipe, page: &mut [u8], setup: &mut ReaderSetup, sink: &mut dyn FnMut(Event)) -> Result<()> {
    drain_up_to(c, page, setup, u64::MAX, sink).map(drop)
}

/// [`drain`], stopping after `max_pages` pages: whether the buffer was emptied.
pub(super) fn drain_up_to(
    c: &mut Pipe,
    page: &mut [u8],
    setup: &mut ReaderSetup,
    max_pages: u64,
    sink: &mut dyn FnMut(Event),
) -> Result<bool> {
    for _ in 0..max_pages {
        let n = match c.file.read(page) {
            Ok(0) => return Ok(true),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(format!("reading per_cpu/cpu{}/trace_pipe_raw", c.cpu), e)),
        };
        decode_page(&page[..n], &mut c.counts, setup, sink);
    }
    Ok(false)
}

fn decode_page(bytes: &[u8], counts: &mut ReadCounts, setup: &mut ReaderSetup, sink: &mut dyn FnMut(Event)) {
    counts.pages += 1;
    let Ok(p) = Page::parse(&setup.page, &setup.header, bytes) else {
        counts.corrupt_pages += 1;
        return;
    };
    match p.missed {
        Missed::None => {}
        Missed::Count(n) => counts.missed += n,
        Missed::Unknown => counts.missed_uncounted_pages += 1,
    }
    for rec in p.records() {
        let Ok(rec) = rec else {
            counts.corrupt_pages += 1;
            return;
        };
        counts.records += 1;
        match setup.decoder.decode(&rec) {
            Decoded::Event(e) => sink(e),
            Decoded::Unknown(_) => counts.unknown += 1,
            Decoded::Malformed(_) => counts.malformed += 1,
        }
    }
}

/// Moves the calling thread off `avoid` when it may run elsewhere (threads
/// it starts later inherit that); the reader then never competes with the
/// measured threads for their CPUs. Returns the CPUs it runs on now, `None`
/// when it stays put. Best effort: staying put costs the measurement some
/// noise, not its truth.
pub(crate) fn keep_off(avoid: &[usize]) -> Option<Vec<usize>> {
    let allowed = crate::sys::sched::affinity().ok()?;
    let elsewhere: Vec<usize> = allowed.into_iter().filter(|c| !avoid.contains(c)).collect();
    (!elsewhere.is_empty() && crate::sys::sched::set_affinity(&elsewhere).is_ok()).then_some(elsewhere)
}

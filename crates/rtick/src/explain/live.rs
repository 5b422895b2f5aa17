//! Explaining wake-ups while the loop runs, for as long as it runs
//! (`rtick monitor --explain`).
//!
//! `measure --explain` keeps every event of a run and explains it at the
//! end. A monitor cannot keep months of events; it does not need them
//! either: a wake-up is explained by the events from its thread's previous
//! wake-up to its own clock read. [`Recent`] keeps each traced CPU's events
//! of the last `keep` (bounded by a count, so memory is flat however busy
//! the CPU), the IPIs sent to them from the other CPUs (their send events,
//! in the one matcher [`Senders`], bounded by `keep` and its own count) and
//! the CPUs' steal time, and explains one wake-up at a time with the
//! analysis `measure --explain` uses ([`Analysis`]); [`Live`] fills it from
//! a [`Stream`] read by the caller's thread.
//!
//! The order that makes it exact: the caller takes the measuring threads'
//! rows first, then [`Live::read`]s the trace. A row exists only after its
//! wake-up, so every event of that wake-up was recorded before the read
//! began, and the read takes everything recorded before it began.
//!
//! ```text
//!  window held        ├──────────────── keep ────────────────┤
//!  one explanation          prev.planned−period ─ … ─ wake.actual
//! ```

use std::collections::VecDeque;
use std::path::Path;

use super::input::{CpuTrace, Recorded};
use super::off_cpu::OffCpu;
use super::{Analysis, Matched, Spike, StealSample, Timeline, Unmatched};
use crate::clock::ClockId;
use crate::ktrace::{self, Event, EventKind, IdleWatch, Options, Senders, Stream, Tracepoint};
use crate::time::{Nanos, Time};

/// Why a wake-up over the threshold has no breakdown.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Unexplained {
    /// Its events are not among those held: before the trace began, or
    /// dropped from the window before the caller came to the wake-up.
    NotHeld,
    /// The kernel lost events between the thread's previous wake-up and this one.
    EventsLost,
    /// Its events were there but did not match ([`Unmatched`]).
    Unmatched(Unmatched),
    /// More spikes came in one read than are explained: it is counted only.
    Crowded,
}

impl Unexplained {
    /// One line for the user.
    pub fn reason(self) -> &'static str {
        match self {
            Unexplained::NotHeld => {
                "its kernel events are not held (before the trace began, or dropped from the window before the collector came to it)"
            }
            Unexplained::EventsLost => "the kernel lost trace events around it (a trace buffer overflowed)",
            Unexplained::Unmatched(u) => u.reason(),
            Unexplained::Crowded => "more spikes came at once than are explained (the first of each read are)",
        }
    }

    /// A token for a metric's label.
    pub fn token(self) -> &'static str {
        match self {
            Unexplained::NotHeld => "not_held",
            Unexplained::EventsLost => "events_lost",
            Unexplained::Unmatched(Unmatched::DidNotSleep) => "did_not_sleep",
            Unexplained::Unmatched(Unmatched::NoWaking) => "no_waking",
            Unexplained::Unmatched(Unmatched::NoTimer) => "no_timer",
            Unexplained::Crowded => "too_many",
        }
    }
}

/// Stretches of lost events a CPU's window remembers: each is a loss the
/// reads saw, and a window of seconds rarely holds more than a few.
const GAPS: usize = 64;

/// How far before a thread's stretch [`Recent::off_cpu`] reads to know
/// what ran on a CPU when the thread left it (and whether it was idle).
pub const OFF_CPU_LOOKBACK: Nanos = Nanos::from_ms(100);

/// One traced CPU's recent events.
#[derive(Debug)]
struct CpuWindow {
    cpu: usize,
    /// In the ring buffer's order (time order).
    events: VecDeque<Event>,
    /// Every event of this CPU since this time is held (or was lost in a gap).
    held_from: Time,
    /// Stretches (after, up to) in which events were lost, oldest first.
    gaps: VecDeque<(Time, Time)>,
}

impl CpuWindow {
    /// Its switches from [`OFF_CPU_LOOKBACK`] before `from` to `to`, with
    /// those out of idle that were not recorded inferred (`tid`'s events
    /// name it), and `tid`'s wake-ups.
    fn switches(&self, tid: i32, from: Time, to: Time) -> Vec<Event> {
        let lo = self.events.partition_point(|e| e.ts < from - OFF_CPU_LOOKBACK);
        let hi = self.events.partition_point(|e| e.ts <= to).max(lo);
        // From the last switch before the slice: who ran, and whether idle.
        let lo = self.events.range(..lo).rposition(|e| matches!(e.kind, EventKind::SchedSwitch(_))).unwrap_or(lo);
        let (mut idle, mut out) = (IdleWatch::default(), Vec::new());
        for e in self.events.range(lo..hi) {
            if let Some((at, sw)) = idle.missed(e, tid) {
                idle.switched(at, &sw);
                out.push(Event { ts: at, pid: 0, flags: 0, preempt_count: 0, kind: EventKind::SchedSwitch(sw) });
            }
            match &e.kind {
                EventKind::SchedSwitch(sw) => {
                    idle.switched(e.ts, sw);
                    out.push(e.clone());
                }
                EventKind::SchedWakeup(w) if w.pid == tid => out.push(e.clone()),
                _ => {}
            }
        }
        out
    }

    /// Drops the oldest event: from then on, only what follows it is held.
    fn drop_oldest(&mut self) {
        if let Some(old) = self.events.pop_front() {
            self.held_from = self.held_from.max(old.ts);
        }
    }
}

/// The recent events of the traced CPUs and their steal time, bounded.
#[derive(Debug)]
pub struct Recent {
    cpus: Vec<CpuWindow>,
    /// The IPIs sent to them (any CPU's send events), to name each IPI's sender.
    senders: Senders,
    /// The index in `cpus` of each CPU number's window: one lookup per event.
    index: Vec<Option<usize>>,
    steal: Vec<StealSample>,
    keep: Nanos,
    cap: usize,
}

impl Recent {
    /// Windows for `cpus`, each keeping the events of the last `keep` but
    /// never more than `cap` of them (the oldest go first); the trace began
    /// at `began`. A window's memory grows by doubling from 2^14 events:
    /// `cap` is rounded down to a power of two, so that it never takes more
    /// than `cap` events' room.
    pub fn new(cpus: &[usize], keep: Nanos, cap: usize, began: Time) -> Recent {
        let cap = Recent::cap(cap);
        let cpus = cpus
            .iter()
            .map(|&cpu| CpuWindow {
                cpu,
                // Room for a quiet CPU at once; a busier one grows to `cap`.
                events: VecDeque::with_capacity(cap.min(1 << 14)),
                held_from: began,
                gaps: VecDeque::with_capacity(GAPS),
            })
            .collect::<Vec<CpuWindow>>();
        let mut index = vec![None; cpus.iter().map(|w| w.cpu + 1).max().unwrap_or(0)];
        for (i, w) in cpus.iter().enumerate() {
            index[w.cpu] = Some(i);
        }
        Recent { cpus, senders: Senders::new(true), index, steal: Vec::new(), keep, cap }
    }

    /// The events a window of at most `cap` holds: `cap` rounded down to a
    /// power of two.
    pub fn cap(cap: usize) -> usize {
        1usize << cap.max(1).ilog2()
    }

    fn window(&mut self, cpu: usize) -> Option<&mut CpuWindow> {
        let i = (*self.index.get(cpu)?)?;
        self.cpus.get_mut(i)
    }

    fn window_of(&self, cpu: usize) -> Option<&CpuWindow> {
        self.cpus.get((*self.index.get(cpu)?)?)
    }

    /// Adds an event of `cpu` (in time order); a full window drops its
    /// oldest. A send of an IPI is kept whichever CPU sent it (the other
    /// CPUs record only those, to the traced ones).
    pub fn push(&mut self, cpu: usize, e: Event) {
        self.senders.event(cpu, &e);
        let cap = self.cap;
        let Some(w) = self.window(cpu) else { return };
        if w.events.len() >= cap {
            w.drop_oldest();
        }
        w.events.push_back(e);
    }

    /// Events of `cpu` were lost somewhere between `after` and `upto`.
    pub fn lost(&mut self, cpu: usize, after: Time, upto: Time) {
        let Some(w) = self.window(cpu) else { return };
        if w.gaps.len() == GAPS {
            w.gaps.pop_front();
        }
        w.gaps.push_back((after, upto));
    }

    /// Adds a steal-time sample (in time order).
    pub fn push_steal(&mut self, s: StealSample) {
        self.steal.push(s);
    }

    /// Forgets what is older than `keep` before `now`: events, gaps, and
    /// steal samples (one per CPU is kept before the window: the sample
    /// before a wake-up's interval).
    pub fn advance(&mut self, now: Time) {
        let oldest = now - self.keep;
        self.senders.forget_before(oldest);
        for w in &mut self.cpus {
            while w.events.front().is_some_and(|e| e.ts < oldest) {
                w.drop_oldest();
            }
            while w.gaps.front().is_some_and(|g| g.1 < oldest) {
                w.gaps.pop_front();
            }
        }
        // Per CPU, the latest sample before the window stays: the one before
        // the interval of a wake-up at the window's start.
        let from: Vec<(u32, Time)> = self
            .cpus
            .iter()
            .map(|w| {
                let before = self.steal.iter().filter(|s| s.cpu == w.cpu as u32 && s.at < oldest).map(|s| s.at);
                (w.cpu as u32, before.max().unwrap_or(oldest))
            })
            .collect();
        self.steal.retain(|s| from.iter().any(|&(cpu, t)| cpu == s.cpu && s.at >= t));
    }

    /// How long the window lasts: what is older than this before the
    /// latest read is forgotten.
    pub fn keep(&self) -> Nanos {
        self.keep
    }

    /// Events held, all CPUs together.
    pub fn held(&self) -> usize {
        self.cpus.iter().map(|w| w.events.len()).sum()
    }

    /// Explains wake-up `wake`, given its thread's previous wake-up `prev`
    /// (same tid; `None` when it is not known), the loop's `period`, and the
    /// CPU its thread is pinned to (`None`: any traced CPU): only that CPU's
    /// events are read, and only its losses count.
    pub fn explain(
        &self,
        wake: Recorded,
        prev: Option<Recorded>,
        period: Nanos,
        on: Option<usize>,
    ) -> Result<Spike, Unexplained> {
        let prev = prev.filter(|p| p.tid == wake.tid && p.actual <= wake.actual);
        // Its events lie after the previous wake-up (or within the last
        // periods before its deadline when that is not known) …
        let needed = prev.map_or(wake.planned - period - period, |p| p.actual.min(wake.planned));
        // … and the timer it woke by may have been armed during the
        // previous wake-up: the slice reaches a period before that one.
        let from = prev.map_or(needed, |p| p.planned.min(needed)) - period;
        let windows: Vec<&CpuWindow> = self.cpus.iter().filter(|w| on.is_none_or(|c| c == w.cpu)).collect();
        if windows.iter().any(|w| w.held_from > from) {
            return Err(Unexplained::NotHeld);
        }
        if windows.iter().any(|w| w.gaps.iter().any(|&(a, b)| a < wake.actual && b > from)) {
            return Err(Unexplained::EventsLost);
        }
        let slices: Vec<(u32, Vec<Event>)> = windows
            .iter()
            .map(|w| {
                let lo = w.events.partition_point(|e| e.ts < from);
                let hi = w.events.partition_point(|e| e.ts <= wake.actual);
                (w.cpu as u32, w.events.range(lo..hi.max(lo)).cloned().collect())
            })
            .collect();
        let traces: Vec<CpuTrace<'_>> = slices.iter().map(|(cpu, events)| CpuTrace { cpu: *cpu, events }).collect();
        let wakes: Vec<Recorded> = prev.into_iter().chain([wake]).collect();
        let analysis = Analysis::with_senders(&traces, &wakes, Some(period), &self.senders);
        let last = wakes.len() - 1;
        match analysis.matched()[last] {
            Err(u) => Err(Unexplained::Unmatched(u)),
            Ok(_) => analysis.spike(&wakes, last, &self.steal).ok_or(Unexplained::NotHeld),
        }
    }
}

impl Recent {
    /// Explains a wait already matched to its events (`rtick attach`'s:
    /// `wake.planned` the time it asked for, `wake.actual` its system
    /// call's exit, `m` its timer's expiry, waking and switch-in) from the
    /// window of the CPU it was switched in on, read from `from` (when its
    /// thread last ran before the wait: the timeline then knows who had the
    /// CPU at the deadline) or from as far back as the window holds.
    pub fn explain_matched(&self, wake: Recorded, m: Matched, from: Time) -> Result<Spike, Unexplained> {
        let w = self.window_of(m.cpu as usize).ok_or(Unexplained::NotHeld)?;
        let needed = wake.planned.min(m.expired);
        if w.held_from > needed {
            return Err(Unexplained::NotHeld);
        }
        let from = from.min(needed).max(w.held_from);
        if w.gaps.iter().any(|&(a, b)| a < wake.actual && b > from) {
            return Err(Unexplained::EventsLost);
        }
        let lo = w.events.partition_point(|e| e.ts < from);
        let hi = w.events.partition_point(|e| e.ts <= wake.actual).max(lo);
        let events: Vec<Event> = w.events.range(lo..hi).cloned().collect();
        let tl = Timeline::build_on(&events, wake.actual, m.cpu as usize, &self.senders);
        Ok(Spike::explain(wake, m, &tl, &self.steal))
    }

    /// Where thread `tid`'s time went from `from` to `to`, two instants it
    /// ran at ([`OffCpu::of`]), from every traced CPU's switches (those out
    /// of idle the trace lacks inferred: [`IdleWatch`]) and its wake-ups;
    /// what ran while it waited is told from up to [`OFF_CPU_LOOKBACK`]
    /// before `from`. Reads only that slice of the windows.
    pub fn off_cpu(&self, tid: i32, from: Time, to: Time) -> Result<OffCpu, Unexplained> {
        if self.cpus.iter().any(|w| w.held_from > from) {
            return Err(Unexplained::NotHeld);
        }
        // A loss in the slice read (what ran before `from` too) spoils it.
        let read_from = from - OFF_CPU_LOOKBACK;
        if self.cpus.iter().any(|w| w.gaps.iter().any(|&(a, b)| a < to && b > read_from)) {
            return Err(Unexplained::EventsLost);
        }
        let slices: Vec<(u32, Vec<Event>)> =
            self.cpus.iter().map(|w| (w.cpu as u32, w.switches(tid, from, to))).collect();
        let traces: Vec<CpuTrace<'_>> = slices.iter().map(|(cpu, events)| CpuTrace { cpu: *cpu, events }).collect();
        OffCpu::of(tid, from, to, &traces).ok_or(Unexplained::NotHeld)
    }
}

impl Analysis {
    /// [`Analysis::every`], each IPI named with its sender from `senders`
    /// (the window's, which holds the sends of CPUs not in `cpus`).
    pub fn with_senders(
        cpus: &[CpuTrace<'_>],
        wakes: &[Recorded],
        period: Option<Nanos>,
        senders: &Senders,
    ) -> Analysis {
        let end = cpus.iter().filter_map(|c| c.events.last()).map(|e| e.ts).max().unwrap_or(Time(0));
        let timelines =
            cpus.iter().map(|c| (c.cpu, Timeline::build_on(c.events, end, c.cpu as usize, senders))).collect();
        Analysis { timelines, matched: super::match_all_every(cpus, wakes, period) }
    }
}

/// A trace of the measured CPUs read as the loop runs, and its recent window.
#[derive(Debug)]
pub struct Live {
    stream: Stream,
    recent: Recent,
    /// Each CPU's count of losses at the last read.
    losses: Vec<(usize, u64)>,
    /// When the last read began.
    last_read: Time,
    /// Each CPU's latest event read, by CPU number.
    seen: Vec<Option<Time>>,
}

impl Live {
    /// Starts tracing `cpus` (an instance of rtick's own under `tracefs`,
    /// with kernel buffers of `buffer_kb` a CPU), keeping the events of the
    /// last `keep`, at most [`Recent::cap`]`(cap)` per CPU.
    pub fn start(tracefs: &Path, cpus: &[usize], buffer_kb: usize, keep: Nanos, cap: usize) -> ktrace::Result<Live> {
        let opts = Options { buffer_kb, events: &Tracepoint::EXPLAIN, ..Options::default() };
        Live::start_with(tracefs, cpus, &opts, keep, cap)
    }

    /// [`Live::start`] recording what `opts` says (`rtick attach`: its
    /// events, the system calls' exits of its threads).
    pub fn start_with(tracefs: &Path, cpus: &[usize], opts: &Options, keep: Nanos, cap: usize) -> ktrace::Result<Live> {
        let began = ClockId::Monotonic.now();
        let stream = Stream::start(tracefs, cpus, opts)?;
        let cpus: Vec<usize> = stream.cpus().collect();
        let seen = vec![None; cpus.iter().max().map_or(0, |c| c + 1)];
        let recent = Recent::new(&cpus, keep, cap, began);
        let mut live = Live { recent, losses: Vec::new(), stream, last_read: began, seen };
        live.losses = live.loss_counts();
        live.sample_steal();
        Ok(live)
    }

    /// Reads every event recorded so far into the window, samples steal
    /// time and forgets what is older than the window before the previous
    /// read: the wake-ups the caller took since then (their rows waited in
    /// its rings, for long after a stall) keep their events, within the
    /// count the window holds. From the caller's thread, ten times a second
    /// or so: a kernel buffer of [`ktrace::DEFAULT_BUFFER_KB`] holds about a
    /// second of a 20 kHz loop.
    pub fn read(&mut self) -> ktrace::Result<()> {
        self.read_with(None, &mut |_, _| {}).map(drop)
    }

    /// Reads the events recorded so far, at most `max_pages` pages of each
    /// CPU's buffer, handing each to `sink` with its CPU (each CPU's in
    /// order) instead of the window: the caller puts them there
    /// ([`Live::recent_mut`]) in its own order (`rtick attach`: all CPUs'
    /// merged, so that a wait's events are held when it ends, however much
    /// one read brings), and advances it ([`Recent::advance`]) as it goes.
    /// Then as [`Live::read`]: losses noted, steal sampled. Returns the time before which every
    /// event has been read (when the read began, or earlier when a buffer
    /// held more than `max_pages`), and whether every buffer was emptied.
    pub fn read_each(&mut self, max_pages: u64, sink: &mut dyn FnMut(usize, Event)) -> ktrace::Result<(Time, bool)> {
        self.read_with(Some(max_pages), sink)
    }

    /// A read, its events into the window, or to `sink` with at most
    /// `max_pages` a CPU.
    fn read_with(
        &mut self,
        max_pages: Option<u64>,
        sink: &mut dyn FnMut(usize, Event),
    ) -> ktrace::Result<(Time, bool)> {
        let began = ClockId::Monotonic.now();
        let before: Vec<Option<Time>> = self.losses.iter().map(|&(cpu, _)| self.last_seen(cpu)).collect();
        let (seen, recent) = (&mut self.seen, &mut self.recent);
        let mut take = |cpu: usize, e: Event| {
            if cpu >= seen.len() {
                // A CPU recorded for the IPIs it sends to the traced ones.
                seen.resize(cpu + 1, None);
            }
            seen[cpu] = Some(e.ts);
            match max_pages {
                None => recent.push(cpu, e),
                Some(_) => sink(cpu, e),
            }
        };
        let cut = match max_pages {
            None => self.stream.read(&mut take).map(|()| Vec::new())?,
            Some(n) => self.stream.read_up_to(n, &mut take)?,
        };
        let now = self.loss_counts();
        for (((cpu, was), (_, is)), after) in self.losses.iter().zip(&now).zip(before) {
            if is > was {
                // Somewhere in what this read brought (or just before it).
                let upto = self.last_seen(*cpu).unwrap_or(began).max(began);
                self.recent.lost(*cpu, after.unwrap_or(Time(i64::MIN)), upto);
            }
        }
        self.losses = now;
        self.sample_steal();
        if max_pages.is_none() {
            self.recent.advance(self.last_read);
        }
        self.last_read = began;
        let read_to = cut.iter().filter_map(|&c| self.last_seen(c)).fold(began, Time::min);
        Ok((read_to, cut.is_empty()))
    }

    /// The latest event of `cpu` read.
    fn last_seen(&self, cpu: usize) -> Option<Time> {
        *self.seen.get(cpu)?
    }

    /// What the reads of each CPU ever lost ([`ktrace::ReadCounts::losses`]).
    fn loss_counts(&self) -> Vec<(usize, u64)> {
        self.stream.cpus().map(|cpu| (cpu, self.stream.counts(cpu).unwrap_or_default().losses())).collect()
    }

    /// Losses of any kind so far, all CPUs together: events known lost, and
    /// one for each loss of unknown size. Non-zero means some spikes could
    /// not be explained ([`Unexplained::EventsLost`]).
    pub fn losses(&self) -> u64 {
        self.losses.iter().map(|&(_, n)| n).sum()
    }

    fn sample_steal(&mut self) {
        let traced: Vec<usize> = self.stream.cpus().collect();
        StealSample::sample(&traced).into_iter().for_each(|s| self.recent.push_steal(s));
    }

    /// The window, to explain wake-ups with.
    pub fn recent(&self) -> &Recent {
        &self.recent
    }

    /// The window, to put the events of [`Live::read_each`] in.
    pub fn recent_mut(&mut self) -> &mut Recent {
        &mut self.recent
    }

    /// The trace's own stream (its instance, the events this kernel lacks).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::testing::{cycle, ev, switch, IDLE, ME, MEE};
    use crate::ktrace::EventKind as K;

    /// Four clock_nanosleep cycles of [`ME`] on CPU 1, period 1000: the
    /// third one late by an IRQ handler on the CPU (its timer at 3400).
    fn four_cycles() -> (Vec<Event>, Vec<Recorded>) {
        let mut evs = cycle(0, 1000, 1002, 1003, 1010);
        evs.extend(cycle(1020, 2000, 2002, 2003, 2010));
        evs.extend(cycle(2020, 3000, 3400, 3401, 3410));
        evs.push(ev(3010, 0, K::IrqHandlerEntry { irq: 11, name: "virtio0".into() }));
        evs.push(ev(3390, 0, K::IrqHandlerExit { irq: 11, ret: 1 }));
        evs.extend(cycle(3420, 4000, 4002, 4003, 4010));
        evs.sort_by_key(|e| e.ts);
        let rec = |cycle: u64, planned: i64, actual: i64| Recorded {
            tid: ME,
            cycle,
            planned: Time(planned),
            actual: Time(actual),
        };
        (evs, vec![rec(1, 1000, 1015), rec(2, 2000, 2015), rec(3, 3000, 3415), rec(4, 4000, 4015)])
    }

    fn filled(evs: &[Event], keep: Nanos, cap: usize) -> Recent {
        let mut r = Recent::new(&[1], keep, cap, Time(0));
        evs.iter().for_each(|e| r.push(1, e.clone()));
        r
    }

    /// From the window, a wake-up gets the breakdown the whole run's
    /// analysis (measure --explain's) gives it.
    #[test]
    fn a_wake_up_explained_from_the_window_is_explained_as_from_the_whole_run() {
        let (evs, wakes) = four_cycles();
        let whole = Analysis::new(&[CpuTrace { cpu: 1, events: &evs }], &wakes);
        let r = filled(&evs, Nanos::from_secs(1), 1 << 10);
        for i in 1..wakes.len() {
            let want = whole.spike(&wakes, i, &[]).unwrap();
            let got = r.explain(wakes[i], Some(wakes[i - 1]), Nanos(1000), Some(1)).unwrap();
            assert_eq!((got.phases, got.cause.clone(), got.culprits.clone()), (want.phases, want.cause, want.culprits));
            assert_eq!(got.phases.total(), wakes[i].actual - wakes[i].planned);
        }
        let late = r.explain(wakes[2], Some(wakes[1]), Nanos(1000), Some(1)).unwrap();
        assert_eq!((late.largest_phase(), late.cause.token()), ("irq_delay", "interrupt"));
        // Without the previous wake-up: the last periods before the deadline bound it.
        assert_eq!(r.explain(wakes[2], None, Nanos(1000), Some(1)).unwrap().phases, late.phases);
        // Another thread's previous wake-up is no bound for this one.
        let other = Recorded { tid: ME + 1, ..wakes[1] };
        assert_eq!(r.explain(wakes[2], Some(other), Nanos(1000), Some(1)).unwrap().phases, late.phases);
    }

    /// A wait matched elsewhere (`rtick attach`'s follower) gets, from the
    /// window, the verdict the whole run's analysis gives it; unless its
    /// events left the window or some were lost.
    #[test]
    fn a_matched_wait_is_explained_from_the_window_as_from_the_whole_run() {
        let (evs, wakes) = four_cycles();
        let whole = Analysis::new(&[CpuTrace { cpu: 1, events: &evs }], &wakes);
        let r = filled(&evs, Nanos::from_secs(1), 1 << 10);
        for i in 1..wakes.len() {
            let want = whole.spike(&wakes, i, &[]).unwrap();
            let m = whole.matched()[i].unwrap();
            let got = r.explain_matched(wakes[i], m, wakes[i - 1].actual).unwrap();
            assert_eq!((got.phases, got.cause.clone(), got.culprits.clone()), (want.phases, want.cause, want.culprits));
        }
        let m = whole.matched()[2].unwrap();
        let late = r.explain_matched(wakes[2], m, wakes[1].actual).unwrap();
        assert_eq!((late.largest_phase(), late.cause.token()), ("irq_delay", "interrupt"));
        assert!(
            late.line_as("requested +3.000 µs").starts_with("requested +3.000 µs  415 ns = IRQ delay"),
            "{}",
            late.line()
        );
        let mut old = filled(&evs, Nanos(500), 1 << 10);
        old.advance(Time(4000));
        assert_eq!(old.explain_matched(wakes[2], m, wakes[1].actual).unwrap_err(), Unexplained::NotHeld);
        let mut lost = filled(&evs, Nanos::from_secs(1), 1 << 10);
        lost.lost(1, Time(3100), Time(3200));
        assert_eq!(lost.explain_matched(wakes[2], m, wakes[1].actual).unwrap_err(), Unexplained::EventsLost);
        assert!(lost.explain_matched(wakes[1], whole.matched()[1].unwrap(), wakes[0].actual).is_ok());
    }

    #[test]
    fn events_older_than_the_window_or_beyond_its_count_are_not_held() {
        let (evs, wakes) = four_cycles();
        let mut r = filled(&evs, Nanos(1500), 1 << 10);
        r.advance(Time(3500));
        // Kept: from 2000 on. Cycle 4 reads from 2000 (a period before cycle
        // 3's deadline): held; cycle 3 from 1000: not.
        assert!(r.explain(wakes[3], Some(wakes[2]), Nanos(1000), Some(1)).is_ok());
        assert_eq!(r.explain(wakes[2], Some(wakes[1]), Nanos(1000), Some(1)).unwrap_err(), Unexplained::NotHeld);
        assert!(r.held() < evs.len());
        // A window of 10 events holds the last 8 (a power of two), whatever their age.
        let r = filled(&evs, Nanos::from_secs(1), 10);
        assert_eq!(r.held(), 8);
        assert_eq!((Recent::cap(1), Recent::cap(1000), Recent::cap(1024), Recent::cap(0)), (1, 512, 1024, 1));
        assert_eq!(r.explain(wakes[2], Some(wakes[1]), Nanos(1000), Some(1)).unwrap_err(), Unexplained::NotHeld);
        // Before the trace began.
        let r = Recent::new(&[1], Nanos::from_secs(1), 1 << 10, Time(2500));
        assert_eq!(r.explain(wakes[1], Some(wakes[0]), Nanos(1000), Some(1)).unwrap_err(), Unexplained::NotHeld);
    }

    #[test]
    fn a_loss_between_the_previous_wake_up_and_this_one_leaves_it_unexplained() {
        let (evs, wakes) = four_cycles();
        let mut r = filled(&evs, Nanos::from_secs(1), 1 << 10);
        r.lost(1, Time(2600), Time(2700));
        assert_eq!(r.explain(wakes[2], Some(wakes[1]), Nanos(1000), Some(1)).unwrap_err(), Unexplained::EventsLost);
        // Cycle 4 reads from 2000 (a period before cycle 3's deadline, where
        // its timer may have been armed): the loss is in what it reads.
        assert_eq!(r.explain(wakes[3], Some(wakes[2]), Nanos(1000), Some(1)).unwrap_err(), Unexplained::EventsLost);
        assert!(r.explain(wakes[1], Some(wakes[0]), Nanos(1000), Some(1)).is_ok(), "the loss was after it");
        // A loss on another CPU is not this pinned thread's; unpinned, it is.
        let mut r = filled(&evs, Nanos::from_secs(1), 1 << 10);
        r.cpus.push(CpuWindow { cpu: 0, events: VecDeque::new(), held_from: Time(0), gaps: VecDeque::new() });
        r.index = vec![Some(1), Some(0)];
        r.lost(0, Time(3100), Time(3200));
        assert!(r.explain(wakes[2], Some(wakes[1]), Nanos(1000), Some(1)).is_ok());
        assert_eq!(r.explain(wakes[2], Some(wakes[1]), Nanos(1000), None).unwrap_err(), Unexplained::EventsLost);
    }

    #[test]
    fn a_wait_that_did_not_sleep_says_so() {
        let (evs, wakes) = four_cycles();
        let r = filled(&evs, Nanos::from_secs(1), 1 << 10);
        // A catch-up wake-up right after cycle 3: no switch in between.
        let back_to_back = Recorded { cycle: 5, planned: Time(3100), actual: Time(3416), ..wakes[2] };
        assert_eq!(
            r.explain(back_to_back, Some(wakes[2]), Nanos(1000), Some(1)).unwrap_err(),
            Unexplained::Unmatched(Unmatched::DidNotSleep)
        );
        assert_eq!(Unexplained::Unmatched(Unmatched::DidNotSleep).token(), "did_not_sleep");
    }

    /// Cycle 3 of [`four_cycles`] late by a call-function IPI (3010–3390)
    /// that CPU 0 sent, for a function it queued: the send events, recorded
    /// on CPU 0, pushed into the window as read.
    fn late_by_an_ipi() -> (Vec<(usize, Event)>, Vec<Recorded>) {
        use crate::ktrace::{Ipi, IpiSend, Targets};
        let (evs, wakes) = four_cycles();
        let ipi = Ipi::CallFunctionSingle;
        let mut all: Vec<(usize, Event)> = evs
            .into_iter()
            .map(|e| match e.kind {
                K::IrqHandlerEntry { .. } => ev(e.ts.0, 0, K::IpiEntry { ipi, vector: 251 }),
                K::IrqHandlerExit { .. } => ev(e.ts.0, 0, K::IpiExit { ipi, vector: 251 }),
                _ => e,
            })
            .map(|e| (1, e))
            .collect();
        let send = IpiSend { targets: Targets::Cpu(1), callsite: 0x10, callback: 0xd0 };
        // CPU 0: a sleep's switch (not this window's), and the send, read after CPU 1's events.
        all.push((0, ev(2990, SENDER, switch(IDLE, MEE))));
        all.push((0, ev(3000, SENDER, K::CsdQueue { cpu: 1, func: 0xf1 })));
        all.push((0, ev(3005, SENDER, K::IpiSend(send))));
        (all, wakes)
    }

    /// A task of CPU 0 that no process has (its name is not read).
    const SENDER: i32 = 4_100_000;

    #[test]
    fn an_ipi_in_the_window_is_named_with_its_sender_from_another_cpu() {
        use crate::explain::{Cause, Culprit};
        use crate::ktrace::Ipi;
        let (all, wakes) = late_by_an_ipi();
        let mut r = Recent::new(&[1], Nanos::from_secs(1), 1 << 10, Time(0));
        all.iter().for_each(|(cpu, e)| r.push(*cpu, e.clone()));
        assert_eq!(r.held(), all.len() - 3, "CPU 0's events are not held in a window");
        let whole = Analysis::new(
            &[CpuTrace { cpu: 1, events: &r.cpus[0].events.iter().cloned().collect::<Vec<_>>() }],
            &wakes,
        );
        let m = whole.matched()[2].unwrap();
        for spike in [
            r.explain(wakes[2], Some(wakes[1]), Nanos(1000), Some(1)).unwrap(),
            r.explain_matched(wakes[2], m, wakes[1].actual).unwrap(),
        ] {
            let Cause::InterruptWork(Culprit::Ipi(Ipi::CallFunctionSingle, Some(s))) = &spike.cause else {
                panic!("{:?}", spike.cause)
            };
            assert_eq!((s.cpu, s.pid, s.work), (0, SENDER, 0xf1), "CPU 0's task, the function it queued");
            assert!(spike.line().contains("call_function_single IPI ("), "{}", spike.line());
            assert!(spike.line().contains(&format!(") from CPU 0 task {SENDER}")), "{}", spike.line());
        }
        // The sends leave with the window: a wake-up explained after is not named by them.
        r.advance(Time(3005) + Nanos::from_secs(1) + Nanos::from_ms(51));
        assert_eq!(r.senders.held(), 0);
    }

    #[test]
    fn the_sends_kept_are_bounded_however_many_come() {
        use crate::ktrace::{IpiSend, Targets, MAX_SENDS};
        let mut r = Recent::new(&[1], Nanos::from_secs(1), 1 << 10, Time(0));
        let send = IpiSend { targets: Targets::Cpu(1), callsite: 0x10, callback: 0 };
        for k in 0..2 * MAX_SENDS as i64 {
            r.push(0, ev(k, SENDER, K::IpiSend(send.clone())));
        }
        assert_eq!((r.senders.held(), r.held()), (MAX_SENDS, 0));
    }

    #[test]
    fn steal_samples_before_the_window_keep_one_per_cpu() {
        let mut r = Recent::new(&[0, 1], Nanos(100), 16, Time(0));
        for at in [10, 50, 90, 150, 180] {
            for cpu in [0, 1] {
                r.push_steal(StealSample { at: Time(at), cpu, steal: Nanos(at) });
            }
        }
        r.advance(Time(200));
        let kept: Vec<(u32, i64)> = r.steal.iter().map(|s| (s.cpu, s.at.0)).collect();
        assert_eq!(kept, [(0, 90), (1, 90), (0, 150), (1, 150), (0, 180), (1, 180)]);
    }
}

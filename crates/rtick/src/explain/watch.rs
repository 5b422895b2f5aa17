//! Watching a run that lasts (`rtick monitor`): each drain of the
//! measuring threads' trace rings updates every series' sliding maximum,
//! picks the wake-ups over a threshold (spikes) and, with a kernel trace
//! ([`Live`]), explains them. Backend-neutral: it returns data, which an
//! exporter (the Prometheus collector) reads and publishes.
//!
//! A series is one (thread, mechanism) pair, numbered thread × mechanisms +
//! mechanism, the run's order.

use std::collections::VecDeque;
use std::time::Instant;

use super::live::{Live, Unexplained};
use super::run::not_timer_woken;
use super::window::WindowMax;
use super::{Cgroups, Recorded, Spike};
use crate::cfs::CfsWatch;
use crate::clock::ClockId;
use crate::ktrace;
use crate::measure::{MeasureConfig, TraceConsumer, TraceRow};
use crate::time::Nanos;
use crate::wait::Mechanism;

/// Why a spike has no breakdown.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NoBreakdown {
    /// Its mechanism is not woken by a timer (the reason).
    NotTimerWoken(&'static str),
    /// The kernel trace failed earlier ([`Drained::trace_failed`]).
    TraceFailed,
    /// Its thread's id was not known yet.
    ThreadUnknown,
    /// Its events were not held, were lost, or did not match.
    Unexplained(Unexplained),
}

impl NoBreakdown {
    /// A token for a metric's label.
    pub fn token(self) -> &'static str {
        match self {
            NoBreakdown::NotTimerWoken(_) => "not_timer_woken",
            NoBreakdown::TraceFailed => "trace_failed",
            NoBreakdown::ThreadUnknown => "thread_unknown",
            NoBreakdown::Unexplained(u) => u.token(),
        }
    }

    /// One line for the user.
    pub fn reason(self) -> &'static str {
        match self {
            NoBreakdown::NotTimerWoken(why) => why,
            NoBreakdown::TraceFailed => "the kernel trace failed earlier in the run",
            NoBreakdown::ThreadUnknown => "its thread's id was not published yet (the run's first moment)",
            NoBreakdown::Unexplained(u) => u.reason(),
        }
    }
}

/// A wake-up over the threshold, met in a drain.
#[derive(Debug)]
pub struct WatchedSpike {
    /// Its series.
    pub series: usize,
    /// Its row.
    pub row: TraceRow,
    /// With a kernel trace: its breakdown, or why it has none.
    pub explained: Option<Result<Spike, NoBreakdown>>,
}

/// What one drain found.
#[derive(Debug, Default)]
pub struct Drained {
    /// The series of each spike that came with more at once than are kept
    /// (they are neither returned nor explained), in no particular order.
    pub crowded: Vec<usize>,
    /// The latest spikes of all threads (at most the watcher's `keep`), oldest first.
    pub spikes: Vec<WatchedSpike>,
    /// Kernel trace events lost since the previous drain.
    pub lost: u64,
    /// The kernel trace failed in this drain: spikes are no longer explained.
    pub trace_failed: Option<ktrace::Error>,
}

/// The state of watching a run: rings, windows, spikes pending explanation.
#[derive(Debug)]
pub struct SpikeWatcher {
    mechanisms: Vec<Mechanism>,
    /// Each thread's pinned CPU (`None`: not pinned).
    cpus: Vec<Option<usize>>,
    consumers: Vec<TraceConsumer>,
    interval: Nanos,
    started: Instant,
    /// The second (since the start) of the last drain.
    sec: u64,
    threshold: Option<Nanos>,
    keep: usize,
    /// The kernel trace; `None` without, or once it failed.
    live: Option<Live>,
    explaining: bool,
    lost_seen: u64,
    /// Each thread's id in the current run (0: not known yet).
    tids: Vec<i32>,
    /// Each thread's latest row of the current run: its previous wake-up
    /// bounds the search for the next one's events.
    prev: Vec<Option<TraceRow>>,
    /// Each thread's spikes of this drain, the latest `keep`: (series, row,
    /// the thread's previous row). Allocated once.
    pending: Vec<VecDeque<(usize, TraceRow, Option<TraceRow>)>>,
    windows: Vec<WindowMax>,
    /// With a kernel trace, the CFS throttling of the measuring threads'
    /// cgroup (this process's), sampled at each drain, its samples as long
    /// as the trace's window.
    cfs: Option<CfsWatch>,
}

impl SpikeWatcher {
    /// Watches `cfg`'s run through its rings `consumers`; wake-ups later
    /// than `threshold` are spikes, the latest `keep` of a drain returned,
    /// explained from `live` when given.
    ///
    /// # Panics
    ///
    /// When `consumers` is not one ring per thread of `cfg`.
    pub fn new(
        cfg: &MeasureConfig,
        consumers: Vec<TraceConsumer>,
        threshold: Option<Nanos>,
        keep: usize,
        live: Option<Live>,
    ) -> SpikeWatcher {
        let threads = cfg.threads.len();
        assert_eq!(consumers.len(), threads, "one trace ring per thread of the run is needed");
        let sys = crate::system::SysRoot::default();
        let cfs = live.as_ref().and_then(|_| CfsWatch::start(sys.clone(), &crate::cgroup::cpu_cgroup(&sys)?));
        SpikeWatcher {
            mechanisms: cfg.mechanisms.clone(),
            cpus: cfg.threads.iter().map(|t| if let [c] = t.cpus.as_slice() { Some(*c) } else { None }).collect(),
            interval: cfg.interval,
            started: Instant::now(),
            sec: 0,
            threshold,
            keep,
            explaining: live.is_some(),
            live,
            lost_seen: 0,
            tids: vec![0; threads],
            prev: vec![None; threads],
            pending: (0..threads).map(|_| VecDeque::with_capacity(keep)).collect(),
            windows: vec![WindowMax::default(); threads * cfg.mechanisms.len()],
            consumers,
            cfs,
        }
    }

    /// Whether spikes are explained (a kernel trace was given, even if it failed since).
    pub fn explaining(&self) -> bool {
        self.explaining
    }

    /// A new run starts: its threads are new threads.
    pub fn new_run(&mut self) {
        self.tids.iter_mut().for_each(|t| *t = 0);
        self.prev.iter_mut().for_each(|p| *p = None);
    }

    /// Thread `t`'s id in the current run.
    pub fn set_tid(&mut self, t: usize, tid: i32) {
        if let Some(slot) = self.tids.get_mut(t) {
            *slot = tid;
        }
    }

    /// The largest latency of series `series` over the window, as of the last drain.
    pub fn window_max(&self, series: usize) -> Option<Nanos> {
        self.windows[series].max(self.sec).map(Nanos)
    }

    /// Every row waiting in the rings: each wake-up's latency to
    /// `on_wakeup` (series, latency) and into its window; then the kernel
    /// trace is read, and the spikes explained.
    pub fn drain(&mut self, mut on_wakeup: impl FnMut(usize, Nanos)) -> Drained {
        self.sec = self.started.elapsed().as_secs();
        let n = self.mechanisms.len();
        let mut out = Drained::default();
        for (t, ring) in self.consumers.iter_mut().enumerate() {
            while let Ok(row) = ring.pop() {
                let Some(m) = self.mechanisms.iter().position(|&m| m == row.mechanism) else { continue };
                let latency = row.actual - row.planned;
                on_wakeup(t * n + m, latency);
                self.windows[t * n + m].record(self.sec, latency.as_ns());
                if self.threshold.is_some_and(|th| latency > th) {
                    // Each thread's latest `keep`: no more can be returned.
                    if self.keep == 0 {
                        out.crowded.push(t * n + m);
                    } else {
                        if self.pending[t].len() == self.keep {
                            out.crowded.extend(self.pending[t].pop_front().map(|(i, ..)| i));
                        }
                        self.pending[t].push_back((t * n + m, row, self.prev[t]));
                    }
                }
                self.prev[t] = Some(row);
            }
        }
        // After the rows: every event of their wake-ups was recorded before
        // this read began, and the read takes all of them.
        self.read_trace(&mut out);
        // The latest `keep` of all threads, oldest first.
        let mut found: Vec<_> = self.pending.iter_mut().flat_map(|p| p.drain(..)).collect();
        found.sort_by_key(|(_, row, _)| row.actual);
        let older = found.len().saturating_sub(self.keep);
        out.crowded.extend(found.drain(..older).map(|(i, ..)| i));
        out.spikes = found
            .into_iter()
            .map(|(series, row, prev)| WatchedSpike {
                series,
                row,
                explained: self.explaining.then(|| self.breakdown(series, &row, prev)),
            })
            .collect();
        // The next spikes are within the trace's window (older ones are not held).
        let keep = self.live.as_ref().map_or(Nanos::ZERO, |l| l.recent().keep());
        if let Some(c) = self.cfs.as_mut() {
            c.forget_before(ClockId::Monotonic.now() - keep);
        }
        out
    }

    /// Reads the kernel trace into the window. A trace that fails (its
    /// instance removed by someone, tracefs unmounted) ends the
    /// explanations, not the watching: the spikes say why.
    fn read_trace(&mut self, out: &mut Drained) {
        let Some(live) = self.live.as_mut() else { return };
        if let Err(e) = live.read() {
            out.trace_failed = Some(e);
            self.live = None;
            return;
        }
        let lost = live.losses();
        out.lost = lost.saturating_sub(self.lost_seen);
        self.lost_seen = lost;
        // After the rows: this sample counts the throttling that held them.
        if let Some(c) = self.cfs.as_mut() {
            c.sample();
        }
    }

    /// The kernel-side breakdown of the wake-up of `row` (of `series`; its
    /// thread's previous one `prev`), or why there is none.
    fn breakdown(&self, series: usize, row: &TraceRow, prev: Option<TraceRow>) -> Result<Spike, NoBreakdown> {
        let n = self.mechanisms.len();
        if let Some(why) = not_timer_woken(self.mechanisms[series % n]) {
            return Err(NoBreakdown::NotTimerWoken(why));
        }
        let live = self.live.as_ref().ok_or(NoBreakdown::TraceFailed)?;
        let tid = self.tids.get(row.thread as usize).copied().filter(|&t| t != 0);
        let tid = tid.ok_or(NoBreakdown::ThreadUnknown)?;
        let rec = |r: &TraceRow| Recorded { tid, cycle: r.cycle, planned: r.planned, actual: r.actual };
        let cpu = self.cpus[series / n];
        let mut spike = live
            .recent()
            .explain(rec(row), prev.as_ref().map(rec), self.interval, cpu)
            .map_err(NoBreakdown::Unexplained)?;
        spike.find_cgroup(Cgroups::system());
        if let Some(c) = &self.cfs {
            spike.find_cfs_throttling(c.run());
        }
        Ok(spike)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::ThreadSetup;
    use crate::time::Time;

    fn cfg(threads: usize) -> MeasureConfig {
        MeasureConfig {
            mechanisms: vec![Mechanism::ClockNanosleep, Mechanism::Futex],
            threads: vec![ThreadSetup::default(); threads],
            ..Default::default()
        }
    }

    /// `n` wake-ups 20 µs late of each thread, into its ring.
    fn late_rows(producers: &mut [crate::measure::TraceProducer], n: u64) {
        for k in 0..n {
            for (t, p) in producers.iter_mut().enumerate() {
                let at = Time((2 * k + t as u64) as i64 * 1000);
                let row = TraceRow {
                    thread: t as u32,
                    mechanism: Mechanism::Futex,
                    cycle: k,
                    planned: at,
                    actual: at + Nanos::from_us(20),
                };
                p.push(row).unwrap();
            }
        }
    }

    #[test]
    fn spikes_beyond_keep_are_crowded_and_nothing_grows_even_with_keep_0() {
        for keep in [0, 3] {
            let (mut producers, consumers) = crate::measure::trace_rings(2, 1024);
            let mut w = SpikeWatcher::new(&cfg(2), consumers, Some(Nanos::from_us(10)), keep, None);
            let capacity: Vec<_> = w.pending.iter().map(VecDeque::capacity).collect();
            late_rows(&mut producers, 100);
            let d = w.drain(|_, _| {});
            assert_eq!(d.spikes.len(), keep, "keep {keep}");
            assert_eq!(d.crowded.len() + d.spikes.len(), 200, "keep {keep}: every spike once");
            assert!(d.crowded.iter().all(|&s| s == 1 || s == 3), "the futex series of both threads: {:?}", d.crowded);
            let after: Vec<_> = w.pending.iter().map(VecDeque::capacity).collect();
            assert_eq!(after, capacity, "keep {keep}: the pending spikes stay within what was allocated");
        }
    }

    #[test]
    #[should_panic(expected = "one trace ring per thread")]
    fn rings_that_do_not_match_the_threads_are_refused() {
        let (_, consumers) = crate::measure::trace_rings(1, 16);
        SpikeWatcher::new(&cfg(2), consumers, None, 1, None);
    }
}

//! `rtick monitor --attach PID | --tid TID,… | --comm NAME`: an unmodified
//! program's threads followed by `rtick attach`'s run, continuously, their
//! figures served at `/metrics` in the measuring loop's families (and a
//! few of attach's own), their late waits explained at `/spikes`.
//!
//! The [`AttachCollector`] is the run's [`Observer`]: each wait, as it
//! ends, into its thread's series; each spike counted and logged; after
//! every look at the target (ten times a second) the window maxima, the
//! events lost and the threads retired. Labels: `mechanism="attach"`,
//! `cpu` the CPU the thread is pinned to (else `any`), `thread="TID COMM"`.
//! They stay bounded: the first [`THREAD_LABELS`] threads seen have series
//! of their own, any later one counts under `thread="other"`; an exited
//! thread's series leave /metrics (Prometheus keeps their history; moving
//! their counts to another series would show there as a burst).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use rtick::attach::{attach, AttachOptions, End, Observer, Polled, ThreadInfo, TimedWait, Wake};
use rtick::explain::{BoundedNames, Spike, Unexplained, WindowMax};
use rtick::system::SystemInfo;
use rtick::{ClockId, Nanos};
use rtick_model::json::SpikeJson;

use super::metrics::{
    blame, count_spike, latency, system_labels, Exporter, Families, Float, SeriesLabels, CULPRIT_NAMES,
};
use super::spikes::{cpu_label, AttachedWait, LoggedSpike, SpikeLog};
use super::{http, off_cpus, serving};
use crate::cli::{MonitorArgs, MonitorTarget};
use crate::Usage;

/// Threads with series of their own, at most: the first seen.
pub const THREAD_LABELS: usize = 64;

/// The `mechanism` label of another program's waits.
const MECHANISM: &str = "attach";

/// Attach's own figures, beside the loop's families.
struct AttachFamilies {
    events: Family<SeriesLabels, Counter>,
    unmatched: Family<SeriesLabels, Counter>,
    slack: Family<SeriesLabels, Float>,
    scheduling: Family<SeriesLabels, Histogram>,
}

impl AttachFamilies {
    fn register(registry: &mut Registry) -> AttachFamilies {
        let events = Family::<SeriesLabels, Counter>::default();
        registry.register(
            "rtick_attach_event_wakeups",
            "Waits that ended before their timer (data, a futex wake, a signal): not in the latency histogram",
            events.clone(),
        );
        let unmatched = Family::<SeriesLabels, Counter>::default();
        registry.register(
            "rtick_attach_unmatched_waits",
            "Waits that ended without a wake-up rtick could follow",
            unmatched.clone(),
        );
        let slack = Family::<SeriesLabels, Float>::default();
        registry.register_with_unit(
            "rtick_attach_timer_slack",
            "The timer slack of the thread's latest timed wait (expires − softexpires): the kernel may fire that late, no task's doing",
            Unit::Seconds,
            slack.clone(),
        );
        let scheduling = Family::<SeriesLabels, Histogram>::new_with_constructor(latency::histogram);
        registry.register_with_unit(
            "rtick_attach_event_scheduling_latency",
            "Event-driven wake-ups' scheduling latency: woken (sched_waking) to running",
            Unit::Seconds,
            scheduling.clone(),
        );
        AttachFamilies { events, unmatched, slack, scheduling }
    }
}

/// One label's metrics: a thread's, or the threads' past [`THREAD_LABELS`].
struct ThreadSeries {
    labels: SeriesLabels,
    cpu: Option<usize>,
    latency: Histogram,
    wakeups: Counter,
    overruns: Counter,
    max: Float,
    events: Counter,
    unmatched: Counter,
    slack: Float,
    scheduling: Histogram,
    window: WindowMax,
}

/// A thread followed: its timed waits so far (its spikes' `cycle`, as
/// their explanations number it), and its own series unless it counts
/// under [`AttachCollector::other`].
struct Followed {
    waits: u64,
    series: Option<ThreadSeries>,
}

impl ThreadSeries {
    fn new(f: &Families, a: &AttachFamilies, labels: SeriesLabels, cpu: Option<usize>) -> ThreadSeries {
        ThreadSeries {
            cpu,
            latency: f.latency.get_or_create(&labels).clone(),
            wakeups: f.wakeups.get_or_create(&labels).clone(),
            overruns: f.overruns.get_or_create(&labels).clone(),
            max: f.max.get_or_create(&labels).clone(),
            events: a.events.get_or_create(&labels).clone(),
            unmatched: a.unmatched.get_or_create(&labels).clone(),
            slack: a.slack.get_or_create(&labels).clone(),
            scheduling: a.scheduling.get_or_create(&labels).clone(),
            labels,
            window: WindowMax::default(),
        }
    }

    /// Takes its series out of /metrics.
    fn remove(&self, f: &Families, a: &AttachFamilies) {
        let l = &self.labels;
        f.latency.remove(l);
        f.wakeups.remove(l);
        f.overruns.remove(l);
        f.max.remove(l);
        a.events.remove(l);
        a.unmatched.remove(l);
        a.slack.remove(l);
        a.scheduling.remove(l);
    }
}

/// Fills the metrics from the attach's waits, spikes and looks at the target.
pub struct AttachCollector {
    exporter: Arc<Exporter>,
    families: Families,
    own: AttachFamilies,
    /// Each thread, by tid.
    threads: HashMap<i32, Followed>,
    /// The threads' past [`THREAD_LABELS`], together.
    other: Option<ThreadSeries>,
    /// Each thread alive: its name and the CPU it is pinned to, as first read.
    known: HashMap<i32, (String, Option<usize>)>,
    thread_names: BoundedNames,
    culprit_names: BoundedNames,
    started: Instant,
    lost: u64,
}

impl AttachCollector {
    /// Registers every metric (`rtick_system` with the target's `policy` and
    /// `priority`); a spike log with `spike`.
    pub fn new(sys: &SystemInfo, policy: &str, priority: i32, spike: Option<Nanos>) -> AttachCollector {
        let mut registry = Registry::default();
        let system = system_labels(sys, policy, priority, true);
        let families = Families::register(&mut registry, None, system, spike.is_some(), true);
        let own = AttachFamilies::register(&mut registry);
        AttachCollector {
            exporter: Arc::new(Exporter { registry, spikes: spike.map(|s| Mutex::new(SpikeLog::new(s))) }),
            families,
            own,
            threads: HashMap::new(),
            other: None,
            known: HashMap::new(),
            thread_names: BoundedNames::new(THREAD_LABELS),
            culprit_names: BoundedNames::new(CULPRIT_NAMES),
            started: Instant::now(),
            lost: 0,
        }
    }

    pub fn exporter(&self) -> Arc<Exporter> {
        Arc::clone(&self.exporter)
    }

    /// Thread `tid`'s count of timed waits and series, made at its first
    /// wait (no allocation after).
    fn series_of(&mut self, tid: i32) -> (&mut u64, &mut ThreadSeries) {
        let AttachCollector { threads, other, known, thread_names, families, own, .. } = self;
        let mine = threads.entry(tid).or_insert_with(|| {
            let (comm, cpu) = known.get(&tid).cloned().unwrap_or_default();
            let label = thread_names.label(format!("{tid} {comm}"));
            let labels = |cpu| SeriesLabels { mechanism: MECHANISM.into(), cpu: cpu_label(cpu), thread: label.clone() };
            if thread_names.is_kept(&label) {
                return Followed { waits: 0, series: Some(ThreadSeries::new(families, own, labels(cpu), cpu)) };
            }
            // The threads counted together are pinned to no one CPU.
            other.get_or_insert_with(|| ThreadSeries::new(families, own, labels(None), None));
            Followed { waits: 0, series: None }
        });
        let series = match &mut mine.series {
            Some(s) => s,
            None => other.as_mut().expect("made with the first thread counted under it"),
        };
        (&mut mine.waits, series)
    }

    /// Logs spike `t` of `tid`, explained (not when crowded: only counted).
    fn log(&mut self, tid: i32, t: &TimedWait, explained: &Result<Spike, Unexplained>) {
        let (cpu, cycle) = {
            let (waits, s) = self.series_of(tid);
            // As its explanation numbers it: the thread's timed waits so far.
            (s.cpu, explained.as_ref().map_or(*waits, |b| b.wake.cycle))
        };
        let comm = self.known.get(&tid).map_or_else(String::new, |k| k.0.clone());
        let Some(log) = self.exporter.spikes.as_ref() else { return };
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(explained, Err(Unexplained::Crowded)) {
            log.not_offered(1);
            return;
        }
        let ago = ClockId::Monotonic.now() - t.exit;
        log.offer(LoggedSpike {
            wall: SystemTime::now() - ago.max(Nanos::ZERO).to_std(),
            monotonic_ns: t.exit.0,
            mechanism: MECHANISM,
            cpu,
            thread: tid as u32,
            cycle,
            latency_ns: t.lateness.as_ns(),
            explain: Some(explained.as_ref().map(|b| Box::new(SpikeJson::from(b))).map_err(|u| u.reason())),
            attached: Some(AttachedWait { comm, requested_ns: t.requested.0, slack_taken_ns: t.slack_taken.as_ns() }),
        });
    }
}

impl Observer for AttachCollector {
    fn wait(&mut self, tid: i32, w: &Wake) {
        let sec = self.started.elapsed().as_secs();
        let (waits, s) = self.series_of(tid);
        match w {
            Wake::Timed(t) => {
                s.latency.observe(t.lateness.as_secs_f64());
                s.wakeups.inc();
                if t.overrun() > Nanos::ZERO {
                    s.overruns.inc();
                }
                s.slack.set(t.slack.as_secs_f64());
                s.window.record(sec, t.lateness.as_ns());
                *waits += 1;
            }
            Wake::Event(e) => {
                s.events.inc();
                s.scheduling.observe(e.scheduling.as_secs_f64());
            }
            Wake::Unmatched => {
                s.unmatched.inc();
            }
        }
    }

    fn spike(&mut self, tid: i32, t: &TimedWait, explained: &Result<Spike, Unexplained>) {
        let labels = self.series_of(tid).1.labels.clone();
        let (blamed, culprit) = blame(Some(explained.as_ref().map_err(|u| u.token())), &mut self.culprit_names);
        count_spike(&self.families.spikes_total, &labels, blamed, culprit);
        self.log(tid, t, explained);
    }

    fn poll(&mut self, p: &Polled<'_>) {
        for tid in p.retired {
            self.known.remove(tid);
            if let Some(Followed { series: Some(s), .. }) = self.threads.remove(tid) {
                s.remove(&self.families, &self.own);
            }
        }
        for (tid, t) in p.threads {
            let pinned = match t.affinity[..] {
                [c] => Some(c),
                _ => None,
            };
            self.known.entry(*tid).or_insert_with(|| (t.comm.clone(), pinned));
        }
        let sec = self.started.elapsed().as_secs();
        for s in self.threads.values().filter_map(|t| t.series.as_ref()).chain(&self.other) {
            s.max.set(s.window.max(sec).map_or(f64::NAN, |v| Nanos(v).as_secs_f64()));
        }
        // Lost, as the measuring loop counts them: not what is merely
        // unread yet (the buffers are fullest just before a read), and
        // each loss of unknown size as one.
        let lost = p.lost.count_read() + p.lost.of_unknown_size();
        self.families.trace_lost.inc_by(lost.saturating_sub(self.lost));
        self.lost = self.lost.max(lost);
    }
}

/// Runs `rtick monitor --attach`.
pub fn run(a: &MonitorArgs, t: &MonitorTarget) -> Result<()> {
    let spec = crate::cmd::attach::spec((t.attach, "--attach"), t.tid.as_deref(), t.comm.as_deref())?;
    if a.duration.is_some_and(|d| d <= Nanos::ZERO) {
        return Err(Usage("-D/--duration: must be greater than zero".into()).into());
    }
    let target = crate::cmd::attach::resolve(spec)?;
    let listener = http::bind(a.listen)?;
    let listening = listener.local_addr().unwrap_or(a.listen);
    let proc = Path::new("/proc");
    let threads: Vec<ThreadInfo> = target.threads(proc).into_iter().filter_map(|t| ThreadInfo::read(proc, t)).collect();
    let (policy, priority) = threads
        .first()
        .map_or(("unknown", 0), |t| (t.policy.map_or("unknown", rtick::rt::Policy::kernel_name), t.rt_priority));
    let mut collector = AttachCollector::new(&SystemInfo::read(), policy, priority, a.spike);
    // The endpoint's thread, started next, inherits this: off the target's CPUs.
    let _beside = off_cpus(&ThreadInfo::cpus_of(&threads))?;
    http::serve(listener, collector.exporter())?;
    let stop = crate::stop_flag()?;
    if !a.quiet {
        println!(
            "rtick {} monitor --attach: pid {} ({}) | {} at the start | its CPUs traced",
            env!("CARGO_PKG_VERSION"),
            target.pid,
            target.comm,
            rtick::text::count(threads.len() as u64, "thread"),
        );
        let paths = if a.spike.is_some() { "/metrics and /spikes" } else { "/metrics" };
        println!("  serving       {}", serving(listening, paths));
        let bound = a.duration.map_or("until Ctrl-C".to_string(), |d| format!("for {d}"));
        println!("  running       {bound}, or until the program exits");
    }
    let opts = AttachOptions { tracefs: a.tracefs.clone(), duration: a.duration, explain_top: 0, spike: a.spike };
    let attached = attach(&target, &opts, &stop, &mut collector).context("monitor --attach")?;
    for n in &attached.notes {
        println!("note: {n}");
    }
    if attached.end == End::TargetExited {
        println!("note: pid {} ({}) exited: the monitor ends with it", target.pid, target.comm);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use prometheus_client::encoding::text::encode;
    use rtick::attach::{EventWake, Waker};
    use rtick::Time;

    fn thread(tid: i32, affinity: Vec<usize>) -> ThreadInfo {
        ThreadInfo {
            tid,
            tgid: 1000,
            comm: format!("w{tid}"),
            policy: None,
            rt_priority: 0,
            nice: 0,
            affinity,
            timer_slack_ns: None,
        }
    }

    fn text(c: &AttachCollector) -> String {
        let mut s = String::new();
        encode(&mut s, &c.exporter.registry).unwrap();
        s
    }

    /// The first THREAD_LABELS threads have series of their own (a pinned
    /// one labelled with its CPU), later ones count together under
    /// "other"; an exited thread's series leave, "other" stays.
    #[test]
    fn thread_labels_stay_bounded_and_exited_threads_leave() {
        let mut c = AttachCollector::new(&SystemInfo::read(), "SCHED_FIFO", 50, None);
        let n = THREAD_LABELS as i32 + 3;
        let threads: BTreeMap<i32, ThreadInfo> =
            (1..=n).map(|t| (t, thread(t, if t == 1 { vec![1] } else { vec![0, 1] }))).collect();
        let lost = rtick::ktrace::LostEvents::default();
        c.poll(&Polled { threads: &threads, retired: &[], lost });
        let event = Wake::Event(EventWake { woken: Time(0), scheduling: Nanos(500), waker: Waker::Irq });
        for t in 1..=n {
            c.wait(t, &event);
        }
        c.wait(2, &Wake::Unmatched);
        let t = text(&c);
        let events = |labels: &str| format!("rtick_attach_event_wakeups_total{{mechanism=\"attach\",{labels}}}");
        assert!(t.contains(&format!("{} 1", events("cpu=\"1\",thread=\"1 w1\""))), "{t}");
        assert!(t.contains(&format!("{} 1", events("cpu=\"any\",thread=\"64 w64\""))), "{t}");
        assert!(t.contains(&format!("{} 3", events("cpu=\"any\",thread=\"other\""))), "{t}");
        assert!(!t.contains("thread=\"65 w65\""), "{t}");
        assert!(t.contains("rtick_attach_unmatched_waits_total{mechanism=\"attach\",cpu=\"any\",thread=\"2 w2\"} 1"));
        let series = t.lines().filter(|l| l.starts_with("rtick_attach_event_wakeups_total")).count();
        assert_eq!(series, THREAD_LABELS + 1, "{t}");
        // Thread 2 and one of the pooled exit.
        c.poll(&Polled { threads: &threads, retired: &[2, n], lost });
        let t = text(&c);
        assert!(!t.contains("thread=\"2 w2\""), "{t}");
        assert!(t.contains(&format!("{} 3", events("cpu=\"any\",thread=\"other\""))), "{t}");
    }

    /// An unexplained spike of a thread counted under "other" is numbered
    /// by its own timed waits, not the pool's.
    #[test]
    fn a_pooled_threads_spike_is_numbered_by_its_own_waits() {
        let mut c = AttachCollector::new(&SystemInfo::read(), "SCHED_FIFO", 50, Some(Nanos(1_000)));
        let n = THREAD_LABELS as i32 + 2;
        let threads: BTreeMap<i32, ThreadInfo> = (1..=n).map(|t| (t, thread(t, vec![0, 1]))).collect();
        c.poll(&Polled { threads: &threads, retired: &[], lost: Default::default() });
        let event = Wake::Event(EventWake { woken: Time(0), scheduling: Nanos(500), waker: Waker::Irq });
        for t in 1..=THREAD_LABELS as i32 {
            c.wait(t, &event);
        }
        let late = timed(50_000);
        for (tid, waits) in [(n - 1, 2), (n, 3)] {
            for _ in 0..waits {
                c.wait(tid, &Wake::Timed(late));
            }
        }
        c.spike(n - 1, &late, &Err(Unexplained::EventsLost));
        let log = c.exporter.spikes.as_ref().unwrap().lock().unwrap().json();
        let v: serde_json::Value = serde_json::from_str(&log).unwrap();
        assert_eq!(v["spikes"][0]["thread"], n - 1, "{log}");
        assert_eq!(v["spikes"][0]["cycle"], 2, "{log}");
    }

    fn timed(late: i64) -> TimedWait {
        let m = rtick::explain::Matched {
            cpu: 0,
            hrtimer: 0,
            expired: Time(0),
            waking: Time(0),
            switched_in: Time(0),
            prio: 0,
        };
        TimedWait {
            requested: Time(1_000_000),
            slack: Nanos::ZERO,
            slack_taken: Nanos::ZERO,
            lateness: Nanos(late),
            phases: rtick::explain::Phases {
                irq_delay: Nanos(late),
                wakeup_path: Nanos::ZERO,
                scheduling: Nanos::ZERO,
                return_to_user: Nanos::ZERO,
            },
            matched: m,
            exit: Time(1_000_000 + late),
            armed: Time(0),
            callback: 0,
            blocked: Time(0),
        }
    }

    /// Events still in the buffers, unread, are not lost; losses of known
    /// and of unknown size are, counted once however often polled.
    #[test]
    fn events_unread_are_not_counted_lost() {
        let mut c = AttachCollector::new(&SystemInfo::read(), "SCHED_FIFO", 50, None);
        let threads = BTreeMap::new();
        let lost_total = |c: &AttachCollector| {
            let t = text(c);
            let line = t.lines().find(|l| l.starts_with("rtick_trace_events_lost_total ")).map(str::to_string);
            line.unwrap_or_else(|| panic!("{t}"))
        };
        let unread = rtick::ktrace::LostEvents { unread: 45_078, ..Default::default() };
        c.poll(&Polled { threads: &threads, retired: &[], lost: unread });
        assert_eq!(lost_total(&c), "rtick_trace_events_lost_total 0");
        let lost = rtick::ktrace::LostEvents { unread: 9, overrun: 5, uncounted_gaps: 1, ..Default::default() };
        c.poll(&Polled { threads: &threads, retired: &[], lost });
        c.poll(&Polled { threads: &threads, retired: &[], lost });
        assert_eq!(lost_total(&c), "rtick_trace_events_lost_total 6");
    }
}

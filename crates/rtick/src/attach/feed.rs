//! The merged events of a run taken one at a time: each wait that ends
//! goes into its thread's figures ([`ThreadStats`]) and, when it ranks
//! among the thread's worst, is explained from the recent window
//! ([`Worst`]); with a spike threshold (`rtick monitor --attach`), so is
//! every wait later than it, a bounded number each read ([`Ended::spike`]).
//! Nothing here grows with the run's length.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::bases::BaseOffsets;
use super::overruns::{ComputeSplit, Overrun, OverrunCause, Overruns};
use super::stacks::{is_late, StackArming};
use super::stats::ThreadStats;
use super::waits::{Follower, TimedWait, Wake};
use super::worst::{Worst, WorstWait};
use crate::cfs::{CfsRun, CfsWatches};
use crate::explain::{Cgroups, Matched, Recent, Recorded, Spike, Unexplained};
use crate::ktrace::{Event, EventKind};
use crate::time::{Nanos, Time};

/// How far before a wait's requested time its explanation reads when its
/// thread's previous system call exit is not known (the CPU's current task
/// at the deadline is told by a switch before it).
const LOOKBACK: Nanos = Nanos::from_ms(10);

/// Overruns kept with their cause per thread (the largest).
pub const OVERRUNS_KEPT: usize = 5;

/// The spikes explained in one read at most ([`Feed::new_read`]): later
/// ones are [`Unexplained::Crowded`]. A read of 400 pages a CPU holds some
/// thousands of waits; explaining one reads the events of a period.
pub const SPIKES_PER_READ: usize = 256;

/// A wait of a followed thread that ended.
#[derive(Debug)]
pub struct Ended {
    /// Its thread.
    pub tid: i32,
    /// How it ended.
    pub wake: Wake,
    /// For a timed wait later than the spike threshold, whose lateness
    /// the kernel held all of (not a catch-up after a stall, see
    /// [`Feed::take`]): its explanation, or why it has none.
    pub spike: Option<Result<Spike, Unexplained>>,
}

/// Each thread's figures, worst waits and largest overruns, in tid order.
pub type Finished = (BTreeMap<i32, ThreadStats>, BTreeMap<i32, Vec<WorstWait>>, BTreeMap<i32, Vec<Overrun>>);

/// The followed threads' waits, figures and worst waits so far.
#[derive(Debug)]
pub struct Feed {
    follower: Follower,
    threads: HashSet<i32>,
    stats: BTreeMap<i32, ThreadStats>,
    worst: BTreeMap<i32, Worst>,
    overruns: BTreeMap<i32, Overruns>,
    /// Each thread's latest timed wait, where its explanation reads from,
    /// and its overrun's cause when it overran.
    before: HashMap<i32, (TimedWait, Time, Option<OverrunCause>)>,
    /// Each thread's latest system call exit: it ran then.
    last_exit: HashMap<i32, Time>,
    /// The exited threads' figures, pooled, and how many they were.
    exited: ThreadStats,
    exited_count: usize,
    top: usize,
    events: u64,
    /// Timed waits later than this are spikes, explained.
    spike: Option<Nanos>,
    /// Spikes still explained in this read.
    budget: usize,
    /// Where the cgroups of the tasks blamed are read.
    cgroups: &'static Cgroups,
    /// The CFS throttling of the threads' cgroups, sampled by the caller.
    cfs: Option<CfsWatches>,
    /// When the stack trigger is set, told of each late wait.
    arming: Option<StackArming>,
}

impl Feed {
    /// Follows no thread yet (see [`Follower::new`]); explains each
    /// thread's `top` worst timed waits.
    pub fn new(sleeper_fn: Option<u64>, bases: BaseOffsets, top: usize) -> Feed {
        Feed {
            follower: Follower::new(sleeper_fn, bases),
            threads: HashSet::new(),
            stats: BTreeMap::new(),
            worst: BTreeMap::new(),
            overruns: BTreeMap::new(),
            before: HashMap::new(),
            last_exit: HashMap::new(),
            exited: ThreadStats::new(),
            exited_count: 0,
            top,
            events: 0,
            spike: None,
            budget: SPIKES_PER_READ,
            cgroups: Cgroups::system(),
            cfs: None,
            arming: None,
        }
    }

    /// Tells `arming` of each late wait, and notes the worst waits due
    /// while the stack trigger was not set ([`WorstWait::stack_missing`]).
    pub fn with_stack_arming(mut self, arming: StackArming) -> Feed {
        self.arming = Some(arming);
        self
    }

    /// The stack trigger's arming, for the caller to set and remove it.
    pub fn stack_arming_mut(&mut self) -> Option<&mut StackArming> {
        self.arming.as_mut()
    }

    /// The stack trigger's arming, taken (no more late waits noted).
    pub fn take_stack_arming(&mut self) -> Option<StackArming> {
        self.arming.take()
    }

    /// Matches the waits explained with the throttling of their thread's
    /// cgroup, watched by `cfs` (the caller samples it: [`Feed::cfs_mut`]).
    pub fn with_cfs(mut self, cfs: CfsWatches) -> Feed {
        self.cfs = Some(cfs);
        self
    }

    /// The CFS watches, to sample as the trace is read.
    pub fn cfs_mut(&mut self) -> Option<&mut CfsWatches> {
        self.cfs.as_mut()
    }

    /// Explains too every timed wait later than `threshold` (`None`: none).
    pub fn with_spikes(mut self, threshold: Option<Nanos>) -> Feed {
        self.spike = threshold;
        self
    }

    /// A read begins: [`SPIKES_PER_READ`] spikes may be explained again.
    pub fn new_read(&mut self) {
        self.budget = SPIKES_PER_READ;
    }

    /// Reads the cgroups of the tasks blamed from `cgroups` (this
    /// machine's by default).
    pub fn read_cgroups(&mut self, cgroups: &'static Cgroups) {
        self.cgroups = cgroups;
    }

    /// Follows `tids` too, from their next event on.
    pub fn follow_threads(&mut self, tids: &[i32]) {
        self.follow_threads_from(tids, Time(i64::MIN));
    }

    /// Follows `tids` too, from their first event at or after `from`
    /// ([`Follower::follow_threads_from`]).
    pub fn follow_threads_from(&mut self, tids: &[i32], from: Time) {
        self.follower.follow_threads_from(tids, from);
        self.threads.extend(tids);
        if let Some(c) = self.cfs.as_mut() {
            c.follow(tids);
        }
    }

    /// Stops following `tids`, threads that exited (every event of theirs
    /// taken): their figures join the exited threads' ([`Feed::exited`]),
    /// their worst waits and overruns are dropped, so what is kept is
    /// bounded by the threads alive at once, however many come and go.
    pub fn retire(&mut self, tids: &[i32]) {
        self.follower.unfollow_threads(tids);
        if let Some(c) = self.cfs.as_mut() {
            c.forget(tids);
        }
        for t in tids {
            if self.threads.remove(t) {
                self.exited_count += 1;
            }
            if let Some(s) = self.stats.remove(t) {
                self.exited.absorb(&s);
            }
            self.worst.remove(t);
            self.overruns.remove(t);
            self.before.remove(t);
            self.last_exit.remove(t);
        }
    }

    /// The threads that exited during the run, and their figures pooled.
    pub fn exited(&self) -> (usize, &ThreadStats) {
        (self.exited_count, &self.exited)
    }

    /// Takes event `e` of `cpu`, the next in time order of all CPUs';
    /// `recent` holds every traced CPU's events up to it at least. Returns
    /// the wait that ended with it, if one did.
    pub fn take(&mut self, cpu: usize, e: &Event, recent: &Recent) -> Option<Ended> {
        self.events += 1;
        let ended = self.follower.feed(cpu, e).map(|(tid, wake)| {
            self.stats.entry(tid).or_default().add(&wake);
            let mut spike = None;
            if let Wake::Timed(t) = &wake {
                let from = self.from(tid, t);
                spike = self.rank(tid, t, from, recent);
                let cause = self.overran(tid, t, recent);
                self.before.insert(tid, (*t, from, cause));
            }
            Ended { tid, wake, spike }
        });
        if matches!(e.kind, EventKind::SysExit { .. }) && self.threads.contains(&e.pid) {
            self.last_exit.insert(e.pid, e.ts);
        }
        ended
    }

    /// Where the explanation of `t`, a timed wait of `tid`, reads from: the
    /// exit before it (the thread ran then), or a little before its deadline.
    fn from(&self, tid: i32, t: &TimedWait) -> Time {
        self.last_exit.get(&tid).copied().unwrap_or(t.requested).min(t.requested - LOOKBACK)
    }

    /// Explains `t`, a timed wait of `tid` that just ended, if it ranks
    /// among its worst or is a spike; a spike's explanation is returned.
    fn rank(&mut self, tid: i32, t: &TimedWait, from: Time, recent: &Recent) -> Option<Result<Spike, Unexplained>> {
        // One rule: a wait is ranked when the kernel held all of its
        // lateness, i.e. the thread ran none of its own code after the
        // time it asked for. Not so for a catch-up after a stall: armed
        // after its request (`overrun()`: the program asked for a time
        // already past), or back in user space after it (a timer re-armed
        // in time whose expiry the busy thread only read later). Its cause
        // is the stalled cycle's: the wait before it, explained with it,
        // or its overrun's (`overran`).
        let ran_after = self.last_exit.get(&tid).is_some_and(|&x| x > t.requested);
        if t.overrun() > Nanos::ZERO || ran_after {
            return None;
        }
        let over = self.spike.is_some_and(|s| t.lateness > s);
        let top = self.top;
        let worst = self.worst.entry(tid).or_insert_with(|| Worst::new(top));
        let ranks = worst.ranks(t);
        if !ranks && !over {
            return None;
        }
        let late = is_late(self.spike, t.lateness, ranks, worst.full());
        let explained = if ranks || self.budget > 0 {
            self.budget = self.budget.saturating_sub(usize::from(over));
            let cycle = self.stats.get(&tid).map_or(0, |s| s.lateness.count());
            // Explained from when the kernel meant to fire: the slack it took
            // was allowed, no task's doing.
            let wake = Recorded { tid, cycle, planned: t.planned(), actual: t.exit };
            let cfs = self.cfs.as_ref().and_then(|c| c.run_of(tid));
            explain(recent, wake, t.matched, from, self.cgroups, cfs)
        } else {
            Err(Unexplained::Crowded)
        };
        let stack_missing = StackArming::note(self.arming.as_mut(), late, t, &explained);
        match (ranks, over) {
            (true, true) => worst.add(WorstWait { wait: *t, explained: explained.clone(), stack_missing }),
            (true, false) => {
                worst.add(WorstWait { wait: *t, explained, stack_missing });
                return None;
            }
            _ => {}
        }
        Some(explained)
    }

    /// The cause of `t`'s overrun, a timed wait of `tid` that just ended,
    /// if it overran, kept if it is among the thread's largest stalls: the work
    /// since the wait before, or that wait's lateness, explained from the
    /// window (it ended a cycle ago: its events are held), or when that
    /// wait was itself a catch-up that overran, its cause, further back.
    fn overran(&mut self, tid: i32, t: &TimedWait, recent: &Recent) -> Option<OverrunCause> {
        if t.overrun() <= Nanos::ZERO {
            return None;
        }
        let before = self.before.get(&tid);
        // A stall's catch-ups overrun one after the other: the first is
        // kept (its overrun is the largest), the others only counted.
        let first = before.is_none_or(|b| b.2.is_none());
        let kept = first && self.overruns.get(&tid).is_none_or(|k| k.ranks(t));
        let cause = match OverrunCause::of(t, before.map(|b| &b.0)) {
            // Where a kept one's compute phase went (read from the window: only for those).
            Some(OverrunCause::Compute { compute, interval, .. }) if kept => {
                let exit = before.expect("compute is counted from the wait before").0.exit;
                let cfs = self.cfs.as_ref().and_then(|c| c.run_of(tid));
                let split = recent.off_cpu(tid, exit, t.armed).ok();
                let split = split.map(|off| ComputeSplit::new(off, exit, t.armed, self.cgroups, cfs));
                OverrunCause::Compute { compute, interval, split }
            }
            Some(c) => c,
            None => match before.expect("a cause is found without the wait before") {
                (_, _, Some(chain)) => chain.further(),
                &(b, from, None) => {
                    let cycle = self.stats.get(&tid).map_or(0, |s| s.lateness.count()).saturating_sub(1);
                    let wake = Recorded { tid, cycle, planned: b.planned(), actual: b.exit };
                    let cfs = self.cfs.as_ref().and_then(|c| c.run_of(tid));
                    let explained = Box::new(explain(recent, wake, b.matched, from, self.cgroups, cfs));
                    OverrunCause::LateWake { late: b.lateness, back: 1, explained }
                }
            },
        };
        if kept {
            let list = self.overruns.entry(tid).or_insert_with(|| Overruns::new(OVERRUNS_KEPT));
            list.add(Overrun { wait: *t, cause: cause.clone() });
        }
        Some(cause)
    }

    /// The CFS watches, taken to finish them.
    pub fn take_cfs(&mut self) -> Option<CfsWatches> {
        self.cfs.take()
    }

    /// The threads in a wait now.
    pub fn in_progress(&self) -> impl Iterator<Item = i32> + '_ {
        self.follower.in_progress()
    }

    /// Events taken.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Each thread's figures, its worst waits and its largest overruns
    /// (threads with a wait); the CFS watches are [`Feed::take_cfs`]'s.
    pub fn finish(self) -> Finished {
        let overruns = self.overruns.into_iter().map(|(t, o)| (t, o.into_list())).filter(|o| !o.1.is_empty());
        (self.stats, self.worst.into_iter().map(|(t, w)| (t, w.into_waits())).collect(), overruns.collect())
    }
}

/// A wait explained from the recent window ([`Recent::explain_matched`]),
/// the cgroup of the task it blames read while that task lives, and the
/// CFS throttling of its thread's cgroup (`cfs`, sampled after the wait
/// ended) matched as `measure --explain` matches it.
fn explain(
    recent: &Recent,
    wake: Recorded,
    m: Matched,
    from: Time,
    cgroups: &Cgroups,
    cfs: Option<&CfsRun>,
) -> Result<Spike, Unexplained> {
    let mut spike = recent.explain_matched(wake, m, from)?;
    spike.find_cgroup(cgroups);
    if let Some(run) = cfs {
        spike.find_cfs_throttling(run);
    }
    Ok(spike)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::{Cause, Task};
    use crate::ktrace::{Comm, Switch, Wakeup};

    const SLEEPER: u64 = 0xffff_0001;
    const T: i32 = 42;
    const HOG: i32 = 9;

    fn ev(ts: i64, pid: i32, flags: u8, kind: EventKind) -> Event {
        Event { ts: Time(ts), pid, flags, preempt_count: 0, kind }
    }
    fn start(ts: i64, soft: i64) -> Event {
        let k = EventKind::HrtimerStart {
            hrtimer: 0xa,
            function: SLEEPER,
            expires: Time(soft),
            softexpires: Time(soft),
            mode: 0,
        };
        ev(ts, T, 0, k)
    }
    fn switch(ts: i64, (from, fprio): (i32, i32), (to, tprio): (i32, i32)) -> Event {
        let name = |p: i32| Comm::new(if p == T { b"app" } else { b"hog" });
        let s = Switch {
            prev_comm: name(from),
            prev_pid: from,
            prev_prio: fprio,
            prev_state: i64::from(from == T),
            next_comm: name(to),
            next_pid: to,
            next_prio: tprio,
        };
        ev(ts, from, 0, EventKind::SchedSwitch(s))
    }
    fn exit(ts: i64) -> Event {
        ev(ts, T, 0, EventKind::SysExit { id: 230, ret: 0 })
    }

    /// A wait (for 10 µs) that a task of higher priority held off the CPU,
    /// 3.2 µs late; then two catch-ups, armed after the time they asked for.
    fn preempted() -> Vec<Event> {
        let waking = |ts, by| {
            let w = Wakeup { comm: Comm::new(b"app"), pid: T, prio: 49, target_cpu: 0 };
            ev(ts, by, 0x09, EventKind::SchedWaking(w))
        };
        let expire =
            |ts| ev(ts, HOG, 0x09, EventKind::HrtimerExpireEntry { hrtimer: 0xa, now: Time(ts), function: SLEEPER });
        vec![
            exit(0),
            start(100, 10_000),
            switch(200, (T, 49), (HOG, 19)),
            expire(10_050),
            waking(10_100, HOG),
            switch(13_000, (HOG, 19), (T, 49)),
            exit(13_200),
            start(13_300, 11_000),
            expire(13_310),
            waking(13_320, T),
            exit(13_400),
            // A second catch-up, for 12 µs at 13.5 µs: the same stall's.
            start(13_500, 12_000),
            expire(13_510),
            waking(13_520, T),
            exit(13_600),
        ]
    }

    /// A wait whose thread a task of higher priority held off the CPU is
    /// explained, culprit named; the catch-up waits after it (armed after the
    /// time they asked for) are counted but not ranked, and the first keeps
    /// the stall's overrun, its cause the preempted wait.
    #[test]
    fn a_preempted_wait_is_explained_and_its_catch_up_is_not_ranked() {
        let events = preempted();
        let mut recent = Recent::new(&[0], Nanos::from_secs(1), 1 << 10, Time(-1_000_000));
        let mut feed = Feed::new(Some(SLEEPER), BaseOffsets::new(&[Nanos::ZERO]), 5);
        feed.follow_threads(&[T]);
        // The hog's cgroup, as /proc says it while it runs.
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join(format!("proc/{HOG}"));
        std::fs::create_dir_all(&proc).unwrap();
        std::fs::write(proc.join("comm"), "hog\n").unwrap();
        std::fs::write(proc.join("cgroup"), "1:cpu:/rtick-hogs\n0::/\n").unwrap();
        feed.read_cgroups(Box::leak(Box::new(Cgroups::new(crate::system::SysRoot::new(d.path())))));
        let mut ended = 0;
        for e in events {
            recent.push(0, e.clone());
            ended += usize::from(feed.take(0, &e, &recent).is_some());
        }
        assert_eq!((ended, feed.events()), (3, 15));
        let (stats, worst, overruns) = feed.finish();
        assert_eq!(stats[&T].lateness.count(), 3);
        // Both catch-ups overran; the stall keeps one, its first.
        assert_eq!(stats[&T].cycle.summary().overruns, 2);
        // The catch-up overran by 2.3 µs (armed at 13.3 µs for 11 µs): not
        // its own work (100 ns since the exit before) but the preempted
        // wait before it, explained.
        let [o] = &overruns[&T][..] else { panic!("one overrun: {overruns:?}") };
        assert_eq!(o.wait.overrun(), Nanos(2_300));
        let OverrunCause::LateWake { late, back: 1, explained } = &o.cause else { panic!("{:?}", o.cause) };
        let s = explained.as_ref().as_ref().expect("explained");
        assert_eq!(
            (*late, &s.cause),
            (Nanos(3_200), &Cause::PreemptedBy(Task { comm: "hog".into(), pid: HOG, prio: 19 }))
        );
        assert!(o.cause.text().starts_with("the wait before was late: 3.2 µs = scheduling"), "{}", o.cause.text());
        let [w] = &worst[&T][..] else { panic!("one wait ranked: {worst:?}") };
        assert_eq!((w.wait.requested, w.wait.lateness), (Time(10_000), Nanos(3_200)));
        let spike = w.explained.as_ref().unwrap();
        assert_eq!(spike.cause, Cause::PreemptedBy(Task { comm: "hog".into(), pid: HOG, prio: 19 }));
        assert_eq!((spike.cgroup.as_deref(), s.cgroup.as_deref()), (Some("/rtick-hogs"), Some("/rtick-hogs")));
        assert!(spike.blame().ends_with(" in /rtick-hogs"), "{}", spike.blame());
        assert_eq!(spike.phases.total(), w.wait.lateness);
    }

    /// A wait on time (100 ns late), then a cycle whose thread a task of
    /// higher priority preempted for 3 µs of its 3.4 µs compute phase: the
    /// next wait is armed 2.5 µs after the time it asks for, an overrun
    /// whose cause is that preemption, not the thread's 400 ns of work.
    #[test]
    fn an_overrun_whose_compute_phase_was_preempted_is_the_preemptions() {
        let waking = |ts, by| {
            let w = Wakeup { comm: Comm::new(b"app"), pid: T, prio: 49, target_cpu: 0 };
            ev(ts, by, 0x09, EventKind::SchedWaking(w))
        };
        let expire =
            |ts| ev(ts, HOG, 0x09, EventKind::HrtimerExpireEntry { hrtimer: 0xa, now: Time(ts), function: SLEEPER });
        let mut preempt = switch(1_200, (T, 49), (HOG, 19));
        if let EventKind::SchedSwitch(s) = &mut preempt.kind {
            s.prev_state = 0;
        }
        let events = vec![
            exit(0),
            start(100, 1_000),
            switch(200, (T, 49), (0, 120)),
            expire(1_000),
            waking(1_010, 0),
            switch(1_050, (0, 120), (T, 49)),
            exit(1_100),
            preempt,
            switch(4_200, (HOG, 19), (T, 49)),
            start(4_500, 2_000),
            expire(4_510),
            waking(4_520, T),
            exit(4_600),
        ];
        let mut recent = Recent::new(&[0], Nanos::from_secs(1), 1 << 10, Time(-1_000_000));
        let mut feed = Feed::new(Some(SLEEPER), BaseOffsets::new(&[Nanos::ZERO]), 5);
        feed.follow_threads(&[T]);
        let none = tempfile::tempdir().unwrap();
        feed.read_cgroups(Box::leak(Box::new(Cgroups::new(crate::system::SysRoot::new(none.path())))));
        for e in events {
            recent.push(0, e.clone());
            feed.take(0, &e, &recent);
        }
        let (_, _, overruns) = feed.finish();
        let [o] = &overruns[&T][..] else { panic!("one overrun: {overruns:?}") };
        assert_eq!(o.wait.overrun(), Nanos(2_500));
        let OverrunCause::Compute { compute, interval, split: Some(split) } = &o.cause else { panic!("{:?}", o.cause) };
        assert_eq!((*compute, *interval), (Nanos(3_400), Nanos(1_000)));
        let off = &split.off;
        assert_eq!((off.ran, off.preempted, off.blocked), (Nanos(400), Nanos(3_000), Nanos::ZERO));
        assert_eq!(off.by, Some((Task { comm: "hog".into(), pid: HOG, prio: 19 }, Nanos(3_000))));
        assert_eq!(o.cause.kind(), "preempted");
        let text = o.cause.text();
        assert!(
            text.starts_with("compute ") && text.ends_with(", preempted 3.0 µs; its CPU held by hog:9 (prio 19)"),
            "{text}"
        );
    }

    /// With a spike threshold, the late wait is a spike, explained even
    /// when no worst wait is kept; the catch-ups are not spikes (their
    /// lateness is the stall's); past the read's budget a spike is only counted.
    #[test]
    fn a_wait_over_the_threshold_is_an_explained_spike() {
        let run = |budget: usize| {
            let mut recent = Recent::new(&[0], Nanos::from_secs(1), 1 << 10, Time(-1_000_000));
            let mut feed =
                Feed::new(Some(SLEEPER), BaseOffsets::new(&[Nanos::ZERO]), 0).with_spikes(Some(Nanos::from_us(1)));
            feed.follow_threads(&[T]);
            feed.new_read();
            feed.budget = budget;
            let mut spikes = Vec::new();
            for e in preempted() {
                recent.push(0, e.clone());
                if let Some(Ended { tid, wake: Wake::Timed(t), spike: Some(s) }) = feed.take(0, &e, &recent) {
                    spikes.push((tid, t.lateness, s));
                }
            }
            let (_, worst, _) = feed.finish();
            assert!(worst.values().all(Vec::is_empty), "no worst wait kept: {worst:?}");
            spikes
        };
        let spikes = run(SPIKES_PER_READ);
        let [(tid, late, Ok(s))] = &spikes[..] else { panic!("one spike, explained: {spikes:?}") };
        assert_eq!((*tid, *late), (T, Nanos(3_200)));
        assert_eq!(s.cause, Cause::PreemptedBy(Task { comm: "hog".into(), pid: HOG, prio: 19 }));
        let crowded = run(0);
        assert!(matches!(crowded[..], [(T, _, Err(Unexplained::Crowded))]), "{crowded:?}");
    }

    /// Attach does not record the local timer interrupt's edges (two of
    /// the ten events the traced program pays for at each wake-up:
    /// Tracepoint::ATTACH): its waits, spikes and their explanations come
    /// out the same with them as without them.
    #[test]
    fn the_local_timer_edges_change_nothing_attach_reports() {
        let run = |events: Vec<Event>| {
            let mut recent = Recent::new(&[0], Nanos::from_secs(1), 1 << 10, Time(-1_000_000));
            let mut feed =
                Feed::new(Some(SLEEPER), BaseOffsets::new(&[Nanos::ZERO]), 5).with_spikes(Some(Nanos::from_us(1)));
            feed.follow_threads(&[T]);
            feed.new_read();
            let mut ended = Vec::new();
            for e in events {
                recent.push(0, e.clone());
                ended.extend(feed.take(0, &e, &recent).map(|x| format!("{x:?}")));
            }
            (ended, format!("{:?}", feed.finish()))
        };
        let edges = |e: Event| match e.kind {
            EventKind::HrtimerExpireEntry { .. } => vec![
                ev(e.ts.0 - 5, e.pid, 0x09, EventKind::LocalTimerEntry { vector: 236 }),
                ev(e.ts.0 + 60, e.pid, 0x09, EventKind::LocalTimerExit { vector: 236 }),
                e,
            ],
            _ => vec![e],
        };
        let mut with_edges: Vec<Event> = preempted().into_iter().flat_map(edges).collect();
        with_edges.sort_by_key(|e| e.ts);
        assert_eq!(with_edges.len(), preempted().len() + 6);
        let plain = run(preempted());
        assert!(plain.0.iter().any(|s| s.contains("PreemptedBy")), "a spike explained: {:?}", plain.0);
        assert_eq!(run(with_edges), plain);
    }
}

//! `rtick attach --plot`: each thread's lateness over time, kept as the
//! run goes in a bounded series: at most [`BUCKETS`] time buckets a thread,
//! each holding its worst wait (its lateness and phases) and how many ended
//! in it. When a wait falls past the last bucket, the buckets merge in
//! pairs and each covers twice the time: an hour's run takes the room of a
//! second's. A thread's series goes when the run retires the thread (its
//! figures then join the exited threads' row, which has none): what is
//! kept is bounded by the threads alive at once.

use std::collections::BTreeMap;

use rtick::attach::{Polled, TimedWait, Wake};
use rtick::{Nanos, Time};
use rtick_model::json::{AttachFile, BucketJson, OverTimeJson};

/// Buckets a thread keeps at most.
pub const BUCKETS: usize = 400;

/// The first bucket's width.
const FIRST_WIDTH: Nanos = Nanos::from_ms(5);

/// One bucket: the waits that asked for a time in it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    /// How many.
    pub waits: u64,
    /// The latest of them: its lateness and its phases (they add up to it).
    pub worst: Option<(Nanos, [Nanos; 4])>,
}

impl Bucket {
    fn take(&mut self, late: Nanos, phases: [Nanos; 4]) {
        self.waits += 1;
        if self.worst.is_none_or(|(w, _)| late > w) {
            self.worst = Some((late, phases));
        }
    }

    fn merge(a: Bucket, b: Bucket) -> Bucket {
        let worst = match (a.worst, b.worst) {
            (Some(x), Some(y)) => Some(if y.0 > x.0 { y } else { x }),
            (x, y) => x.or(y),
        };
        Bucket { waits: a.waits + b.waits, worst }
    }
}

/// One thread's buckets, from the time tracing began.
#[derive(Clone, Debug)]
pub struct Series {
    start: Time,
    width: Nanos,
    buckets: Vec<Bucket>,
}

impl Series {
    /// Empty, its first bucket beginning at `start`.
    pub fn new(start: Time) -> Series {
        Series { start, width: FIRST_WIDTH, buckets: Vec::new() }
    }

    /// Takes timed wait `w`, in the bucket of the time it asked for.
    pub fn add(&mut self, w: &TimedWait) {
        let at = (w.requested - self.start).max(Nanos::ZERO);
        let mut k = (at.as_ns() / self.width.as_ns()) as usize;
        while k >= BUCKETS {
            self.buckets =
                self.buckets.chunks(2).map(|p| Bucket::merge(p[0], p.get(1).copied().unwrap_or_default())).collect();
            self.width = Nanos(self.width.as_ns() * 2);
            k /= 2;
        }
        if self.buckets.len() <= k {
            self.buckets.resize(k + 1, Bucket::default());
        }
        self.buckets[k].take(w.lateness, w.phases.named().map(|(_, v)| v));
    }
}

/// Every thread's series.
#[derive(Debug)]
pub struct Plotted {
    start: Time,
    threads: BTreeMap<i32, Series>,
}

impl Plotted {
    /// None yet; buckets begin at `start` (about when tracing began: a wait
    /// asking for an earlier time goes in the first).
    pub fn new(start: Time) -> Plotted {
        Plotted { start, threads: BTreeMap::new() }
    }

    /// Takes wait `w` of `tid` (timed waits only).
    pub fn add(&mut self, tid: i32, w: &Wake) {
        if let Wake::Timed(t) = w {
            let start = self.start;
            self.threads.entry(tid).or_insert_with(|| Series::new(start)).add(t);
        }
    }

    /// Drops the series of the threads the run retired (`p.retired`: gone,
    /// or a tid reused by a new thread, whose waits come after).
    pub fn retire(&mut self, p: &Polled<'_>) {
        for tid in p.retired {
            self.threads.remove(tid);
        }
    }

    /// Thread `tid`'s series, if it had a timed wait.
    pub fn series(&self, tid: i32) -> Option<&Series> {
        self.threads.get(&tid)
    }

    /// Each thread's series into its row of `file` (threads without a timed wait have none).
    pub fn fill(&self, file: &mut AttachFile) {
        for t in &mut file.threads {
            t.over_time = self.series(t.tid).map(Series::json);
        }
    }
}

impl Series {
    /// As the JSON file holds it: the buckets with a wait.
    pub fn json(&self) -> OverTimeJson {
        let buckets = (self.buckets.iter().enumerate())
            .filter_map(|(index, b)| {
                let (late, phases) = b.worst?;
                Some(BucketJson {
                    index,
                    waits: b.waits,
                    lateness_ns: late.as_ns(),
                    phases_ns: phases.map(|p| p.as_ns()),
                })
            })
            .collect();
        OverTimeJson { start_ns: self.start.0, width_ns: self.width.as_ns(), buckets }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::attach::Wake;
    use rtick::explain::{Matched, Phases};

    fn wait(requested: i64, late: i64) -> Wake {
        let p =
            Phases { irq_delay: Nanos(late), wakeup_path: Nanos(0), scheduling: Nanos(0), return_to_user: Nanos(0) };
        let m = Matched { cpu: 0, hrtimer: 0, expired: Time(0), waking: Time(0), switched_in: Time(0), prio: 0 };
        Wake::Timed(TimedWait {
            requested: Time(requested),
            slack: Nanos::ZERO,
            slack_taken: Nanos::ZERO,
            lateness: Nanos(late),
            phases: p,
            matched: m,
            exit: Time(requested + late),
            armed: Time(requested - 1),
            callback: 0,
            blocked: Time(requested - 1),
        })
    }

    /// A 1 kHz loop for 10 s: 10 000 waits in at most BUCKETS buckets, the
    /// worst wait of each kept with its phases, none lost from the counts.
    #[test]
    fn a_long_run_stays_within_its_buckets_and_keeps_each_ones_worst() {
        let mut p = Plotted::new(Time(0));
        for k in 0..10_000i64 {
            p.add(7, &wait(k * 1_000_000, if k == 6_543 { 900_000 } else { 1_000 + k % 10 }));
        }
        p.add(7, &Wake::Unmatched);
        let s = p.series(7).unwrap();
        assert!(s.buckets.len() <= BUCKETS, "{}", s.buckets.len());
        assert_eq!(s.width, Nanos::from_ms(40), "5 ms doubled three times");
        assert_eq!(s.buckets.iter().map(|b| b.waits).sum::<u64>(), 10_000);
        let k = (6_543 * 1_000_000 / s.width.as_ns()) as usize;
        assert_eq!(s.buckets[k].worst.unwrap().0, Nanos(900_000));
        assert_eq!(s.buckets[0].worst, Some((Nanos(1_009), [Nanos(1_009), Nanos(0), Nanos(0), Nanos(0)])));
        // The file holds the buckets with a wait, each in its place.
        let j = s.json();
        assert_eq!((j.start_ns, j.width_ns), (0, 40_000_000));
        assert_eq!(j.buckets.len(), s.buckets.iter().filter(|b| b.waits > 0).count());
        let b = j.buckets.iter().find(|b| b.index == k).unwrap();
        assert_eq!((b.lateness_ns, b.phases_ns), (900_000, [900_000, 0, 0, 0]));
        assert!(p.series(8).is_none());
    }

    /// A thread's series goes when the run retires it; a new thread reusing
    /// its tid starts afresh.
    #[test]
    fn a_retired_threads_series_goes() {
        let mut p = Plotted::new(Time(0));
        p.add(7, &wait(1_000_000, 5_000));
        p.add(8, &wait(1_000_000, 6_000));
        let threads = BTreeMap::new();
        p.retire(&Polled { threads: &threads, retired: &[7], lost: Default::default() });
        assert!(p.series(7).is_none());
        assert_eq!(p.series(8).unwrap().buckets[0].waits, 1);
        p.add(7, &wait(2_000_000, 1_000));
        assert_eq!(p.series(7).unwrap().buckets.iter().map(|b| b.waits).sum::<u64>(), 1);
    }
}

//! `rtick attach --trace FILE`: a CSV row per wait as it ends, written as
//! the run goes (through a buffer) into the output's temporary file, which
//! is renamed into place when the run ends.

use std::fs::File;
use std::io::BufWriter;

use anyhow::{Context, Result};
use rtick::attach::Wake;

/// The columns: the thread, `timed` or `event`, the time asked for, the
/// system call's exit, lateness, slack, the slack taken and the four phases
/// (timed waits: slack taken + phases = lateness);
/// when an event-driven wait was woken, its scheduling latency and waker;
/// then a timed wait's cycle: when its timer was armed, when the thread
/// went to sleep for it, and its overrun (armed − requested, 0 when asked
/// in time).
pub const HEADER: [&str; COLUMNS] = [
    "tid",
    "kind",
    "requested_ns",
    "exit_ns",
    "lateness_ns",
    "slack_ns",
    "slack_taken_ns",
    "irq_delay_ns",
    "wakeup_path_ns",
    "scheduling_ns",
    "return_to_user_ns",
    "woken_ns",
    "waker",
    "armed_ns",
    "blocked_ns",
    "overrun_ns",
];

/// How many.
const COLUMNS: usize = 16;

/// The rows written so far.
#[derive(Debug)]
pub struct TraceCsv {
    w: csv::Writer<BufWriter<File>>,
    rows: u64,
    failed: Option<csv::Error>,
}

impl TraceCsv {
    /// Writes the header to `file`.
    pub fn new(file: File) -> Result<TraceCsv> {
        let mut w = csv::Writer::from_writer(BufWriter::with_capacity(1 << 16, file));
        w.write_record(HEADER).context("--trace: writing its header")?;
        Ok(TraceCsv { w, rows: 0, failed: None })
    }

    /// Writes the row of wait `w` of thread `tid` (none for an unmatched one).
    pub fn add(&mut self, tid: i32, w: &Wake) {
        if self.failed.is_some() {
            return;
        }
        let Some(rec) = row(tid, w) else { return };
        match self.w.write_record(&rec) {
            Ok(()) => self.rows += 1,
            Err(e) => self.failed = Some(e),
        }
    }

    /// Flushes; the rows written.
    pub fn finish(mut self) -> Result<u64> {
        if let Some(e) = self.failed.take() {
            return Err(e).context("--trace: writing a row");
        }
        self.w.flush().context("--trace: writing the file")?;
        Ok(self.rows)
    }
}

/// The fields of wait `w` of `tid`, in [`HEADER`]'s order.
fn row(tid: i32, w: &Wake) -> Option<[String; COLUMNS]> {
    let ns = |n: i64| n.to_string();
    let mut r: [String; COLUMNS] = Default::default();
    r[0] = tid.to_string();
    match w {
        Wake::Timed(t) => {
            r[1] = "timed".into();
            r[2] = ns(t.requested.0);
            r[3] = ns(t.exit.0);
            r[4] = ns(t.lateness.as_ns());
            r[5] = ns(t.slack.as_ns());
            r[6] = ns(t.slack_taken.as_ns());
            for (k, (_, v)) in t.phases.named().iter().enumerate() {
                r[7 + k] = ns(v.as_ns());
            }
            r[13] = ns(t.armed.0);
            r[14] = ns(t.blocked.0);
            r[15] = ns(t.overrun().as_ns());
        }
        Wake::Event(e) => {
            r[1] = "event".into();
            r[9] = ns(e.scheduling.as_ns());
            r[11] = ns(e.woken.0);
            r[12] = e.waker.to_string();
        }
        Wake::Unmatched => return None,
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::attach::{EventWake, TimedWait, Waker};
    use rtick::explain::{Matched, Phases};
    use rtick::{Nanos, Time};

    #[test]
    fn a_row_per_timed_or_event_driven_wait_and_none_for_an_unmatched_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut t = TraceCsv::new(File::create(&path).unwrap()).unwrap();
        let p = Phases { irq_delay: Nanos(1), wakeup_path: Nanos(1), scheduling: Nanos(1), return_to_user: Nanos(2) };
        let m = Matched { cpu: 1, hrtimer: 0, expired: Time(0), waking: Time(0), switched_in: Time(0), prio: 9 };
        let timed = TimedWait {
            requested: Time(100),
            slack: Nanos(50),
            slack_taken: Nanos(5),
            lateness: Nanos(10),
            phases: p,
            matched: m,
            exit: Time(110),
            armed: Time(105),
            callback: 0,
            blocked: Time(60),
        };
        t.add(7, &Wake::Timed(timed));
        t.add(7, &Wake::Unmatched);
        let by = Waker::Task(3, "writer, \"a\"".into());
        t.add(8, &Wake::Event(EventWake { woken: Time(500), scheduling: Nanos(20), waker: by }));
        assert_eq!(t.finish().unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER.join(","));
        assert_eq!(lines[1], "7,timed,100,110,10,50,5,1,1,1,2,,,105,60,5");
        assert_eq!(lines[2], "8,event,,,,,,,,20,,500,\"writer, \"\"a\"\"/3\",,,");
        assert_eq!(lines.len(), 3);
    }
}

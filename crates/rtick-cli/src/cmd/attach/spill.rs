//! Every timed wait of an attach, kept on disk for the JSON file's
//! `wake_ups` while the run goes on, so that memory stays flat however long
//! it lasts: a thread's waits go in blocks of [`BLOCK`] to an unnamed
//! temporary file; memory holds each thread's current block and an offset
//! per block written. The file is read back, block by block, as the JSON
//! file is written.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use anyhow::{Context, Result};
use rtick::attach::TimedWait;
use rtick_model::json::{StreamWakeUps, WakeUpJson, WakeUps};

/// Waits a block holds.
const BLOCK: usize = 256;

/// One wait on disk: the time asked for, lateness, slack, the four phases.
const RECORD: usize = 7 * 8;

type Record = [i64; 7];

/// One thread's blocks written, and the one being filled.
#[derive(Debug, Default)]
struct Blocks {
    written: Vec<u64>,
    current: Vec<Record>,
}

/// The waits kept so far.
#[derive(Debug)]
pub struct Spill {
    file: Rc<File>,
    len: u64,
    threads: BTreeMap<i32, Blocks>,
    failed: Option<std::io::Error>,
}

impl Spill {
    /// An empty spill, in an unnamed temporary file (gone when closed).
    pub fn new() -> Result<Spill> {
        let file = tempfile::tempfile().context("--json: creating a temporary file for the timed waits")?;
        Ok(Spill { file: Rc::new(file), len: 0, threads: BTreeMap::new(), failed: None })
    }

    /// Keeps timed wait `w` of thread `tid`.
    pub fn add(&mut self, tid: i32, w: &TimedWait) {
        let j = WakeUpJson::of(w);
        let [a, b, c, d] = j.phases_ns;
        let t = self.threads.entry(tid).or_default();
        t.current.push([j.requested_ns, j.lateness_ns, j.slack_ns, a, b, c, d]);
        if t.current.len() < BLOCK || self.failed.is_some() {
            return;
        }
        let bytes: Vec<u8> = t.current.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
        match self.file.write_all_at(&bytes, self.len) {
            Ok(()) => {
                t.written.push(self.len);
                t.current.clear();
                self.len += bytes.len() as u64;
            }
            Err(e) => self.failed = Some(e),
        }
    }

    /// Each thread's waits, to be streamed into the JSON file.
    pub fn finish(self) -> Result<BTreeMap<i32, WakeUps>> {
        if let Some(e) = self.failed {
            return Err(e).context("--json: writing the timed waits to a temporary file");
        }
        let file = self.file;
        Ok(self
            .threads
            .into_iter()
            .map(|(tid, b)| (tid, WakeUps::Streamed(Box::new(Kept { file: Rc::clone(&file), blocks: b }))))
            .collect())
    }
}

/// One thread's waits as kept.
struct Kept {
    file: Rc<File>,
    blocks: Blocks,
}

impl StreamWakeUps for Kept {
    fn each(&self, f: &mut dyn FnMut(&WakeUpJson)) -> std::io::Result<()> {
        let json = |r: &Record| WakeUpJson {
            requested_ns: r[0],
            lateness_ns: r[1],
            slack_ns: r[2],
            phases_ns: [r[3], r[4], r[5], r[6]],
        };
        let mut buf = vec![0u8; BLOCK * RECORD];
        for &at in &self.blocks.written {
            self.file.read_exact_at(&mut buf, at)?;
            for rec in buf.chunks_exact(RECORD) {
                let r: Record =
                    std::array::from_fn(|k| i64::from_le_bytes(rec[k * 8..k * 8 + 8].try_into().expect("8 bytes")));
                f(&json(&r));
            }
        }
        self.blocks.current.iter().for_each(|r| f(&json(r)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::explain::{Matched, Phases};
    use rtick::{Nanos, Time};

    fn wait(k: i64) -> TimedWait {
        let p = Phases { irq_delay: Nanos(k), wakeup_path: Nanos(1), scheduling: Nanos(2), return_to_user: Nanos(3) };
        let m = Matched { cpu: 0, hrtimer: 0, expired: Time(0), waking: Time(0), switched_in: Time(0), prio: 0 };
        TimedWait {
            requested: Time(k * 1000),
            slack: Nanos(50),
            lateness: Nanos(k + 6),
            phases: p,
            matched: m,
            exit: Time(0),
            armed: Time(0),
            callback: 0,
            blocked: Time(0),
        }
    }

    #[test]
    fn every_wait_comes_back_per_thread_in_order() {
        let mut s = Spill::new().unwrap();
        let n = BLOCK as i64 * 2 + 7;
        for k in 0..n {
            s.add(1, &wait(k));
            if k % 3 == 0 {
                s.add(2, &wait(-k));
            }
        }
        let kept = s.finish().unwrap();
        let read = |tid: i32| {
            let WakeUps::Streamed(src) = &kept[&tid] else { panic!("streamed") };
            let mut v = Vec::new();
            src.each(&mut |w| v.push((w.requested_ns, w.lateness_ns, w.phases_ns))).unwrap();
            v
        };
        let one = read(1);
        assert_eq!(one.len() as i64, n);
        assert!(one
            .iter()
            .enumerate()
            .all(|(k, &(r, l, p))| (r, l, p) == (k as i64 * 1000, k as i64 + 6, [k as i64, 1, 2, 3])));
        assert_eq!(read(2).len() as i64, (n + 2) / 3);
        let json = serde_json::to_string(&kept[&2]).unwrap();
        assert!(
            json.starts_with(r#"[{"requested_ns":0,"lateness_ns":6,"slack_ns":50,"phases_ns":[0,1,2,3]}"#),
            "{json}"
        );
    }
}

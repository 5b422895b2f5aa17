//! The CSV trace writer: a non-real-time thread draining the measuring
//! threads' rings into `thread,mechanism,cycle,planned_ns,actual_ns,latency_ns`,
//! and keeping the rows in memory when `--explain` needs them.

use std::fs::File;
use std::io::BufWriter;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use rtick::measure::{TraceConsumer, TraceRow};
use rtick_model::trace_csv::{HEADER, PHASE_HEADER};

/// The six CSV fields of a row, in [`HEADER`]'s order.
fn fields(r: &TraceRow) -> [String; 6] {
    [
        r.thread.to_string(),
        r.mechanism.name().to_string(),
        r.cycle.to_string(),
        r.planned.as_ns().to_string(),
        r.actual.as_ns().to_string(),
        (r.actual - r.planned).as_ns().to_string(),
    ]
}

/// Writes `rows` with their phases (`--trace` with `--explain`): after the
/// run, since the phases come from the trace read at its end.
pub fn write_with_phases(
    file: File,
    rows: &[TraceRow],
    phases: impl Fn(&TraceRow) -> Option<rtick::explain::Phases>,
) -> Result<u64> {
    let mut w = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, file));
    w.write_record(HEADER.iter().chain(PHASE_HEADER.iter()))?;
    for r in rows {
        let mut rec = fields(r).to_vec();
        match phases(r) {
            Some(p) => rec.extend(p.named().iter().map(|(_, d)| d.as_ns().to_string())),
            None => rec.extend(std::iter::repeat_n(String::new(), 4)),
        }
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(rows.len() as u64)
}

/// A running writer.
#[derive(Debug)]
pub struct TraceWriter {
    done: Arc<AtomicBool>,
    handle: JoinHandle<Result<(u64, Vec<TraceRow>)>>,
}

impl TraceWriter {
    /// Starts draining `rings` into `file` (if any), keeping the rows when `keep`.
    pub fn spawn(file: Option<File>, mut rings: Vec<TraceConsumer>, keep: bool) -> Result<TraceWriter> {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle = std::thread::Builder::new()
            .name("rtick-trace".into())
            .spawn(move || {
                let mut w = file.map(|f| csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, f)));
                if let Some(w) = w.as_mut() {
                    w.write_record(HEADER)?;
                }
                let mut kept = Vec::new();
                let mut rows = 0u64;
                loop {
                    // Read the flag first: rows pushed before it was set are drained below.
                    let finished = flag.load(Ordering::Acquire);
                    let mut got = 0;
                    for ring in rings.iter_mut() {
                        while let Ok(r) = ring.pop() {
                            if keep {
                                kept.push(r);
                            }
                            let Some(w) = w.as_mut() else {
                                got += 1;
                                continue;
                            };
                            w.write_record(fields(&r))?;
                            got += 1;
                        }
                    }
                    rows += got;
                    if finished && got == 0 {
                        break;
                    }
                    if got == 0 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                if let Some(w) = w.as_mut() {
                    w.flush()?;
                }
                Ok((rows, kept))
            })
            .context("starting the trace writer thread")?;
        Ok(TraceWriter { done, handle })
    }

    /// Drains what is left and returns the rows drained, and those kept.
    pub fn finish(self) -> Result<(u64, Vec<TraceRow>)> {
        self.done.store(true, Ordering::Release);
        self.handle
            .join()
            .map_err(|_| anyhow::anyhow!("the trace writer thread panicked"))?
            .context("writing the trace")
    }
}

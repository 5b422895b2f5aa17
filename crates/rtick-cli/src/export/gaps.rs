//! `rtick noise --trace`: a CSV row per gap, written as the run goes (the
//! library hands each gap over once its sources are known; nothing is kept).
//!
//! `cpu,start_ns,duration_ns,main_source,sources`: the start is
//! CLOCK_MONOTONIC, `main_source` the source that took most of the gap, and
//! `sources` each source with its time in the gap, most first, as
//! `name=ns;name=ns` (a `;` in a name is written `_`; split each at its
//! last `=`). Without attribution both are empty.

use std::fs::File;
use std::io::BufWriter;

use anyhow::{Context, Result};
use rtick::noise::{GapRecord, Source};
use rtick::Nanos;

/// The header row.
pub const HEADER: [&str; 5] = ["cpu", "start_ns", "duration_ns", "main_source", "sources"];

/// A source's name as the trace writes it.
fn name(s: &Source) -> String {
    s.to_string().replace(';', "_")
}

/// The `sources` field.
pub fn sources_field(sources: &[(Source, Nanos)]) -> String {
    let parts: Vec<String> = sources.iter().map(|(s, d)| format!("{}={}", name(s), d.as_ns())).collect();
    parts.join(";")
}

/// The writer: rows go out as the gaps come; the first write error is
/// kept (and the rest of the rows dropped) until [`GapTrace::finish`].
pub struct GapTrace {
    w: csv::Writer<BufWriter<File>>,
    rows: u64,
    error: Option<csv::Error>,
}

impl GapTrace {
    /// Writes the header into `file`.
    pub fn new(file: File) -> Result<GapTrace> {
        let mut w = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, file));
        w.write_record(HEADER).context("writing the trace")?;
        Ok(GapTrace { w, rows: 0, error: None })
    }

    /// One gap of `cpu`.
    pub fn row(&mut self, cpu: usize, g: &GapRecord) {
        if self.error.is_some() {
            return;
        }
        let main = g.sources.first().map(|(s, _)| name(s)).unwrap_or_default();
        let rec = [
            cpu.to_string(),
            g.gap.start.as_ns().to_string(),
            g.gap.len().as_ns().to_string(),
            main,
            sources_field(&g.sources),
        ];
        match self.w.write_record(&rec) {
            Ok(()) => self.rows += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Flushes; the rows written, or the first error.
    pub fn finish(mut self) -> Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e).context("writing the trace");
        }
        self.w.flush().context("writing the trace")?;
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::noise::{Gap, Vector};
    use rtick::Time;

    #[test]
    fn a_row_names_its_sources_most_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut t = GapTrace::new(File::create(&path).unwrap()).unwrap();
        let sources = vec![(Source::Vector(Vector::LocalTimer), Nanos(4000)), (Source::AroundEvents, Nanos(1000))];
        t.row(1, &GapRecord { gap: Gap { start: Time(100), end: Time(5100) }, sources });
        t.row(2, &GapRecord { gap: Gap { start: Time(7), end: Time(2007) }, sources: Vec::new() });
        assert_eq!(t.finish().unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "cpu,start_ns,duration_ns,main_source,sources\n\
             1,100,5000,local_timer,\"local_timer=4000;around kernel events (entry, exit, switches, host)=1000\"\n\
             2,7,2000,,\n"
        );
    }
}

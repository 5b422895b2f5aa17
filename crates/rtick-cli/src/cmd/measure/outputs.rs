//! `measure`'s output files: created (as temporaries) before the run,
//! written and committed after it; the plot, drawn last.

use anyhow::{Context, Result};
use rtick::measure::{MeasureConfig, MeasureReport};
use rtick_model::json::RunFile;

use crate::cli::MeasureArgs;
use crate::export::atomic::AtomicFile;
use crate::export::histogram;
use crate::Usage;

/// Output files, created (as temporaries) before the run.
pub struct Outputs {
    pub json: Option<AtomicFile>,
    pub trace: Option<AtomicFile>,
    pub histogram: Option<AtomicFile>,
}

impl Outputs {
    /// Creates the output files asked for, as temporaries; a path that cannot be one is a usage error.
    pub fn create(a: &MeasureArgs) -> Result<Outputs, Usage> {
        let make = |opt: &str, p: &Option<std::path::PathBuf>| AtomicFile::create_opt(opt, p.as_deref());
        Ok(Outputs {
            json: make("--json", &a.json)?,
            trace: make("--trace", &a.trace)?,
            histogram: make("--histogram", &a.histogram)?,
        })
    }

    /// Writes the JSON and histogram files and commits every output file.
    pub fn write(self, file: &RunFile, cfg: &MeasureConfig, report: &MeasureReport) -> Result<()> {
        if let Some(f) = &self.json {
            f.write_json(file)?;
        }
        if let Some(f) = &self.histogram {
            use std::io::Write;
            for &m in &cfg.mechanisms {
                let threads: Vec<_> = report.results.iter().filter(|r| r.mechanism == m).collect();
                f.file()
                    .write_all(histogram::render(&threads, m.name()).as_bytes())
                    .context("writing the histogram")?;
            }
        }
        for f in [self.json, self.trace, self.histogram].into_iter().flatten() {
            f.commit()?;
        }
        Ok(())
    }
}

/// `--plot`: the run's figure, unless nothing ran.
pub fn plot(a: &MeasureArgs, file: &RunFile) -> Result<()> {
    if let (Some(p), false) = (&a.plot, file.results.is_empty()) {
        let input =
            rtick_model::read::from_measure(&file.results, file.explain.as_ref()).map_err(anyhow::Error::msg)?;
        let kind = crate::plot::default_kind(std::slice::from_ref(&input));
        crate::plot::draw_atomic(p, std::slice::from_ref(&input), kind)?;
    }
    Ok(())
}

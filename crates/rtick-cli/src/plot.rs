//! Pictures of latency (plotters), PNG or SVG by the file's extension. The
//! font is embedded, so PNG rendering does not depend on the fonts a system
//! has installed.
//!
//! - `histogram`: the OSADL style — latency on x, log count on y, one line
//!   per series;
//! - `timeline`: latency over time from a trace, overruns marked;
//! - `percentiles`: latency against p50 … p99.999 on a "nines" axis;
//! - `breakdown`: the kernel phases of `measure --explain` (`plot/breakdown.rs`);
//! - `rtick noise --plot`: gaps over time by source, and each source's share (`plot/noise.rs`).
//! - `rtick attach --plot`: each thread's lateness over time and its phases (`plot/attach.rs`).

use std::io::Write;
use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::export::atomic::AtomicFile;
use crate::Usage;
use rtick_model::read::{analysis, Input, Series};

/// A plotters error as this module's: "drawing the plot: …".
macro_rules! try_plot {
    ($e:expr) => {
        $e.map_err(|e| anyhow!("drawing the plot: {e}"))?
    };
}

pub mod attach;
mod breakdown;
mod glyphs;
pub mod noise;
mod percentiles;
mod picture;

use picture::encode;
pub(crate) use picture::Picture;

static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";
/// Picture size in pixels.
pub const SIZE: (u32, u32) = (1200, 720);

/// What to draw.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PlotKind {
    Histogram,
    Timeline,
    Percentiles,
    Breakdown,
}

/// The kind the inputs support best: the breakdown when they carry kernel
/// phases (`--explain`), a timeline when every series is a trace's (one
/// `--trace` file: its mechanisms over time), percentiles to compare several
/// series, else a histogram.
pub fn default_kind(inputs: &[Input]) -> PlotKind {
    let series: Vec<&Series> = inputs.iter().flat_map(|i| &i.series).collect();
    if breakdown::has_phases(inputs) {
        PlotKind::Breakdown
    } else if !series.is_empty() && series.iter().all(|s| s.timeline.is_some()) {
        PlotKind::Timeline
    } else if series.len() > 1 {
        PlotKind::Percentiles
    } else {
        PlotKind::Histogram
    }
}

/// Whether `inputs` hold what `kind` draws: when not, why, naming the
/// option (a usage error, found before anything is printed or run).
pub fn check_kind(inputs: &[Input], kind: PlotKind) -> Result<(), String> {
    let mut series = inputs.iter().flat_map(|i| &i.series);
    let (ok, why) = match kind {
        PlotKind::Histogram => (series.any(has_dist), "the inputs hold no distribution (cyclictest JSON needs -h)"),
        PlotKind::Timeline => (series.any(|s| s.timeline.is_some()), "needs an rtick --trace file"),
        PlotKind::Percentiles => (
            series.any(|s| has_dist(s) || s.result.percentiles_ns.is_some()),
            "the inputs hold no percentiles (cyclictest JSON needs -h)",
        ),
        PlotKind::Breakdown => (
            breakdown::has_phases(inputs),
            "needs the kernel phases of a run: measure --explain's --json or --trace file",
        ),
    };
    match ok {
        true => Ok(()),
        false => Err(format!("--plot-kind {}: {why}", format!("{kind:?}").to_lowercase())),
    }
}

/// Whether a series has a distribution to draw.
fn has_dist(s: &Series) -> bool {
    s.dist.as_ref().is_some_and(|d| !d.weighted.is_empty())
}

fn font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

fn label(input: &Input, s: &Series, many_inputs: bool) -> String {
    let base = format!("{} T{}", s.result.mechanism, s.result.thread);
    if many_inputs {
        format!("{} ({})", base, input.name())
    } else {
        base
    }
}

/// The picture formats, by file extension.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Format {
    Png,
    Svg,
}

impl Format {
    fn of(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "png" => Some(Format::Png),
            "svg" => Some(Format::Svg),
            _ => None,
        }
    }
}

/// The plots of saved runs.
struct Runs<'a> {
    inputs: &'a [Input],
    series: Vec<(String, &'a Series)>,
    kind: PlotKind,
}

impl Picture for Runs<'_> {
    fn size(&self) -> (u32, u32) {
        if self.kind == PlotKind::Breakdown {
            breakdown::size(self.inputs)
        } else {
            SIZE
        }
    }

    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        render(root, self.inputs, &self.series, self.kind)
    }
}

/// Draws `kind` of `inputs` in memory, as the bytes of a `format` file.
fn draw(format: Format, inputs: &[Input], kind: PlotKind) -> Result<Vec<u8>> {
    check_kind(inputs, kind).map_err(|e| anyhow!(e))?;
    let many = inputs.len() > 1;
    let series: Vec<(String, &Series)> =
        inputs.iter().flat_map(|i| i.series.iter().map(move |s| (label(i, s, many), s))).collect();
    encode(format, &Runs { inputs, series, kind })
}

fn render<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    inputs: &[Input],
    series: &[(String, &Series)],
    kind: PlotKind,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    match kind {
        PlotKind::Histogram => histogram(root, series),
        PlotKind::Timeline => timeline(root, series),
        PlotKind::Percentiles => percentiles::draw(root, series),
        PlotKind::Breakdown => breakdown::render(root, inputs),
    }
}

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

fn histogram<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, series: &[(String, &Series)]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    // Not empty: `draw` checked the kind.
    let with: Vec<_> = series.iter().filter(|s| has_dist(s.1)).collect();
    let max_ns = with.iter().map(|s| s.1.result.max_ns.max(1)).max().unwrap_or(1);
    let min_ns = with.iter().map(|s| s.1.result.min_ns.min(0)).min().unwrap_or(0);
    // About 400 bins across the range, at least each source's resolution.
    let width = ((max_ns - min_ns) / 400)
        .max(with.iter().map(|s| s.1.dist.as_ref().map_or(1, |d| d.resolution_ns)).max().unwrap_or(1))
        .max(1);
    let binned: Vec<Vec<(f64, u64)>> = with
        .iter()
        .map(|s| {
            analysis::buckets(s.1.dist.as_ref().expect("filtered"), width)
                .into_iter()
                .filter_map(|(b, c)| b.map(|b| ((b as f64 + width as f64 / 2.0) / 1e3, c)))
                .collect()
        })
        .collect();
    let ymax = binned.iter().flatten().map(|x| x.1).max().unwrap_or(1) as f64 * 3.0;
    let mut chart = try_plot!(ChartBuilder::on(root)
        .caption("Latency histogram (one line per series, log count)", (FAMILY, 26))
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d(min_ns as f64 / 1e3..max_ns as f64 / 1e3 * 1.03 + 0.1, (0.8f64..ymax).log_scale()));
    try_plot!(chart
        .configure_mesh()
        .x_desc(format!("latency (µs), bins of {}", rtick::Nanos(width)))
        .y_desc("samples (log scale)")
        .label_style((FAMILY, 16))
        .axis_desc_style((FAMILY, 18))
        .draw());
    // Lines join adjacent bins only: a gap (empty bins) breaks the line, and
    // an isolated bin is a marker, so nothing suggests samples that are not there.
    let step = width as f64 / 1e3;
    for (i, (s, pts)) in with.iter().zip(&binned).enumerate() {
        let c = color(i);
        let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
        for p in pts {
            match runs.last_mut() {
                Some(r) if (p.0 - r.last().expect("non-empty").0 - step).abs() < step * 0.01 => {
                    r.push((p.0, p.1 as f64))
                }
                _ => runs.push(vec![(p.0, p.1 as f64)]),
            }
        }
        for (k, run) in runs.iter().enumerate() {
            let drawn = if run.len() == 1 {
                try_plot!(chart.draw_series(std::iter::once(Circle::new(run[0], 3, c.filled()))))
            } else {
                try_plot!(chart.draw_series(LineSeries::new(run.iter().copied(), c.stroke_width(2))))
            };
            if k == 0 {
                drawn
                    .label(s.0.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
            }
        }
    }
    legend(&mut chart)
}

fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    legend_at(chart, SeriesLabelPosition::UpperRight)
}

fn legend_at<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    at: SeriesLabelPosition,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    try_plot!(chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FAMILY, 16))
        .draw());
    Ok(())
}

fn timeline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, series: &[(String, &Series)]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    // Not empty: `draw` checked the kind.
    let with: Vec<_> = series.iter().filter(|s| s.1.timeline.is_some()).collect();
    fn tl<'s>(s: &&(String, &'s Series)) -> &'s rtick_model::read::Timeline {
        s.1.timeline.as_ref().expect("filtered")
    }
    let tmax = with.iter().filter_map(|s| tl(s).t_ns.last().copied()).max().unwrap_or(1).max(1) as f64 / 1e9;
    let lmax = with.iter().flat_map(|s| tl(s).latency_ns.iter().copied()).max().unwrap_or(1) as f64 / 1e3;
    let lmin = with.iter().flat_map(|s| tl(s).latency_ns.iter().copied()).min().unwrap_or(0).min(0) as f64 / 1e3;
    let mut chart = try_plot!(ChartBuilder::on(root)
        .caption("Wake-up latency over time (overruns: black crosses)", (FAMILY, 26))
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..tmax * 1.01, lmin..lmax * 1.05 + 0.1));
    try_plot!(chart
        .configure_mesh()
        .x_desc("time since the first deadline (s)")
        .y_desc("latency (µs)")
        .label_style((FAMILY, 16))
        .axis_desc_style((FAMILY, 18))
        .draw());
    for (i, s) in with.iter().enumerate() {
        let t = tl(s);
        let c = color(i);
        let pts = t.t_ns.iter().zip(&t.latency_ns).map(|(x, y)| (*x as f64 / 1e9, *y as f64 / 1e3));
        try_plot!(chart.draw_series(pts.map(|p| Circle::new(p, 1, c.filled()))))
            .label(s.0.clone())
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
    }
    let overruns: Vec<(f64, f64)> = with
        .iter()
        .flat_map(|s| {
            let t = tl(s);
            t.t_ns
                .iter()
                .zip(&t.latency_ns)
                .zip(&t.overrun)
                .filter(|x| *x.1)
                .map(|((a, b), _)| (*a as f64 / 1e9, *b as f64 / 1e3))
                .collect::<Vec<_>>()
        })
        .collect();
    if !overruns.is_empty() {
        try_plot!(chart.draw_series(overruns.iter().map(|p| Cross::new(*p, 6, BLACK.stroke_width(2)))))
            .label(format!("overrun ({})", overruns.len()))
            .legend(|(x, y)| Cross::new((x + 10, y), 6, BLACK.stroke_width(2)));
    }
    legend(&mut chart)
}

/// Nines: −log10(1 − q): p50 → 0.30, p90 → 1, p99 → 2 … p99.999 → 5.
pub(crate) fn nines(q: f64) -> f64 {
    -(1.0 - q).log10()
}

/// Checks a --plot path before anything runs.
pub fn check_path(option: &str, path: &Path) -> Result<(), String> {
    format_of(option, path).map(|_| ())
}

fn format_of(option: &str, path: &Path) -> Result<Format, String> {
    Format::of(path).ok_or_else(|| format!("{option}: {} must end in .png or .svg", path.display()))
}

/// A --plot output: its file, created (as a temporary file) before anything
/// runs as every other output is, and the format its name asks for — the
/// name given, not a symlink's target.
#[derive(Debug)]
pub struct PlotFile {
    file: AtomicFile,
    format: Format,
}

impl PlotFile {
    /// Checks the name and creates the file; the error names the option.
    pub fn create(option: &str, path: &Path) -> Result<PlotFile, Usage> {
        let format = format_of(option, path).map_err(Usage)?;
        Ok(PlotFile { file: AtomicFile::create(option, path).map_err(Usage)?, format })
    }

    /// [`PlotFile::create`] for an optional path.
    pub fn create_opt(option: &str, path: Option<&Path>) -> Result<Option<PlotFile>, Usage> {
        path.map(|p| PlotFile::create(option, p)).transpose()
    }

    /// Draws and commits: the picture appears whole or not at all.
    pub fn write(self, inputs: &[Input], kind: PlotKind) -> Result<()> {
        let bytes = draw(self.format, inputs, kind)?;
        self.commit(&bytes)
    }

    /// Draws `picture` and commits.
    pub(crate) fn write_picture(self, picture: &impl Picture) -> Result<()> {
        let bytes = encode(self.format, picture)?;
        self.commit(&bytes)
    }

    fn commit(self, bytes: &[u8]) -> Result<()> {
        self.file.file().write_all(bytes).context("writing the plot")?;
        self.file.commit()
    }
}

/// Draws into `dest` through the atomic writer.
pub fn draw_atomic(dest: &Path, inputs: &[Input], kind: PlotKind) -> Result<()> {
    PlotFile::create("--plot", dest)?.write(inputs, kind)
}

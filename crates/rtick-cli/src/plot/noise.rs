//! `rtick noise --plot`: per CPU, every gap over time (its length on a log
//! axis) coloured by the source that took most of it, and beside it each
//! source's share of the CPU's noise, in the same colours.
//!
//! The gaps are collected as the run hands them over ([`GapPoints`]), with
//! bounded memory: past [`KEEP`] gaps on a CPU, the shorter half goes and
//! only gaps above the new floor are kept (the plot says how many it omits).

use std::collections::HashMap;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, Picture, FAMILY};
use rtick::noise::GapRecord;
use rtick::{Nanos, Time};
use rtick_model::json::{NoiseCpuJson, NoiseFile};

/// Gaps kept per CPU.
pub const KEEP: usize = 200_000;
/// Sources with a colour of their own; the others share grey.
const COLOURED: usize = 7;
const GREY: RGBColor = RGBColor(150, 150, 150);
const ROW: u32 = 330;
const WIDTH: u32 = 1200;
const BARS: u32 = 470;

#[derive(Clone, Copy, Debug)]
struct Point {
    /// Seconds since the run began.
    t: f32,
    us: f32,
    /// Index into the source names; `u16::MAX`: none (no attribution).
    source: u16,
}

/// One CPU's gaps.
#[derive(Debug, Default)]
struct CpuPoints {
    points: Vec<Point>,
    /// Gaps shorter than this are no longer kept, µs.
    floor_us: f32,
    omitted: u64,
}

/// The gaps of a run as they come, per CPU, with their main source.
#[derive(Debug)]
pub struct GapPoints {
    t0: Time,
    names: Vec<String>,
    index: HashMap<String, u16>,
    cpus: HashMap<usize, CpuPoints>,
}

impl GapPoints {
    /// For a run that began at `t0` (CLOCK_MONOTONIC).
    pub fn new(t0: Time) -> GapPoints {
        GapPoints { t0, names: Vec::new(), index: HashMap::new(), cpus: HashMap::new() }
    }

    /// One gap of `cpu`.
    pub fn add(&mut self, cpu: usize, g: &GapRecord) {
        self.push(cpu, g.gap.start, g.gap.len(), g.sources.first().map(|(s, _)| s.to_string()));
    }

    /// A gap of `cpu` at `start`, `len` long, `main` the source that took most of it.
    fn push(&mut self, cpu: usize, start: Time, len: Nanos, main: Option<String>) {
        let c = self.cpus.entry(cpu).or_default();
        let us = len.as_ns() as f32 / 1000.0;
        if us < c.floor_us {
            c.omitted += 1;
            return;
        }
        let source = match main {
            Some(name) => match self.index.get(&name) {
                Some(&i) => i,
                None if self.names.len() < u16::MAX as usize => {
                    self.names.push(name.clone());
                    self.index.insert(name, self.names.len() as u16 - 1);
                    self.names.len() as u16 - 1
                }
                None => u16::MAX,
            },
            None => u16::MAX,
        };
        let t = (start - self.t0).as_secs_f64().max(0.0) as f32;
        c.points.push(Point { t, us, source });
        if c.points.len() >= KEEP {
            let mut lens: Vec<f32> = c.points.iter().map(|p| p.us).collect();
            lens.sort_by(f32::total_cmp);
            c.floor_us = lens[lens.len() / 2].max(c.floor_us);
            let before = c.points.len();
            let floor = c.floor_us;
            c.points.retain(|p| p.us >= floor);
            c.omitted += (before - c.points.len()) as u64;
        }
    }
}

impl GapPoints {
    /// The gaps a run file `f` holds: each CPU's largest (at most
    /// [`WORST_KEPT`](rtick::noise::attribute::WORST_KEPT)); the others counted as not drawn, below the shortest drawn.
    pub fn of_file(f: &NoiseFile) -> GapPoints {
        let mut p = GapPoints::new(Time(f.started_ns));
        for c in &f.cpus {
            for g in &c.largest_gaps {
                let (start, len) = (Time(g.start_ns), Nanos(g.length_ns));
                let main = g.sources.first().map(|(s, _)| s.clone());
                p.push(c.cpu, start, len, main);
            }
            let cpu = p.cpus.entry(c.cpu).or_default();
            cpu.omitted = c.gaps.saturating_sub(cpu.points.len() as u64);
            cpu.floor_us = c.largest_gaps.iter().map(|g| g.length_ns as f32 / 1000.0).reduce(f32::min).unwrap_or(0.0);
        }
        p
    }
}

/// The picture of a run and its gaps.
pub struct NoisePlot<'a> {
    pub file: &'a NoiseFile,
    pub points: &'a GapPoints,
}

impl NoisePlot<'_> {
    /// Source names, most noise first over every CPU.
    fn ranked(&self) -> Vec<String> {
        let mut total: HashMap<String, i64> = HashMap::new();
        for s in self.file.cpus.iter().flat_map(|c| &c.sources) {
            *total.entry(s.name.clone()).or_insert(0) += s.total_ns;
        }
        let mut v: Vec<(String, i64)> = total.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.into_iter().map(|(s, _)| s).collect()
    }
}

/// A name's colour: its rank's, grey past the coloured ones.
fn colour_of(ranked: &[String], name: &str) -> RGBColor {
    match ranked.iter().position(|r| r == name) {
        Some(i) if i < COLOURED => color(i),
        _ => GREY,
    }
}

impl Picture for NoisePlot<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH, 50 + ROW * self.file.cpus.len().max(1) as u32)
    }

    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let (title, rows) = root.split_vertically(50);
        let f = self.file;
        let what = if f.attribution { "coloured by the source that took most of it" } else { "no attribution" };
        let whose = match &f.attached {
            Some(t) => format!(" of thread {} (tid {})", t.comm, t.tid),
            None => String::new(),
        };
        let heading = format!("OS noise{whose}: each gap over time, {what}");
        try_plot!(title.draw(&Text::new(heading, (20, 14), (FAMILY, 24))));
        let ranked = self.ranked();
        for (c, area) in f.cpus.iter().zip(rows.split_evenly((f.cpus.len().max(1), 1))) {
            let (left, right) = area.split_horizontally(WIDTH - BARS);
            let pts = self.points.cpus.get(&c.cpu);
            timeline(&left, c, pts, &self.points.names, &ranked, f)?;
            if f.attribution {
                shares(&right, c, &ranked)?;
            }
        }
        Ok(())
    }
}

/// One CPU's gaps over time.
fn timeline<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &NoiseCpuJson,
    pts: Option<&CpuPoints>,
    names: &[String],
    ranked: &[String],
    run: &NoiseFile,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let empty = Vec::new();
    let points = pts.map_or(&empty, |p| &p.points);
    let tmax = ((c.runtime_ns as f64 / 1e9) as f32).max(points.iter().map(|p| p.t).fold(0.0, f32::max)).max(1e-3);
    let lo = (run.threshold_ns as f64 / 1000.0 * 0.8).max(0.01);
    let hi = (c.max_gap_ns as f64 / 1000.0 * 1.5).max(lo * 10.0);
    let omitted = match pts.filter(|p| p.omitted > 0) {
        Some(p) => format!("; {} under {:.1} µs not drawn", p.omitted, p.floor_us),
        None => String::new(),
    };
    let caption = format!(
        "CPU {}: {} gaps, {:.4} % available, max {:.1} µs{omitted}",
        c.cpu,
        c.gaps,
        c.available_percent,
        c.max_gap_ns as f64 / 1000.0
    );
    let mut chart = try_plot!(ChartBuilder::on(area)
        .caption(caption, (FAMILY, 18))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..tmax as f64 * 1.01, (lo..hi).log_scale()));
    try_plot!(chart
        .configure_mesh()
        .x_desc("time since the start (s)")
        .y_desc("gap (µs)")
        .y_label_formatter(&|v| if *v >= 1.0 { format!("{v:.0}") } else { format!("{v}") })
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 15))
        .draw());
    // Grey first, so the coloured sources are drawn over it.
    let colour = |p: &Point| match names.get(p.source as usize) {
        Some(n) => colour_of(ranked, n),
        None if run.attribution => GREY,
        None => color(0),
    };
    let mut order: Vec<&Point> = points.iter().collect();
    order.sort_by_key(|p| colour(p) != GREY);
    try_plot!(chart.draw_series(order.into_iter().map(|p| Circle::new(
        (p.t as f64, (p.us as f64).clamp(lo, hi)),
        2,
        colour(p).filled()
    ))));
    Ok(())
}

/// One CPU's sources: a bar each (the coloured ones, the rest together), % of its noise.
fn shares<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: &NoiseCpuJson, ranked: &[String]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let noise = c.noise_ns.max(1) as f64;
    let mut rows: Vec<(String, f64, RGBColor)> = Vec::new();
    let mut rest = 0.0;
    for s in &c.sources {
        let (name, share) = (s.name.clone(), 100.0 * s.total_ns as f64 / noise);
        let col = colour_of(ranked, &name);
        if col == GREY {
            rest += share;
        } else {
            rows.push((name, share, col));
        }
    }
    if rest > 0.0 {
        rows.push(("other sources".into(), rest, GREY));
    }
    try_plot!(area.draw(&Text::new("share of the noise", (10, 18), (FAMILY, 16))));
    let (label_w, bar_w, row_h) = (290i32, (BARS as i32 - 290 - 60), 30i32);
    for (i, (name, share, col)) in rows.iter().enumerate() {
        let y = 50 + i as i32 * row_h;
        let short: String = match name.chars().count() > 40 {
            true => name.chars().take(39).chain(['…']).collect(),
            false => name.clone(),
        };
        try_plot!(area.draw(&Text::new(short, (10, y + 6), (FAMILY, 13))));
        let w = ((share / 100.0) * bar_w as f64).round().max(1.0) as i32;
        try_plot!(area.draw(&Rectangle::new([(label_w, y + 2), (label_w + w, y + row_h - 6)], col.filled())));
        try_plot!(area.draw(&Text::new(format!("{share:.1} %"), (label_w + w + 5, y + 6), (FAMILY, 13))));
    }
    if rows.is_empty() {
        try_plot!(area.draw(&Text::new("no gap", (10, 50), (FAMILY, 14))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtick::noise::{Gap, Source};

    fn gap(start: i64, len: i64) -> GapRecord {
        GapRecord { gap: Gap { start: Time(start), end: Time(start + len) }, sources: vec![(Source::Nmi, Nanos(len))] }
    }

    #[test]
    fn memory_is_bounded_and_the_longest_gaps_stay() {
        let mut p = GapPoints::new(Time(0));
        let n = KEEP as i64 * 3;
        for i in 0..n {
            // Lengths 1 µs to 1000 µs, cycling; one 50 ms gap at the end.
            p.add(1, &gap(i * 10_000, 1_000 + (i % 1000) * 1_000));
        }
        p.add(1, &gap(n * 10_000, 50_000_000));
        let c = &p.cpus[&1];
        assert!(c.points.len() < KEEP, "{}", c.points.len());
        assert_eq!(c.points.len() as u64 + c.omitted, n as u64 + 1);
        assert!(c.floor_us > 1.0);
        assert!(c.points.iter().any(|q| q.us == 50_000.0));
        assert_eq!(p.names, ["NMI"]);
    }
}

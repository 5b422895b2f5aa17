//! The picture of `rtick attach --plot`: a row per thread (those with the
//! latest waits, at most [`MAX_THREADS`]):
//!
//! - left, its lateness over time: per time bucket, its worst wait, split
//!   into the four phases stacked (the colours of `breakdown`), the worst
//!   waits explained marked with a black cross;
//! - right, each phase's p50, p99 and max (log scale): the phase that
//!   takes the tail stands out.

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::breakdown::COLORS;
use super::{Picture, FAMILY};
use rtick::explain::Phases;
use rtick_model::json::AttachFile;

/// Threads drawn at most.
pub const MAX_THREADS: usize = 6;
const WIDTH: u32 = 1200;
const TITLE_H: u32 = 50;
const ROW_H: u32 = 330;

/// One thread's figures to draw (times in µs and s).
#[derive(Clone, Debug)]
pub struct ThreadPlot {
    /// "1234 comm".
    pub label: String,
    /// A bucket's width (s).
    pub width_s: f64,
    /// Per bucket with a wait: its start (s since tracing began) and its
    /// worst wait's phases (µs, in [`Phases::NAMES`] order).
    pub buckets: Vec<(f64, [f64; 4])>,
    /// The worst waits explained: (s, lateness µs).
    pub spikes: Vec<(f64, f64)>,
    /// Each phase's p50, p99, max (µs).
    pub phases: [[f64; 3]; 4],
}

/// The whole picture: its threads, the worst first.
#[derive(Clone, Debug)]
pub struct AttachPlot {
    /// "pid 1234 (comm), 2.0 s" and how many threads of how many are drawn.
    pub title: String,
    /// How long it traced (s): the time axis's length.
    pub elapsed_s: f64,
    pub threads: Vec<ThreadPlot>,
}

impl AttachPlot {
    /// The picture of the attach run `f`: the threads with the latest
    /// waits, the worst first, at most [`MAX_THREADS`]; times since tracing
    /// began (in a file that does not record it, since its first bucket).
    /// Threads without `over_time` (no timed wait) are not drawn.
    pub fn of(f: &AttachFile) -> AttachPlot {
        let first_bucket = || f.threads.iter().filter_map(|t| Some(t.over_time.as_ref()?.start_ns)).min();
        let origin = f.started().map(|t| t.0).or_else(first_bucket).unwrap_or(0);
        let s = |t: i64| (t - origin) as f64 / 1e9;
        let us = |n: i64| n as f64 / 1e3;
        let mut with: Vec<_> = f.threads.iter().filter_map(|t| Some((t, t.over_time.as_ref()?))).collect();
        let plotted = with.len();
        with.sort_by_key(|(t, _)| std::cmp::Reverse(t.lateness_ns.map(|l| l[3])));
        let threads: Vec<ThreadPlot> = with
            .into_iter()
            .take(MAX_THREADS)
            .map(|(t, series)| {
                let at = |k: usize| s(series.start_ns + series.width_ns * k as i64);
                let mut phases = [[0.0; 3]; 4];
                for p in &t.phases_ns {
                    if let Some(i) = Phases::NAMES.iter().position(|n| *n == p.phase) {
                        phases[i] = [p.p50, p.p99, p.max].map(us);
                    }
                }
                ThreadPlot {
                    label: t.label(),
                    width_s: series.width_ns as f64 / 1e9,
                    buckets: series.buckets.iter().map(|b| (at(b.index), b.phases_ns.map(us))).collect(),
                    spikes: t.spikes.iter().map(|w| (s(w.requested_ns), us(w.lateness_ns))).collect(),
                    phases,
                }
            })
            .collect();
        let title = format!(
            "rtick attach: pid {} ({}), {}: lateness of timed waits ({} of {plotted} threads with one)",
            f.target.pid,
            f.target.comm,
            rtick::Nanos(f.elapsed_ns),
            threads.len()
        );
        AttachPlot { title, elapsed_s: f.elapsed_ns as f64 / 1e9, threads }
    }
}

impl Picture for AttachPlot {
    fn size(&self) -> (u32, u32) {
        (WIDTH, TITLE_H + ROW_H * self.threads.len().max(1) as u32)
    }

    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let (title, rest) = root.split_vertically(TITLE_H);
        try_plot!(title.titled(&self.title, (FAMILY, 24)));
        let rows = rest.split_evenly((self.threads.len().max(1), 1));
        for (t, row) in self.threads.iter().zip(&rows) {
            let (left, right) = row.split_horizontally(WIDTH * 2 / 3);
            timeline(&left, t, self.elapsed_s)?;
            distribution(&right, t)?;
        }
        if self.threads.is_empty() {
            try_plot!(rows[0].titled("no timed wait ended in the run", (FAMILY, 20)));
        }
        Ok(())
    }
}

/// Lateness over time, the phases of each bucket's worst wait stacked.
fn timeline<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, t: &ThreadPlot, elapsed_s: f64) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let tmax = t.buckets.last().map_or(0.0, |b| b.0 + t.width_s).max(elapsed_s).max(t.width_s);
    let ymax = t.buckets.iter().map(|b| b.1.iter().sum::<f64>()).fold(1.0, f64::max) * 1.08;
    let mut chart = try_plot!(ChartBuilder::on(area)
        .caption(format!("{}: worst wait per {:.0} ms, phases stacked", t.label, t.width_s * 1e3), (FAMILY, 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..tmax, 0f64..ymax));
    try_plot!(chart
        .configure_mesh()
        .x_desc("time since tracing began (s)")
        .y_desc("lateness (µs)")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 15))
        .draw());
    for (k, name) in Phases::DISPLAY_NAMES.iter().enumerate() {
        let c = COLORS[k];
        let rects = t.buckets.iter().map(|(x, p)| {
            let below: f64 = p[..k].iter().sum();
            Rectangle::new([(*x, below), (x + t.width_s, below + p[k])], c.filled())
        });
        try_plot!(chart.draw_series(rects))
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
    }
    if !t.spikes.is_empty() {
        try_plot!(chart.draw_series(t.spikes.iter().map(|p| Cross::new(*p, 6, BLACK.stroke_width(2)))))
            .label("worst waits explained")
            .legend(|(x, y)| Cross::new((x + 7, y), 5, BLACK.stroke_width(2)));
    }
    try_plot!(chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FAMILY, 13))
        .draw());
    Ok(())
}

/// Each phase's p50, p99 and max: three bars a phase, lighter to darker.
fn distribution<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, t: &ThreadPlot) -> Result<()>
where
    DB::ErrorType: 'static,
{
    const FLOOR: f64 = 0.1;
    let ymax = t.phases.iter().flatten().fold(1.0f64, |a, b| a.max(*b)) * 8.0;
    let mut chart = try_plot!(ChartBuilder::on(area)
        .caption("phases: p50, p99, max (log)", (FAMILY, 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.6f64..3.6, (FLOOR..ymax).log_scale()));
    try_plot!(chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&|v| if *v >= 1.0 { format!("{v:.0}") } else { format!("{v:.1}") })
        .y_desc("µs")
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 15))
        .draw());
    // Each group named above it, in its colour (the timeline's legend).
    let names = ["IRQ", "wake-up", "scheduling", "to user"];
    let top = ymax / 2.5;
    try_plot!(chart.draw_series(names.iter().enumerate().map(|(k, n)| Text::new(
        *n,
        (k as f64 - 0.42, top),
        (FAMILY, 13).into_font().color(&COLORS[k])
    ))));
    for (k, q) in t.phases.iter().enumerate() {
        let bars = q.iter().enumerate().map(|(j, v)| {
            let x = k as f64 - 0.38 + j as f64 * 0.26;
            let shade = COLORS[k].mix([0.35, 0.65, 1.0][j]);
            Rectangle::new([(x, FLOOR), (x + 0.22, v.max(FLOOR))], shade.filled())
        });
        try_plot!(chart.draw_series(bars));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(label: &str) -> ThreadPlot {
        ThreadPlot {
            label: label.into(),
            width_s: 0.005,
            buckets: (0..100).map(|k| (k as f64 * 0.005, [20.0, 1.0, 10.0 + (k % 7) as f64, 2.0])).collect(),
            spikes: vec![(0.25, 33.0)],
            phases: [[20.0, 25.0, 30.0], [0.5, 1.0, 2.0], [10.0, 16.0, 17.0], [2.0, 3.0, 5.0]],
        }
    }

    /// Drawn as PNG and SVG, one row per thread, and with no thread at all.
    #[test]
    fn a_row_per_thread_in_either_format() {
        let p = AttachPlot {
            title: "pid 1 (app)".into(),
            elapsed_s: 1.0,
            threads: vec![thread("1 app"), thread("2 worker")],
        };
        assert_eq!(p.size(), (WIDTH, TITLE_H + 2 * ROW_H));
        let png = super::super::encode(super::super::Format::Png, &p).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        let svg = String::from_utf8(super::super::encode(super::super::Format::Svg, &p).unwrap()).unwrap();
        assert!(svg.contains("2 worker: worst wait per 5 ms") && svg.contains("worst waits explained"), "{svg:.300}");
        let none = AttachPlot { title: "pid 1 (app)".into(), elapsed_s: 1.0, threads: Vec::new() };
        let svg = String::from_utf8(super::super::encode(super::super::Format::Svg, &none).unwrap()).unwrap();
        assert!(svg.contains("no timed wait ended in the run"));
    }

    /// A file that does not record when tracing began: times from its
    /// first bucket, within the run, not CLOCK_MONOTONIC seconds.
    #[test]
    fn a_file_without_its_start_is_drawn_from_its_first_bucket() {
        let mut f: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/report/attach-older.json")).unwrap();
        let requested = f["threads"][0]["spikes"][0]["requested_ns"].as_i64().unwrap();
        let start = requested - 300_000_000;
        f["threads"][0]["over_time"] = serde_json::json!({"start_ns": start, "width_ns": 5_000_000, "buckets": [
            {"index": 60, "waits": 5, "lateness_ns": 279_100, "phases_ns": [247_500, 1_000, 26_700, 3_900]}
        ]});
        let f: AttachFile = serde_json::from_value(f).unwrap();
        let p = AttachPlot::of(&f);
        let t = &p.threads[0];
        assert!((t.buckets[0].0 - 0.3).abs() < 1e-9, "{:?}", t.buckets);
        assert!((t.spikes[0].0 - 0.3).abs() < 1e-9, "{:?}", t.spikes);
    }
}

//! The `breakdown` picture of `measure --explain`: where the latency went.
//!
//! - top, *spikes*: one bar per late wake-up, worst first, split into its
//!   four kernel phases as shares of its latency (so the phase that owns a
//!   spike shows whether it was 300 µs or 18 ms), the latency in the label
//!   and each wide segment's duration written in it;
//! - below, *phases per mechanism*: one chart per mechanism and thread, each
//!   phase's latency against the percentile on a log axis — every wake-up's
//!   curve from a trace, p50 / p99 / max from a JSON file — so the phase
//!   that takes the tail stands out.
//!
//! One colour per phase, the same in both, with the legend at the top. A
//! JSON file and the trace of the same run (equal summaries) are drawn once:
//! the trace's curves with the JSON's spikes.

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{nines, FAMILY};
use rtick::explain::Phases;
use rtick::Nanos;
use rtick_model::breakdown::{PhaseSeries, Spike};
use rtick_model::read::Input;

/// Picture width; the height follows the number of spikes and mechanisms.
const WIDTH: u32 = 1200;
/// Spikes drawn at most (the worst of all series).
const MAX_SPIKES: usize = 15;
/// Mechanism charts per row.
const COLUMNS: usize = 3;
const LEGEND_H: u32 = 70;
const SPIKE_ROW_H: u32 = 34;
const SPIKES_EXTRA_H: u32 = 110;
const MECH_ROW_H: u32 = 360;

const HINTS: [&str; 4] = ["deadline → timer IRQ", "IRQ → wakeup", "wakeup → on CPU", "on CPU → clock read"];
pub(super) const COLORS: [RGBColor; 4] =
    [RGBColor(214, 39, 40), RGBColor(255, 158, 40), RGBColor(31, 119, 180), RGBColor(44, 160, 44)];

/// One mechanism and thread to draw, with where its numbers come from.
struct Drawn<'a> {
    label: String,
    phases: &'a PhaseSeries,
    /// Each phase's (ns, count) over the wake-ups, when a trace had them.
    dists: &'a [Vec<(i64, u64)>; 4],
    spikes: &'a [Spike],
}

/// The series of all inputs with phases; a trace merged into the JSON of
/// the same run.
fn collect(inputs: &[Input]) -> Vec<Drawn<'_>> {
    let with: Vec<(&Input, &PhaseSeries)> = inputs
        .iter()
        .filter_map(|i| i.breakdown.as_ref().map(|b| (i, b)))
        .flat_map(|(i, b)| b.series.iter().map(move |s| (i, s)))
        .collect();
    let mut out: Vec<(&Input, Drawn<'_>)> = Vec::new();
    for (i, s) in &with {
        let twin = with.iter().find(|(j, t)| !std::ptr::eq(*i, *j) && t.same_run(s)).map(|t| t.1);
        let from_json = i.breakdown.as_ref().is_some_and(|b| b.explain.is_some());
        match twin {
            // The trace's half of a pair: drawn with its JSON.
            Some(_) if !from_json => continue,
            Some(t) => out.push((i, Drawn { label: String::new(), phases: s, dists: &t.dists, spikes: &s.spikes })),
            None => out.push((i, Drawn { label: String::new(), phases: s, dists: &s.dists, spikes: &s.spikes })),
        }
    }
    let files = out.iter().map(|(i, _)| &i.path).collect::<std::collections::BTreeSet<_>>().len();
    out.into_iter()
        .map(|(i, mut d)| {
            d.label = format!("{} T{}", d.phases.mechanism, d.phases.thread);
            if files > 1 {
                d.label = format!("{} ({})", d.label, i.name());
            }
            d
        })
        .collect()
}

/// Whether `inputs` carry phases to draw.
pub fn has_phases(inputs: &[Input]) -> bool {
    collect(inputs).iter().any(|d| d.phases.summary.is_some())
}

/// The picture's size for `inputs`.
pub fn size(inputs: &[Input]) -> (u32, u32) {
    let (spikes, mechs) = counts(&collect(inputs));
    (WIDTH, LEGEND_H + spikes_height(spikes) + mechs.div_ceil(COLUMNS) as u32 * MECH_ROW_H)
}

fn counts(d: &[Drawn<'_>]) -> (usize, usize) {
    let spikes = d.iter().map(|x| x.spikes.len()).sum::<usize>().min(MAX_SPIKES);
    (spikes, d.iter().filter(|x| x.phases.summary.is_some()).count())
}

fn spikes_height(n: usize) -> u32 {
    if n == 0 {
        0
    } else {
        SPIKES_EXTRA_H + n as u32 * SPIKE_ROW_H
    }
}

/// Draws the picture on `root`, which has [`size`]'s size.
pub fn render<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, inputs: &[Input]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let drawn = collect(inputs);
    // Some mechanism has phases: `draw` checked with `has_phases`.
    let (n_spikes, n_mechs) = counts(&drawn);
    let (legend, rest) = root.split_vertically(LEGEND_H);
    draw_legend(&legend)?;
    let (top, bottom) = rest.split_vertically(spikes_height(n_spikes));
    if n_spikes > 0 {
        draw_spikes(&top, &drawn)?;
    }
    let rows = n_mechs.div_ceil(COLUMNS);
    let cells = bottom.split_evenly((rows, COLUMNS.min(n_mechs)));
    for (cell, d) in cells.iter().zip(drawn.iter().filter(|d| d.phases.summary.is_some())) {
        draw_mechanism(cell, d)?;
    }
    Ok(())
}

/// The title and one coloured box per phase, with what the phase spans.
fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let title = "Where the latency went: the kernel phases of each wake-up";
    try_plot!(area.draw(&Text::new(title, (20, 8), (FAMILY, 26).into_font())));
    let w = (WIDTH as i32 - 40) / 4;
    for (k, name) in Phases::DISPLAY_NAMES.iter().enumerate() {
        let x = 20 + k as i32 * w;
        try_plot!(area.draw(&Rectangle::new([(x, 44), (x + 18, 62)], COLORS[k].filled())));
        let text = format!("{name} ({})", HINTS[k]);
        try_plot!(area.draw(&Text::new(text, (x + 26, 44), (FAMILY, 16).into_font())));
    }
    Ok(())
}

/// The worst spikes of all series, worst first, as 100 % stacked bars.
fn draw_spikes<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, drawn: &[Drawn<'_>]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let mut all: Vec<(&str, &Spike)> =
        drawn.iter().flat_map(|d| d.spikes.iter().map(|s| (d.label.as_str(), s))).collect();
    let total = all.len();
    all.sort_by_key(|(_, s)| std::cmp::Reverse(s.latency_ns));
    all.truncate(MAX_SPIKES);
    let n = all.len();
    let caption = if total > n {
        format!(
            "The {n} worst of {}: each phase's share of the wake-up's latency",
            rtick::text::count(total as u64, "spike")
        )
    } else {
        format!("{}, worst first: each phase's share of the wake-up's latency", rtick::text::count(n as u64, "spike"))
    };
    let labels: Vec<String> =
        all.iter().map(|(l, s)| format!("{l}  cycle {}  {}", s.cycle, Nanos(s.latency_ns))).collect();
    // Row 0 is at the bottom of the chart: the worst spike gets the top row.
    let row_of = |i: usize| n - 1 - i;
    let mut chart = try_plot!(ChartBuilder::on(area)
        .caption(caption, (FAMILY, 20))
        .margin_left(20)
        .margin_right(30)
        .x_label_area_size(45)
        .y_label_area_size(360)
        // n rows: 0..=n-1 (an i32 range's end is a row of its own).
        .build_cartesian_2d(0f64..100f64, (0..n.saturating_sub(1)).into_segmented()));
    try_plot!(chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(r) if *r < n => labels[n - 1 - r].clone(),
            _ => String::new(),
        })
        .x_labels(11)
        .x_label_formatter(&|x| format!("{x:.0} %"))
        .x_desc("share of the wake-up's latency (the label gives the latency)")
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 16))
        .draw());
    for (i, (_, s)) in all.iter().enumerate() {
        let r = row_of(i);
        // Shares of the latency; phases may not be negative in a bar.
        let sum: f64 = s.phases_ns.iter().map(|&v| v.max(0) as f64).sum::<f64>().max(1.0);
        let mut x = 0.0;
        for (k, &v) in s.phases_ns.iter().enumerate() {
            let share = v.max(0) as f64 / sum * 100.0;
            let mut bar = Rectangle::new(
                [(x, SegmentValue::Exact(r)), (x + share, SegmentValue::Exact(r + 1))],
                COLORS[k].filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            try_plot!(chart.draw_series(std::iter::once(bar)));
            // Wide enough for its duration: write it in.
            if share >= 9.0 {
                let style = (FAMILY, 14).into_font().color(&WHITE).pos(Pos::new(HPos::Center, VPos::Center));
                let at = (x + share / 2.0, SegmentValue::CenterOf(r));
                try_plot!(chart.draw_series(std::iter::once(Text::new(Nanos(v).to_string(), at, style))));
            }
            x += share;
        }
    }
    Ok(())
}

/// One curve per phase: (nines, µs) points, and where "max" stands on x.
fn curves(d: &Drawn<'_>) -> ([Vec<(f64, f64)>; 4], f64) {
    let floor = 0.01; // µs: the log axis starts at 10 ns
    let us = |ns: i64| (ns as f64 / 1e3).max(floor);
    let Some(summary) = d.phases.summary else { return (Default::default(), 1.0) };
    if d.dists[0].is_empty() {
        // p50, p99 and max only (a JSON file).
        let max_x = 2.6;
        let pts =
            |k: usize| vec![(nines(0.5), us(summary[k][0])), (2.0, us(summary[k][1])), (max_x, us(summary[k][2]))];
        return (std::array::from_fn(pts), max_x);
    }
    let n = d.dists[0].iter().map(|c| c.1).sum::<u64>();
    let end = (n as f64).log10().max(nines(0.5));
    let max_x = end + 0.4;
    let curve = |k: usize| {
        // Cumulative counts, searched: 200 points over millions of distinct values.
        let cum: Vec<u64> = d.dists[k].iter().scan(0, |t, c| Some(*t + c.1).inspect(|v| *t = *v)).collect();
        let at = |q: f64| {
            let r = rtick::stats::percentile::rank(q, n).unwrap_or(1);
            d.dists[k].get(cum.partition_point(|&c| c < r)).map_or(0, |c| c.0)
        };
        let steps = 200;
        let mut pts: Vec<(f64, f64)> = (0..=steps)
            .map(|i| nines(0.5) + (end - nines(0.5)) * i as f64 / steps as f64)
            .map(|x| (x, us(at(1.0 - 10f64.powf(-x)))))
            .collect();
        pts.push((max_x, us(at(1.0))));
        pts
    };
    (std::array::from_fn(curve), max_x)
}

/// A log axis' tick, µs in, with its unit and no needless digits: `500 ns`, `20 µs`, `1.5 ms`.
fn short(us: f64) -> String {
    let (v, unit) = if us >= 1000.0 {
        (us / 1000.0, "ms")
    } else if us >= 1.0 {
        (us, "µs")
    } else {
        (us * 1000.0, "ns")
    };
    // Three significant digits at most, trailing zeros dropped.
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.digits$}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    format!("{text} {unit}")
}

/// One mechanism's phases against the percentile, log latency.
fn draw_mechanism<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, d: &Drawn<'_>) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (pts, max_x) = curves(d);
    let ys = pts.iter().flatten().map(|p| p.1);
    let (lo, hi) = ys.fold((f64::MAX, 0.01f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (lo, hi) = (lo / 2.0, hi * 2.5);
    let x_desc =
        if d.dists[0].is_empty() { "percentile (p50, p99 and max kept)" } else { "percentile of the wake-ups" };
    let mut chart = try_plot!(ChartBuilder::on(area)
        .caption(format!("{} ({})", d.label, rtick::text::count(d.phases.matched as u64, "wake-up")), (FAMILY, 18))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(nines(0.5) - 0.1..max_x + 0.15, (lo..hi).log_scale()));
    // A JSON file has p50, p99 and max only: no tick says there is more.
    let ticks: Vec<(f64, String)> = [(nines(0.5), "p50"), (1.0, "p90"), (2.0, "p99"), (3.0, "p99.9"), (4.0, "p99.99")]
        .iter()
        .filter(|(x, _)| *x < max_x - 0.3 && (!d.dists[0].is_empty() || *x != 1.0))
        .map(|(x, l)| (*x, l.to_string()))
        .chain(std::iter::once((max_x, "max".to_string())))
        .collect();
    try_plot!(chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_desc(x_desc)
        .y_desc("time in the phase (log scale)")
        .y_label_formatter(&|v| short(*v))
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 15))
        .draw());
    // The percentile ticks drawn by hand: the mesh cannot place p50 and "max".
    for (x, l) in &ticks {
        try_plot!(chart.draw_series(std::iter::once(PathElement::new(vec![(*x, lo), (*x, hi)], BLACK.mix(0.15)))));
        let style = (FAMILY, 14).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
        let at = chart.backend_coord(&(*x, lo));
        try_plot!(area.draw(&Text::new(
            l.clone(),
            (at.0 - area.get_base_pixel().0, at.1 - area.get_base_pixel().1 + 6),
            style
        )));
    }
    for (k, p) in pts.iter().enumerate() {
        let c = COLORS[k];
        try_plot!(chart.draw_series(LineSeries::new(p.iter().copied(), c.stroke_width(2))));
        let marks = if d.dists[0].is_empty() { p.clone() } else { p.last().into_iter().copied().collect() };
        try_plot!(chart.draw_series(marks.into_iter().map(|q| Circle::new(q, 4, c.filled()))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ticks_are_short_with_their_unit() {
        let got: Vec<String> = [0.5, 1.0, 2.5, 10.0, 100.0, 1000.0, 1500.0, 10000.0].map(short).to_vec();
        assert_eq!(got, ["500 ns", "1 µs", "2.5 µs", "10 µs", "100 µs", "1 ms", "1.5 ms", "10 ms"]);
    }
}

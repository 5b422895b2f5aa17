//! The `percentiles` picture: each series' latency against the percentile,
//! p0 … p99.999 on a "nines" axis (p90 → 1, p99 → 2 …), latency on a log axis.
//!
//! Both axes carry their ticks as real axis labels, outside the plot area:
//! p50 among the nines, and the log axis' floor (10 ns), labelled "≤ 0.01",
//! where a series at 0 ns (which a log axis cannot show) is drawn, a little
//! above the axis' edge so it is not hidden in it.

use anyhow::{anyhow, bail, Result};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, KeyPointWeight};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, legend_at, nines, FAMILY};
use rtick_model::read::{analysis, Series};

/// µs: the log axis starts at 10 ns; lower latencies, 0 included, are drawn on it.
const FLOOR: f64 = 0.01;

/// The percentile ticks: (nines, label).
fn x_ticks() -> [(f64, &'static str); 7] {
    [(0.0, "p0"), (nines(0.5), "p50"), (1.0, "p90"), (2.0, "p99"), (3.0, "p99.9"), (4.0, "p99.99"), (5.0, "p99.999")]
}

/// 1, 2 and 5 of every decade from the floor up to `max` µs.
fn y_ticks(max: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = FLOOR;
    while decade <= max {
        ticks.extend([1.0, 2.0, 5.0].iter().map(|m| m * decade).filter(|v| *v <= max));
        decade *= 10.0;
    }
    ticks
}

/// A y tick's label: the floor says it holds everything below it.
fn y_label(v: f64) -> String {
    if v <= FLOOR * 1.001 {
        format!("≤ {FLOOR}")
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        // 0.02, 0.05, 0.1, 0.2, 0.5: the shortest decimal that is exact.
        let s = format!("{v:.2}");
        s.trim_end_matches('0').to_string()
    }
}

/// An axis whose labelled ticks are given: `ticks` (bold lines, labels),
/// `inner`'s own points between them (light lines). plotters' `WithKeyPoints`
/// does the same but cannot take a label formatter.
struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold => self.ticks.clone(),
            KeyPointWeight::Any => self.inner.key_points(hint),
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// Each series: a curve from its distribution, else its six percentiles.
fn curves(series: &[(String, &Series)]) -> Vec<(String, Vec<(f64, f64)>)> {
    series
        .iter()
        .filter_map(|(name, s)| {
            let pts: Vec<(f64, f64)> = match &s.dist {
                Some(d) if !d.weighted.is_empty() => (0..=250)
                    .map(|i| {
                        let x = i as f64 * 5.0 / 250.0;
                        let q = 1.0 - 10f64.powf(-x);
                        (x, (analysis::quantile(d, q, s.result.max_ns) as f64 / 1e3).max(FLOOR))
                    })
                    .collect(),
                _ => {
                    let p = s.result.percentiles_ns.as_ref()?;
                    rtick::stats::PERCENTILES
                        .iter()
                        .zip(p.values())
                        .map(|(pct, v)| (nines(pct / 100.0), (v as f64 / 1e3).max(FLOOR)))
                        .collect()
                }
            };
            Some((name.clone(), pts))
        })
        .collect()
}

pub(super) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, series: &[(String, &Series)]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let curves = curves(series);
    if curves.is_empty() {
        bail!("--plot-kind percentiles: the inputs hold no percentiles (cyclictest JSON needs -h)");
    }
    let ymax = curves.iter().flat_map(|c| c.1.iter().map(|p| p.1)).fold(2.0 * FLOOR, f64::max) * 2.0;
    let xs: Vec<f64> = x_ticks().iter().map(|t| t.0).collect();
    let mut chart = try_plot!(ChartBuilder::on(root)
        .caption("Latency percentiles", (FAMILY, 26))
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d(
            Ticked { inner: RangedCoordf64::from(0f64..5.2), ticks: xs },
            Ticked { inner: LogCoord::<f64>::from((FLOOR / 1.6..ymax).log_scale()), ticks: y_ticks(ymax) }
        ));
    try_plot!(chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("latency (µs, log scale)")
        .x_label_formatter(&|x| {
            x_ticks().iter().find(|(v, _)| (x - v).abs() < 1e-9).map_or(String::new(), |(_, l)| l.to_string())
        })
        .y_label_formatter(&|y| y_label(*y))
        .label_style((FAMILY, 16))
        .axis_desc_style((FAMILY, 18))
        .draw());
    for (i, (name, pts)) in curves.iter().enumerate() {
        let c = color(i);
        try_plot!(chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2))))
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
    }
    legend_at(&mut chart, SeriesLabelPosition::UpperLeft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tick_is_labelled_the_floor_as_holding_zero() {
        let ys = y_ticks(30.0);
        assert_eq!(ys.first(), Some(&FLOOR));
        let labels: Vec<String> = ys.iter().map(|v| y_label(*v)).collect();
        assert_eq!(labels, ["≤ 0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20"]);
        assert!(x_ticks().iter().any(|t| t.1 == "p50" && (t.0 - std::f64::consts::LOG10_2).abs() < 1e-12));
    }
}

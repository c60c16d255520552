//! The `--plot` chart of `bench timers`: delivery, lateness and CPU per tick against the target
//! rate, one line per variant.

use std::path::Path;

use plotters::prelude::*;

use super::rows::{Row, VARIANTS};
use crate::errors::Result;

/// Fonts tried for the chart's text, from Debian's `fonts-dejavu-core` and common places.
const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

fn register_font() -> Result {
    for path in FONT_PATHS {
        if let Ok(bytes) = std::fs::read(path) {
            // plotters keeps the font for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| format!("{path} is not a usable font"))?;
            return Ok(());
        }
    }
    Err(
        format!("no font for the plot; install fonts-dejavu-core (looked in {FONT_PATHS:?})")
            .into(),
    )
}

/// The timer benchmark's chart, three panels over the target rate (log scale), one colour per
/// variant: delivery (% of target), precision (lateness p50 solid and p99 dashed, µs, log
/// scale) and cost (CPU µs per delivered tick). A design that delivers every tick 1 ms late
/// looks best on the first panel alone.
pub fn percent_vs_rate(path: &Path, rows: &[Row]) -> Result {
    register_font()?;
    let max_rate = rows.iter().map(|r| r.target_hz).fold(1.0, f64::max);
    let min_rate = rows.iter().map(|r| r.target_hz).fold(max_rate, f64::min);
    let x_range = min_rate * 0.8..max_rate * 1.25;
    let root = BitMapBackend::new(path, (1000, 1500)).into_drawing_area();
    root.fill(&WHITE)?;
    let timers = rows.first().map_or(1, |r| r.timers);
    let load = rows.first().map_or(0, |r| r.load);
    let title = format!(
        "Timers: {timers} timer(s), {}",
        if load == 0 {
            "quiet host".to_string()
        } else {
            format!("{load} CPU hog(s) beside")
        }
    );
    let root = root.titled(&title, ("sans-serif", 28))?;
    let panels = root.split_evenly((3, 1));
    let colors = [RED, BLUE, GREEN, MAGENTA, BLACK];
    // rclev last, so its line is drawn on top.
    let series = |variant: &str, f: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.variant == variant)
            .map(|r| (r.target_hz, f(r)))
            .filter(|(_, y)| y.is_finite())
            .collect()
    };

    // One panel: the target rate (log scale) across, `y` up. A macro rather than a function:
    // the y axis is linear on two panels and logarithmic on one, and plotters' coordinate
    // types differ with it.
    macro_rules! panel {
        ($area:expr, $caption:expr, $y:expr, $y_desc:expr, $y_format:expr) => {{
            let mut chart = ChartBuilder::on($area)
                .caption($caption, ("sans-serif", 22))
                .margin(15)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(x_range.clone().log_scale(), $y)?;
            chart
                .configure_mesh()
                .x_labels(6)
                .x_label_formatter(&|v| format!("{v:.0}"))
                .y_label_formatter($y_format)
                .x_desc("target fires per second (log scale)")
                .y_desc($y_desc)
                .draw()?;
            chart
        }};
    }

    // Delivery.
    let mut chart = panel!(
        &panels[0],
        "delivered, % of target",
        0.0..105.0,
        "% delivered",
        &|v| format!("{v:.0}")
    );
    for (variant, color) in VARIANTS.iter().zip(colors).rev() {
        let points = series(variant, &|r| r.percent.min(105.0));
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(3)))?
            .label(*variant)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
            });
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 4, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;

    // Precision: lateness, log scale (a lateness under 0.1 µs is drawn at 0.1).
    let floor = 0.1;
    let max_late = rows
        .iter()
        .map(|r| r.late_p99_us)
        .filter(|v| v.is_finite())
        .fold(10.0, f64::max);
    let mut chart = panel!(
        &panels[1],
        "lateness, µs (p50 solid, p99 dashed; log scale, under 0.1 drawn at 0.1)",
        (floor..max_late * 2.0).log_scale(),
        "µs late",
        &|v| format!("{v}")
    );
    for (variant, color) in VARIANTS.iter().zip(colors).rev() {
        let p50 = series(variant, &|r| r.late_p50_us.max(floor));
        let p99 = series(variant, &|r| r.late_p99_us.max(floor));
        if p50.is_empty() {
            continue;
        }
        chart.draw_series(LineSeries::new(p50.clone(), color.stroke_width(3)))?;
        chart.draw_series(p50.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
        chart.draw_series(DashedLineSeries::new(p99, 8, 5, color.stroke_width(2)))?;
    }

    // Cost: CPU per delivered tick.
    let cost = |r: &Row| 1e6 * r.cpu_cores / r.achieved_hz.max(f64::MIN_POSITIVE);
    let max_cost = rows
        .iter()
        .map(cost)
        .filter(|v| v.is_finite())
        .fold(10.0, f64::max);
    let mut chart = panel!(
        &panels[2],
        "CPU per delivered tick, µs",
        0.0..max_cost * 1.1,
        "CPU µs / tick",
        &|v| format!("{v:.0}")
    );
    for (variant, color) in VARIANTS.iter().zip(colors).rev() {
        let points = series(variant, &cost);
        if points.is_empty() {
            continue;
        }
        chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(3)))?;
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 4, color.filled())),
        )?;
    }
    root.present()?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

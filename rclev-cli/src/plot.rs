//! The `--plot` chart: achieved % of target vs target rate, one line per variant.

use std::path::Path;

use plotters::prelude::*;

use crate::anyhow_free::Result;
use crate::bench_timers::{Row, VARIANTS};

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

pub fn percent_vs_rate(path: &Path, rows: &[Row]) -> Result {
    register_font()?;
    let max_rate = rows.iter().map(|r| r.target_hz).fold(1.0, f64::max);
    let min_rate = rows.iter().map(|r| r.target_hz).fold(max_rate, f64::min);
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let timers = rows.first().map_or(1, |r| r.timers);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Timer fires delivered, {timers} timer(s), % of target"),
            ("sans-serif", 26),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d((min_rate * 0.8..max_rate * 1.25).log_scale(), 0.0..105.0)?;
    chart
        .configure_mesh()
        .x_labels(6)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("target fires per second (log scale)")
        .y_desc("% of target delivered")
        .draw()?;
    let colors = [RED, BLUE, GREEN, MAGENTA, BLACK];
    // rclev last, so its line is drawn on top.
    for (variant, color) in VARIANTS.iter().zip(colors).rev() {
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.variant == *variant)
            .map(|r| (r.target_hz, r.percent.min(105.0)))
            .collect();
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
    root.present()?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

//! Draws [`panels`](crate::panels) as one SVG: a title, the panels stacked
//! with a shared time axis, one legend at the right.
//!
//! Text goes out as SVG `<text>` elements in the viewer's sans-serif font, so
//! nothing here needs a font file; plotters only estimates text widths for
//! layout, which is why label areas are sized generously.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor;

use crate::model::Run;
use crate::panel::{Line, Panel};
use crate::panels::{legend, panels};
use crate::PlotError;

const WIDTH: u32 = 1200;
const LEGEND_WIDTH: u32 = 290;
const UNIT_HEIGHT: u32 = 200;
pub(crate) const FONT: &str = "sans-serif";

pub(crate) fn draw_err<E: std::error::Error + Send + Sync>(
    e: DrawingAreaErrorKind<E>,
) -> PlotError {
    PlotError::Draw(e.to_string())
}

fn rgb((r, g, b): (u8, u8, u8)) -> RGBColor {
    RGBColor(r, g, b)
}

/// Tick labels with as many decimals as the range needs.
fn tick(v: f64, max: f64) -> String {
    if max >= 20.0 {
        format!("{v:.0}")
    } else if max >= 2.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    x_max: f64,
    bottom: bool,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let data_max = panel
        .lines
        .iter()
        .flat_map(|l| &l.points)
        .map(|p| p.1 / panel.divisor)
        .fold(0.0, f64::max);
    let y_max = match (data_max > 0.0, panel.integer) {
        // Ticks at whole numbers: at least 0..5.
        (_, true) => (data_max * 1.1).max(5.0),
        (true, false) => data_max * 1.1,
        (false, false) => 1.0,
    };
    let mut chart = ChartBuilder::on(area)
        .margin_top(10)
        .margin_right(20)
        .margin_left(10)
        .x_label_area_size(if bottom { 52 } else { 30 })
        .y_label_area_size(78)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(draw_err)?;
    let y_fmt = |v: &f64| {
        if panel.integer {
            format!("{v:.0}")
        } else {
            tick(*v, y_max)
        }
    };
    let x_fmt = |v: &f64| tick(*v, x_max);
    let mut mesh = chart.configure_mesh();
    if bottom {
        mesh.x_desc("Time (s)");
    }
    mesh.y_desc(panel.y_desc.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .y_labels(if panel.integer {
            6.min(y_max as usize + 1)
        } else {
            6
        })
        .x_labels(12)
        .label_style((FONT, 17))
        .axis_desc_style((FONT, 19))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(draw_err)?;
    if panel.lines.is_empty() {
        let (w, h) = area.dim_in_pixel();
        let style = TextStyle::from((FONT, 16).into_font())
            .color(&RGBColor(110, 110, 110))
            .pos(text_anchor::Pos::new(
                text_anchor::HPos::Center,
                text_anchor::VPos::Center,
            ));
        area.draw(&Text::new(
            panel.empty_note,
            ((w as i32 + 78) / 2, h as i32 / 2 - 14),
            style,
        ))
        .map_err(draw_err)?;
    }
    for line in &panel.lines {
        let style = ShapeStyle {
            color: rgb(line.color).to_rgba(),
            filled: false,
            stroke_width: line.width,
        };
        let points = line.points.iter().map(|&(x, y)| (x, y / panel.divisor));
        if line.dashed {
            chart
                .draw_series(DashedLineSeries::new(points, 10, 6, style))
                .map_err(draw_err)?;
        } else {
            // A one-interval run has no segment to draw: mark its point.
            let marker = if line.points.len() < 2 { 4 } else { 0 };
            chart
                .draw_series(LineSeries::new(points, style).point_size(marker))
                .map_err(draw_err)?;
        }
    }
    Ok(())
}

/// At most `max` characters, the middle elided: file names differ at both ends.
pub(crate) fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max / 2).collect();
    let tail: String = s.chars().skip(n - (max - max / 2 - 1)).collect();
    format!("{head}…{tail}")
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[&Line],
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let style = TextStyle::from((FONT, 16).into_font()).pos(text_anchor::Pos::new(
        text_anchor::HPos::Left,
        text_anchor::VPos::Center,
    ));
    for (i, l) in entries.iter().enumerate() {
        let y = 24 + 26 * i as i32;
        let shape = ShapeStyle {
            color: rgb(l.color).to_rgba(),
            filled: false,
            stroke_width: l.width,
        };
        let swatch = if l.dashed {
            vec![vec![(8, y), (18, y)], vec![(24, y), (34, y)]]
        } else {
            vec![vec![(8, y), (34, y)]]
        };
        for seg in swatch {
            area.draw(&PathElement::new(seg, shape)).map_err(draw_err)?;
        }
        let name = l.name.as_deref().unwrap_or_default();
        area.draw(&Text::new(shorten(name, 30), (42, y), style.clone()))
            .map_err(draw_err)?;
    }
    Ok(())
}

fn header_lines(runs: &[Run], title: Option<&str>) -> (String, Vec<String>) {
    let describe = |r: &Run| match &r.error {
        Some(e) => format!("{} (ended with error: {e})", r.description),
        None => r.description.clone(),
    };
    match runs {
        [one] => (title.unwrap_or(&one.label).to_string(), vec![describe(one)]),
        _ => {
            let mut lines: Vec<String> = runs
                .iter()
                .map(|r| format!("{}: {}", r.label, describe(r)))
                .collect();
            lines.push(
                "Each run's sum of streams; cwnd and RTT: the mean of its streams".to_string(),
            );
            (
                title.map_or_else(|| format!("{} runs compared", runs.len()), String::from),
                lines,
            )
        }
    }
}

/// The SVG text of a plot of `runs` (at least one).
pub fn render_svg(runs: &[Run], title: Option<&str>) -> Result<String, PlotError> {
    if runs.is_empty() {
        return Err(PlotError::NoIntervals);
    }
    let panels = panels(runs);
    let x_max = runs
        .iter()
        .map(|r| r.end_secs)
        .fold(0.0, f64::max)
        .max(1e-3);
    let (title, subtitles) = header_lines(runs, title);
    let header = 48 + 22 * subtitles.len() as u32;
    let weights: u32 = panels.iter().map(|p| p.weight).sum();
    let height = header + UNIT_HEIGHT * weights + 32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (head, body) = root.split_vertically(header);
        head.draw(&Text::new(
            title,
            (20, 14),
            (FONT, 24).into_font().style(FontStyle::Bold),
        ))
        .map_err(draw_err)?;
        for (i, s) in subtitles.iter().enumerate() {
            head.draw(&Text::new(
                s.as_str(),
                (20, 46 + 22 * i as i32),
                (FONT, 16).into_font().color(&RGBColor(70, 70, 70)),
            ))
            .map_err(draw_err)?;
        }
        let (charts, legend_area) = body.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut rest = charts;
        for (i, p) in panels.iter().enumerate() {
            let h = UNIT_HEIGHT * p.weight + if i + 1 == panels.len() { 22 } else { 0 };
            let (this, below) = rest.split_vertically(h);
            draw_panel(&this, p, x_max, i + 1 == panels.len())?;
            rest = below;
        }
        draw_legend(&legend_area, &legend(&panels))?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

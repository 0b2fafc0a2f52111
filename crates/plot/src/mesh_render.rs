//! Draws a [`Mesh`] as one SVG: a heat map per figure (throughput, loaded
//! latency, and UDP loss when the mesh ran UDP), rows the sources and columns
//! the destinations, then the worst pairs by name and the pairs whose latest
//! test did not run.
//!
//! A fleet's question is "which pairs are bad now", so each cell is coloured
//! on a scale where the alarming colour is the bad end ([`mesh_scale`]), holds
//! its value as text (a colour alone cannot be read back), and the worst pairs
//! are outlined and listed. Fonts and text follow [`render`](crate::render):
//! SVG `<text>` in the viewer's sans-serif, no font files; widths are
//! estimated, so boxes are sized generously.
//!
//! [`mesh_scale`]: crate::mesh_scale

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::mesh_model::{Mesh, Metric, Ranked};
use crate::mesh_scale::{format_value, text_on, utc, Scale};
use crate::render::{draw_err, shorten, FONT};
use crate::PlotError;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Rgb = (u8, u8, u8);

/// A cell, in pixels (the drawn rectangle is 2 px smaller: white lines between).
const CELL_W: i32 = 86;
const CELL_H: i32 = 40;
const MARGIN: i32 = 20;
/// Between matrices side by side, and between rows of them.
const GAP: i32 = 56;
const MIN_WIDTH: i32 = 1000;
/// Matrices wrap to a new row past this width.
const MAX_ROW_WIDTH: i32 = 1640;
/// A matrix's title and legend need this much, however few the nodes.
const MIN_BLOCK_W: i32 = 430;
/// A matrix's title and its colour legend.
const TITLE_H: i32 = 30;
const LEGEND_H: i32 = 34;
/// How many worst pairs are listed and outlined per figure.
pub(crate) const WORST: usize = 5;
/// Node names longer than this are elided in the middle.
const NAME_MAX: usize = 22;
/// A column of the worst-pair lists, at the least.
const LIST_W: i32 = 380;
const LINE_H: i32 = 22;

const DARK: Rgb = (25, 25, 25);
const GREY: Rgb = (110, 110, 110);
const DIAGONAL: Rgb = (242, 242, 242);
const UNMEASURED: Rgb = (224, 224, 224);
const HATCH: Rgb = (198, 198, 198);
const NO_FIGURE: Rgb = (248, 248, 248);
const EMPTY_EDGE: Rgb = (212, 212, 212);

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// A text style: plotters' font size (the SVG's is 1.24 times smaller), colour
/// and anchor.
fn style(size: u32, color: Rgb, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle {
        font: (FONT, size).into_font(),
        color: rgb(color).to_backend_color(),
        pos: Pos::new(h, v),
    }
}

fn bold(size: u32) -> TextStyle<'static> {
    TextStyle {
        font: (FONT, size).into_font().style(FontStyle::Bold),
        ..style(size, DARK, HPos::Left, VPos::Top)
    }
}

fn put(area: &Area, text: &str, at: (i32, i32), s: &TextStyle) -> Result<(), PlotError> {
    area.draw(&Text::new(text.to_string(), at, s.clone()))
        .map_err(draw_err)
}

fn line(area: &Area, points: Vec<(i32, i32)>, color: Rgb, width: u32) -> Result<(), PlotError> {
    let shape = ShapeStyle {
        color: rgb(color).to_rgba(),
        filled: false,
        stroke_width: width,
    };
    area.draw(&PathElement::new(points, shape))
        .map_err(draw_err)
}

fn rect(
    area: &Area,
    (x0, y0): (i32, i32),
    (x1, y1): (i32, i32),
    fill: Rgb,
) -> Result<(), PlotError> {
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], rgb(fill).filled()))
        .map_err(draw_err)
}

/// One heat map: a figure of every pair.
struct Matrix {
    metric: Metric,
    title: &'static str,
    list_title: &'static str,
    scale: Option<Scale>,
    worst: Vec<Ranked>,
}

fn matrices(mesh: &Mesh) -> Vec<Matrix> {
    let mut metrics = vec![Metric::Throughput, Metric::Latency];
    if mesh.has_tcp() {
        metrics.push(Metric::Retransmits);
    }
    if mesh.has_udp() {
        metrics.push(Metric::Loss);
    }
    metrics
        .into_iter()
        .map(|metric| {
            let (title, list_title) = match metric {
                Metric::Throughput => (
                    "Throughput, bit/s (log colour scale)",
                    "Lowest throughput (bit/s)",
                ),
                Metric::Latency => (
                    "Loaded latency p50, ms (log colour scale)",
                    "Highest loaded latency p50 (ms)",
                ),
                Metric::Loss => ("UDP loss, %", "Highest UDP loss (%)"),
                Metric::Retransmits => ("TCP retransmits", "Most TCP retransmits"),
            };
            Matrix {
                metric,
                title,
                list_title,
                scale: Scale::new(metric, &mesh.values(metric)),
                worst: mesh.worst(metric, WORST),
            }
        })
        .collect()
}

/// Where everything goes.
struct Layout {
    names: Vec<String>,
    /// Width of the row labels.
    name_w: i32,
    /// Height of the column labels; they stand upright when too wide.
    header_h: i32,
    rotated: bool,
    /// Top left of each matrix.
    origins: Vec<(i32, i32)>,
    lists_y: i32,
    /// Width of a list's column: room for two names, an arrow and a figure.
    list_w: i32,
    lists_per_row: usize,
    unmeasured_y: i32,
    size: (i32, i32),
}

const HEADER_H: i32 = 48 + 2 * LINE_H + 10;

fn layout(mesh: &Mesh, matrices: &[Matrix]) -> Layout {
    let names: Vec<String> = mesh.nodes.iter().map(|n| shorten(n, NAME_MAX)).collect();
    let chars = names.iter().map(|n| n.chars().count()).max().unwrap_or(1) as i32;
    let n = names.len() as i32;
    let name_w = (chars * 15 / 2 + 16).max(96);
    let rotated = chars * 7 > CELL_W - 8;
    let header_h = if rotated { chars * 7 + 14 } else { 26 };
    let block = (
        (name_w + n * CELL_W).max(MIN_BLOCK_W),
        TITLE_H + LEGEND_H + header_h + n * CELL_H,
    );
    let per_row = ((MAX_ROW_WIDTH - 2 * MARGIN + GAP) / (block.0 + GAP))
        .max(1)
        .min(matrices.len() as i32);
    let width = (2 * MARGIN + per_row * block.0 + (per_row - 1) * GAP).max(MIN_WIDTH);
    let origins: Vec<(i32, i32)> = (0..matrices.len() as i32)
        .map(|i| {
            (
                MARGIN + (i % per_row) * (block.0 + GAP),
                HEADER_H + (i / per_row) * (block.1 + GAP),
            )
        })
        .collect();
    let block_rows = (matrices.len() as i32 + per_row - 1) / per_row;
    let lists_y = HEADER_H + block_rows * (block.1 + GAP) - GAP + 40;
    let list_w = LIST_W.max(chars * 15 + 120);
    let lists_per_row = ((width - 2 * MARGIN) / list_w).max(1) as usize;
    let listed = matrices.iter().filter(|m| !m.worst.is_empty()).count();
    let lists_h = if listed == 0 {
        2 * LINE_H
    } else {
        let longest = matrices.iter().map(|m| m.worst.len()).max().unwrap_or(0) as i32;
        listed.div_ceil(lists_per_row) as i32 * (LINE_H * (longest + 1) + 20)
    };
    let unmeasured_y = lists_y + lists_h;
    let groups = mesh.unmeasured().len().min(MAX_GROUPS) as i32;
    let unmeasured_h = if groups == 0 {
        0
    } else {
        LINE_H * (groups + 1) + 10
    };
    Layout {
        names,
        name_w,
        header_h,
        rotated,
        origins,
        lists_y,
        list_w,
        lists_per_row,
        unmeasured_y,
        size: (width, unmeasured_y + unmeasured_h + 10),
    }
}

/// A colour bar from the data's lowest value to its highest, labelled with both.
fn draw_legend(area: &Area, m: &Matrix, (x, y): (i32, i32)) -> Result<(), PlotError> {
    const SEGMENTS: i32 = 32;
    const SEGMENT_W: i32 = 5;
    let Some(scale) = &m.scale else {
        let note = style(15, GREY, HPos::Left, VPos::Center);
        return put(area, "no measured figures", (x, y + 12), &note);
    };
    let bar_x = x + 76;
    let mid = y + 12;
    for i in 0..SEGMENTS {
        let v = scale.along((f64::from(i) + 0.5) / f64::from(SEGMENTS));
        let x0 = bar_x + i * SEGMENT_W;
        rect(
            area,
            (x0, mid - 6),
            (x0 + SEGMENT_W, mid + 6),
            scale.color(v),
        )?;
    }
    let label = |v: f64| format_value(m.metric, v);
    let right = bar_x + SEGMENTS * SEGMENT_W;
    put(
        area,
        &label(scale.min),
        (bar_x - 6, mid),
        &style(15, DARK, HPos::Right, VPos::Center),
    )?;
    put(
        area,
        &label(scale.max),
        (right + 6, mid),
        &style(15, DARK, HPos::Left, VPos::Center),
    )?;
    let how = if m.metric.higher_is_worse() {
        "(high is worse)"
    } else {
        "(low is worse)"
    };
    put(
        area,
        how,
        (right + 66, mid),
        &style(14, GREY, HPos::Left, VPos::Center),
    )
}

/// Diagonal lines across a cell, clipped to it: a cell without figures.
fn hatch(area: &Area, (x0, y0): (i32, i32), (x1, y1): (i32, i32)) -> Result<(), PlotError> {
    let (w, h) = (x1 - x0, y1 - y0);
    for k in (8..w + h).step_by(9) {
        let from = if k <= w {
            (x0 + k, y0)
        } else {
            (x1, y0 + k - w)
        };
        let to = if k <= h {
            (x0, y0 + k)
        } else {
            (x0 + k - h, y1)
        };
        line(area, vec![from, to], HATCH, 1)?;
    }
    Ok(())
}

fn draw_matrix(
    area: &Area,
    mesh: &Mesh,
    l: &Layout,
    m: &Matrix,
    (x, y): (i32, i32),
) -> Result<(), PlotError> {
    put(area, m.title, (x, y), &bold(20))?;
    draw_legend(area, m, (x, y + TITLE_H))?;
    let gx = x + l.name_w;
    let gy = y + TITLE_H + LEGEND_H + l.header_h;
    put(
        area,
        "from ↓  to →",
        (x, gy - 6),
        &style(13, GREY, HPos::Left, VPos::Bottom),
    )?;
    for (i, name) in l.names.iter().enumerate() {
        let at = i as i32;
        let cx = gx + at * CELL_W + CELL_W / 2;
        let column = if l.rotated {
            let s = style(15, DARK, HPos::Left, VPos::Center);
            s.transform(FontTransform::Rotate270)
        } else {
            style(15, DARK, HPos::Center, VPos::Bottom)
        };
        put(area, name, (cx, gy - 6), &column)?;
        let row = style(16, DARK, HPos::Right, VPos::Center);
        put(area, name, (gx - 8, gy + at * CELL_H + CELL_H / 2), &row)?;
    }
    let corners = |s: usize, d: usize| {
        let (cx, cy) = (gx + d as i32 * CELL_W, gy + s as i32 * CELL_H);
        ((cx + 1, cy + 1), (cx + CELL_W - 1, cy + CELL_H - 1))
    };
    for s in 0..l.names.len() {
        for d in 0..l.names.len() {
            let (a, b) = corners(s, d);
            let centre = ((a.0 + b.0) / 2, (a.1 + b.1) / 2);
            let small = style(14, GREY, HPos::Center, VPos::Center);
            let Some(test) = &mesh.cells[s][d] else {
                rect(area, a, b, if s == d { DIAGONAL } else { (255, 255, 255) })?;
                if s != d {
                    line(area, vec![a, (b.0, a.1), b, (a.0, b.1), a], EMPTY_EDGE, 1)?;
                }
                continue;
            };
            if !test.measured() {
                rect(area, a, b, UNMEASURED)?;
                hatch(area, a, b)?;
                let outcome = style(14, (60, 60, 60), HPos::Center, VPos::Center);
                put(area, &test.outcome, centre, &outcome)?;
                continue;
            }
            match (m.metric.of(test), &m.scale) {
                (Some(v), Some(scale)) => {
                    let fill = scale.color(v);
                    rect(area, a, b, fill)?;
                    let text = style(17, text_on(fill), HPos::Center, VPos::Center);
                    put(area, &format_value(m.metric, v), centre, &text)?;
                }
                _ => {
                    rect(area, a, b, NO_FIGURE)?;
                    put(area, "n/a", centre, &small)?;
                }
            }
        }
    }
    // After every cell, so no neighbour covers an outline.
    for r in &m.worst {
        let (a, b) = corners(r.source, r.destination);
        line(area, vec![a, (b.0, a.1), b, (a.0, b.1), a], DARK, 3)?;
    }
    Ok(())
}

fn draw_lists(area: &Area, l: &Layout, matrices: &[Matrix]) -> Result<(), PlotError> {
    let listed: Vec<&Matrix> = matrices.iter().filter(|m| !m.worst.is_empty()).collect();
    if listed.is_empty() {
        let s = style(16, GREY, HPos::Left, VPos::Top);
        return put(area, "No pair was measured.", (MARGIN, l.lists_y), &s);
    }
    let longest = listed.iter().map(|m| m.worst.len()).max().unwrap_or(0) as i32;
    let pair = |r: &Ranked| format!("{} → {}", l.names[r.source], l.names[r.destination]);
    for (i, m) in listed.iter().enumerate() {
        let x = MARGIN + (i % l.lists_per_row) as i32 * l.list_w;
        let y = l.lists_y + (i / l.lists_per_row) as i32 * (LINE_H * (longest + 1) + 20);
        put(area, m.list_title, (x, y), &bold(17))?;
        for (k, r) in m.worst.iter().enumerate() {
            let text = format!(
                "{}. {}: {}",
                k + 1,
                pair(r),
                format_value(m.metric, r.value)
            );
            let s = style(16, DARK, HPos::Left, VPos::Top);
            put(area, &text, (x, y + LINE_H * (k as i32 + 1) + 4), &s)?;
        }
    }
    Ok(())
}

/// Outcome groups listed at most; the cells show every pair anyway.
const MAX_GROUPS: usize = 8;

fn draw_unmeasured(area: &Area, mesh: &Mesh, l: &Layout) -> Result<(), PlotError> {
    let groups = mesh.unmeasured();
    if groups.is_empty() {
        return Ok(());
    }
    let y = l.unmeasured_y;
    put(area, "Latest test not measured", (MARGIN, y), &bold(17))?;
    // Characters that fit on a line at about 7 px each.
    let room = ((l.size.0 - 2 * MARGIN) / 7) as usize;
    for (k, (outcome, pairs)) in groups.iter().take(MAX_GROUPS).enumerate() {
        let mut text = format!("{outcome} ({}): ", pairs.len());
        for (i, (s, d)) in pairs.iter().enumerate() {
            let item = format!("{} → {}", l.names[*s], l.names[*d]);
            let rest = pairs.len() - i;
            if text.chars().count() + item.chars().count() + 16 > room && rest > 1 {
                text.push_str(&format!("… and {rest} more"));
                break;
            }
            text.push_str(&item);
            if rest > 1 {
                text.push_str(", ");
            }
        }
        let s = style(16, DARK, HPos::Left, VPos::Top);
        put(area, &text, (MARGIN, y + LINE_H * (k as i32 + 1) + 4), &s)?;
    }
    Ok(())
}

/// The two lines under the title: what was read, and how to read the cells.
fn subtitles(mesh: &Mesh, files: &[String]) -> [String; 2] {
    let mut facts = vec![format!(
        "{} test{}",
        mesh.tests,
        if mesh.tests == 1 { "" } else { "s" }
    )];
    match mesh.cycles {
        Some((a, b)) if a == b => facts.push(format!("cycle {a}")),
        Some((a, b)) => facts.push(format!("cycles {a}–{b}")),
        None => {}
    }
    if let Some((first, last)) = mesh.ends {
        let (a, b) = (utc(first), utc(last));
        let b = match b.split_once(' ') {
            Some((day, time)) if a.starts_with(day) => time.to_string(),
            _ => b,
        };
        facts.push(format!("ended {a} to {b} UTC"));
    }
    let measured = mesh.pairs().filter(|p| p.2.measured());
    let (udp, tcp) = measured.fold(
        (0, 0),
        |(u, t), p| if p.2.udp { (u + 1, t) } else { (u, t + 1) },
    );
    match (udp > 0, tcp > 0) {
        (true, true) => facts.push("TCP and UDP".into()),
        (true, false) => facts.push("UDP".into()),
        (false, true) => facts.push("TCP".into()),
        (false, false) => {}
    }
    [
        format!("{}: {}", shorten(&files.join(", "), 70), facts.join(", ")),
        format!(
            "Rows: source, columns: destination. A cell is its pair's latest test; \
             red is worse, the {WORST} worst are outlined, grey was not measured."
        ),
    ]
}

/// The SVG text of a mesh plot. `files` name the inputs in the subtitle; the
/// title defaults to "Mesh: N nodes, M tests".
pub fn render_mesh_svg(
    mesh: &Mesh,
    files: &[String],
    title: Option<&str>,
) -> Result<String, PlotError> {
    let matrices = matrices(mesh);
    let l = layout(mesh, &matrices);
    let title = title.map_or_else(
        || format!("Mesh: {} nodes, {} tests", mesh.nodes.len(), mesh.tests),
        String::from,
    );
    let mut svg = String::new();
    {
        let size = (l.size.0 as u32, l.size.1 as u32);
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        root.draw(&Text::new(
            title,
            (20, 14),
            (FONT, 24).into_font().style(FontStyle::Bold),
        ))
        .map_err(draw_err)?;
        for (i, s) in subtitles(mesh, files).iter().enumerate() {
            root.draw(&Text::new(
                s.as_str(),
                (20, 46 + LINE_H * i as i32),
                (FONT, 16).into_font().color(&RGBColor(70, 70, 70)),
            ))
            .map_err(draw_err)?;
        }
        for (m, at) in matrices.iter().zip(&l.origins) {
            draw_matrix(&root, mesh, &l, m, *at)?;
        }
        draw_lists(&root, &l, &matrices)?;
        draw_unmeasured(&root, mesh, &l)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

//! A panel and its lines as the drawing takes them, in plot units, and the
//! colours runs and streams are drawn in.

use crate::model::Points;

/// Distinct colours (Tableau 10), readable on white.
pub(crate) const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];
/// One line of a panel.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    /// Legend text; `None` for lines that share an entry.
    pub(crate) name: Option<String>,
    pub(crate) color: (u8, u8, u8),
    pub(crate) width: u32,
    /// Dashed: the receiving direction of a `--bidir` run.
    pub(crate) dashed: bool,
    pub(crate) points: Points,
}

/// One chart: a y quantity over time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Panel {
    /// Axis description, with the unit: `Throughput (Gbit/s)`.
    pub(crate) y_desc: String,
    /// Values are divided by this for display (unit scaling).
    pub(crate) divisor: f64,
    pub(crate) lines: Vec<Line>,
    /// Shown in the panel when no run has these figures.
    pub(crate) empty_note: &'static str,
    /// Relative height.
    pub(crate) weight: u32,
    /// Counts (retransmits): whole-number ticks.
    pub(crate) integer: bool,
}

//! iperf 2's outputs: the records an iperf 2 run reports ([`model`]) and the
//! formatters that print them in iperf 2's text, enhanced (`-e`) and CSV
//! (`-y C`) layouts.

pub mod model;

use std::sync::Mutex;

use model::{Event2, Layout2, Side2};

/// Where an iperf 2 run's events go. Shared by a server's concurrent tests.
pub trait Report2: Send + Sync {
    /// Reports one event.
    fn event(&self, e: Event2);
}

/// Where a printer's lines go: one call per line, without its newline.
pub type LineOut = Box<dyn FnMut(&str) + Send>;

/// Prints events as iperf 2 text or CSV lines through `out` (one call per
/// line, without its newline), which must never block the caller.
pub struct Printer2 {
    side: Side2,
    layout: Layout2,
    out: Mutex<LineOut>,
}

impl std::fmt::Debug for Printer2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer2")
            .field("side", &self.side)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl Printer2 {
    /// A printer for `side` in `layout`.
    pub fn new(side: Side2, layout: Layout2, out: LineOut) -> Self {
        Self {
            side,
            layout,
            out: Mutex::new(out),
        }
    }
}

impl Report2 for Printer2 {
    fn event(&self, e: Event2) {
        // Placeholder layout until the iperf 2 formatters land.
        let line = format!("{e:?}");
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out(&line);
    }
}

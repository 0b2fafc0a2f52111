//! The panels of rperf3's own delay figures: the one-way delay of the test's
//! data per direction (`--latency` between rperf3 ends) and `--bounceback`
//! round trips, each as a median and a 99th percentile per interval, as the
//! `--latency` panel draws its round trips.
//!
//! One run: each figure its own colour, none the round trips' or the streams',
//! the p99 thinner than its p50. Several
//! runs: one colour per run, names prefixed with the run's label. The data's
//! delays down are dashed (as the receiving direction elsewhere).

use crate::model::{Percentiles, Run};
use crate::panel::{Line, Panel, PALETTE};

const DATA_NOTE: &str =
    "no data one-way delays here: run the client with --latency against an rperf3 server";
const BOUNCEBACK_NOTE: &str = "no bounceback round trips here: plot the client's --bounceback JSON";

/// A p50 and a p99 line (when they have points), named `{prefix}{what} p50`.
fn add_pair(
    lines: &mut Vec<Line>,
    prefix: &str,
    what: &str,
    colors: ((u8, u8, u8), (u8, u8, u8)),
    dashed: bool,
    thin_p99: bool,
    p: &Percentiles,
) {
    for (name, color, width, points) in [
        ("p50", colors.0, 3, &p.p50_ms),
        ("p99", colors.1, if thin_p99 { 1 } else { 2 }, &p.p99_ms),
    ] {
        if points.is_empty() {
            continue;
        }
        lines.push(Line {
            name: Some(format!("{prefix}{what} {name}")),
            color,
            width,
            dashed,
            points: points.clone(),
        });
    }
}

fn panel(y_desc: &str, lines: Vec<Line>, empty_note: &'static str) -> Panel {
    Panel {
        y_desc: y_desc.into(),
        divisor: 1.0,
        lines,
        empty_note,
        weight: 1,
        integer: false,
    }
}

/// The run's colour and legend prefix among `runs`.
fn look(runs: &[Run], i: usize) -> (String, (u8, u8, u8)) {
    if runs.len() == 1 {
        (String::new(), PALETTE[0])
    } else {
        (format!("{} ", runs[i].label), PALETTE[i % PALETTE.len()])
    }
}

/// The data's one-way delays: up and down, p50 and p99 each.
pub(crate) fn data_one_way_panel(runs: &[Run]) -> Panel {
    let single = runs.len() == 1;
    let mut lines = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(d) = &run.data_one_way else { continue };
        let (prefix, c) = look(runs, i);
        let (up, down) = if single {
            // Apart from the round trips' (0, 3) and the streams' (0, 1).
            ((PALETTE[9], PALETTE[6]), (PALETTE[8], PALETTE[4]))
        } else {
            ((c, c), (c, c))
        };
        add_pair(&mut lines, &prefix, "data up", up, false, !single, &d.up);
        add_pair(
            &mut lines,
            &prefix,
            "data down",
            down,
            true,
            !single,
            &d.down,
        );
    }
    panel("Data one-way delay (ms)", lines, DATA_NOTE)
}

/// `--bounceback` round trips: p50 and p99.
pub(crate) fn bounceback_panel(runs: &[Run]) -> Panel {
    let single = runs.len() == 1;
    let mut lines = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(b) = &run.bounceback else { continue };
        let (prefix, c) = look(runs, i);
        let colors = if single {
            (PALETTE[2], PALETTE[5])
        } else {
            (c, c)
        };
        add_pair(&mut lines, &prefix, "bounceback", colors, false, !single, b);
    }
    panel("Bounceback round trip (ms)", lines, BOUNCEBACK_NOTE)
}

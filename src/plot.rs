//! `rperf3 plot`: reads the JSON files, draws them, writes the SVG.
//!
//! The reading and drawing rules live in the `rperf3-plot` crate; this file owns
//! the files and the messages, each naming the file it is about.

use std::io::{Read, Write};
use std::path::Path;

use crate::cli::PlotArgs;

fn read_input(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text)?;
    } else {
        std::fs::File::open(path)?.read_to_string(&mut text)?;
    }
    Ok(text)
}

/// The legend name of each input: its file name, or the path as typed when two
/// inputs share a file name.
fn labels(args: &PlotArgs) -> Vec<String> {
    let short: Vec<String> = args
        .inputs
        .iter()
        .map(|p| match p.file_name() {
            Some(n) if p.as_os_str() != "-" => n.to_string_lossy().into_owned(),
            _ => "stdin".to_string(),
        })
        .collect();
    short
        .iter()
        .zip(&args.inputs)
        .map(|(s, p)| {
            if short.iter().filter(|o| *o == s).count() > 1 {
                p.display().to_string()
            } else {
                s.clone()
            }
        })
        .collect()
}

/// Draws the plot; `Err` is the complete message for stderr.
pub(crate) fn run(prog: &str, args: &PlotArgs) -> Result<(), String> {
    let fail = |what: &dyn std::fmt::Display, e: &dyn std::fmt::Display| {
        format!("{prog}: plot: {what}: {e}")
    };
    let mut runs = Vec::new();
    for (path, label) in args.inputs.iter().zip(labels(args)) {
        let text = read_input(path).map_err(|e| fail(&path.display(), &e))?;
        let more = rperf3_plot::parse_runs(&label, &text).map_err(|e| fail(&path.display(), &e))?;
        runs.extend(more);
    }
    let svg = rperf3_plot::render_svg(&runs, args.title.as_deref())
        .map_err(|e| fail(&args.output.display(), &e))?;
    let written = if args.output.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(svg.as_bytes()).and_then(|()| out.flush())
    } else {
        std::fs::write(&args.output, svg)
    };
    written.map_err(|e| fail(&args.output.display(), &e))
}

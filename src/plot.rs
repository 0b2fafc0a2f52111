//! `rperf3 plot`: reads the JSON files, draws them, writes the SVG.
//!
//! The reading and drawing rules live in the `rperf3-plot` crate; this file owns
//! the files and the messages, each naming the file it is about. Every file
//! holds iperf3 runs or `rperf3 mesh -J` lines, and one plot draws one kind.

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
    let labels = labels(args);
    let mut runs = Vec::new();
    let mut tests = Vec::new();
    // The first file's kind and name: every other file must be of that kind.
    let mut first: Option<(&'static str, &Path)> = None;
    for (path, label) in args.inputs.iter().zip(&labels) {
        let text = read_input(path).map_err(|e| fail(&path.display(), &e))?;
        let input = rperf3_plot::parse_file(label, &text).map_err(|e| fail(&path.display(), &e))?;
        match first {
            Some((kind, other)) if kind != input.kind() => {
                let e = rperf3_plot::PlotError::Mixed {
                    kind: input.kind(),
                    other_file: other.display().to_string(),
                    other_kind: kind,
                };
                return Err(fail(&path.display(), &e));
            }
            Some(_) => {}
            None => first = Some((input.kind(), path)),
        }
        match input {
            rperf3_plot::Input::Runs(more) => runs.extend(more),
            rperf3_plot::Input::Mesh(more) => tests.extend(more),
        }
    }
    let svg = if tests.is_empty() {
        rperf3_plot::render_svg(&runs, args.title.as_deref())
    } else {
        let mesh = rperf3_plot::Mesh::new(&tests);
        rperf3_plot::render_mesh_svg(&mesh, &labels, args.title.as_deref())
    }
    .map_err(|e| fail(&args.output.display(), &e))?;
    let written = if args.output.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(svg.as_bytes()).and_then(|()| out.flush())
    } else {
        std::fs::write(&args.output, svg)
    };
    written.map_err(|e| fail(&args.output.display(), &e))
}

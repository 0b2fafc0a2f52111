//! `--help`, `--version` and the usage lines, in iperf 2.2.1's layout: the
//! same sections and option column, generated from the option table and
//! listing what rperf3 does. The help always says `iperf`, as iperf 2's does;
//! the usage lines name the program as it was called.

use std::fmt::Write as _;

use super::table::{HelpRow, Section, Spec, OPTIONS};
use super::units::tos_names;

/// Where descriptions start.
const COLUMN: usize = 27;
/// Width of the `--name` field before a value placeholder.
const LONG_FIELD: usize = 12;

/// The `-v` line: iperf 2's words first, so scripts matching
/// "iperf version 2." still do.
pub(crate) fn version_text() -> String {
    format!(
        "iperf version 2.2.1 (rperf3 {}) pthreads\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// What a run without `-s` or `-c` prints on stderr.
pub(crate) fn usage_lines(prog: &str) -> [String; 2] {
    [
        format!("Usage: {prog} [-s|-c host] [options]"),
        format!("Try `{prog} --help' for more information."),
    ]
}

/// The option column of a help line: `  -p, --port      #`.
fn option_usage(spec: &Spec, row: &HelpRow) -> String {
    let long = spec.long.map(|l| format!("--{l}")).unwrap_or_default();
    let mut left = match spec.short {
        Some(c) => format!("  -{c}, "),
        None => "      ".to_string(),
    };
    if row.value.is_empty() {
        left.push_str(&long);
    } else if row.value.starts_with("[=") {
        // An optional value is attached: `--permit-key[=<key>]`.
        let _ = write!(left, "{long}{}", row.value);
    } else {
        let _ = write!(left, "{long:<w$} {}", row.value, w = LONG_FIELD - 1);
    }
    left
}

fn option_line(spec: &Spec, row: &HelpRow) -> String {
    let left = option_usage(spec, row);
    if left.len() < COLUMN {
        format!("{left:<COLUMN$}{}", row.text)
    } else {
        format!("{left}  {}", row.text)
    }
}

/// Order within a section: lower-case letters and long-only names by name,
/// then upper-case letters (iperf 2's listing order, roughly).
fn sort_key(spec: &Spec) -> (bool, String) {
    match spec.short {
        Some(c) if c.is_ascii_uppercase() => (true, c.to_string()),
        Some(c) => (false, c.to_string()),
        None => (false, spec.long.unwrap_or_default().to_ascii_lowercase()),
    }
}

/// A section's rows, in the help's order.
fn rows(which: Section) -> Vec<(&'static Spec, &'static HelpRow)> {
    let mut rows: Vec<(&Spec, &HelpRow)> = OPTIONS
        .iter()
        .flat_map(|s| s.help.iter().map(move |r| (s, r)))
        .filter(|(_, r)| r.section == which)
        .collect();
    rows.sort_by_key(|(s, _)| sort_key(s));
    rows
}

fn section(out: &mut String, title: &str, which: Section) {
    let _ = writeln!(out, "{title}");
    for (s, r) in rows(which) {
        let _ = writeln!(out, "{}", option_line(s, r));
    }
    out.push('\n');
}

/// The help's sections for the man page: (title, [(option usage, text)]).
pub(crate) fn man_sections() -> Vec<(&'static str, Vec<(String, &'static str)>)> {
    [
        ("Client or server", Section::Both),
        ("Server", Section::Server),
        ("Client", Section::Client),
        ("Output and program", Section::Misc),
    ]
    .into_iter()
    .map(|(title, which)| {
        let rows = rows(which)
            .into_iter()
            .map(|(s, r)| {
                let usage = option_usage(s, r);
                (
                    usage.split_whitespace().collect::<Vec<_>>().join(" "),
                    r.text,
                )
            })
            .collect();
        (title, rows)
    })
    .collect()
}

/// The `--help` text (stdout).
pub(crate) fn help_text() -> String {
    let mut out = String::from(
        "Usage: iperf [-s|-c host] [options]\n       iperf [-h|--help] [-v|--version]\n\n",
    );
    section(&mut out, "Client/Server:", Section::Both);
    section(&mut out, "Server specific:", Section::Server);
    section(&mut out, "Client specific:", Section::Client);
    section(&mut out, "Miscellaneous:", Section::Misc);
    out.push_str(
        "[kmgKMG] marks values that take a suffix: k, m, g multiply by 1000, 10^6, 10^9;\n\
         K, M, G by 1024, 2^20, 2^30 (so 1k = 1000 and 1K = 1024)\n\n",
    );
    let mut line = String::from("-S takes a number or one of:");
    let count = tos_names().count();
    for (i, (name, _)) in tos_names().enumerate() {
        let sep = if i + 1 == count { "." } else { "," };
        if line.len() + name.len() + 2 > 78 {
            let _ = writeln!(out, "{line}");
            line.clear();
        } else {
            line.push(' ');
        }
        let _ = write!(line, "{name}{sep}");
    }
    let _ = writeln!(out, "{line}\n");
    out.push_str(
        "The environment can set most options too (the command line wins), as\n\
         IPERF_<long name> (IPERF_PORT, IPERF_BANDWIDTH, ...) or TCP_WINDOW_SIZE for -w.\n\n",
    );
    out.push_str(
        "This is rperf3 speaking iperf 2 (2.2.1's options, outputs and wire protocol);\n\
         iperf 2 options not listed here are accepted and ignored with a warning.\n",
    );
    out
}

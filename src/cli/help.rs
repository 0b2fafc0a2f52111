//! `-h` and `-v` texts, laid out like iperf3 3.21's and written from the table.
//!
//! The help lists every option of the table, in iperf3's three sections and
//! column layout.

use std::fmt::Write as _;

use super::commands::COMMANDS;
use super::table::{Side, OPTIONS};

/// Width of the option column, as in iperf3's help.
const COLUMN: usize = 26;

fn section(out: &mut String, title: &str, side: Side) {
    let _ = writeln!(out, "{title}");
    for spec in OPTIONS.iter().filter(|s| s.side == side) {
        let usage = spec.usage();
        let mut lines = spec.help.lines();
        let first = lines.next().unwrap_or_default();
        if usage.len() < COLUMN {
            let _ = writeln!(out, "  {usage:<COLUMN$}{first}");
        } else {
            let _ = writeln!(out, "  {usage} {first}");
        }
        for more in lines {
            let _ = writeln!(out, "  {:COLUMN$}{more}", "");
        }
    }
}

/// Where to read more about the project.
fn project_line() -> String {
    let url = option_env!("CARGO_PKG_REPOSITORY").unwrap_or_default();
    if url.is_empty() {
        "rperf3 documentation: README.md in the rperf3 sources".to_string()
    } else {
        format!("rperf3 project: {url}")
    }
}

/// The `-h` text (for stdout), with `prog` as the program name.
pub(crate) fn help_text(prog: &str) -> String {
    let mut out = format!(
        "Usage: {prog} [-s|-c host] [options]\n       {prog} [-h|--help] [-v|--version]\n\n"
    );
    section(&mut out, "Server or Client:", Side::Both);
    section(&mut out, "Server specific:", Side::Server);
    section(&mut out, "Client specific:", Side::Client);
    // After iperf3's sections, so scripts reading those see iperf3's layout.
    out.push_str("\nrperf3 commands (first argument only):\n");
    for c in COMMANDS {
        let _ = writeln!(out, "  {}\n  {:COLUMN$}{}", c.usage, "", c.help);
    }
    out.push_str(
        "\n[KMG] indicates options that support a K/M/G/T suffix: powers of 1024 for\n\
         sizes, of 1000 for rates (-b)\n\n\
         Every iperf3 3.21 option works as in iperf3; SCTP (--sctp, -X, --nstreams)\n\
         needs a kernel with SCTP support.\n",
    );
    out.push_str(&project_line());
    out.push('\n');
    out
}

/// The first line of `-v`.
pub(crate) fn version_line() -> String {
    format!(
        "rperf3 {} (iperf 3.21 compatible)",
        env!("CARGO_PKG_VERSION")
    )
}

/// The whole `-v` text: the version line, then the system line the binary gets
/// from uname(2).
pub(crate) fn version_text(uname: &str) -> String {
    format!("{}\n{uname}\n", version_line())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_with_iperf3s_usage_lines() {
        let h = help_text("rperf3");
        assert!(h.starts_with(
            "Usage: rperf3 [-s|-c host] [options]\n       rperf3 [-h|--help] [-v|--version]\n\n\
             Server or Client:\n"
        ));
    }

    #[test]
    fn sections_in_iperf3_order() {
        let h = help_text("x");
        let both = h.find("Server or Client:\n").unwrap();
        let server = h.find("Server specific:\n").unwrap();
        let client = h.find("Client specific:\n").unwrap();
        assert!(both < server && server < client);
        // -s is under the server section, -c under the client section.
        assert!(h[server..client].contains("  -s, --server"));
        assert!(h[client..].contains("  -c, --client <host>[%<dev>] run as a client"));
    }

    #[test]
    fn column_layout() {
        let h = help_text("x");
        let line = h.lines().find(|l| l.starts_with("  -p, --port")).unwrap();
        assert_eq!(&line[..28], "  -p, --port      #         ");
        let cont = h
            .lines()
            .skip_while(|l| !l.starts_with("  -b, --bitrate"))
            .nth(1)
            .unwrap();
        assert!(cont.starts_with(&" ".repeat(28)));
        assert!(!cont[28..].starts_with(' '));
    }

    #[test]
    fn lists_every_option() {
        let h = help_text("x");
        for s in OPTIONS {
            assert!(h.contains(&format!("--{}", s.long)), "--{}", s.long);
        }
        assert!(!h.contains("not supported"), "{h}");
        assert!(h.contains(
            "Every iperf3 3.21 option works as in iperf3; SCTP (--sctp, -X, --nstreams)\n\
             needs a kernel with SCTP support.\n"
        ));
    }

    #[test]
    fn ends_with_the_project_line() {
        let h = help_text("x");
        assert!(h.ends_with(&format!("{}\n", project_line())));
        assert!(!h.contains("es.net") && !h.contains("esnet"));
    }

    #[test]
    fn version() {
        assert_eq!(
            version_line(),
            format!(
                "rperf3 {} (iperf 3.21 compatible)",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert!(version_text("Linux h 6.1 x86_64").ends_with("\nLinux h 6.1 x86_64\n"));
    }
}

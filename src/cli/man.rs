//! `rperf3 --generate man`: a roff man page written from the option table.
//!
//! Hand-written roff (a few macros of man(7)) rather than a crate: the page is
//! a handful of sections, and escaping is the only subtle part. Every row of the
//! table is documented, with what it needs from the system.

use std::fmt::Write as _;

use super::commands::{COMMANDS, GENERATE_KINDS, PLOT_OPTIONS};
use super::table::{status_note, ArgKind, OptSpec, Side, OPTIONS};

/// Text safe on a roff text line: backslashes escaped, hyphens as minus signs
/// (so options copy and paste), and a leading control character neutralised.
fn esc(s: &str) -> String {
    let mut out = s.replace('\\', "\\e").replace('-', "\\-");
    if out.starts_with('.') || out.starts_with('\'') {
        out.insert_str(0, "\\&");
    }
    out
}

/// `\fB\-p\fR, \fB\-\-port\fR \fI#\fR`.
fn option_head(spec: &OptSpec) -> String {
    let mut head = String::new();
    if let Some(c) = spec.short {
        let _ = write!(head, "\\fB\\-{}\\fR, ", esc(&c.to_string()));
    }
    let _ = write!(head, "\\fB\\-\\-{}\\fR", esc(spec.long));
    let m = esc(spec.metavar);
    match spec.arg {
        ArgKind::None => {}
        ArgKind::Required => {
            let _ = write!(head, " \\fI{m}\\fR");
        }
        ArgKind::Optional => {
            let _ = write!(head, "\\fI{m}\\fR");
        }
    }
    head
}

fn option_body(spec: &OptSpec) -> String {
    let mut notes: Vec<String> = spec
        .aliases
        .iter()
        .map(|a| format!("also \\fB\\-\\-{}\\fR", esc(a)))
        .collect();
    match (spec.side, spec.enforced) {
        (Side::Server, true) => notes.push("server only".to_string()),
        (Side::Client, true) => notes.push("client only".to_string()),
        _ => {}
    }
    if let Some(note) = status_note(spec.id) {
        notes.push(esc(note));
    }
    let mut body = esc(&spec.help.replace('\n', " "));
    if !notes.is_empty() {
        body.push_str(&format!("\n.br\n[{}]", notes.join("; ")));
    }
    body
}

fn options_section(out: &mut String, title: &str, side: Side) {
    let _ = writeln!(out, ".SH \"{title}\"");
    for spec in OPTIONS.iter().filter(|s| s.side == side) {
        let _ = writeln!(out, ".TP\n{}\n{}", option_head(spec), option_body(spec));
    }
}

/// `rperf3 mesh`'s section: what the agent does and its options.
fn mesh_section(out: &mut String) {
    out.push_str(
        ".SH MESH\n\
         \\fBrperf3 mesh\\fR is an agent for each node of a fleet: it serves tests\n\
         on its port and, on a schedule every agent computes alike from the sorted\n\
         member list and the clock (a round\\-robin tournament in time slots), tests\n\
         every other member with \\fB\\-\\-latency\\fR, so that no member is in two\n\
         tests at once. It writes one line per test (JSON with \\fB\\-J\\fR) and\n\
         serves each ordered pair's last figures as Prometheus series.\n\
         Its options:\n",
    );
    for o in crate::mesh::args::MESH_OPTIONS {
        let mut head = String::new();
        if let Some(c) = o.short {
            let _ = write!(head, "\\fB\\-{c}\\fR, ");
        }
        let _ = write!(head, "\\fB\\-\\-{}\\fR", esc(o.long));
        if !o.metavar.is_empty() {
            let _ = write!(head, " \\fI{}\\fR", esc(o.metavar));
        }
        let _ = writeln!(out, ".TP\n{head}\n{}", esc(o.help));
    }
}

/// The iperf 2 personality: how it is chosen, and its options by section.
fn iperf2_section(out: &mut String) {
    out.push_str(
        ".SH \"IPERF 2\"\n\
         Run as \\fBiperf\\fR or \\fBiperf2\\fR (a link to rperf3, as Debian installs\n\
         iperf 2), or as \\fBrperf3 iperf2\\fR, rperf3 takes iperf 2.2.1's command line,\n\
         speaks iperf 2's wire protocol with iperf 2.1.8 and 2.2.1 clients and servers,\n\
         and prints iperf 2.2.1's text and CSV layouts.\n\
         Its default port is 5001; sizes take k, m, g (powers of 1000) or K, M, G\n\
         (powers of 1024), and \\fB\\-b\\fR also takes \\fBpps\\fR (packets per second).\n",
    );
    for (title, rows) in crate::cli2::man_sections() {
        let _ = writeln!(out, ".SS \"{title}\"");
        for (usage, text) in rows {
            let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", esc(&usage), esc(text));
        }
    }
}

/// The whole man page.
pub(crate) fn man_page() -> String {
    let version = env!("CARGO_PKG_VERSION");
    let mut out = String::new();
    let _ = writeln!(
        out,
        ".TH RPERF3 1 \"\" \"rperf3 {version}\" \"User Commands\"\n\
         .SH NAME\n\
         rperf3 \\- network performance tester, compatible with iperf3\n\
         .SH SYNOPSIS\n\
         .B rperf3\n\
         \\fB\\-s\\fR [\\fIoptions\\fR]\n\
         .br\n\
         .B rperf3\n\
         \\fB\\-c\\fR \\fIhost\\fR [\\fIoptions\\fR]\n\
         .br\n\
         .B rperf3 mesh\n\
         \\fB\\-\\-peers\\fR \\fIFILE\\fR [\\fIoptions\\fR]\n\
         .br\n\
         .B rperf3 plot\n\
         [\\fB\\-o\\fR \\fIFILE.svg\\fR] \\fIRUN.json\\fR [\\fIMORE.json\\fR ...]\n\
         .br\n\
         .B rperf3\n\
         \\fB\\-\\-generate\\fR \\fIKIND\\fR\n\
         .SH DESCRIPTION\n\
         rperf3 measures what a network path can carry: TCP throughput, UDP rate,\n\
         loss, jitter and retransmits.\n\
         It is a drop\\-in for \\fBiperf3\\fR(1): the same command line, text output,\n\
         \\fB\\-J\\fR JSON and wire protocol, so either program's client works with\n\
         the other's server.\n\
         A server (\\fB\\-s\\fR) waits for clients; a client (\\fB\\-c\\fR) runs a\n\
         test against it and both print the results.\n\
         .PP\n\
         Sizes and rates marked \\fI[KMG]\\fR take a K, M, G or T suffix: powers of\n\
         1024 for sizes, of 1000 for rates (\\fB\\-b\\fR)."
    );
    options_section(&mut out, "SERVER OR CLIENT OPTIONS", Side::Both);
    options_section(&mut out, "SERVER OPTIONS", Side::Server);
    options_section(&mut out, "CLIENT OPTIONS", Side::Client);
    out.push_str(".SH COMMANDS\nThese are recognised only as the first argument.\n");
    for c in COMMANDS {
        let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", esc(c.usage), esc(c.help));
    }
    out.push_str(
        ".PP\n\\fBplot\\fR reads the \\fB\\-J\\fR or \\fB\\-\\-json\\-stream\\fR \
         output of rperf3 or iperf3, from the client or the server, and draws\n\
         throughput per interval for each stream and their sum; below it, for TCP,\n\
         retransmits, congestion window and RTT (the sender's figures), for UDP,\n\
         loss and jitter (the receiver's figures).\n\
         With several files, each run's sum is drawn in its own colour.\n\
         Its options:\n",
    );
    for o in PLOT_OPTIONS {
        let mut head = String::new();
        if let Some(c) = o.short {
            let _ = write!(head, "\\fB\\-{c}\\fR, ");
        }
        let _ = write!(head, "\\fB\\-\\-{}\\fR", esc(o.long));
        if !o.metavar.is_empty() {
            let _ = write!(head, " \\fI{}\\fR", esc(o.metavar));
        }
        let _ = writeln!(out, ".TP\n{head}\n{}", esc(o.help));
    }
    let kinds: Vec<String> = GENERATE_KINDS
        .iter()
        .map(|(k, _)| format!("\\fB{}\\fR", esc(k)))
        .collect();
    let _ = writeln!(
        out,
        ".PP\n\\fB\\-\\-generate\\fR \\fIKIND\\fR prints, on standard output, one of: {}.",
        kinds.join(", ")
    );
    mesh_section(&mut out);
    iperf2_section(&mut out);
    out.push_str(
        ".SH \"EXIT STATUS\"\n\
         0 when the test (or the command) succeeded, and when a test was\n\
         interrupted by SIGINT, SIGTERM or SIGHUP (as iperf3 3.19 and later);\n\
         1 for a bad command line, a failed test, or a file \\fBplot\\fR cannot read.\n\
         .SH EXAMPLES\n\
         .TP\n\
         \\fBrperf3 \\-s\\fR\n\
         Serve tests on port 5201.\n\
         .TP\n\
         \\fBrperf3 \\-c\\fR \\fIhost\\fR \\fB\\-t 10 \\-P 4\\fR\n\
         Send to \\fIhost\\fR over four TCP streams for ten seconds.\n\
         .TP\n\
         \\fBrperf3 \\-c\\fR \\fIhost\\fR \\fB\\-u \\-b 100M \\-J > udp.json\\fR\n\
         A UDP test at 100 Mbit/s, the results as one JSON document.\n\
         .TP\n\
         \\fBrperf3 plot udp.json tcp.json \\-o compare.svg\\fR\n\
         Draw two runs in one plot.\n\
         .TP\n\
         \\fBrperf3 \\-\\-generate man > rperf3.1\\fR\n\
         Write this page.\n\
         .SH \"SEE ALSO\"\n\
         \\fBiperf3\\fR(1)\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_every_option_of_the_table() {
        let page = man_page();
        for s in OPTIONS {
            assert!(
                page.contains(&format!("\\fB\\-\\-{}\\fR", esc(s.long))),
                "--{}",
                s.long
            );
            if let Some(c) = s.short {
                assert!(page.contains(&format!("\\fB\\-{c}\\fR, ")), "-{c}");
            }
        }
        assert!(page.contains("[also \\fB\\-\\-bandwidth\\fR; client only]"));
        // SCTP's requirement, said of the system the page is read on.
        assert!(page.contains(
            "[client only; needs a kernel with SCTP support, on Linux the sctp module; "
        ));
        assert!(!page.contains("machine") && !page.contains("not supported yet"));
        assert!(page.contains(".SH COMMANDS") && page.contains(".SH \"EXIT STATUS\""));
    }

    #[test]
    fn documents_the_iperf2_personality_and_its_options() {
        let page = man_page();
        assert!(page.contains(".SH \"IPERF 2\""));
        for usage in [
            "\\fB\\-d, \\-\\-dualtest\\fR",
            "\\fB\\-T, \\-\\-ttl",
            "\\fB\\-U, \\-\\-single_udp",
        ] {
            assert!(page.contains(usage), "{usage} missing");
        }
    }

    #[test]
    fn escaping() {
        assert_eq!(esc("a-b\\c"), "a\\-b\\ec");
        assert_eq!(esc(".x"), "\\&.x");
        // No text line starts with a control character it did not mean.
        for line in man_page().lines() {
            if let Some(rest) = line.strip_prefix('.') {
                let mac = rest.split(' ').next().unwrap_or_default();
                assert!(
                    ["TH", "SH", "SS", "TP", "PP", "br", "B"].contains(&mac),
                    "{line}"
                );
            }
        }
    }
}

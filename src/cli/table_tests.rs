//! The option table's own checks: iperf3's longopts order and optstring, unique
//! ids, help defaults, and the README's option table kept current.

use super::*;
use std::collections::HashSet;
use std::fmt::Write as _;

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Both => "both",
        Side::Server => "server",
        Side::Client => "client",
    }
}

/// The README's table of every option (the test below keeps its copy current).
fn status_table_markdown() -> String {
    let mut out = String::from("| option | argument | side | status |\n|---|---|---|---|\n");
    for s in OPTIONS {
        let mut names = String::new();
        if let Some(c) = s.short {
            let _ = write!(names, "`-{c}`, ");
        }
        let _ = write!(names, "`--{}`", s.long);
        for a in s.aliases {
            let _ = write!(names, ", `--{a}`");
        }
        let arg = match s.arg {
            ArgKind::None => String::new(),
            // A bare "|" would end the table cell.
            ArgKind::Required => format!("`{}`", s.metavar.replace('|', "\\|")),
            ArgKind::Optional => format!("`{}` (optional)", s.metavar),
        };
        let status = match status_note(s.id) {
            Some(note) => format!("supported ({note})"),
            None => "supported".to_string(),
        };
        let _ = writeln!(
            out,
            "| {names} | {arg} | {} | {status} |",
            side_name(s.side)
        );
    }
    out
}

#[test]
fn every_option_is_in_longopts_order_once() {
    let order: HashSet<Opt> = LONG_ORDER.iter().copied().collect();
    assert_eq!(order.len(), LONG_ORDER.len(), "duplicate in LONG_ORDER");
    let table: HashSet<Opt> = OPTIONS.iter().map(|s| s.id).collect();
    assert_eq!(table, order);
    let names: Vec<&str> = long_names().map(|(n, _)| n).collect();
    let unique: HashSet<&str> = names.iter().copied().collect();
    assert_eq!(
        unique.len(),
        names.len(),
        "duplicate long name in the table"
    );
}

#[test]
fn long_names_follow_iperf3s_longopts() {
    // The start of iperf3 3.21's longopts, aliases in place.
    let names: Vec<&str> = long_names().map(|(n, _)| n).take(16).collect();
    assert_eq!(
        names,
        [
            "port",
            "format",
            "interval",
            "daemon",
            "one-off",
            "verbose",
            "json",
            "json-stream",
            "json-stream-full-output",
            "version",
            "server",
            "client",
            "udp",
            "bitrate",
            "bandwidth",
            "server-bitrate-limit",
        ]
    );
}

#[test]
fn short_letters_are_iperf3s_optstring() {
    // iperf3 3.21's optstring without the argument colons.
    let expected: HashSet<char> = "pfiD1VJvscubtnklPRwBMN46SLZOFATCdImhX".chars().collect();
    let shorts: Vec<char> = OPTIONS.iter().filter_map(|s| s.short).collect();
    let set: HashSet<char> = shorts.iter().copied().collect();
    assert_eq!(set.len(), shorts.len(), "duplicate short letter");
    assert_eq!(set, expected);
}

#[test]
fn ids_are_unique() {
    let ids: HashSet<Opt> = OPTIONS.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), OPTIONS.len());
}

#[test]
fn lookups() {
    assert_eq!(by_short('b').unwrap().id, Opt::Bitrate);
    let by_long = |name| long_names().find(|(n, _)| *n == name).map(|(_, s)| s.id);
    assert_eq!(by_long("bandwidth"), Some(Opt::Bitrate));
    assert_eq!(by_long("linux-congestion"), Some(Opt::Congestion));
    assert_eq!(
        by_long("band"),
        None,
        "exact names; prefixes are getopt's job"
    );
    assert!(by_short('Q').is_none());
}

/// The defaults the help quotes are the ones in effect.
#[test]
fn help_defaults_are_the_constants() {
    use rperf3_proto::{DEFAULT_DURATION, DEFAULT_PORT, DEFAULT_RCV_TIMEOUT};
    let skew = super::super::validate::DEFAULT_SKEW_THRESHOLD;
    for (id, default) in [
        (Opt::Port, u128::from(DEFAULT_PORT)),
        (Opt::Time, DEFAULT_DURATION.into()),
        (Opt::RcvTimeout, DEFAULT_RCV_TIMEOUT.as_millis()),
        (Opt::TimeSkewThreshold, skew.into()),
        (Opt::RpmTime, super::super::rpm::DEFAULT_STAGE_SECS.into()),
    ] {
        let help = spec(id).help;
        assert!(help.contains(&format!("(default {default})")), "{help}");
    }
}

#[test]
fn usage_column() {
    assert_eq!(spec(Opt::Port).usage(), "-p, --port      #");
    assert_eq!(spec(Opt::Debug).usage(), "-d, --debug[=#]");
    assert_eq!(spec(Opt::Timestamps).usage(), "--timestamps<=format>");
    assert_eq!(spec(Opt::Client).usage(), "-c, --client <host>[%<dev>]");
    assert_eq!(spec(Opt::Bitrate).usage(), "-b, --bitrate #[KMG][/#]");
    assert_eq!(spec(Opt::Bytes).usage(), "-n, --bytes     #[KMG]");
    assert_eq!(spec(Opt::RcvTimeout).usage(), "--rcv-timeout #");
    assert_eq!(spec(Opt::Bidir).usage(), "--bidir");
}

#[test]
fn status_table_has_a_row_per_option() {
    let t = status_table_markdown();
    assert_eq!(t.lines().count(), OPTIONS.len() + 2);
    assert!(t.contains("| `--username` | `name` | client | supported |"));
    assert!(!t.contains("not yet"));
    assert!(t.contains("| `--sctp` |  | client | supported (needs a kernel with SCTP"));
    assert!(!t.contains("machine"));
    assert!(t.contains("| `-b`, `--bitrate`, `--bandwidth` | `#[KMG][/#]` | client | supported |"));
    assert!(t.contains(r"| `--dscp` | `N\|name` | client | supported |"));
}

#[test]
fn readme_option_table_matches_the_parser() {
    let readme = include_str!("../../README.md");
    let t = status_table_markdown();
    assert!(
        readme.contains(&t),
        "README.md's option table is stale; replace it with:\n{t}"
    );
}

//! rperf3 as `iperf`, run with the commands of each captured iperf 2.2.1
//! case, prints the same lines in the same order as the capture: once every
//! figure, port, pid and date is masked (numbers become `#`, unit prefixes
//! `X`, runs of spaces one space), the sequence of line shapes of each side
//! equals the capture's, but for what two runs of one command legitimately
//! differ in (named in `sequence.rs`) and each case's `known` differences. A
//! missing or extra line, row, stream or block, or blocks out of order, fail;
//! the exact spacing of each shape is the formatters' golden tests' business
//! (crates/report/src/iperf2).

mod sequence;

use std::path::PathBuf;

use crate::common::iperf2::{ours, Server2};

/// One captured case: its name and the server's and client's arguments
/// (`{lport}` is the `-L` port).
struct Case {
    name: &'static str,
    server: &'static [&'static str],
    client: &'static [&'static str],
    /// Where the capture differs from what rperf3 prints, each with why.
    known: &'static [Known],
}

/// A known difference: in the capture of `side`, the lines from `line`
/// (1-based) on read `was` and are compared as `now` instead.
struct Known {
    side: &'static str,
    line: usize,
    was: &'static [&'static str],
    now: &'static [&'static str],
    why: &'static str,
}

/// A run of the machine that stalled is not evidence about the layout: it
/// is run again, this many times in all at most.
const ATTEMPTS: usize = 3;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/iperf2/2.2.1")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The capture of `side` with the case's known differences applied.
fn expected(c: &Case, side: &str) -> String {
    let text = fixture(&format!("{}.{side}.txt", c.name));
    let mut lines: Vec<&str> = text.lines().collect();
    // From the last line up, so that earlier line numbers still hold.
    let mut known: Vec<&Known> = c.known.iter().filter(|k| k.side == side).collect();
    known.sort_by_key(|k| std::cmp::Reverse(k.line));
    for k in known {
        let at = k.line - 1;
        assert_eq!(
            lines.get(at..at + k.was.len()),
            Some(k.was),
            "{} {side}: the capture no longer reads as the known difference says ({})",
            c.name,
            k.why
        );
        lines.splice(at..at + k.was.len(), k.now.iter().copied());
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// A line's shape: figures masked, unit prefixes masked, spaces collapsed.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.')
            {
                chars.next();
            }
            out.push('#');
        } else if c == ' ' {
            while chars.peek() == Some(&' ') {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    let mut s = out.trim_end().to_string();
    for p in ["K", "M", "G", "T"] {
        s = s.replace(&format!(" {p}Byte"), " XByte");
        s = s.replace(&format!(" {p}bits/sec"), " Xbits/sec");
    }
    s = s
        .replace(" Byte", " XByte")
        .replace(" bits/sec", " Xbits/sec");
    // `-nan` and `nan` placeholders, and signs, are figures too.
    s = s.replace("-nan", "#").replace("-#", "#");
    // A histogram line's bins (`=1:34,2:12,29:1`) vary in number by run.
    while s.contains("#:#,#:#") {
        s = s.replace("#:#,#:#", "#:#");
    }
    s
}

/// The value after `flag` in `args`, as a number.
fn flag(args: &[&str], flag: &str) -> Option<f64> {
    let i = args.iter().position(|a| *a == flag)?;
    args.get(i + 1)?.parse().ok()
}

/// One run of the case: (client's output, server's output).
fn run_once(c: &Case) -> (String, String) {
    let server = Server2::start(&ours(), c.server);
    let lport = crate::common::free_port().to_string();
    let args: Vec<&str> = c
        .client
        .iter()
        .map(|a| if *a == "{lport}" { lport.as_str() } else { a })
        .collect();
    let client = server.client(&ours(), &args);
    assert!(
        client.status.success(),
        "{}: client failed:\n{client}",
        c.name
    );
    let served = server.stop();
    (
        client.stdout.clone() + &client.stderr,
        served.stdout.clone() + &served.stderr,
    )
}

fn run_case(c: &Case) {
    let secs = flag(c.client, "-t");
    let every = |args: &[&str]| flag(args, "-i");
    let mut attempt = 1;
    let (client, server, stalled) = loop {
        let (client, server) = run_once(c);
        let stalled = [(&client, c.client), (&server, c.server)]
            .iter()
            .find_map(|(out, args)| sequence::disturbance(out, every(args), secs));
        match stalled {
            Some(why) if attempt < ATTEMPTS => {
                eprintln!(
                    "{}: attempt {attempt} ran on a stalled machine ({why}): again",
                    c.name
                );
                attempt += 1;
            }
            _ => break (client, server, stalled),
        }
    };
    for (side, got, args) in [("client", &client, c.client), ("server", &server, c.server)] {
        let want = expected(c, side);
        if let Err(e) = sequence::compare(&want, got, every(args)) {
            panic!(
                "{} {side}: {e}\n{}--- rperf3 printed ---\n{got}\n--- capture ---\n{}",
                c.name,
                stalled.as_ref().map_or(String::new(), |w| format!(
                    "(all {ATTEMPTS} attempts ran on a stalled machine, the last with {w})\n"
                )),
                fixture(&format!("{}.{side}.txt", c.name))
            );
        }
    }
}

macro_rules! layout_cases {
    ($($test:ident: $case:expr;)*) => {
        $(
            #[test]
            fn $test() {
                run_case(&$case);
            }
        )*
    };
}

const T2: &[&str] = &["-t", "2", "-i", "1"];

layout_cases! {
    tcp: Case { name: "tcp", server: &["-i", "1"], client: T2, known: &[] };
    tcp_e: Case {
        name: "tcp-e",
        server: &["-i", "1", "-e"],
        client: &["-t", "2", "-i", "1", "-e"],
        known: &[],
    };
    tcp_p2: Case {
        name: "tcp-P2",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-P", "2"],
        known: &[],
    };
    tcp_p2_sum_only: Case {
        name: "tcp-P2-sumonly",
        server: &["-i", "1", "--sum-only"],
        client: &["-t", "2", "-i", "1", "-P", "2", "--sum-only"],
        known: &[],
    };
    tcp_reverse: Case {
        name: "tcp-R",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-R"],
        known: &[],
    };
    tcp_tos_reverse_e: Case {
        name: "tcp-tos-R-e",
        server: &["-i", "1", "-e"],
        client: &["-t", "2", "-i", "1", "-e", "-S", "0x20", "-R"],
        known: &[],
    };
    tcp_txdelay: Case {
        name: "tcp-txdelay",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "--txdelay-time", "1"],
        known: &[],
    };
    tcp_connect_only_e: Case {
        name: "tcp-connect-only-e",
        server: &[],
        client: &["--connect-only", "-i", "0.1", "-t", "0.35", "-e"],
        known: &[Known {
            side: "server",
            line: 5,
            was: &[
                "read tcp flags (peer close) failed",
                "(null)local 127.0.0.1 port 21020 connected with 127.0.0.1 port 47806",
                "read tcp flags (peer close) failed",
                "(null)local 127.0.0.1 port 21020 connected with 127.0.0.1 port 47812",
                "read tcp flags (peer close) failed",
                "(null)local 127.0.0.1 port 21020 connected with 127.0.0.1 port 47822",
                "read tcp flags (peer close) failed",
                "(null)local 127.0.0.1 port 21020 connected with 127.0.0.1 port 47832",
            ],
            now: &[
                "127.0.0.1 port 47806: closed before any test header (a connect-only client)",
                "127.0.0.1 port 47812: closed before any test header (a connect-only client)",
                "127.0.0.1 port 47822: closed before any test header (a connect-only client)",
                "127.0.0.1 port 47832: closed before any test header (a connect-only client)",
            ],
            why: "2.2.1's server prints a failed read and a connection line with `(null)` for its \
                  tag for each connect-only client; rperf3's says in one line what happened",
        }],
    };
    tcp_dual: Case {
        name: "tcp-d",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-d", "-L", "{lport}"],
        known: &[],
    };
    tcp_tradeoff: Case {
        name: "tcp-r",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-r", "-L", "{lport}"],
        known: &[Known {
            side: "client",
            line: 13,
            was: &[
                "[SUM] 1.00-2.00 sec  2.32 GBytes  19.9 Gbits/sec",
                "[  2] local 127.0.0.1 port 21321 connected with 127.0.0.1 port 48518",
                "[  1] 0.00-2.00 sec  4.93 GBytes  21.2 Gbits/sec",
            ],
            now: &[
                "[  1] 0.00-2.00 sec  4.93 GBytes  21.2 Gbits/sec",
                "[  2] local 127.0.0.1 port 21321 connected with 127.0.0.1 port 48518",
                "[ ID] Interval       Transfer     Bandwidth",
            ],
            why: "2.2.1 prints -r's changeover either way: as captured (a lone [SUM] of the \
                  first stream, and the listener's line about the second connection before \
                  the first stream's final row) or, in other runs, as rperf3 does (no lone \
                  sum; the final row, then the connection line and a title line)",
        }],
    };
    tcp_full_duplex: Case {
        name: "tcp-fullduplex",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "--full-duplex"],
        known: &[],
    };
    tcp_rate: Case {
        name: "tcp-b",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-b", "50m"],
        known: &[],
    };
    tcp_isoch: Case {
        name: "tcp-isoch",
        server: &["-i", "1", "-e"],
        client: &["-t", "2", "-i", "1", "-e", "--isochronous=60:20m,2m"],
        known: &[],
    };
    tcp_hist_client: Case {
        name: "tcp-hist-client",
        server: &["-i", "1", "-e"],
        client: &["-t", "2", "-i", "1", "-e", "--histograms", "-b", "50m"],
        known: &[],
    };
    tcp_mss: Case { name: "tcp-m", server: &["-i", "1", "-m"], client: T2, known: &[] };
    tcp_csv: Case {
        name: "tcp-csv",
        server: &["-i", "1", "-y", "C"],
        client: &["-t", "2", "-i", "1", "-y", "C"],
        known: &[],
    };
    tcp_e_csv: Case {
        name: "tcp-e-csv",
        server: &["-i", "1", "-e", "-y", "C"],
        client: &["-t", "2", "-i", "1", "-e", "-y", "C"],
        known: &[],
    };
    tcp_hide_ips: Case {
        name: "tcp-hideips",
        server: &["-i", "1", "--hide-ips"],
        client: &["-t", "2", "-i", "1", "--hide-ips"],
        known: &[],
    };
    tcp_exclude_cs: Case {
        name: "tcp-x-CS",
        server: &["-i", "1", "-x", "CS"],
        client: &["-t", "2", "-i", "1", "-x", "CS"],
        known: &[],
    };
    tcp_no_interval: Case { name: "tcp-noint", server: &[], client: &["-t", "2"], known: &[] };
    udp: Case {
        name: "udp",
        server: &["-u", "-i", "1"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1"],
        known: &[],
    };
    udp_e: Case {
        name: "udp-e",
        server: &["-u", "-i", "1", "-e"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-e"],
        known: &[],
    };
    udp_dscp_e: Case {
        name: "udp-dscp-e",
        server: &["-u", "-i", "1", "-e"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-e", "--dscp", "46"],
        known: &[],
    };
    udp_txdelay_e: Case {
        name: "udp-txdelay-e",
        server: &["-u", "-i", "1", "-e"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-e", "--txdelay-time", "0.5"],
        known: &[Known {
            side: "server",
            line: 10,
            was: &["[  1] 2.00-2.50 sec   613 KBytes  10.0 Mbits/sec   0.010 ms 0/427 (0%) 0.007/0.002/0.096/0.007 ms 427 pps 428/0/0 170630"],
            now: &[],
            why: "2.2.1's client sends its first datagram before the wait, so its server's clock runs \
                  through the idle time (a first second at half the rate, an extra half-second row); \
                  rperf3's sends nothing before it, so the server's rows are the data's",
        }],
    };
    udp_pps: Case {
        name: "udp-pps",
        server: &["-u", "-i", "1", "-e"],
        client: &["-u", "-b", "2000pps", "-t", "2", "-i", "1", "-e"],
        known: &[],
    };
    udp_csv: Case {
        name: "udp-csv",
        server: &["-u", "-i", "1", "-y", "C"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-y", "C"],
        known: &[],
    };
    udp_p2: Case {
        name: "udp-P2",
        server: &["-u", "-i", "1"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-P", "2"],
        known: &[],
    };
    udp_64: Case {
        name: "udp-64B",
        server: &["-u", "-i", "1"],
        client: &["-u", "-l", "64", "-b", "5m", "-t", "2", "-i", "1"],
        known: &[],
    };
    udp_e_csv: Case {
        name: "udp-e-csv",
        server: &["-u", "-i", "1", "-e", "-y", "C"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-e", "-y", "C"],
        known: &[],
    };
    udp_no_interval: Case {
        name: "udp-noint",
        server: &["-u"],
        client: &["-u", "-b", "10m", "-t", "2"],
        known: &[],
    };
}

#[test]
fn shapes_mask_figures_units_and_widths() {
    assert_eq!(
        shape("[  1] 0.00-1.00 sec  2.51 GBytes  21.5 Gbits/sec"),
        shape("[  2] 10.00-11.00 sec   610 KBytes  1000 Kbits/sec")
    );
    assert_ne!(
        shape("[  1] 0.00-1.00 sec  2.51 GBytes  21.5 Gbits/sec"),
        shape("[SUM] 0.00-1.00 sec  2.51 GBytes  21.5 Gbits/sec")
    );
    assert_ne!(
        shape("[ ID] Interval       Transfer     Bandwidth"),
        shape("[ ID] Interval       Transfer     Bandwidth        Jitter")
    );
    // Histogram lines: any number of bins is one shape, the name is not.
    let pdf = |bins: &str, name: &str| {
        shape(&format!(
            "[  1] 0.00-1.00 sec {name}-PDF: bin(w=100us):cnt(48)={bins} \
             (5.00/95.00/99.7%=1/2/29,Outliers=1,obl/obu=0/0)"
        ))
    };
    assert_eq!(pdf("1:34,2:12,3:1,29:1", "W8"), pdf("1:48", "W8"));
    assert_ne!(pdf("1:48", "W8"), pdf("1:48", "W8(f)"));
}

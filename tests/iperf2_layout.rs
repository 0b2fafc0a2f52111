//! rperf3 as `iperf`, run with the commands of each captured iperf 2.2.1
//! case, prints the same kinds of lines as the capture: once every figure,
//! port, pid and date is masked (numbers become `#`, unit prefixes `X`, runs
//! of spaces one space), the set of line shapes of each side equals the
//! capture's. A missing block, column or suffix, or a line the stock program
//! never prints, fails; the exact spacing of each shape is the formatters'
//! golden tests' business (crates/report/src/iperf2).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::common::iperf2::{ours, Server2};

/// One captured case: its name and the server's and client's arguments
/// (`{lport}` is the `-L` port).
struct Case {
    name: &'static str,
    server: &'static [&'static str],
    client: &'static [&'static str],
    /// Shapes the capture has that rperf3 does not print, each with why.
    stock_only: &'static [(&'static str, &'static str)],
}

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/iperf2/2.2.1")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
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

fn shapes(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(shape)
        .collect()
}

fn run_case(c: &Case) {
    let udp = c.server.contains(&"-u");
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
    let _ = udp;
    for (side, got, file) in [
        (
            "client",
            client.stdout.clone() + &client.stderr,
            format!("{}.client.txt", c.name),
        ),
        (
            "server",
            served.stdout.clone() + &served.stderr,
            format!("{}.server.txt", c.name),
        ),
    ] {
        let want = shapes(&fixture(&file));
        let have = shapes(&got);
        let stock_only: BTreeSet<String> = c.stock_only.iter().map(|(l, _)| shape(l)).collect();
        let missing: Vec<&String> = want
            .difference(&have)
            .filter(|s| !stock_only.contains(*s))
            .collect();
        let extra: Vec<&String> = have.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{} {side}: line shapes differ from the 2.2.1 capture\nmissing: {missing:#?}\n\
             extra: {extra:#?}\n--- rperf3 printed ---\n{got}\n--- capture ---\n{}",
            c.name,
            fixture(&file)
        );
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
    tcp: Case { name: "tcp", server: &["-i", "1"], client: T2, stock_only: &[] };
    tcp_e: Case {
        name: "tcp-e",
        server: &["-i", "1", "-e"],
        client: &["-t", "2", "-i", "1", "-e"],
        stock_only: &[],
    };
    tcp_p2: Case {
        name: "tcp-P2",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-P", "2"],
        stock_only: &[],
    };
    tcp_p2_sum_only: Case {
        name: "tcp-P2-sumonly",
        server: &["-i", "1", "--sum-only"],
        client: &["-t", "2", "-i", "1", "-P", "2", "--sum-only"],
        stock_only: &[],
    };
    tcp_reverse: Case {
        name: "tcp-R",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-R"],
        stock_only: &[],
    };
    tcp_dual: Case {
        name: "tcp-d",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-d", "-L", "{lport}"],
        stock_only: &[],
    };
    tcp_tradeoff: Case {
        name: "tcp-r",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-r", "-L", "{lport}"],
        stock_only: &[(
            "[SUM] 1.00-2.00 sec  2.32 GBytes  19.9 Gbits/sec",
            "2.2.1 prints a lone sum of one stream between the halves of -r",
        )],
    };
    tcp_full_duplex: Case {
        name: "tcp-fullduplex",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "--full-duplex"],
        stock_only: &[],
    };
    tcp_rate: Case {
        name: "tcp-b",
        server: &["-i", "1"],
        client: &["-t", "2", "-i", "1", "-b", "50m"],
        stock_only: &[],
    };
    // Frames over TCP (issue 18): -t 1 prints the capture's shapes.
    tcp_isoch: Case {
        name: "tcp-isoch",
        server: &["-i", "1", "-e"],
        client: &["-t", "1", "-i", "1", "-e", "--isochronous=60:20m,2m"],
        stock_only: &[],
    };
    tcp_hist_client: Case {
        name: "tcp-hist-client",
        server: &["-i", "1", "-e"],
        client: &["-t", "1", "-i", "1", "-e", "--histograms", "-b", "50m"],
        stock_only: &[],
    };
    tcp_mss: Case { name: "tcp-m", server: &["-i", "1", "-m"], client: T2, stock_only: &[] };
    tcp_csv: Case {
        name: "tcp-csv",
        server: &["-i", "1", "-y", "C"],
        client: &["-t", "2", "-i", "1", "-y", "C"],
        stock_only: &[],
    };
    tcp_e_csv: Case {
        name: "tcp-e-csv",
        server: &["-i", "1", "-e", "-y", "C"],
        client: &["-t", "2", "-i", "1", "-e", "-y", "C"],
        stock_only: &[],
    };
    tcp_hide_ips: Case {
        name: "tcp-hideips",
        server: &["-i", "1", "--hide-ips"],
        client: &["-t", "2", "-i", "1", "--hide-ips"],
        stock_only: &[],
    };
    tcp_exclude_cs: Case {
        name: "tcp-x-CS",
        server: &["-i", "1", "-x", "CS"],
        client: &["-t", "2", "-i", "1", "-x", "CS"],
        stock_only: &[],
    };
    tcp_no_interval: Case { name: "tcp-noint", server: &[], client: &["-t", "2"], stock_only: &[] };
    udp: Case {
        name: "udp",
        server: &["-u", "-i", "1"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1"],
        stock_only: &[],
    };
    udp_e: Case {
        name: "udp-e",
        server: &["-u", "-i", "1", "-e"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-e"],
        stock_only: &[],
    };
    udp_pps: Case {
        name: "udp-pps",
        server: &["-u", "-i", "1", "-e"],
        client: &["-u", "-b", "2000pps", "-t", "2", "-i", "1", "-e"],
        stock_only: &[],
    };
    udp_csv: Case {
        name: "udp-csv",
        server: &["-u", "-i", "1", "-y", "C"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-y", "C"],
        stock_only: &[],
    };
    udp_p2: Case {
        name: "udp-P2",
        server: &["-u", "-i", "1"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-P", "2"],
        stock_only: &[],
    };
    udp_64: Case {
        name: "udp-64B",
        server: &["-u", "-i", "1"],
        client: &["-u", "-l", "64", "-b", "5m", "-t", "2", "-i", "1"],
        stock_only: &[],
    };
    udp_e_csv: Case {
        name: "udp-e-csv",
        server: &["-u", "-i", "1", "-e", "-y", "C"],
        client: &["-u", "-b", "10m", "-t", "2", "-i", "1", "-e", "-y", "C"],
        stock_only: &[],
    };
    udp_no_interval: Case {
        name: "udp-noint",
        server: &["-u"],
        client: &["-u", "-b", "10m", "-t", "2"],
        stock_only: &[],
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

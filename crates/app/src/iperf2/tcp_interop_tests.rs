//! The iperf 2 TCP client and server (through the library) against the stock
//! iperf 2.1.8 and 2.2.1, both roles, each mode: every stream's total on our
//! side equals the stock program's own count (its exact `-y C` bytes), and a
//! `-b` rate holds within 1% at the stock receiver.

use std::process::{Command, Stdio};
use std::time::Duration;

use rperf3_report::iperf2::model::{Row2, Tag2};

use super::config::*;
use super::tcp_tests::{client, finals, free_port, peer, run_client, server, Ours};

/// One stock CSV row: transfer id, interval, bytes, bits per second.
#[derive(Debug, Clone, PartialEq)]
struct Csv {
    id: String,
    interval: String,
    bytes: u64,
    bps: f64,
}

fn csv(text: &str) -> Vec<Csv> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            // 2.2.1's full-duplex sum has a different layout (start and end
            // in two fields); the per-stream rows are what is compared.
            (f.len() == 9 && f[6].contains('-')).then(|| Csv {
                id: f[5].to_string(),
                interval: f[6].to_string(),
                bytes: f[7].parse().unwrap_or(0),
                bps: f[8].parse().unwrap_or(0.0),
            })
        })
        .collect()
}

/// Per-stream totals, sorted (the two sides number streams differently).
fn stock_streams(rows: &[Csv]) -> Vec<u64> {
    let mut v: Vec<u64> = rows
        .iter()
        .filter(|r| r.id != "-1" && r.interval.starts_with("0.0-"))
        .map(|r| r.bytes)
        .collect();
    v.sort_unstable();
    v
}

fn our_streams(rows: &[Row2]) -> Vec<u64> {
    let mut v: Vec<u64> = rows
        .iter()
        .filter(|r| !matches!(r.tag, Tag2::Sum(_)))
        .map(|r| r.bytes)
        .collect();
    v.sort_unstable();
    v
}

/// A stock `-s -y C` server; its rows once SIGINT ended it.
struct StockServer(std::process::Child, u16);

impl StockServer {
    fn start(bin: &str) -> Self {
        let port = free_port();
        let c = Command::new(bin)
            .args(["-s", "-p", &port.to_string(), "-y", "C"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while !super::tcp_tests::listening(port) {
            assert!(
                std::time::Instant::now() < end,
                "stock server not listening"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Self(c, port)
    }

    fn rows(self) -> Vec<Csv> {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let out = self.0.wait_with_output().unwrap();
        csv(&String::from_utf8_lossy(&out.stdout))
    }
}

/// Options of one case, for our config and for the stock command line.
struct Case {
    name: &'static str,
    mode: Mode2,
    parallel: u32,
    rate: Option<u64>,
    secs: u64,
}

const CASES: [Case; 6] = [
    Case {
        name: "-P 4",
        mode: Mode2::Normal,
        parallel: 4,
        rate: None,
        secs: 1,
    },
    Case {
        name: "-R",
        mode: Mode2::Reverse,
        parallel: 1,
        rate: None,
        secs: 1,
    },
    Case {
        name: "--full-duplex",
        mode: Mode2::FullDuplex,
        parallel: 1,
        rate: None,
        secs: 1,
    },
    Case {
        name: "-d",
        mode: Mode2::Dual,
        parallel: 1,
        rate: None,
        secs: 1,
    },
    Case {
        name: "-r",
        mode: Mode2::Tradeoff,
        parallel: 1,
        rate: None,
        secs: 1,
    },
    Case {
        name: "-b 50M",
        mode: Mode2::Normal,
        parallel: 1,
        rate: Some(50 << 20),
        secs: 2,
    },
];

fn stock_args(c: &Case, port: u16, lport: u16) -> Vec<String> {
    let mut a: Vec<String> = ["-c", "127.0.0.1", "-y", "C"].map(String::from).to_vec();
    a.extend([
        "-p".into(),
        port.to_string(),
        "-t".into(),
        c.secs.to_string(),
    ]);
    a.extend(["-P".into(), c.parallel.to_string()]);
    match c.mode {
        Mode2::Reverse => a.push("-R".into()),
        Mode2::FullDuplex => a.push("--full-duplex".into()),
        Mode2::Dual | Mode2::Tradeoff => {
            a.push(if c.mode == Mode2::Dual { "-d" } else { "-r" }.into());
            a.extend(["-L".into(), lport.to_string()]);
        }
        Mode2::Normal => {}
    }
    if c.rate.is_some() {
        a.extend(["-b".into(), "50M".into()]);
    }
    a
}

fn our_client(c: &Case, port: u16) -> Config2 {
    let mut cfg = client(
        port,
        c.mode,
        End2::Time(Duration::from_secs(c.secs)),
        c.parallel,
    );
    let Role2::Client(cl) = &mut cfg.role else {
        unreachable!()
    };
    cl.rate = c.rate.map(Rate2::Bits);
    cl.listen_port = Some(free_port());
    cfg
}

/// Bits per second of a stream's final row.
fn rate(r: &Row2) -> f64 {
    r.bytes as f64 * 8.0 / (r.end - r.start)
}

fn within_1pct(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= want * 0.01, "{what}: {got} vs {want}");
}

#[test]
fn our_client_against_stock_servers() {
    for v in ["2.1.8", "2.2.1"] {
        let Some(bin) = peer(v) else { continue };
        for c in &CASES {
            let st = StockServer::start(&bin);
            let (o, rep) = run_client(&our_client(c, st.1));
            assert_eq!(o.status, 0, "{v} {}: {:?}", c.name, rep.messages());
            // The stock server prints its -r connection back after ours ended.
            std::thread::sleep(Duration::from_millis(300));
            let rows = st.rows();
            let ours = our_streams(&rep.finals());
            assert_eq!(ours, stock_streams(&rows), "{v} {}: {rows:?}", c.name);
            let n = match c.mode {
                Mode2::Normal => c.parallel,
                Mode2::Reverse => 1,
                _ => 2,
            };
            assert_eq!(ours.len(), n as usize, "{v} {}", c.name);
            if let Some(r) = c.rate {
                let got = rows
                    .iter()
                    .find(|r| r.interval.starts_with("0.0-"))
                    .unwrap();
                within_1pct(got.bps, r as f64, &format!("{v} stock receiver"));
            }
        }
    }
}

#[test]
fn stock_clients_against_our_server() {
    for v in ["2.1.8", "2.2.1"] {
        let Some(bin) = peer(v) else { continue };
        for c in &CASES {
            let port = free_port();
            let srv = Ours::start(server(port));
            let out = Command::new(&bin)
                .args(stock_args(c, port, free_port()))
                .output()
                .unwrap();
            assert!(out.status.success(), "{v} {}", c.name);
            let rows = csv(&String::from_utf8_lossy(&out.stdout));
            let want = stock_streams(&rows);
            assert!(
                srv.rep.wait_for(Duration::from_secs(5), |e| {
                    our_streams(&finals(e)).len() >= want.len()
                }),
                "{v} {}",
                c.name
            );
            let f = srv.rep.finals();
            assert_eq!(our_streams(&f), want, "{v} {}: {rows:?}", c.name);
            if c.rate.is_some() {
                // What the stock sender wrote over the test's time: it writes
                // one block beyond the rate (its own receiver, too, measures
                // 1% over), and its own clock stretches on a loaded host.
                let sent = rows
                    .iter()
                    .find(|r| r.interval.starts_with("0.0-"))
                    .unwrap();
                let want = sent.bytes as f64 * 8.0 / c.secs as f64;
                within_1pct(rate(&f[0]), want, &format!("{v} our receiver"));
            }
        }
    }
}

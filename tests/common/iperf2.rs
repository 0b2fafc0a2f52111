//! Running iperf 2 tests: the stock peers (Debian's 2.1.8 and 2.2.1), rperf3
//! under the name `iperf`, servers of either, and the figures read back from
//! iperf 2's text rows, so interop tests compare what each side printed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{free_port, require_tool, rperf3, Output, Proc, Server, Signal, CLIENT_TIMEOUT};

/// Debian's iperf 2.1.8 (`iperf` on PATH). Missing: a failure under CI,
/// else a note and `None`.
pub(crate) fn iperf2_218() -> Option<PathBuf> {
    require_tool("iperf").then(|| PathBuf::from("iperf"))
}

/// iperf 2.2.1: `IPERF2_221` if set, else `../shared/peers/iperf-2.2.1` beside
/// the checkout. Missing: a failure under CI, else a note and `None`.
pub(crate) fn iperf2_221() -> Option<PathBuf> {
    super::peer_file("IPERF2_221", "iperf-2.2.1", "iperf 2.2.1")
}

/// rperf3 run under the name `iperf` (its iperf 2 personality), as Debian
/// installs iperf 2: a link in the target directory, made once.
pub(crate) fn ours() -> PathBuf {
    let bin = rperf3();
    let dir = bin
        .parent()
        .expect("the binary has a directory")
        .join("iperf2-personality");
    let link = dir.join("iperf");
    if std::fs::read_link(&link).ok().as_deref() != Some(bin.as_path()) {
        std::fs::create_dir_all(&dir).expect("create the link's directory");
        // Tests run in parallel: make the link under a private name, then
        // rename it into place (atomic; the last one wins, all are equal).
        let tmp = dir.join(format!(
            "iperf.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&bin, &tmp).expect("link rperf3 as iperf");
        std::fs::rename(&tmp, &link).expect("move the link into place");
    }
    link
}

/// Who plays which part in an interop test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pairing2 {
    /// rperf3 (as `iperf`) is the client, the stock iperf 2 the server.
    OursToPeer,
    /// The stock iperf 2 is the client, rperf3 the server.
    PeerToOurs,
}

impl Pairing2 {
    /// (client program, server program).
    pub(crate) fn programs(self, peer: &Path) -> (PathBuf, PathBuf) {
        match self {
            Self::OursToPeer => (ours(), peer.to_path_buf()),
            Self::PeerToOurs => (peer.to_path_buf(), ours()),
        }
    }
}

/// One client run against a fresh server of the pairing: (client's stdout,
/// server's stdout); the client must exit 0.
pub(crate) fn run_pair(
    peer: &Path,
    p: Pairing2,
    server_args: &[&str],
    client_args: &[&str],
) -> (String, String) {
    let (client, server) = p.programs(peer);
    let srv = Server2::start(&server, server_args);
    let out = srv.client(&client, client_args);
    let s = srv.stop();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    (out.stdout, s.stdout)
}

/// Generates one test per pairing and stock version: `ours_to_218`,
/// `v218_to_ours`, `ours_to_221`, `v221_to_ours`; `$body` takes the peer's
/// path and the pairing.
// Until the first interop module uses it.
#[allow(unused_macros)]
macro_rules! both_ways2 {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            use $crate::common::iperf2::{iperf2_218, iperf2_221, Pairing2};

            #[test]
            fn ours_to_218() {
                if let Some(peer) = iperf2_218() {
                    ($body)(&peer, Pairing2::OursToPeer);
                }
            }

            #[test]
            fn v218_to_ours() {
                if let Some(peer) = iperf2_218() {
                    ($body)(&peer, Pairing2::PeerToOurs);
                }
            }

            #[test]
            fn ours_to_221() {
                if let Some(peer) = iperf2_221() {
                    ($body)(&peer, Pairing2::OursToPeer);
                }
            }

            #[test]
            fn v221_to_ours() {
                if let Some(peer) = iperf2_221() {
                    ($body)(&peer, Pairing2::PeerToOurs);
                }
            }
        }
    };
}

/// An iperf 2 server (stock or ours) on a free port: `program -s -p PORT
/// args...`. Ready once its socket is in the kernel's table (TCP LISTEN, or a
/// bound UDP socket with `-u`): a probe would itself be a test to iperf 2.
pub(crate) struct Server2 {
    /// The port.
    pub port: u16,
    proc: Option<Proc>,
}

/// `program` run through `stdbuf -oL -eL` (a script of the same name in a
/// scratch directory, so the peer log still sees which iperf it is): a stock
/// iperf 2 writing to a pipe otherwise holds its lines until it exits, and
/// a test could only guess when its rows are made.
pub(crate) fn line_buffered(program: &Path) -> PathBuf {
    let name = program.file_name().expect("a program name");
    let dir = super::scratch_file("linebuf");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let wrapper = dir.join(name);
    let script = format!(
        "#!/bin/sh\nexec stdbuf -oL -eL '{}' \"$@\"\n",
        program.display()
    );
    std::fs::write(&wrapper, script).expect("the wrapper script");
    let mut perm = std::fs::metadata(&wrapper)
        .expect("the wrapper")
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&wrapper, perm).expect("an executable wrapper");
    wrapper
}

impl Server2 {
    /// Starts `program -s -p PORT args...`.
    pub(crate) fn start(program: &Path, args: &[&str]) -> Self {
        let wrapped;
        let program = if program == ours() {
            program
        } else {
            wrapped = line_buffered(program);
            wrapped.as_path()
        };
        let udp = args.iter().any(|a| *a == "-u" || *a == "--udp");
        if !udp {
            let s = Server::start_program(program, args);
            let mut s = std::mem::ManuallyDrop::new(s);
            return Self {
                port: s.port,
                proc: s.proc.take(),
            };
        }
        let port = free_port();
        let p = port.to_string();
        let mut all = vec!["-s", "-p", &p];
        all.extend_from_slice(args);
        let mut proc = Proc::spawn(program, &all);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !udp_bound(port) {
            assert!(
                proc.is_running(),
                "server exited before binding:\n{}",
                proc.collect()
            );
            assert!(
                Instant::now() < deadline,
                "server not bound to UDP {port} after 10 s:\n{}\n{}",
                proc.stdout(),
                proc.stderr()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        Self {
            port,
            proc: Some(proc),
        }
    }

    /// Client arguments aimed at this server: `-c 127.0.0.1 -p PORT extra...`.
    pub(crate) fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut v = vec![
            "-c".to_string(),
            "127.0.0.1".to_string(),
            "-p".to_string(),
            self.port.to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    /// Runs `program` as a client of this server, to its end.
    pub(crate) fn client(&self, program: &Path, extra: &[&str]) -> Output {
        super::run_program(program, &self.args(extra), CLIENT_TIMEOUT)
    }

    /// Waits (up to 10 s) until the server's output satisfies `done`, both
    /// streams as one text (every server prints each line as it is made).
    pub(crate) fn wait_output(&self, done: impl Fn(&str) -> bool) -> bool {
        let p = self.proc.as_ref().expect("running");
        p.wait_stdout_until(Duration::from_secs(10), |out| {
            done(&format!("{out}{}", p.stderr()))
        })
    }

    /// Ends the server once its output satisfies `done`.
    pub(crate) fn stop_when(self, done: impl Fn(&str) -> bool) -> Output {
        assert!(
            self.wait_output(done),
            "server output incomplete after 10 s:\n{}\n{}",
            self.proc.as_ref().expect("running").stdout(),
            self.proc.as_ref().expect("running").stderr()
        );
        self.stop()
    }

    /// Whether the server is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        self.proc.as_mut().is_some_and(|p| p.is_running())
    }

    /// Ends the server as a person does (SIGINT) and returns what it printed.
    pub(crate) fn stop(mut self) -> Output {
        let p = self.proc.take().expect("running");
        p.signal(Signal::SIGINT);
        p.finish(Duration::from_secs(10))
    }
}

impl Drop for Server2 {
    fn drop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }
}

/// Is a UDP socket bound to `port` (IPv4 or IPv6)?
pub(crate) fn udp_bound(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| a.ends_with(&want))
            })
        })
    })
}

/// One iperf 2 report row, as printed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// `1`, `*1`, `SUM`, `SUM-2`.
    pub tag: String,
    /// Interval start, seconds.
    pub start: f64,
    /// Interval end, seconds.
    pub end: f64,
    /// The transfer column in bytes (as precise as the printed figure).
    pub bytes: f64,
    /// The bandwidth column in bits per second.
    pub bits_per_second: f64,
    /// UDP receiver: jitter, ms.
    pub jitter_ms: Option<f64>,
    /// UDP receiver: lost datagrams.
    pub lost: Option<u64>,
    /// UDP receiver: total datagrams.
    pub total: Option<u64>,
}

/// Bytes in a transfer figure: iperf 2's byte units are 1024-based.
fn byte_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "Byte" | "Bytes" => 1.0,
        "KByte" | "KBytes" => 1024.0,
        "MByte" | "MBytes" => 1024.0 * 1024.0,
        "GByte" | "GBytes" => 1024.0 * 1024.0 * 1024.0,
        "TByte" | "TBytes" => 1024f64.powi(4),
        _ => return None,
    })
}

/// Bits per second in a rate figure: 1000-based.
fn bit_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "bits/sec" => 1.0,
        "Kbits/sec" => 1e3,
        "Mbits/sec" => 1e6,
        "Gbits/sec" => 1e9,
        "Tbits/sec" => 1e12,
        _ => return None,
    })
}

/// Parses one data row: `[  1] 0.00-1.00 sec  1.19 MBytes  10.0 Mbits/sec ...`
/// (2.2.1's `%.2f` and 2.1.8's `%.4f` times alike); `None` for other lines.
pub(crate) fn parse_row(line: &str) -> Option<Row> {
    let rest = line.strip_prefix('[')?;
    let (tag, rest) = rest.split_once(']')?;
    let mut w = rest.split_whitespace();
    let (start, end) = w.next()?.split_once('-')?;
    let (start, end) = (start.parse().ok()?, end.parse().ok()?);
    if w.next()? != "sec" {
        return None;
    }
    let bytes = w.next()?.parse::<f64>().ok()? * byte_unit(w.next()?)?;
    let bits_per_second = w.next()?.parse::<f64>().ok()? * bit_unit(w.next()?)?;
    let mut row = Row {
        tag: tag.trim().to_string(),
        start,
        end,
        bytes,
        bits_per_second,
        jitter_ms: None,
        lost: None,
        total: None,
    };
    // UDP receiver columns: "0.001 ms 0/851 (0%)".
    let cols: Vec<&str> = w.collect();
    if cols.len() >= 3 && cols[1] == "ms" {
        if let Some((lost, total)) = cols[2].split_once('/') {
            row.jitter_ms = cols[0].parse().ok();
            row.lost = lost.parse().ok();
            row.total = total.parse().ok();
        }
    }
    Some(row)
}

/// Every data row of `text`, in order.
pub(crate) fn rows(text: &str) -> Vec<Row> {
    text.lines().filter_map(parse_row).collect()
}

/// The last row tagged `tag` that spans the whole test (starts at 0 and is the
/// longest): a stream's or a sum's total.
pub(crate) fn total(text: &str, tag: &str) -> Option<Row> {
    rows(text)
        .into_iter()
        .filter(|r| r.tag == tag && r.start == 0.0)
        .max_by(|a, b| a.end.total_cmp(&b.end))
}

/// The client's "Sent N datagrams" count for stream `tag` (the last one).
pub(crate) fn sent_datagrams(text: &str, tag: &str) -> Option<u64> {
    let prefix = format!("[{tag:>3}] Sent ");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|r| r.split_whitespace().next()?.parse().ok())
        .next_back()
}

/// The row under the client's "[  N] Server Report:" line.
pub(crate) fn server_report(text: &str) -> Option<Row> {
    let mut lines = text.lines().skip_while(|l| !l.ends_with("Server Report:"));
    lines.next()?;
    lines.find_map(parse_row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> String {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/iperf2")
            .join(path);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn rows_of_both_versions_parse() {
        let r = total(&fixture("2.2.1/udp.server.txt"), "1").unwrap();
        assert_eq!((r.start, r.end), (0.0, 2.0));
        assert!((r.bytes - 2.39 * 1048576.0).abs() < 1.0);
        assert_eq!(r.bits_per_second, 10.0e6);
        assert_eq!((r.lost, r.total), (Some(0), Some(1703)));
        let r = total(&fixture("2.1.8/tcp.client.txt"), "1").unwrap();
        assert!(r.end > 2.0 && r.end < 2.1, "{r:?}");
        assert!(r.bits_per_second > 1e9);
    }

    #[test]
    fn client_udp_lines_parse() {
        let c = fixture("2.2.1/udp.client.txt");
        assert_eq!(sent_datagrams(&c, "1"), Some(1704));
        let rep = server_report(&c).unwrap();
        assert_eq!((rep.lost, rep.total), (Some(0), Some(1703)));
        let sums = fixture("2.2.1/tcp-P2.client.txt");
        assert!(total(&sums, "SUM").unwrap().bits_per_second > 1e9);
    }
}

/// The harness against live stock programs, so interop tests cannot pass on a
/// parser that reads nothing: a 2.1.8 client and a 2.2.1 server (UDP, the
/// server found by its bound socket) agree on every datagram, as each printed.
#[cfg(test)]
mod live {
    use super::*;

    #[test]
    fn stock_udp_figures_read_back_the_same_from_both_sides() {
        let (Some(v218), Some(v221)) = (iperf2_218(), iperf2_221()) else {
            return;
        };
        let server = Server2::start(&v221, &["-u", "-i", "1"]);
        let client = server.client(&v218, &["-u", "-b", "2m", "-t", "1"]);
        client.assert_ok();
        let served = server.stop();
        let sent = sent_datagrams(&client.stdout, "1").expect("Sent line");
        let report = server_report(&client.stdout).expect("server report");
        let total = total(&served.stdout, "1").expect("server total");
        // The FIN datagram is counted by the sender only.
        assert_eq!(report.total, Some(sent - 1), "{client}\n{served}");
        assert_eq!(total.total, report.total, "{client}\n{served}");
        assert_eq!(total.lost, Some(0));
    }

    #[test]
    fn ours_is_rperf3_under_the_name_iperf() {
        let link = ours();
        assert_eq!(link.file_name().unwrap(), "iperf");
        assert_eq!(
            std::fs::canonicalize(&link).unwrap(),
            std::fs::canonicalize(rperf3()).unwrap()
        );
        let peer = Path::new("iperf");
        assert_eq!(
            Pairing2::OursToPeer.programs(peer),
            (link.clone(), peer.to_path_buf())
        );
        assert_eq!(
            Pairing2::PeerToOurs.programs(peer),
            (peer.to_path_buf(), link)
        );
    }
}

/// The `--isochronous` option of the interop tests: 60 frames a second of
/// 20 Mbit/s mean, 2 Mbit/s deviation.
///
/// No spread (`,0`): every frame is the mean's size (41,667 bytes), so a
/// receiver's bytes per frame hold the sender's sizing to a percent (a
/// 1000-for-1024 slip is 2.4%); the lognormal draws themselves are
/// unit-tested in `rperf3-proto2`.
pub(crate) const ISOCH: &str = "--isochronous=60:20m,0";

/// What both ends of an [`ISOCH`] test print about it, as 2.2.1 does: the
/// client's frame line and `(isoch)` on each side's connection line.
pub(crate) fn assert_isoch_notes(c: &str, s: &str, ctx: &str) {
    assert!(
        c.lines().any(|l| l
            == "Isochronous: 60.00 frames/sec mean=20.0 Mbit/s, stddev=0.000 bit/s, \
                Period/IPG=16.67/0.000 ms"),
        "frame line\n{ctx}"
    );
    for side in [c, s] {
        assert!(
            side.lines()
                .any(|l| l.contains("connected with") && l.contains(" (isoch) ")),
            "(isoch) note\n{ctx}"
        );
    }
}

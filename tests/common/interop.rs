//! Running one test between rperf3 and iperf3 (either side) with `-J` on both
//! ends, and checking that the two documents tell the same story.
//!
//! Checks return a list of problems instead of panicking, so a repeated run
//! can count failures and report all of them at once.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod kernel;

use super::json::get;
use super::lo_ns::{self, LoNs};
use super::sock_close::{CloseWatch, Closed};
use super::{rperf3, run_program, Output, Server, CLIENT_TIMEOUT};

/// Debian's iperf3 3.12 (`None`, after a note, or a failure under CI, when absent).
pub(crate) fn iperf3_312() -> Option<PathBuf> {
    super::require_tool("iperf3").then(|| PathBuf::from("iperf3"))
}

/// Generates one test per pairing and peer: `ours_to_iperf3`, `iperf3_to_ours`
/// (3.12), `ours_to_iperf3_321`, `iperf3_321_to_ours`; `$body` takes the peer's
/// path and the pairing.
macro_rules! both_ways {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            use $crate::common::interop::{iperf3_312, Pairing};

            #[test]
            fn ours_to_iperf3() {
                if let Some(peer) = iperf3_312() {
                    ($body)(&peer, Pairing::OursToIperf3);
                }
            }

            #[test]
            fn iperf3_to_ours() {
                if let Some(peer) = iperf3_312() {
                    ($body)(&peer, Pairing::Iperf3ToOurs);
                }
            }

            #[test]
            fn ours_to_iperf3_321() {
                if let Some(peer) = $crate::common::iperf3_321() {
                    ($body)(&peer, Pairing::OursToIperf3);
                }
            }

            #[test]
            fn iperf3_321_to_ours() {
                if let Some(peer) = $crate::common::iperf3_321() {
                    ($body)(&peer, Pairing::Iperf3ToOurs);
                }
            }
        }
    };
}

/// Who plays which part.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Pairing {
    /// `rperf3 -c` against `iperf3 -s`.
    OursToIperf3,
    /// `iperf3 -c` against `rperf3 -s`.
    Iperf3ToOurs,
}

/// Both documents of one test, plus how each program ended.
pub(crate) struct Run {
    pub client: Value,
    pub server: Value,
    pub problems: Vec<String>,
    pub transcript: String,
    /// Which side is iperf3, when one is.
    pub pairing: Option<Pairing>,
    /// Whether that iperf3 sends from threads (3.16 and newer).
    pub iperf3_threads: bool,
    /// The kernel's figures, when the test ran in a namespace of its own.
    pub kernel: Option<Kernel>,
}

/// What the kernel of a test's own namespace counted.
pub(crate) struct Kernel {
    /// The server's port.
    pub port: u16,
    /// Every TCP socket destroyed there, with its final figures.
    pub closed: Vec<Closed>,
    /// `ss -E` as printed, for failure messages.
    pub closed_text: String,
    /// `/proc/net/snmp` at the end.
    pub snmp: String,
}

/// Runs `client_args` (after `-c 127.0.0.1 -p PORT -J`) between rperf3 and
/// the `iperf3` binary given, each in the role `pairing` says, against a
/// one-off `-J` server.
pub(crate) fn run_with(iperf3: &Path, pairing: Pairing, client_args: &[&str]) -> Run {
    run_with_ours(&rperf3(), iperf3, pairing, client_args)
}

/// [`run_with`], with `ours` (a wrapper that sets rperf3's environment,
/// say) in rperf3's part.
pub(crate) fn run_with_ours(
    ours: &Path,
    iperf3: &Path,
    pairing: Pairing,
    client_args: &[&str],
) -> Run {
    let mut r = match pairing {
        Pairing::OursToIperf3 => run_between(ours, iperf3, client_args),
        Pairing::Iperf3ToOurs => run_between(iperf3, ours, client_args),
    }
    .with_pairing(pairing);
    r.iperf3_threads = threaded(iperf3);
    r
}

/// Whether `iperf3` (3.16 or newer) sends from threads.
pub(crate) fn threaded(iperf3: &Path) -> bool {
    let version = super::peer_log::peer_version(iperf3).unwrap_or_default();
    let minor = version
        .split_once('.')
        .and_then(|(_, m)| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 16)
}

/// The control port inside a test's own namespace (private, so fixed).
const NS_PORT: u16 = 5201;

/// Runs the test inside a namespace of its own, where the kernel's figures
/// are the test's alone ([`Run::kernel`]); on the host when this machine
/// cannot make one (never under `CI=true`).
fn run_between(client_prog: &Path, server_prog: &Path, client_args: &[&str]) -> Run {
    let Some(ns) = LoNs::new() else {
        return run_on_host(client_prog, server_prog, client_args);
    };
    let watch = CloseWatch::start(&ns);
    let port = NS_PORT.to_string();
    let mut srv = ns.spawn(server_prog, &["-s", "-p", &port, "-1", "-J"]);
    lo_ns::await_listening(&mut srv, NS_PORT);
    let mut args = vec!["-c", "127.0.0.1", "-p", &port, "-J"];
    args.extend_from_slice(client_args);
    let c = ns.spawn(client_prog, &args).finish(CLIENT_TIMEOUT);
    let s = srv.finish(CLIENT_TIMEOUT);
    let mut r = finish_run(&c, &s);
    let protocol = get(&r.client, "start.test_start.protocol").and_then(Value::as_str);
    let closed = if protocol == Some("TCP") {
        let ports: Vec<u16> = get(&r.client, "start.connected")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("local_port")?.as_u64()?.try_into().ok())
            .collect();
        watch.wait(&ns, NS_PORT, &ports)
    } else {
        Vec::new()
    };
    r.kernel = Some(Kernel {
        port: NS_PORT,
        closed,
        closed_text: watch.text(),
        snmp: ns.snmp(),
    });
    r
}

fn run_on_host(client_prog: &Path, server_prog: &Path, client_args: &[&str]) -> Run {
    let srv = Server::start_program(server_prog, &["-1", "-J"]);
    let mut args = srv.args(&["-J"]);
    args.extend(client_args.iter().map(|s| s.to_string()));
    let c = run_program(client_prog, &args, CLIENT_TIMEOUT);
    let s = srv.wait_exit(CLIENT_TIMEOUT);
    finish_run(&c, &s)
}

/// Both programs' documents and exit status as a [`Run`].
fn finish_run(c: &Output, s: &Output) -> Run {
    let transcript = format!("{c}\n{s}");
    let mut problems = Vec::new();
    for (who, out) in [("client", c), ("server", s)] {
        if out.code() != Some(0) {
            problems.push(format!("{who} exit status {}", out.status));
        }
    }
    let parse = |who: &str, text: &str, problems: &mut Vec<String>| -> Value {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => {
                if let Some(e) = v.get("error") {
                    problems.push(format!("{who} error: {e}"));
                }
                v
            }
            Err(e) => {
                problems.push(format!("{who} stdout is not one JSON document: {e}"));
                Value::Null
            }
        }
    };
    let client = parse("client", &c.stdout, &mut problems);
    let server = parse("server", &s.stdout, &mut problems);
    Run {
        client,
        server,
        problems,
        transcript,
        pairing: None,
        iperf3_threads: false,
        kernel: None,
    }
}

impl Run {
    fn with_pairing(mut self, pairing: Pairing) -> Self {
        self.pairing = Some(pairing);
        self
    }

    /// Datagrams by which a sender's figures may disagree with themselves.
    /// iperf3's sending thread counts a datagram and its bytes in two steps
    /// while its main thread reads both for the results exchange and again
    /// for its JSON, so iperf3 3.21 as sender was seen one datagram apart
    /// (768 datagrams, 767 datagrams' bytes). rperf3's figures get no slack.
    fn sender_slack(&self, client_sends: bool) -> f64 {
        if self.iperf3_sends(client_sends) {
            1.0
        } else {
            0.0
        }
    }

    /// Bytes by which a TCP sender's figures may disagree with themselves, and
    /// fall short of what its receiver read: iperf3 3.16 and newer read their
    /// sending threads' counters while each may be writing one more block
    /// (iperf3 3.21 was seen one block apart from itself, and 190,000 bytes
    /// short of what rperf3 read with four streams). rperf3's figures, and
    /// single-threaded iperf3's, get none.
    fn tcp_sender_slack(&self, client_sends: bool) -> f64 {
        if !(self.iperf3_threads && self.iperf3_sends(client_sends)) || self.udp_len() > 0.0 {
            return 0.0;
        }
        let start = get(&self.client, "start.test_start");
        let field = |k: &str| start.and_then(|s| s.get(k)).and_then(Value::as_f64);
        field("blksize").unwrap_or(0.0) * field("num_streams").unwrap_or(1.0)
    }

    /// Whether iperf3 sends the group the client sends or not.
    pub(crate) fn iperf3_sends(&self, client_sends: bool) -> bool {
        match self.pairing {
            Some(Pairing::OursToIperf3) => !client_sends,
            Some(Pairing::Iperf3ToOurs) => client_sends,
            None => false,
        }
    }

    /// Panics listing every problem (with both programs' output).
    pub(crate) fn assert_clean(&self) {
        assert!(
            self.problems.is_empty(),
            "problems:\n  {}\n{}",
            self.problems.join("\n  "),
            self.transcript
        );
    }

    fn num(&mut self, doc_is_client: bool, path: &str) -> f64 {
        let doc = if doc_is_client {
            &self.client
        } else {
            &self.server
        };
        match get(doc, path).and_then(Value::as_f64) {
            Some(v) => v,
            None => {
                let who = if doc_is_client { "client" } else { "server" };
                self.problems.push(format!("{who}: no number at {path}"));
                f64::NAN
            }
        }
    }

    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.problems.push(what());
        }
    }

    /// As [`Run::check`], for a bound on timing that a process waiting for a
    /// CPU can break: such a problem is marked [`DISTURBED`].
    fn check_timing(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.problems.push(format!("{DISTURBED}{}", what()));
        }
    }

    /// Whether every problem found is one a loaded machine can cause, so
    /// that running the test again can tell the machine from rperf3.
    pub(crate) fn only_disturbed(&self) -> bool {
        !self.problems.is_empty() && self.problems.iter().all(|p| p.starts_with(DISTURBED))
    }

    /// Stream and connection counts on both sides.
    pub(crate) fn check_stream_counts(&mut self, want: usize) {
        for (who, doc) in [("client", &self.client), ("server", &self.server)] {
            for path in ["start.connected", "end.streams"] {
                let n = get(doc, path).and_then(Value::as_array).map(Vec::len);
                if n != Some(want) {
                    self.problems
                        .push(format!("{who} {path}: {n:?} entries, wanted {want}"));
                }
            }
        }
    }

    /// The traffic groups of this test: (key suffix, whether the client sends).
    pub(crate) fn groups(mode: Mode) -> Vec<(&'static str, bool)> {
        match mode {
            Mode::Normal => vec![("", true)],
            Mode::Reverse => vec![("", false)],
            Mode::Bidir => vec![("", true), ("_bidir_reverse", false)],
        }
    }

    /// The figures each side measured itself appear unchanged in the other
    /// side's document (they travel in the results exchange), and returns
    /// (sent, received) per group as the measuring side saw them.
    pub(crate) fn check_cross_counts(&mut self, mode: Mode, keys: &[&str]) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for (sfx, client_sends) in Self::groups(mode) {
            let sent_path = format!("end.sum_sent{sfx}");
            let rcvd_path = format!("end.sum_received{sfx}");
            // The server measured one end of this group itself; the client got
            // that figure from the results exchange.
            let server_path = if client_sends { &rcvd_path } else { &sent_path };
            // Only a sending server's figures (iperf3's) may be apart from
            // themselves; what a server received is compared exactly.
            let slack = if client_sends {
                0.0
            } else {
                self.sender_slack(false)
            };
            for k in keys {
                let p = format!("{server_path}.{k}");
                let (c, s) = (self.num(true, &p), self.num(false, &p));
                let allowed = match *k {
                    "bytes" if client_sends => 0.0,
                    "bytes" => slack * self.udp_len() + self.tcp_sender_slack(false),
                    "packets" => slack,
                    _ => 0.0,
                };
                self.check((c - s).abs() <= allowed, || {
                    format!("{p}: client says {c}, server says {s}")
                });
            }
            let sent = self.num(client_sends, &format!("{sent_path}.bytes"));
            let received = self.num(!client_sends, &format!("{rcvd_path}.bytes"));
            self.check(sent > 0.0, || format!("{sent_path}.bytes = {sent}"));
            out.push((sent, received));
        }
        out
    }

    /// TCP: per group, each side's count against the kernel's
    /// ([`Run::check_tcp_kernel`]); without the kernel's figures, the receiver
    /// got what the sender sent, less at most what the socket buffers of
    /// `streams` connections can hold in flight, and never more.
    pub(crate) fn check_tcp_delivery(&mut self, mode: Mode, streams: usize) {
        self.tcp_delivery(mode, streams, false);
    }

    /// As [`Run::check_tcp_delivery`], for `-O`: each side restarts its count
    /// at its own end of the omit period, so what was in flight then counts
    /// only on the receiver, which may then report more (iperf3 does too).
    pub(crate) fn check_tcp_delivery_omit(&mut self, mode: Mode, streams: usize) {
        self.tcp_delivery(mode, streams, true);
    }

    fn tcp_delivery(&mut self, mode: Mode, streams: usize, may_exceed: bool) {
        let flows = self.check_cross_counts(mode, &["bytes"]);
        // The kernel's figures, where there are any, are exact; the buffers'
        // bound below is what remains without them (and with `-O`, where each
        // side restarts its count on its own clock).
        if !may_exceed && self.check_tcp_kernel(mode) {
            return;
        }
        let buffers = streams as f64 * in_flight_per_stream();
        let groups = Self::groups(mode);
        for (i, ((sent, received), (_, client_sends))) in flows.into_iter().zip(groups).enumerate()
        {
            let slack = buffers.max(0.01 * sent);
            let above = self.tcp_sender_slack(client_sends) + if may_exceed { slack } else { 0.0 };
            self.check(received <= sent + above && received >= sent - slack, || {
                format!("group {i}: sent {sent}, received {received} (slack {slack})")
            });
        }
    }

    /// The sending client's test lasted about `secs` seconds: a UDP sender's
    /// clock stops at most [`UDP_LATE`] late; a TCP one's, which may wait for
    /// its socket to take a last block, 0.75 s.
    pub(crate) fn check_duration(&mut self, secs: f64) {
        let late = if self.udp_len() > 0.0 { UDP_LATE } else { 0.75 };
        for who_client in [true, false] {
            let d = self.num(who_client, "end.sum_sent.seconds");
            let who = if who_client { "client" } else { "server" };
            self.check_timing(d >= secs - 0.05 && d <= secs + late, || {
                format!("{who} end.sum_sent.seconds = {d}, wanted about {secs}")
            });
        }
    }

    /// The datagram size of a UDP test (0 for other protocols: a TCP sender's
    /// counters are read exactly).
    fn udp_len(&self) -> f64 {
        let start = get(&self.client, "start.test_start");
        let is_udp = start
            .and_then(|s| s.get("protocol"))
            .and_then(Value::as_str)
            == Some("UDP");
        match start.and_then(|s| s.get("blksize")).and_then(Value::as_f64) {
            Some(len) if is_udp => len,
            _ => 0.0,
        }
    }

    /// UDP: per group, packets and loss reconcile between the documents, and
    /// the receiver missed no more than [`udp_loss_bound`] of what was sent.
    pub(crate) fn check_udp_accounting(&mut self, mode: Mode) {
        self.udp_accounting(mode, true);
    }

    /// As [`Run::check_udp_accounting`], with the loss bound only where rperf3
    /// receives: iperf3 3.21 receiving with `--gsro` on a loaded loopback loses
    /// what its socket cannot hold (from 3% to two thirds of `-b 200M` sent by
    /// iperf3 3.21 itself, seen here), which says nothing about rperf3. What
    /// it counts lost must still be what its kernel dropped
    /// ([`Run::check_udp_kernel`]).
    pub(crate) fn check_udp_accounting_gro_peer(&mut self, mode: Mode) {
        self.udp_accounting(mode, false);
    }

    fn udp_accounting(&mut self, mode: Mode, bound_iperf3_receiver: bool) {
        self.check_cross_counts(mode, &["bytes", "packets", "lost_packets"]);
        let kernel = self.check_udp_kernel(mode);
        let len_c = self.num(true, "start.test_start.blksize");
        let len_s = self.num(false, "start.test_start.blksize");
        self.check(len_c == len_s, || format!("blksize {len_c} vs {len_s}"));
        for (sfx, client_sends) in Self::groups(mode) {
            let sp = format!("end.sum_sent{sfx}");
            let rp = format!("end.sum_received{sfx}");
            let sent_pk = self.num(client_sends, &format!("{sp}.packets"));
            let sent_b = self.num(client_sends, &format!("{sp}.bytes"));
            let rcv_pk = self.num(!client_sends, &format!("{rp}.packets"));
            let lost = self.num(!client_sends, &format!("{rp}.lost_packets"));
            let rcv_b = self.num(!client_sends, &format!("{rp}.bytes"));
            let slack = self.sender_slack(client_sends) * len_c;
            self.check(
                sent_pk > 0.0 && (sent_b - sent_pk * len_c).abs() <= slack,
                || format!("{sp}: {sent_b} bytes in {sent_pk} datagrams of {len_c}"),
            );
            // The receiver's count is its highest sequence number: never
            // beyond what was sent.
            self.check(rcv_pk <= sent_pk && rcv_pk > 0.0, || {
                format!("{rp}.packets {rcv_pk} vs sent {sent_pk}")
            });
            // Received datagrams = highest sequence - lost (no reordering on
            // loopback), each exactly one block.
            self.check(lost >= 0.0 && rcv_b == (rcv_pk - lost) * len_c, || {
                format!("{rp}: {rcv_b} bytes but packets {rcv_pk} - lost {lost} of {len_c}")
            });
            // What the receiver got, by its own count, against what the other
            // side says it sent. Datagrams it counted lost (gaps in the
            // sequence) stay within `udp_loss_bound`. Those it never saw at the
            // end are what a sender that learns of the end late sends after the
            // receiver's final count: with the kernel's figures, bounded there
            // ([`Run::check_udp_kernel`]); without, a quarter second's worth at
            // most on a loaded machine (6 of 42 datagrams at -b 10M were seen).
            let bounded = bound_iperf3_receiver || !self.iperf3_receives(client_sends);
            let secs = self.num(client_sends, &format!("{sp}.seconds"));
            let tail = sent_pk - rcv_pk;
            let lost_max = if bounded {
                udp_loss_bound(sent_pk)
            } else {
                sent_pk
            };
            let tail_max = if kernel {
                sent_pk
            } else {
                4.0 + 0.25 * sent_pk / secs
            };
            self.check(lost <= lost_max && tail <= tail_max, || {
                format!(
                    "{rp}: of {sent_pk} datagrams sent, {lost} counted lost (at most \
                     {lost_max}) and {tail} never seen at the end (at most {tail_max})"
                )
            });
        }
    }
}

/// Marks a problem a loaded machine can cause ([`Run::only_disturbed`]).
pub(crate) const DISTURBED: &str = "(timing) ";

/// How late a UDP sender's clock may stop after `-t`: from 0.0004 to 0.31 s
/// over 790 documents of the 1 s tests here, the machine at a load of 8 to 11
/// (most under 0.01 s; what is over is the sender waiting for a CPU).
const UDP_LATE: f64 = 0.4;

/// Datagrams of `sent` a loopback receiver may lose: those a loaded machine
/// drops when the receiver's socket is full (none in the `-b 10M` and `-b 20M`
/// tests here; one train of 128 datagrams of 17,850 at `-b 100M -l 1400`).
pub(crate) fn udp_loss_bound(sent: f64) -> f64 {
    (0.01 * sent).max(4.0)
}

/// Which way data flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Normal,
    Reverse,
    Bidir,
}

/// Bytes one TCP connection can have in flight: the largest send buffer plus
/// the largest receive buffer the kernel allows.
pub(crate) fn in_flight_per_stream() -> f64 {
    send_buffer_max() + buffer_max("/proc/sys/net/ipv4/tcp_rmem")
}

/// The largest send buffer the kernel lets a TCP socket grow to (no `-w`): what
/// a sender can still hold unsent or unacknowledged when it ends its test.
pub(crate) fn send_buffer_max() -> f64 {
    buffer_max("/proc/sys/net/ipv4/tcp_wmem")
}

fn buffer_max(sysctl: &str) -> f64 {
    std::fs::read_to_string(sysctl)
        .ok()
        .and_then(|t| t.split_whitespace().nth(2)?.parse::<f64>().ok())
        .unwrap_or(64.0 * 1024.0 * 1024.0)
}

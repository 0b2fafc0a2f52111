//! An interop test's figures against what the kernel of its own namespace
//! counted: TCP bytes against each data socket's final figures, UDP datagrams
//! against the namespace's SNMP counters.

use serde_json::Value;

use super::{Mode, Pairing, Run};
use crate::common::json::get;
use crate::common::sock_close::Closed;

/// The stream cookie a client writes first on each data connection (iperf3's
/// 37 bytes), which neither side counts as test data.
const COOKIE: u64 = 37;

/// One traffic group's figures from the kernel.
#[derive(Debug, Default)]
pub(crate) struct TcpGroup {
    pub streams: u64,
    /// Payload the senders' programs wrote (give or take a FIN each).
    pub written: u64,
    /// Of that, still queued unacknowledged at the end.
    pub unsent: u64,
    /// Payload the receivers' programs read.
    pub read: u64,
    /// What reached the receivers' sockets but was never read.
    pub unread: u64,
}

impl Run {
    /// Client ports of the data connections on which the client sends
    /// (`client_sends`) or receives, from the client's document.
    fn data_ports(&self, client_sends: bool) -> Vec<u16> {
        let connected = get(&self.client, "start.connected").and_then(Value::as_array);
        let port_of = |sock: &Value| {
            connected?
                .iter()
                .find(|c| c.get("socket") == Some(sock))?
                .get("local_port")?
                .as_u64()?
                .try_into()
                .ok()
        };
        get(&self.client, "end.streams")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| {
                let side = s.get("sender")?;
                (side.get("sender")?.as_bool()? == client_sends).then_some(())?;
                port_of(side.get("socket")?)
            })
            .collect()
    }

    /// The kernel's figures for the group the client sends or not, or `None`
    /// when the test did not run in a namespace of its own.
    pub(crate) fn tcp_kernel_group(&mut self, client_sends: bool) -> Option<TcpGroup> {
        let ports = self.data_ports(client_sends);
        let kernel = self.kernel.as_ref()?;
        let find = |local: u16, peer: u16| -> Option<&Closed> {
            kernel
                .closed
                .iter()
                .find(|c| (c.local_port, c.peer_port) == (local, peer))
        };
        let mut g = TcpGroup::default();
        let mut missing = Vec::new();
        for p in ports {
            let (client, server) = (find(p, kernel.port), find(kernel.port, p));
            let (Some(client), Some(server)) = (client, server) else {
                missing.push(p);
                continue;
            };
            let (tx, rx) = if client_sends {
                (client, server)
            } else {
                (server, client)
            };
            // The cookie goes from client to server, before any data.
            let cookie = if client_sends { COOKIE } else { 0 };
            g.streams += 1;
            g.written += tx.written().saturating_sub(cookie);
            g.unsent += tx.send_q;
            g.read += rx.read().saturating_sub(cookie);
            g.unread += rx.recv_q;
        }
        if !missing.is_empty() || g.streams == 0 {
            let text = kernel.closed_text.clone();
            self.problems.push(format!(
                "no kernel figures for the data connections from ports {missing:?}:\n{text}"
            ));
            return None;
        }
        Some(g)
    }

    /// TCP: per group, each side's count against what its program moved by
    /// the kernel's count, which nothing either program reports goes into.
    /// Neither may claim more than the kernel saw: a sender not more than it
    /// wrote (so not more than crossed plus what was still in its send buffer
    /// at the end), a receiver not more than it read. Each may claim less by
    /// what it moved after its final count ([`Run::tcp_lag`]). Returns false
    /// when the test had no namespace of its own (then nothing is checked).
    pub(crate) fn check_tcp_kernel(&mut self, mode: Mode) -> bool {
        if self.kernel.is_none() {
            return false;
        }
        for (i, (sfx, client_sends)) in Self::groups(mode).into_iter().enumerate() {
            let Some(k) = self.tcp_kernel_group(client_sends) else {
                continue;
            };
            let sent = self.num(client_sends, &format!("end.sum_sent{sfx}.bytes"));
            let received = self.num(!client_sends, &format!("end.sum_received{sfx}.bytes"));
            // A FIN takes one unit of sequence space in either figure.
            let fins = k.streams as f64;
            let (written, read) = (k.written as f64, k.read as f64);
            let secs = self.num(!client_sends, &format!("end.sum_received{sfx}.seconds"));
            let tx_lag = self.tcp_lag(client_sends, false, mode, k.streams, 0.0);
            let rx_lag = self.tcp_lag(client_sends, true, mode, k.streams, read / secs);
            self.check(sent <= written && sent >= written - fins - tx_lag, || {
                format!(
                    "group {i}: the sender counted {sent} bytes, its kernel took {written} \
                     ({} acknowledged, {} still in its send buffer; at most {tx_lag} uncounted)",
                    k.written - k.unsent,
                    k.unsent
                )
            });
            self.check(
                received > 0.0 && received <= read && received >= read - fins - rx_lag,
                || {
                    format!(
                        "group {i}: the receiver counted {received} bytes, its program read \
                         {read} by its kernel ({} more arrived unread; at most {rx_lag} uncounted)",
                        k.unread
                    )
                },
            );
        }
        true
    }

    /// Bytes a TCP side may have moved on a group's `streams` after its final
    /// count (the receiver if `receives`, else the sender), as seen in 192
    /// groups (6 passes of the TCP tests here, the machine at a load of 8 to 11):
    /// - rperf3 and iperf3 3.16+ count in a thread per stream, which may move
    ///   one more block after the final sample (up to 131,072 bytes of a
    ///   block of 131,072 a stream seen either way);
    /// - iperf3 3.12's client receiving with `-R` reads on after TEST_END so
    ///   the server's writes never block, uncounted: what both sockets held
    ///   then and what the server wrote until TEST_END reached it (3.8 to 60
    ///   MB seen, the largest 17 ms at its `rate`): both buffers and
    ///   [`DRAIN_MS`] of its rate;
    /// - iperf3 3.12 otherwise counts every byte it moves (0 seen).
    fn tcp_lag(
        &self,
        client_sends: bool,
        receives: bool,
        mode: Mode,
        streams: u64,
        rate: f64,
    ) -> f64 {
        let iperf3 = if receives {
            self.iperf3_receives(client_sends)
        } else {
            self.iperf3_sends(client_sends)
        };
        let n = streams as f64;
        if !iperf3 || self.iperf3_threads {
            let blk = get(&self.client, "start.test_start.blksize").and_then(Value::as_f64);
            return n * blk.unwrap_or(0.0);
        }
        let iperf3_client = matches!(self.pairing, Some(Pairing::Iperf3ToOurs));
        if receives && iperf3_client && mode == Mode::Reverse {
            n * super::in_flight_per_stream() + rate * DRAIN_MS / 1000.0
        } else {
            0.0
        }
    }

    /// UDP: both documents' datagrams against the counters of the test's own
    /// namespace, where every UDP datagram is the test's: the iperf3 UDP
    /// handshake (one datagram each way a stream) and the data. As seen in 330
    /// runs (5 passes of the UDP tests here, the machine at a load of 8 to 11):
    /// - the senders counted what their kernel sent (`OutDatagrams`);
    /// - the receivers counted what their programs read (`InDatagrams`, counted
    ///   at each read), less those read after their final count (0 to 2 seen,
    ///   all at the end);
    /// - each datagram counted lost is one a kernel dropped (`InErrors`: a full
    ///   receive buffer; `SndbufErrors`), and each drop not counted lost was at
    ///   the very end, where no later datagram showed the gap (14 seen, all in
    ///   one `--gsro` train of 3.21's);
    /// - what the senders sent after the receivers' final count, beyond those
    ///   drops, is what the end of a test costs: the batch each stream's
    ///   sender had due and a few ms of datagrams ([`udp_end_cost`]).
    ///
    /// Returns false when the test had no namespace of its own.
    pub(crate) fn check_udp_kernel(&mut self, mode: Mode) -> bool {
        let Some(snmp) = self.kernel.as_ref().map(|k| k.snmp.clone()) else {
            return false;
        };
        let f = |n: &str| snmp_udp(&snmp, n) as f64;
        let (out, inn, inerr, sndbuf) = (
            f("OutDatagrams"),
            f("InDatagrams"),
            f("InErrors"),
            f("SndbufErrors"),
        );
        let streams = get(&self.client, "start.connected")
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as f64;
        let handshakes = 2.0 * streams;
        let (mut sent, mut got, mut lost, mut tail, mut slack, mut end) =
            (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for (sfx, client_sends) in Self::groups(mode) {
            let s = self.num(client_sends, &format!("end.sum_sent{sfx}.packets"));
            let secs = self.num(client_sends, &format!("end.sum_sent{sfx}.seconds"));
            let r = self.num(!client_sends, &format!("end.sum_received{sfx}.packets"));
            let l = self.num(
                !client_sends,
                &format!("end.sum_received{sfx}.lost_packets"),
            );
            let n = (streams / Self::groups(mode).len() as f64).max(1.0);
            sent += s;
            got += r - l;
            lost += l;
            tail += s - r;
            slack += self.sender_slack(client_sends);
            end += udp_end_cost(s / secs, n);
        }
        let counters = || {
            format!(
                "kernel: {}",
                snmp.lines()
                    .filter(|l| l.starts_with("Udp:"))
                    .collect::<Vec<_>>()
                    .join(" / ")
            )
        };
        let sent_by_kernel = out - handshakes;
        self.check(
            sent <= sent_by_kernel + sndbuf + slack && sent >= sent_by_kernel - slack,
            || {
                format!(
                    "the senders counted {sent} datagrams, their kernel sent {sent_by_kernel} ({})",
                    counters()
                )
            },
        );
        let uncounted = inn - handshakes - got;
        self.check(uncounted >= 0.0 && uncounted <= tail, || {
            format!(
                "the receivers counted {got} datagrams, their programs read {} ({})",
                inn - handshakes,
                counters()
            )
        });
        let dropped = inerr + sndbuf;
        self.check(lost <= dropped + slack && dropped - lost <= tail, || {
            format!(
                "the receivers counted {lost} datagrams lost, the kernel dropped {dropped} \
                 (those not counted must be among the {tail} sent after the receivers' \
                 last; {})",
                counters()
            )
        });
        let after_end = tail - (dropped - lost).max(0.0);
        self.check_timing(after_end <= end, || {
            format!(
                "{after_end} datagrams arrived after the receivers' final count, at most \
                 {end:.1} (one batch a stream and {} ms of datagrams)",
                END_MS
            )
        });
        true
    }

    /// Whether iperf3 is the receiver of the group the client sends or not.
    pub(crate) fn iperf3_receives(&self, client_sends: bool) -> bool {
        match self.pairing {
            Some(Pairing::OursToIperf3) => client_sends,
            Some(Pairing::Iperf3ToOurs) => !client_sends,
            None => false,
        }
    }
}

/// A `Udp:` counter of a `/proc/net/snmp` text (0 when absent).
pub(crate) fn snmp_udp(snmp: &str, name: &str) -> u64 {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .position(|n| n == name)
        .and_then(|i| values.split_whitespace().nth(i)?.parse().ok())
        .unwrap_or(0)
}

/// Milliseconds of its rate an iperf3 3.12 client receiving with `-R` may
/// read after its final count (17 seen).
const DRAIN_MS: f64 = 50.0;

/// Milliseconds of datagrams a sender may add after the receiver's final
/// count, beyond the batch it had due: up to 4 datagrams at 763 a second (5
/// ms) seen, 790 documents on a loaded machine.
const END_MS: f64 = 10.0;

/// Datagrams a UDP test's end may cost at `rate` datagrams a second over
/// `streams` streams: each stream's sender may have one batch due when the
/// end reaches it (rperf3's is what its rate releases in 10 ms, at least one;
/// a paced iperf3's one), plus [`END_MS`] of datagrams.
pub(crate) fn udp_end_cost(rate: f64, streams: f64) -> f64 {
    let batch = (rate / streams * 0.010).floor().max(1.0);
    streams * batch + rate * END_MS / 1000.0
}

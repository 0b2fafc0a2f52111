//! iperf3's human-readable output, line for line.
//!
//! Every function returns "chunks": the text of one iperf3 `printf` call each,
//! usually one line. The sink puts the `--timestamps` and `-T` prefixes in front
//! of every chunk, as iperf3 does, so a multi-line chunk (the server output
//! block) gets one prefix only.

use crate::cfmt;
use crate::input::{MssInfo, Protocol, Side, StartInfo, StreamInfo, TestInfo};
use crate::model::{
    EndGroup, EndReport, EndStream, Flow, IntervalExtra, IntervalReport, IntervalStream,
    IntervalSum, Layout, SumExtra,
};
use crate::units::{format_units, rate, transfer};
use std::net::IpAddr;

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
const BANNER_RULE: &str = "-----------------------------------------------------------\n";
const OMITTED: &str = "(omitted)";

/// An address as iperf3 prints it: IPv4-mapped IPv6 shown as plain IPv4.
pub fn host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// The server's "listening" banner, printed before every test.
pub fn banner(port: u16, test_number: u64) -> Vec<String> {
    vec![
        BANNER_RULE.to_string(),
        format!("Server listening on {port} (test #{test_number})\n"),
        BANNER_RULE.to_string(),
    ]
}

/// What iperf3 prints once the control connection is up (its `on_connect`).
pub fn on_connect(
    side: Side,
    start: &StartInfo,
    test: &TestInfo,
    time: &str,
    verbose: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    if verbose {
        out.push(format!("Time: {time}\n"));
    }
    match side {
        Side::Client => {
            if let Some((h, port)) = &start.connecting_to {
                out.push(format!("Connecting to host {h}, port {port}\n"));
                if test.reverse {
                    out.push(format!("Reverse mode, remote host {h} is sending\n"));
                }
            }
        }
        Side::Server => {
            if let Some(a) = start.accepted_connection {
                out.push(format!(
                    "Accepted connection from {}, port {}\n",
                    host(a.ip()),
                    a.port()
                ));
            }
        }
    }
    if verbose {
        out.push(format!("      Cookie: {}\n", start.cookie));
        if test.protocol == Protocol::Tcp {
            match start.tcp_mss {
                Some(MssInfo::Set(m)) => out.push(format!("      TCP MSS: {m}\n")),
                Some(MssInfo::Default(m)) => out.push(format!("      TCP MSS: {m} (default)\n")),
                None => {}
            }
        }
        if test.target_bitrate != 0 {
            out.push(format!("      Target Bitrate: {}\n", test.target_bitrate));
        }
    }
    out
}

/// `[  4] local A port X connected to B port Y`.
pub fn stream_connected(s: &StreamInfo) -> String {
    format!(
        "[{:3}] local {} port {} connected to {} port {}\n",
        s.socket,
        host(s.local.ip()),
        s.local.port(),
        host(s.remote.ip()),
        s.remote.port()
    )
}

/// The verbose `Starting Test:` line.
pub fn starting_test(test: &TestInfo) -> String {
    let proto = test.protocol.name();
    let head = format!(
        "Starting Test: protocol: {proto}, {} streams, {} byte blocks, omitting {} seconds, ",
        test.num_streams, test.blksize, test.omit
    );
    let what = if test.bytes != 0 {
        format!("{} bytes to send", test.bytes)
    } else if test.blocks != 0 {
        format!("{} blocks to send", test.blocks)
    } else {
        format!("{} second test", test.duration)
    };
    format!("{head}{what}, tos {}\n", test.tos)
}

fn omitted(flag: bool) -> &'static str {
    if flag {
        OMITTED
    } else {
        ""
    }
}

/// `[  4][TX-C]   0.00-1.00   sec  1.72 GBytes  14.8 Gbits/sec`.
fn lead(
    id: &str,
    role: Option<&str>,
    start: f64,
    end: f64,
    bytes: u64,
    bps: f64,
    fmt: char,
) -> String {
    format!(
        "[{id}]{} {start:6.2}-{end:<6.2} sec  {}  {}",
        role.unwrap_or(""),
        transfer(bytes as f64),
        rate(bps / 8.0, fmt)
    )
}

fn socket_id(socket: i32) -> String {
    format!("{socket:3}")
}

/// ` 0.016 ms  0/90 (0%)`: iperf3 prints the counts as unsigned 64-bit numbers.
fn loss_columns(jitter_ms: f64, lost: i64, packets: i64, pct: f64) -> String {
    format!(
        "  {jitter_ms:5.3} ms  {}/{} ({}%)",
        lost as u64,
        packets as u64,
        cfmt::general(pct, 2)
    )
}

fn interval_header(layout: &Layout, report: &IntervalReport) -> &'static str {
    let tcp_retrans = report.groups.iter().any(|g| {
        g.streams
            .iter()
            .any(|r| matches!(r.extra, IntervalExtra::Tcp(_)))
    });
    match (layout.protocol, layout.bidir) {
        (Protocol::Tcp, false) if tcp_retrans => "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n",
        (Protocol::Tcp, true) if tcp_retrans => "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd\n",
        (Protocol::Tcp | Protocol::Sctp, false) => "[ ID] Interval           Transfer     Bitrate\n",
        (Protocol::Tcp | Protocol::Sctp, true) => "[ ID][Role] Interval           Transfer     Bitrate\n",
        (Protocol::Udp, true) => {
            "[ ID][Role] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        }
        (Protocol::Udp, false) if layout.local_sender => {
            "[ ID] Interval           Transfer     Bitrate         Total Datagrams\n"
        }
        (Protocol::Udp, false) => {
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        }
    }
}

fn stream_line(r: &IntervalStream, role: Option<&str>, bidir: bool, fmt: char) -> String {
    let head = lead(
        &socket_id(r.socket),
        role,
        r.start,
        r.end,
        r.bytes,
        r.bits_per_second,
        fmt,
    );
    let om = omitted(r.omitted);
    match &r.extra {
        IntervalExtra::Tcp(t) => format!(
            "{head}  {:3}   {}s       {om}\n",
            t.retransmits,
            format_units(t.snd_cwnd as f64, 'A')
        ),
        IntervalExtra::None => format!("{head}                  {om}\n"),
        IntervalExtra::UdpSent { packets } => {
            format!(
                "{head} {} {packets}  {om}\n",
                if bidir { "          " } else { "" }
            )
        }
        IntervalExtra::UdpReceived(l) => format!(
            "{head}{}  {om}\n",
            loss_columns(l.jitter_ms, l.lost_packets, l.packets, l.lost_percent)
        ),
    }
}

fn sum_line(s: &IntervalSum, role: Option<&str>, bidir: bool, fmt: char) -> String {
    let head = lead("SUM", role, s.start, s.end, s.bytes, s.bits_per_second, fmt);
    let om = omitted(s.omitted);
    match &s.extra {
        SumExtra::Retransmits(n) => format!("{head}  {n:3}             {om}\n"),
        SumExtra::None => format!("{head}                  {om}\n"),
        SumExtra::UdpSent { packets } => {
            format!(
                "{head} {} {}  {om}\n",
                if bidir { "          " } else { "" },
                *packets as u64
            )
        }
        SumExtra::UdpReceived(l) => format!(
            "{head}{}  {om}\n",
            loss_columns(l.jitter_ms, l.lost_packets, l.packets, l.lost_percent)
        ),
    }
}

/// One interval block: the header before the first one, a separator between
/// blocks when `-P` > 1, stream lines, `[SUM]` lines when `-P` > 1, and with
/// `--latency` the `[LAT]` lines, with `--bounceback` the `[ BB]` line.
pub fn interval(layout: &Layout, report: &IntervalReport, first: bool, fmt: char) -> Vec<String> {
    let mut out = Vec::new();
    let multi = layout.num_streams > 1;
    if first {
        out.push(interval_header(layout, report).to_string());
    } else if multi {
        out.push(SEPARATOR.to_string());
    }
    for g in &report.groups {
        for r in &g.streams {
            out.push(stream_line(r, g.role, layout.bidir, fmt));
        }
        if multi {
            if let Some(s) = &g.sum {
                out.push(sum_line(s, g.role, layout.bidir, fmt));
            }
        }
    }
    if let Some(f) = &report.latency {
        // The interval's times are the test's first stream's, as the [SUM] rows'.
        let (start, end, om) = report
            .groups
            .iter()
            .find_map(|g| g.sum.as_ref())
            .map_or((0.0, 0.0, false), |s| (s.start, s.end, s.omitted));
        let role = if layout.bidir { "      " } else { "" };
        let lead = format!("[LAT]{role} {start:6.2}-{end:<6.2} sec");
        out.extend(crate::latency::interval_lines(&lead, f, omitted(om)));
    }
    if let Some(b) = &report.bounceback {
        let (start, end, om) = report
            .groups
            .iter()
            .find_map(|g| g.sum.as_ref())
            .map_or((0.0, 0.0, false), |s| (s.start, s.end, s.omitted));
        let lead = format!("[ BB] {start:6.2}-{end:<6.2} sec");
        out.push(crate::bounceback::interval_line(&lead, b, fmt, omitted(om)));
    }
    out
}

fn summary_header(r: &EndReport) -> &'static str {
    match (r.layout.protocol, r.layout.bidir) {
        (Protocol::Tcp, false) if r.retransmits_header => "[ ID] Interval           Transfer     Bitrate         Retr\n",
        (Protocol::Tcp, true) if r.retransmits_header => "[ ID][Role] Interval           Transfer     Bitrate         Retr\n",
        (Protocol::Tcp | Protocol::Sctp, false) => "[ ID] Interval           Transfer     Bitrate\n",
        (Protocol::Tcp | Protocol::Sctp, true) => "[ ID][Role] Interval           Transfer     Bitrate\n",
        (Protocol::Udp, false) => {
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        }
        (Protocol::Udp, true) => {
            "[ ID][Role] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        }
    }
}

struct EndCtx<'a> {
    report: &'a EndReport,
    fmt: char,
    verbose: bool,
    server: bool,
}

impl EndCtx<'_> {
    fn not_available(&self, out: &mut Vec<String>, id: &str, what: &str) {
        if self.verbose {
            out.push(format!("[{id}] ({what} statistics not available)\n"));
        }
    }

    /// The lead of an end-table row: the whole test, from 0.
    fn total_lead(&self, id: &str, role: Option<&str>, f: &Flow) -> String {
        lead(id, role, 0.0, f.end, f.bytes, f.bits_per_second, self.fmt)
    }

    fn tcp_stream(&self, out: &mut Vec<String>, g: &EndGroup, s: &EndStream) {
        let id = socket_id(s.socket);
        if self.server && !s.local_sender {
            self.not_available(out, &id, "sender");
        } else {
            let head = self.total_lead(&id, g.role, &s.sent);
            out.push(match &s.retrans {
                Some(r) => format!(
                    "{head}  {:3}            sender\n",
                    r.retransmits as u64 as u32
                ),
                None => format!("{head}                  sender\n"),
            });
        }
        if let Some(d) = &s.diskfile {
            // iperf3 says "Sent" whichever way the file went.
            let (moved, pct) = if s.local_sender {
                (d.sent, d.percent_sent)
            } else {
                (d.received, d.percent_received)
            };
            out.push(format!(
                "        Sent {} / {} ({pct}%) of {}\n",
                format_units(moved as f64, 'A'),
                format_units(d.size as f64, 'A'),
                d.filename
            ));
        }
        if self.server && s.local_sender {
            self.not_available(out, &id, "receiver");
        } else {
            let f = &s.received;
            let head = self.total_lead(&id, g.role, f);
            out.push(format!("{head}                  receiver\n"));
        }
    }

    fn udp_stream(&self, out: &mut Vec<String>, g: &EndGroup, s: &EndStream) {
        let id = socket_id(s.socket);
        let u = s.udp.unwrap_or_default();
        if self.server && !s.local_sender {
            self.not_available(out, &id, "sender");
        } else {
            let head = self.total_lead(&id, g.role, &s.sent);
            out.push(format!(
                "{head}{}  sender\n",
                loss_columns(0.0, 0, u.sender_packets, 0.0)
            ));
        }
        if u.out_of_order > 0 {
            out.push(format!(
                "[SUM]{} {:4.1}-{:4.1} sec  {} datagrams received out-of-order\n",
                g.role.unwrap_or(""),
                0.0,
                s.sent.end,
                u.out_of_order as i32
            ));
        }
        if self.server && s.local_sender {
            self.not_available(out, &id, "receiver");
        } else {
            let f = &s.received;
            let head = self.total_lead(&id, g.role, f);
            out.push(match u.receiver_lost {
                Some(lost) => format!(
                    "{head}{}  receiver\n",
                    loss_columns(
                        u.jitter_ms,
                        lost,
                        u.receiver_packets,
                        u.receiver_lost_percent
                    )
                ),
                None => format!(
                    "{head}  {:5.3} ms  Unknown/{}  receiver\n",
                    u.jitter_ms, u.receiver_packets as u64
                ),
            });
        }
    }

    fn sums(&self, out: &mut Vec<String>, g: &EndGroup) {
        let role = g.role;
        match &g.udp {
            None => {
                if self.server && !g.sender {
                    self.not_available(out, "SUM", "sender");
                } else {
                    let f = &g.sum_sent;
                    let head = self.total_lead("SUM", role, f);
                    out.push(match g.sum_retransmits {
                        Some(n) => format!("{head}  {n:3}             sender\n"),
                        None => format!("{head}                  sender\n"),
                    });
                }
                if self.server && g.sender {
                    self.not_available(out, "SUM", "receiver");
                } else {
                    let f = &g.sum_received;
                    let head = self.total_lead("SUM", role, f);
                    out.push(format!("{head}                  receiver\n"));
                }
            }
            Some(u) => {
                if !self.server || g.sender {
                    let f = &g.sum_sent;
                    let head = lead(
                        "SUM",
                        role,
                        0.0,
                        f.end,
                        f.bytes,
                        u.sum.bits_per_second,
                        self.fmt,
                    );
                    out.push(format!(
                        "{head}{}  sender\n",
                        loss_columns(0.0, 0, u.sender_packets, 0.0)
                    ));
                }
                if !(self.server && g.sender) {
                    let f = &g.sum_received;
                    let bps = u.text_received_bits_per_second;
                    let head = lead("SUM", role, 0.0, f.end, f.bytes, bps, self.fmt);
                    out.push(format!(
                        "{head}{}  receiver\n",
                        loss_columns(
                            u.jitter_ms,
                            u.lost_packets,
                            u.receiver_packets,
                            u.lost_percent
                        )
                    ));
                }
            }
        }
    }

    fn cpu_line(&self, local_role: &str, remote_role: &str) -> String {
        let (h, r) = (&self.report.host_cpu, &self.report.remote_cpu);
        format!(
            "CPU Utilization: local/{local_role} {:.1}% ({:.1}%u/{:.1}%s), remote/{remote_role} {:.1}% ({:.1}%u/{:.1}%s)\n",
            h.total, h.user, h.system, r.total, r.user, r.system
        )
    }

    fn verbose_tail(&self, out: &mut Vec<String>, g: &EndGroup) {
        if g.sender {
            out.push(self.cpu_line("sender", "receiver"));
            if self.report.layout.bidir {
                out.push(self.cpu_line("receiver", "sender"));
            }
        }
        if self.report.layout.protocol == Protocol::Tcp {
            let (snd, rcv) = self.report.congestion_for(g.sender);
            if let Some(c) = snd {
                out.push(format!("snd_tcp_congestion {c}\n"));
            }
            if let Some(c) = rcv {
                out.push(format!("rcv_tcp_congestion {c}\n"));
            }
        }
    }
}

/// The summary block after the last interval. A server prints only the lines
/// it has its own figures for (with `-V`, a "not available" note for the rest).
pub fn end(report: &EndReport, fmt: char, verbose: bool) -> Vec<String> {
    let ctx = EndCtx {
        report,
        fmt,
        verbose,
        server: report.layout.side == Side::Server,
    };
    let mut out = vec![SEPARATOR.to_string()];
    if verbose {
        out.push("Test Complete. Summary Results:\n".to_string());
    }
    out.push(summary_header(report).to_string());
    for g in &report.groups {
        for s in &g.streams {
            match report.layout.protocol {
                Protocol::Tcp | Protocol::Sctp => ctx.tcp_stream(&mut out, g, s),
                Protocol::Udp => ctx.udp_stream(&mut out, g, s),
            }
        }
        if report.layout.num_streams > 1 {
            ctx.sums(&mut out, g);
        }
        if verbose {
            ctx.verbose_tail(&mut out, g);
        }
    }
    if let Some(l) = &report.latency {
        out.push(SEPARATOR.to_string());
        out.extend(crate::latency::end_lines(l));
    }
    if let Some(b) = &report.bounceback {
        out.push(SEPARATOR.to_string());
        out.extend(crate::bounceback::end_lines(b, fmt));
    }
    out
}

/// The `-V` lines naming the program version and the system.
pub fn preamble(version: &str, system_info: &str) -> Vec<String> {
    vec![format!("{version}\n"), format!("{system_info}\n")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{stream, test_info};

    #[test]
    fn mapped_addresses_print_as_ipv4() {
        let s = stream(4, 1, true, "[::ffff:10.0.0.1]:5000", "[2001:db8::1]:5201");
        assert_eq!(
            stream_connected(&s),
            "[  4] local 10.0.0.1 port 5000 connected to 2001:db8::1 port 5201\n"
        );
    }

    #[test]
    fn starting_test_names_the_end_condition() {
        let mut t = test_info(Side::Client, Protocol::Udp);
        t.bytes = 209_715_200;
        assert_eq!(
            starting_test(&t),
            "Starting Test: protocol: UDP, 1 streams, 131072 byte blocks, omitting 0 seconds, 209715200 bytes to send, tos 0\n"
        );
        t.bytes = 0;
        t.blocks = 10;
        assert!(starting_test(&t).ends_with(", 10 blocks to send, tos 0\n"));
    }

    #[test]
    fn loss_counts_print_unsigned_like_iperf3() {
        assert_eq!(
            loss_columns(0.0123, -1, 90, -1.1),
            "  0.012 ms  18446744073709551615/90 (-1.1%)"
        );
        assert_eq!(loss_columns(1.5, 1, 1, 100.0), "  1.500 ms  1/1 (1e+02%)");
    }
}

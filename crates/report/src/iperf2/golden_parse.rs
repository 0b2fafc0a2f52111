//! Reads an iperf 2.2.1 capture back into the events that would print it: the
//! figures of every settings block, connection line, row and CSV record come
//! from the capture, so the golden tests compare layouts, not measurements.

use std::net::SocketAddr;
use std::time::UNIX_EPOCH;

use super::model::{
    Event2, Isoch2, Latency2, Mss2, Multicast2, Proto2, Row2, RowKind2, Settings2, Side2, Tag2,
    TcpLatency2, TcpRecv2, UdpRecv2, UdpSend2,
};

use super::golden_fields::*;
pub(super) use super::golden_fields::{addr, civil_secs, int, num, sample_connection};

/// How a printed line must compare with the capture's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cmp {
    /// Character for character.
    Exact,
    /// With every number masked: a figure derived by rperf3 (NetPwr, PPS, a
    /// rate whose bytes the capture rounds) may differ, the layout may not.
    Masked,
}

/// Which kind of row a tag's lines are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    TcpSend,
    TcpRecv,
    UdpSend,
    UdpRecv,
}

/// What replaying a capture produced: events, and per expected line how to
/// compare it (header lines the printer makes itself are compared exactly).
#[derive(Debug, Default)]
pub(super) struct Replay {
    pub(super) events: Vec<Event2>,
    pub(super) cmp: Vec<Cmp>,
}

/// The lines of a 2.2.1 capture.
pub(super) fn fixture(name: &str) -> Vec<String> {
    fixture_in("2.2.1", name)
}

/// The lines of a capture in `dir` under the iperf 2 fixtures.
pub(super) fn fixture_in(dir: &str, name: &str) -> Vec<String> {
    let path = format!(
        "{}/../../tests/fixtures/iperf2/{dir}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().map(str::to_string).collect()
}

/// The replay of one capture of `side`, with `kind` naming each tag's rows.
pub(super) struct Replayer<'a> {
    pub(super) side: Side2,
    pub(super) kind: &'a dyn Fn(Tag2) -> Kind,
    /// The real IPG a UDP client's block shows (2.2.1 prints 0.00).
    pub(super) ipg_us: Option<f64>,
    /// `--trip-times` in force (server rows' layout).
    pub(super) trip_times: bool,
}

impl Replayer<'_> {
    /// Events for `lines`, a text capture.
    pub(super) fn text(&self, lines: &[String]) -> Replay {
        let mut rp = Replay::default();
        let mut i = 0;
        let mut server_report = false;
        let mut addrs: Vec<(u32, (SocketAddr, SocketAddr))> = Vec::new();
        // The bins of the last settings block's histograms.
        let mut max_bins = super::model::HistBins2::default().bins;
        while i < lines.len() {
            let l = &lines[i];
            if l.starts_with("----") {
                let end = i
                    + 1
                    + lines[i + 1..]
                        .iter()
                        .position(|x| x.starts_with("----"))
                        .unwrap_or(0);
                let s = self.settings(&lines[i + 1..end]);
                max_bins = s.hist_bins.bins;
                rp.events.push(Event2::Settings(s));
                // The IPG line differs on purpose: 2.2.1 prints 0.00 us.
                rp.cmp.extend(lines[i..=end].iter().map(|x| {
                    if x.starts_with("Sending ") {
                        Cmp::Masked
                    } else {
                        Cmp::Exact
                    }
                }));
                i = end + 1;
                continue;
            }
            i += 1;
            if l.starts_with("[ ID]") || l.starts_with("[SUM-cnt]") {
                rp.cmp.push(Cmp::Exact);
            } else if l.contains(" connected with ") {
                let c = connection(l);
                addrs.push((tag_num(c.tag), (c.local, c.peer)));
                rp.events.push(Event2::Connected(c));
                rp.cmp.push(Cmp::Exact);
            } else if let Some(rest) = l.split_once("] Isoch schedule errors ").map(|x| x.1) {
                let tag = tag_of(&l[..=l.find(']').unwrap_or(0)]);
                let v: Vec<f64> = rest
                    .trim_start_matches("(mean/min/max/stdev) = ")
                    .trim_end_matches(" ms")
                    .split('/')
                    .map(num)
                    .collect();
                // A message (stderr) in the layout the helper gives.
                rp.events.push(Event2::Message(super::isoch_schedule_line(
                    tag, v[0], v[1], v[2], v[3],
                )));
                rp.cmp.push(Cmp::Exact);
            } else if l.contains("-PDF: ") {
                let tag = tag_of(&l[..=l.find(']').unwrap_or(0)]);
                rp.events.push(Event2::Histogram(super::golden_write::pdf(
                    l, tag, max_bins,
                )));
                rp.cmp.push(Cmp::Exact);
            } else if l.ends_with("Server Report:") {
                server_report = true;
                rp.cmp.push(Cmp::Exact);
            } else if let Some(rest) = l.split_once("] Sent ").map(|x| x.1) {
                let n = int(rest.trim_end_matches(" datagrams"));
                let tag = tag_of(&l[..=l.find(']').unwrap_or(0)]);
                rp.events.push(Event2::Sent { tag, datagrams: n });
                rp.cmp.push(Cmp::Exact);
            } else if l.contains(" sec ") {
                let (mut r, cmp, last) = self.row(l, server_report);
                r.addrs = addrs
                    .iter()
                    .find(|(n, _)| *n == tag_num(r.tag))
                    .map(|x| x.1);
                rp.events.push(if server_report {
                    Event2::ServerReport(r)
                } else if last {
                    Event2::Final(r)
                } else {
                    Event2::Interval(r)
                });
                server_report = false;
                rp.cmp.push(cmp);
            } else {
                panic!("unknown line {l:?}");
            }
        }
        rp
    }

    fn settings(&self, block: &[String]) -> Settings2 {
        let mut s = Settings2 {
            side: Side2::Server,
            proto: Proto2::Tcp,
            host: None,
            port: 0,
            pid: 0,
            flows: 1,
            len: 0,
            ipg_us: None,
            window: 0,
            window_requested: false,
            requested_window: None,
            congestion: None,
            congestion_asked: None,
            tos: 0,
            tos_by_dscp: false,
            connect_only: false,
            nodelay: false,
            mss: None,
            multicast: None,
            ttl: None,
            mode_note: None,
            trip_times: false,
            bounceback: None,
            histograms: false,
            hist_bins: Default::default(),
            jitter_bin_us: None,
            isoch: None,
        };
        for l in block {
            let w: Vec<&str> = l.split_whitespace().collect();
            if let Some(rest) = l.strip_prefix("Server listening on ") {
                s.side = Side2::Server;
                s.proto = if rest.starts_with("UDP") {
                    Proto2::Udp
                } else {
                    Proto2::Tcp
                };
                s.port = int(w[5]) as u16;
                if let Some(p) = l.split(" with pid ").nth(1) {
                    s.pid = int(p) as u32;
                }
            } else if let Some(rest) = l.strip_prefix("Client connecting to ") {
                s.side = Side2::Client;
                let (host, rest) = rest.split_once(", ").unwrap_or_default();
                s.host = Some(if host == "(**hidden**)" {
                    "127.0.0.1".into()
                } else {
                    host.into()
                });
                s.proto = if rest.starts_with("UDP") {
                    Proto2::Udp
                } else {
                    Proto2::Tcp
                };
                let rw: Vec<&str> = rest.split_whitespace().collect();
                s.port = int(rw[2]) as u16;
                if rw.len() > 5 {
                    s.pid = int(rw[5]) as u32;
                    s.flows = int(rw[6]
                        .trim_start_matches('(')
                        .split('/')
                        .next()
                        .unwrap_or("1")) as u32;
                }
            } else if let Some(rest) = l.strip_prefix("Read buffer size: ") {
                s.len = size_bytes(rest.split(" (").next().unwrap_or(rest)) as u32;
            } else if let Some(rest) = l.strip_prefix("Write buffer size: ") {
                let timer = rest.strip_suffix(" (write timer enabled)");
                s.histograms = timer.is_some();
                s.len = size_bytes(timer.unwrap_or(rest)) as u32;
            } else if let Some(rest) = l.strip_prefix("Enabled write histograms bin-width=") {
                s.hist_bins = super::golden_write::write_bins(rest);
            } else if let Some(rest) = l.strip_prefix("Enabled receive histograms bin-width=") {
                s.histograms = true;
                s.hist_bins =
                    super::golden_write::write_bins(rest.split(" (").next().unwrap_or(rest));
            } else if l.starts_with("TCP congestion control ") {
                s.congestion = w.last().map(|x| x.to_string());
                if l.contains(" set to ") {
                    s.congestion_asked = Some(w[5].to_string());
                }
            } else if let Some(rest) = l.strip_prefix("TOS ") {
                let hex = rest.split("0x").nth(1).unwrap_or("0");
                let hex = hex.split(' ').next().unwrap_or("0");
                s.tos = u8::from_str_radix(hex, 16).unwrap_or(0);
                s.tos_by_dscp = s.tos != 0 && l.contains("defaults to");
                s.nodelay = l.contains("Nagle off");
            } else if l.starts_with("MSS size ") {
                s.mss = Some(Mss2 {
                    bytes: int(w[2]) as u32,
                    requested: false,
                });
            } else if l.starts_with("MSS req size ") {
                s.mss = Some(Mss2 {
                    bytes: int(w[3]) as u32,
                    requested: true,
                });
            } else if let Some(g) = l.strip_prefix("Joining multicast group  ") {
                s.multicast = Some(Multicast2 {
                    group: g.into(),
                    source: None,
                });
            } else if let Some(sg) = l.strip_prefix("Joining multicast (S,G)=") {
                let (src, g) = sg.split_once(',').unwrap_or_default();
                s.multicast = Some(Multicast2 {
                    group: g.into(),
                    source: Some(src.into()),
                });
            } else if let Some(rest) = l.strip_prefix("Isochronous: ") {
                s.isoch = Some(isoch_settings(rest));
            } else if l.starts_with("Warn: Send side bloat") {
                s.trip_times = true;
            } else if l.starts_with("Server set to single client") {
            } else if l.starts_with("Sending ") {
                s.len = int(w[1]) as u32;
                s.ipg_us = self.ipg_us;
            } else if let Some(rest) = l
                .strip_prefix("TCP window size: ")
                .or_else(|| l.strip_prefix("UDP buffer size: "))
            {
                s.window = size_bytes(rest.split(" (").next().unwrap_or(rest));
                s.window_requested = !rest.contains("(default)");
                if let Some(asked) = rest.split("(WARNING: requested ").nth(1) {
                    s.requested_window = Some(size_bytes(asked.trim_end_matches(')')));
                }
            } else {
                panic!("unknown settings line {l:?}");
            }
        }
        s
    }

    /// A data row and how to compare it.
    fn row(&self, l: &str, server_report: bool) -> (Row2, Cmp, bool) {
        let close = l.find(']').unwrap_or(0);
        let tag = tag_of(&l[..=close]);
        let w: Vec<&str> = l[close + 1..].split_whitespace().collect();
        let (a, b) = w[0].split_once('-').unwrap_or_default();
        let (start, mut end) = (num(a), num(b));
        // Interval rows are one second long; a final row spans the test.
        let last = start == 0.0 && (end - start > 1.001 || end < 0.999);
        // A final row's end is rounded: find an end that explains the figures.
        let mut picked = pick_bytes(w[2], w[3], w[4], w[5], end - start);
        for k in 0..100 {
            if picked.1 {
                break;
            }
            let e = num(b) - half_ulp(b) + f64::from(k) * half_ulp(b) / 50.0;
            let p = pick_bytes(w[2], w[3], w[4], w[5], e - start);
            if p.1 {
                (end, picked) = (e, p);
            }
        }
        // Every row must be explained by one byte count over one duration:
        // this checks the unit rules against each row of the captures.
        assert!(picked.1, "no byte count prints as {l:?}");
        let rest = &w[6..];
        let kind = if server_report {
            Kind::UdpRecv
        } else {
            (self.kind)(tag)
        };
        let (kind, derived) = match kind {
            Kind::TcpSend => {
                let (t, derived) = super::golden_write::tcp_send(rest);
                (RowKind2::TcpSend(t), derived)
            }
            Kind::TcpRecv => {
                let mut t = TcpRecv2::default();
                let mut rest = rest;
                if rest.len() > 1 {
                    // 0.064/0.026/1.995/0.082 ms (21719/131075) 178 KByte 44369592
                    let ns: Vec<u64> = rest[0]
                        .split('/')
                        .map(|x| (num(x) * 1e6).round() as u64)
                        .collect();
                    let cnt = rest[2].trim_matches(|c| c == '(' || c == ')');
                    t.latency = Some(TcpLatency2 {
                        count: int(cnt.split('/').next().unwrap_or("0")),
                        mean_ns: ns[0],
                        min_ns: ns[1],
                        max_ns: ns[2],
                        stdev_ns: ns[3],
                    });
                    rest = &rest[6..];
                }
                if let Some(d) = rest.first() {
                    let (reads, bins) = d.split_once('=').unwrap_or_default();
                    t.reads = int(reads);
                    for (i, b) in bins.split(':').enumerate() {
                        t.bins[i] = int(b);
                    }
                }
                (RowKind2::TcpRecv(t), t.latency.is_some())
            }
            Kind::UdpSend => {
                let mut u = UdpSend2::default();
                if let Some(x) = rest.first() {
                    let p: Vec<u64> = x.split('/').map(int).collect();
                    u.writes = p[0];
                    u.write_errors = p[1];
                    u.timeouts = p.get(2).copied().unwrap_or(0);
                }
                // `isoch:tx/miss/slip` after "pps".
                if let Some(f) = rest.get(3) {
                    let p: Vec<u64> = f.split('/').map(int).collect();
                    u.isoch = Some(Isoch2 {
                        frames: p[0],
                        missed: p[1],
                        slips: p[2],
                    });
                }
                (RowKind2::UdpSend(u), !rest.is_empty())
            }
            Kind::UdpRecv => (RowKind2::UdpRecv(self.udp_recv(rest)), true),
        };
        let row = Row2 {
            tag,
            addrs: None,
            start,
            end,
            bytes: picked.0,
            kind,
            at: UNIX_EPOCH,
        };
        let cmp = if picked.1 && !derived && !server_report {
            Cmp::Exact
        } else {
            Cmp::Masked
        };
        (row, cmp, last)
    }

    fn udp_recv(&self, rest: &[&str]) -> UdpRecv2 {
        let mut u = UdpRecv2 {
            trip_times: self.trip_times,
            ..UdpRecv2::default()
        };
        let mut i = 0;
        if rest.get(1) == Some(&"ms") {
            u.jitter = num(rest[0]) * 1e-3;
            i = 2;
        }
        let Some(lt) = rest.get(i) else { return u };
        let (lost, total) = lt.split_once('/').unwrap_or_default();
        (u.lost, u.total) = (int(lost), int(total));
        i += 2; // and the percentage
        if let Some(lat) = rest.get(i).filter(|x| x.contains('/')) {
            let v: Vec<f64> = lat.split('/').map(|x| num(x) * 1e-3).collect();
            u.latency = Some(Latency2 {
                mean: v[0],
                min: v[1],
                max: v[2],
                stdev: v.get(3).copied().unwrap_or(0.0),
            });
            i += 1;
            if rest.get(i) == Some(&"ms") {
                i += 1;
            }
        }
        i += 2; // PPS, "pps"
        if rest.get(i + 1) == Some(&"pkts") {
            i += 2; // Rx/inP
        }
        if let Some(rtt) = rest.get(i) {
            let p: Vec<u64> = rtt.split('/').map(int).collect();
            (u.reads, u.timeouts, u.truncated) = (p[0], p[1], p[2]);
        }
        u
    }
}

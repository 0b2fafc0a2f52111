//! Reads an iperf 2.2.1 capture back into the events that would print it: the
//! figures of every settings block, connection line, row and CSV record come
//! from the capture, so the golden tests compare layouts, not measurements.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::model::{
    Connection2, Event2, Isoch2, IsochSettings2, Latency2, Multicast2, Proto2, Row2, RowKind2,
    Settings2, Side2, Tag2, TcpConnInfo2, TcpLatency2, TcpRecv2, UdpRecv2, UdpSend2,
};
use super::units::{rate, transfer};

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

pub(super) fn num(s: &str) -> f64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

pub(super) fn int(s: &str) -> u64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not an integer: {s:?}"))
}

/// Half a unit of the last digit printed: the rounding a printed value hides.
fn half_ulp(s: &str) -> f64 {
    match s.split_once('.') {
        Some((_, frac)) => 0.5 * 10f64.powi(-(frac.len() as i32)),
        None => 0.5,
    }
}

fn unit_scale(unit: &str) -> f64 {
    let bits = unit.contains("bit");
    let base: f64 = if bits { 1000.0 } else { 1024.0 };
    let p = match unit.chars().next() {
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        _ => 0,
    };
    let s = base.powi(p);
    if bits {
        s / 8.0
    } else {
        s
    }
}

/// A settings-line size such as ` 128 KByte` or `4.00 MByte`, in bytes.
fn size_bytes(s: &str) -> u64 {
    let mut it = s.split_whitespace();
    let v = num(it.next().unwrap_or("0"));
    (v * unit_scale(it.next().unwrap_or("Byte"))).round() as u64
}

/// Bytes that print as `xv xu` and, over `dur`, as `rv ru` (the second flag
/// says whether one was found: the capture's duration is rounded).
fn pick_bytes(xv: &str, xu: &str, rv: &str, ru: &str, dur: f64) -> (u64, bool) {
    let (x, xs) = (num(xv), unit_scale(xu));
    let (r, rs) = (num(rv), unit_scale(ru));
    // Wide bounds (a printed 10.0 may come from 9.995), then a scan for a
    // count whose rendering matches both columns.
    let lo = ((x - 2.0 * half_ulp(xv)) * xs).max((r - 2.0 * half_ulp(rv)) * rs * dur);
    let hi = ((x + half_ulp(xv)) * xs).min((r + half_ulp(rv)) * rs * dur);
    let (want_x, want_r) = (
        format!("{xv} {xu}"),
        format!("{rv} {}", ru.trim_end_matches("/sec")),
    );
    for k in 0..=400 {
        let b = (lo + (hi - lo) * f64::from(k) / 400.0).round().max(0.0) as u64;
        if transfer(b, None).trim() == want_x && rate(b, dur, None).trim() == want_r {
            return (b, true);
        }
    }
    ((x * xs).round() as u64, false)
}

fn tag_of(s: &str) -> Tag2 {
    let inner = s.trim_start_matches('[').trim_end_matches(']').trim();
    if let Some(n) = inner.strip_prefix("SUM-") {
        Tag2::Sum(int(n) as u32)
    } else if let Some(n) = inner.strip_prefix("FD") {
        Tag2::FullDuplex(int(n) as u32)
    } else if inner == "SUM" {
        Tag2::Sum(2)
    } else if let Some(n) = inner.strip_prefix('*') {
        Tag2::ReverseId(int(n) as u32)
    } else {
        Tag2::Id(int(inner) as u32)
    }
}

/// `2026-11-25 16:08:23.556`, UTC, as a time.
fn date(d: &str, t: &str) -> SystemTime {
    let ymd: Vec<i64> = d.split('-').map(|x| int(x) as i64).collect();
    let (hms, frac) = t.split_once('.').unwrap_or((t, "0"));
    let hms: Vec<u64> = hms.split(':').map(int).collect();
    let micros = int(&format!("{frac:0<6}")[..6]);
    civil_secs(
        ymd[0],
        ymd[1],
        ymd[2],
        hms[0] * 3600 + hms[1] * 60 + hms[2],
        micros,
    )
}

pub(super) fn civil_secs(y: i64, m: i64, d: i64, secs_of_day: u64, micros: u64) -> SystemTime {
    // Days from 1970-01-01 (inverse of the civil-date algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    UNIX_EPOCH
        + Duration::from_secs(days as u64 * 86_400 + secs_of_day)
        + Duration::from_micros(micros)
}

/// "60.00 frames/sec mean=20.0 Mbit/s, stddev=2.00 Mbit/s, Period/IPG=16.67/0.000 ms".
fn isoch_settings(rest: &str) -> IsochSettings2 {
    let w: Vec<&str> = rest.split_whitespace().collect();
    let rate =
        |n: &str, unit: &str| num(n) * unit_scale(unit.trim_end_matches([',', 's', '/'])) * 8.0;
    let ipg = rest.split("Period/IPG=").nth(1).unwrap_or("0/0 ms");
    IsochSettings2 {
        fps: num(w[0]),
        mean_bps: rate(w[2].trim_start_matches("mean="), w[3]),
        stdev_bps: rate(w[4].trim_start_matches("stddev="), w[5]),
        ipg_ms: num(ipg.split('/').nth(1).unwrap_or("0").trim_end_matches(" ms")),
    }
}

pub(super) fn addr(s: &str) -> IpAddr {
    // --hide-ips keeps the last octet; the tests ran on loopback.
    let s = s.replace("*.*.*", "127.0.0");
    s.parse().unwrap_or_else(|_| panic!("not an address: {s}"))
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
        while i < lines.len() {
            let l = &lines[i];
            if l.starts_with("----") {
                let end = i
                    + 1
                    + lines[i + 1..]
                        .iter()
                        .position(|x| x.starts_with("----"))
                        .unwrap_or(0);
                rp.events
                    .push(Event2::Settings(self.settings(&lines[i + 1..end])));
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
                rp.events
                    .push(Event2::Histogram(super::golden_write::pdf(l, tag)));
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
            } else if l.starts_with("TCP congestion control ") {
                s.congestion = w.last().map(|x| x.to_string());
                if l.contains(" set to ") {
                    s.congestion_asked = Some(w[5].to_string());
                }
            } else if let Some(rest) = l.strip_prefix("TOS ") {
                let hex = rest.split("0x").nth(1).unwrap_or("0");
                let hex = hex.split(' ').next().unwrap_or("0");
                s.tos = u8::from_str_radix(hex, 16).unwrap_or(0);
                s.nodelay = l.contains("Nagle off");
            } else if l.starts_with("MSS size ") {
                s.mss = Some(int(w[2]) as u32);
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

fn tag_num(t: Tag2) -> u32 {
    match t {
        Tag2::Id(n) | Tag2::ReverseId(n) | Tag2::Sum(n) | Tag2::FullDuplex(n) => n,
    }
}

/// A connection line's figures.
fn connection(l: &str) -> Connection2 {
    let close = l.find(']').unwrap_or(0);
    let tag = tag_of(&l[..=close]);
    let w: Vec<&str> = l[close + 1..].split_whitespace().collect();
    let (local, device) = match w[1].split_once('%') {
        Some((a, d)) => (a, Some(d.to_string())),
        None => (w[1], None),
    };
    let local = SocketAddr::new(addr(local), int(w[3]) as u16);
    let peer = SocketAddr::new(addr(w[6]), int(w[8]) as u16);
    let tail = w[9..].join(" ");
    let (groups, at) = match tail
        .split_once(" on ")
        .or_else(|| tail.strip_prefix("on ").map(|d| ("", d)))
    {
        Some((g, d)) => {
            let dw: Vec<&str> = d.split_whitespace().collect();
            (g.to_string(), date(dw[0], dw[1]))
        }
        None => (tail.clone(), UNIX_EPOCH),
    };
    let mut c = Connection2 {
        tag,
        local,
        device,
        peer,
        notes: Vec::new(),
        peer_version: None,
        tcp: None,
        connect_time: None,
        at,
    };
    for g in groups
        .split(") (")
        .map(|g| g.trim_matches(|x| x == '(' || x == ')'))
    {
        if g.is_empty() {
            continue;
        }
        if let Some(v) = g.strip_prefix("peer ") {
            c.peer_version = Some(v.into());
        } else if let Some(v) = g.strip_prefix("icwnd/mss/irtt=") {
            let p: Vec<u32> = v.split('/').map(|x| int(x) as u32).collect();
            c.tcp = Some(TcpConnInfo2 {
                icwnd: p[0],
                mss: p[1],
                irtt_us: p[2],
            });
        } else if let Some(v) = g.strip_prefix("ct=") {
            c.connect_time = Some(Duration::from_secs_f64(
                num(v.trim_end_matches(" ms")) * 1e-3,
            ));
        } else {
            c.notes.push(g.to_string());
        }
    }
    c
}

/// A plain connection line's event for transfer `n` (tests that need one the
/// capture does not have).
pub(super) fn sample_connection(n: u32) -> Connection2 {
    connection(&format!(
        "[{n:>3}] local 127.0.0.1 port 4000{n} connected with 127.0.0.1 port 5001"
    ))
}

//! CSV captures read back into events: the stamp, addresses, transfer id,
//! bytes and rate of every record come from the capture (see `golden_parse`).

use std::net::SocketAddr;
use std::time::SystemTime;

use super::golden_parse::{addr, civil_secs, int, num, Kind, Replayer};
use super::model::{Event2, Row2, RowKind2, Side2, Tag2, TcpRecv2, TcpSend2, UdpRecv2, UdpSend2};

impl Replayer<'_> {
    /// Events for a CSV capture (every line is compared field by field).
    pub(super) fn csv(&self, lines: &[String]) -> Vec<Event2> {
        let mut ev = Vec::new();
        for l in lines {
            if l.starts_with("time,") {
                continue;
            }
            let f: Vec<&str> = l.split(',').collect();
            let enhanced = f[0].contains(':');
            let (src, dst) = (
                SocketAddr::new(addr(f[1]), int(f[2]) as u16),
                SocketAddr::new(addr(f[3]), int(f[4]) as u16),
            );
            let id: i64 = f[5].parse().unwrap_or(0);
            let tag = if id < 0 {
                Tag2::Sum(2)
            } else {
                Tag2::Id(id as u32)
            };
            let (start, i) = if enhanced {
                (num(f[6]), 8)
            } else {
                (num(f[6].split('-').next().unwrap_or("0")), 7)
            };
            let bytes = int(f[i]);
            let bps = int(f[i + 1]);
            // An end that makes bytes*8/duration truncate to the capture's rate.
            let end = start + bytes as f64 * 8.0 / (bps as f64 + 0.5);
            let x = &f[i + 2..];
            let kind = match (self.kind)(tag) {
                Kind::TcpSend => RowKind2::TcpSend(TcpSend2 {
                    writes: x.first().map_or(0, |v| int(v)),
                    write_errors: x.get(1).map_or(0, |v| int(v)),
                    retries: x.get(2).map_or(0, |v| int(v)),
                    cwnd_bytes: x.get(3).map_or(0, |v| int(v) * 1024),
                    cwnd_pkts: x.get(4).map_or(0, |v| int(v) as u32),
                    rtt_us: x.get(5).map_or(0, |v| int(v) as u32),
                    rttvar_us: x.get(6).map_or(0, |v| int(v) as u32),
                    ..TcpSend2::default()
                }),
                Kind::TcpRecv => {
                    let mut t = TcpRecv2::default();
                    if let Some(r) = x.first() {
                        t.reads = int(r);
                        for k in 0..8 {
                            t.bins[k] = int(x[1 + k]);
                        }
                    }
                    RowKind2::TcpRecv(t)
                }
                Kind::UdpSend => RowKind2::UdpSend(UdpSend2 {
                    writes: x
                        .get(5)
                        .map_or_else(|| int(x[2].trim_start_matches('-')), |v| int(v)),
                    write_errors: x.get(6).map_or(0, |v| int(v)),
                    timeouts: x.get(7).map_or(0, |v| int(v)),
                    isoch: None,
                    pps_datagrams: None,
                }),
                Kind::UdpRecv => RowKind2::UdpRecv(UdpRecv2 {
                    jitter: num(x[0]) * 1e-3,
                    lost: int(x[1]),
                    total: int(x[2]),
                    out_of_order: int(x[4]),
                    reads: x.get(5).map_or(0, |v| int(v)),
                    timeouts: x.get(6).map_or(0, |v| int(v)),
                    truncated: x.get(7).map_or(0, |v| int(v)),
                    ..UdpRecv2::default()
                }),
            };
            let addrs = match self.side {
                Side2::Client => (src, dst),
                Side2::Server => (dst, src),
            };
            let row = Row2 {
                tag,
                addrs: Some(addrs),
                start,
                end,
                bytes,
                kind,
                at: csv_time(f[0]),
            };
            ev.push(if start == 0.0 && end > 1.05 {
                Event2::Final(row)
            } else {
                Event2::Interval(row)
            });
        }
        ev
    }
}

/// `20261125160916` or `+0000:20261125160921.224986`.
fn csv_time(s: &str) -> SystemTime {
    let s = s.split_once(':').map_or(s, |(_, t)| t);
    let (whole, frac) = s.split_once('.').unwrap_or((s, "0"));
    let f = |a: usize, b: usize| int(&whole[a..b]);
    civil_secs(
        f(0, 4) as i64,
        f(4, 6) as i64,
        f(6, 8) as i64,
        f(8, 10) * 3600 + f(10, 12) * 60 + f(12, 14),
        int(&format!("{frac:0<6}")[..6]),
    )
}

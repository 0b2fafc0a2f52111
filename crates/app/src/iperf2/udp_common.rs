//! What iperf 2's UDP client and server share: the payload every datagram
//! repeats, the server report in both directions (the server builds it from
//! its statistics, the client turns it into a row), receiver rows, and the
//! interval clock.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime};

use rperf3_latency::Transit;
use rperf3_proto2::Udp2Stats;
use rperf3_proto2::{Layout, ReportReplies};
use rperf3_proto2::{ServerReport, StatPair, TransitStats, UdpTestHeader, DATAGRAM_HEADER_LEN};
use rperf3_report::iperf2::model::{Latency2, Row2, RowKind2, Tag2, UdpDuplex2, UdpRecv2};

/// The bytes of every datagram after its 16-byte header: the test header
/// (the client's request), then iperf 2's "0123456789" pattern.
pub(crate) fn payload(len: usize, header: &UdpTestHeader) -> Vec<u8> {
    let mut p = pattern(len);
    // Up to the header's extent the bytes are the header's, zeros included.
    header.encode(Layout::V2_2_1, &mut p);
    p
}

/// The bytes of a datagram after its header when no test header rides in it
/// (a server's datagrams): the pattern alone.
pub(crate) fn pattern(len: usize) -> Vec<u8> {
    (0..len.max(DATAGRAM_HEADER_LEN))
        .map(|i| {
            if i < DATAGRAM_HEADER_LEN {
                0
            } else {
                b'0' + (i % 10) as u8
            }
        })
        .collect()
}

/// A latency summary of transit times.
pub(crate) fn latency(t: &Transit) -> Latency2 {
    Latency2 {
        mean: t.mean,
        min: t.min,
        max: t.max,
        stdev: t.stdev(),
    }
}

/// The report a server sends for a flow's statistics: `duration` from the
/// first datagram to the last, `enhanced` when it runs `-e` or the test has
/// trip-times. Jitter is the mean estimate, as 2.2.1 sends it.
pub(crate) fn server_report(s: &Udp2Stats, duration: Duration, enhanced: bool) -> ServerReport {
    let t = &s.transit;
    let secs = duration.as_secs_f64();
    let received = s.datagrams;
    ServerReport {
        enhanced,
        total_bytes: s.bytes,
        duration,
        lost: s.lost(),
        out_of_order: s.out_of_order,
        datagrams: s.total(),
        jitter: StatPair::from_f64(s.jitter_mean()),
        transit: TransitStats {
            min: StatPair::from_f64(t.min),
            max: StatPair::from_f64(t.max),
            sum: StatPair::from_f64(t.sum),
            mean: StatPair::from_f64(t.mean),
            m2: StatPair::from_f64(t.m2 * 1e12),
            vd: StatPair::default(),
            count: t.count.min(u64::from(u32::MAX)) as u32,
        },
        pps: if secs > 0.0 {
            (received as f64 / secs) as u32
        } else {
            0
        },
        pps_divisor: 1,
    }
}

/// The row a client prints for a server report.
pub(crate) fn report_row(tag: Tag2, addrs: (SocketAddr, SocketAddr), r: &ServerReport) -> Row2 {
    let t = &r.transit;
    let latency = r.enhanced.then(|| {
        let n = f64::from(t.count);
        let m2 = t.m2.to_f64() / 1e12;
        Latency2 {
            mean: t.mean.to_f64(),
            min: t.min.to_f64(),
            max: t.max.to_f64(),
            stdev: if n > 1.0 {
                (m2 / (n - 1.0)).sqrt()
            } else {
                0.0
            },
        }
    });
    Row2 {
        tag,
        addrs: Some(addrs),
        start: 0.0,
        end: r.duration.as_secs_f64(),
        bytes: r.total_bytes,
        kind: RowKind2::UdpRecv(UdpRecv2 {
            jitter: r.jitter.to_f64(),
            lost: r.lost,
            total: r.datagrams,
            out_of_order: r.out_of_order,
            reads: 0,
            timeouts: 0,
            truncated: 0,
            latency,
            trip_times: false,
        }),
        at: SystemTime::now(),
    }
}

/// Marks a receiver row as one of a `--trip-times` test.
pub(crate) fn trip(mut row: Row2, on: bool) -> Row2 {
    if let RowKind2::UdpRecv(u) = &mut row.kind {
        u.trip_times = on;
    }
    row
}

/// A receiver's figures between two samples of its statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct RecvMark {
    pub(crate) bytes: u64,
    pub(crate) datagrams: u64,
    pub(crate) total: u64,
    pub(crate) lost: u64,
    pub(crate) out_of_order: u64,
    pub(crate) truncated: u64,
}

impl RecvMark {
    pub(crate) fn of(s: &Udp2Stats) -> Self {
        Self {
            bytes: s.bytes,
            datagrams: s.datagrams,
            total: s.total(),
            lost: s.lost(),
            out_of_order: s.out_of_order,
            truncated: s.truncated,
        }
    }
}

/// A receiver row from `a` to `b` (the figures of the span between them).
pub(crate) fn recv_row(
    tag: Tag2,
    span: (f64, f64),
    a: RecvMark,
    b: RecvMark,
    jitter: f64,
    latency: Option<Latency2>,
) -> Row2 {
    Row2 {
        tag,
        addrs: None,
        start: span.0,
        end: span.1,
        bytes: b.bytes.saturating_sub(a.bytes),
        kind: RowKind2::UdpRecv(UdpRecv2 {
            jitter,
            lost: b.lost.saturating_sub(a.lost),
            total: b.total.saturating_sub(a.total),
            out_of_order: b.out_of_order.saturating_sub(a.out_of_order),
            reads: b.datagrams.saturating_sub(a.datagrams),
            timeouts: 0,
            truncated: b.truncated.saturating_sub(a.truncated),
            latency,
            trip_times: false,
        }),
        at: SystemTime::now(),
    }
}

/// Interval ticks from a start: the end of interval `k` is `start + k·i`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticks {
    pub(crate) start: Instant,
    pub(crate) every: Option<Duration>,
    pub(crate) done: u32,
}

impl Ticks {
    pub(crate) fn new(start: Instant, every: Option<Duration>) -> Self {
        Self {
            start,
            every: every.filter(|d| !d.is_zero()),
            done: 0,
        }
    }

    /// When the next tick is due, if interval reports are on.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.every.map(|e| self.start + e * (self.done + 1))
    }

    /// The span of the next interval in seconds, and counts it.
    pub(crate) fn take(&mut self) -> (f64, f64) {
        let e = self.every.unwrap_or_default().as_secs_f64();
        let span = (e * f64::from(self.done), e * f64::from(self.done + 1));
        self.done += 1;
        span
    }
}

/// The datagrams a receiver's row counts (its Total); 0 for any other row.
pub(crate) fn datagrams_of(row: &Row2) -> u64 {
    match row.kind {
        RowKind2::UdpRecv(u) => u.total,
        _ => 0,
    }
}

/// One `--full-duplex` flow's two directions at their end: what it sent (the
/// total row and datagram count) and what it received (the total row).
pub(crate) struct Duplex<'a> {
    pub(crate) id: u32,
    pub(crate) sent: (&'a Row2, u64),
    pub(crate) received: &'a Row2,
}

/// The rows 2.2.1 closes a UDP `--full-duplex` test with when it reports no
/// intervals: with `-e` each flow's `[FDn]`, then the `[SUM]` of every
/// direction (tagged as a sum of two threads a flow). Datagrams are those
/// sent plus those received; the rate is theirs over the longer direction.
pub(crate) fn duplex_rows(flows: &[Duplex], enhanced: bool) -> (Vec<Row2>, u64) {
    let row = |tag, parts: &[&Duplex]| {
        let (mut bytes, mut datagrams, mut end) = (0, 0, 0.0f64);
        for d in parts {
            let got = datagrams_of(d.received);
            bytes += d.sent.0.bytes + d.received.bytes;
            datagrams += d.sent.1 + got;
            end = end.max(d.sent.0.end).max(d.received.end);
        }
        Row2 {
            tag,
            addrs: None,
            start: 0.0,
            end,
            bytes,
            kind: RowKind2::UdpDuplex(UdpDuplex2 {
                datagrams,
                pps: if end > 0.0 {
                    datagrams as f64 / end
                } else {
                    0.0
                },
            }),
            at: SystemTime::now(),
        }
    };
    let mut rows = Vec::new();
    if enhanced {
        rows.extend(flows.iter().map(|d| row(Tag2::FullDuplex(d.id), &[d])));
    }
    let all: Vec<&Duplex> = flows.iter().collect();
    let sum = row(Tag2::Sum(2 * flows.len() as u32), &all);
    let datagrams = match sum.kind {
        RowKind2::UdpDuplex(d) => d.datagrams,
        _ => 0,
    };
    rows.push(sum);
    (rows, datagrams)
}

/// Sends the report, and again for each late FIN, as [`ReportReplies`] says.
pub(crate) fn send_report(sock: &UdpSocket, s: &Udp2Stats, dur: Duration, enhanced: bool) {
    let wire = server_report(s, dur, enhanced).encode();
    let mut replies = ReportReplies::default();
    let _ = sock.set_read_timeout(Some(replies.listen()));
    let mut buf = [0u8; 2048];
    while replies.send_now() {
        if sock.send(&wire).is_err() {
            return;
        }
        // Silence (or a refused port: the client has its report and left).
        if sock.recv(&mut buf).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_header_then_pattern() {
        let h = UdpTestHeader::default();
        let p = payload(200, &h);
        assert_eq!(p.len(), 200);
        assert_eq!(&p[..16], &[0; 16]);
        let end = h.extent(Layout::V2_2_1);
        assert_eq!(end, 80);
        // The pattern counts from the datagram's first byte: '0' at 80.
        assert_eq!(&p[80..84], b"0123");
        // The length bits are the encoder's; the fields read back.
        assert_eq!(
            UdpTestHeader::decode(&p).unwrap().base.amount,
            h.base.amount
        );
        // Short datagrams carry as much of the header as fits.
        assert_eq!(payload(64, &h).len(), 64);
    }

    #[test]
    fn a_report_travels_and_reads_back_as_a_row() {
        let mut s = Udp2Stats::new(true);
        let tv = rperf3_proto2::Timeval { sec: 100, usec: 0 };
        for seq in [1, 2, 4] {
            s.on_datagram(seq, tv, 100_000_000 + 50, 1470);
        }
        s.on_datagram(-5, tv, 100_000_000 + 60, 1470);
        let r = server_report(&s, Duration::from_millis(1500), true);
        let wire = r.encode();
        let back = ServerReport::decode(&wire).unwrap();
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let row = report_row(Tag2::Id(1), (a, a), &back);
        assert_eq!(row.bytes, 4 * 1470);
        assert!((row.end - 1.5).abs() < 1e-9);
        let RowKind2::UdpRecv(u) = row.kind else {
            panic!("not a receiver row")
        };
        assert_eq!((u.lost, u.total, u.out_of_order), (1, 5, 0));
        // The FIN's 60 us counts as 2.2.1 times it: (3 x 50 + 60) / 4 is
        // 52.5 us, which crosses the wire as whole microseconds.
        assert!((u.latency.unwrap().mean - 52e-6).abs() < 1e-9);
        // A FIN echo (non-zero datagram header) is not a report.
        let mut echo = wire;
        echo[0] = 0xff;
        assert!(ServerReport::decode(&echo).is_err());
        assert!(ServerReport::decode(&wire[..100]).is_err());
    }

    #[test]
    fn ticks_follow_the_start() {
        let t0 = Instant::now();
        let mut t = Ticks::new(t0, Some(Duration::from_millis(500)));
        assert_eq!(t.next(), Some(t0 + Duration::from_millis(500)));
        assert_eq!(t.take(), (0.0, 0.5));
        assert_eq!(t.next(), Some(t0 + Duration::from_secs(1)));
        assert_eq!(Ticks::new(t0, None).next(), None);
    }
}

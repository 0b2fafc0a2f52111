//! Text report rows: the `[ ID] Interval ...` header lines and the rows of TCP
//! and UDP senders and receivers, plain and `-e`, per stream and summed
//! (`[SUM]`, `[SUM-n]`), in iperf 2.2.1's column layout.

use super::model::{Bb2, Latency2, Layout2, Row2, RowKind2, Side2, Tag2, TcpLatency2, UdpRecv2};
use super::units::{interval, loss_pct, netpwr, pps, rate, size, transfer};

/// A column-title line. iperf 2 prints each kind once while tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// Transfer and bandwidth.
    Bw,
    /// `[SUM-cnt]` transfer and bandwidth.
    SumCntBw,
    /// UDP receiver: jitter and loss.
    JitterLoss,
    /// `-e` TCP receiver: reads and their histogram.
    ReadEnh,
    /// `-e` TCP receiver with trip times: latency, inP, NetPwr, reads.
    ReadTrip,
    /// `-e` TCP receiver of `--isochronous` frames with trip times: latency,
    /// NetPwr, reads.
    ReadIsochTrip,
    /// `-e` `[SUM-cnt]` TCP receiver.
    SumCntReadEnh,
    /// `-e` TCP sender: writes, retries, cwnd, RTT, NetPwr.
    WriteEnh,
    /// `-e` `[SUM-cnt]` TCP sender.
    SumCntWriteEnh,
    /// `-e` UDP sender: writes and packets per second.
    PpsEnh,
    /// `-e` `[SUM-cnt]` UDP sender.
    SumCntPpsEnh,
    /// `-e` UDP receiver: latency, PPS, reads, NetPwr.
    JitterLossEnh,
    /// `-e` UDP receiver with trip times, and a `-e` client's server report.
    JitterLossTrip,
    /// `[SUM-cnt]` UDP receiver.
    SumCntJitterLoss,
    /// A bounceback client: round trips, TCP figures, bytes each way, RPS.
    Bounceback,
    /// An `--isochronous` UDP sender: writes, packets per second, frames.
    PpsIsoch,
    /// `-e` `--isochronous` TCP sender: writes, retries, cwnd, RTT, frames.
    WriteIsoch,
    /// `-e` `--histograms` TCP sender: the `-e` columns and its write times.
    WriteTimes,
    /// A UDP `--full-duplex` flow's two directions: datagrams and PPS.
    UdpDuplex,
}

/// 2.2.1's `-e` layouts put eight spaces after `Interval`.
const T: &str = "        ";

impl Header {
    /// The line, exactly as 2.2.1 prints it.
    pub(crate) fn text(self) -> String {
        match self {
            Self::Bw => "[ ID] Interval       Transfer     Bandwidth".into(),
            Self::UdpDuplex => {
                "[ ID] Interval       Transfer     Bandwidth    Datagrams   PPS".into()
            }
            Self::SumCntBw => "[SUM-cnt] Interval       Transfer     Bandwidth".into(),
            Self::JitterLoss => {
                "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams"
                    .into()
            }
            Self::ReadEnh => format!("[ ID] Interval{T}Transfer    Bandwidth       Reads=Dist"),
            Self::ReadTrip => format!(
                "[ ID] Interval{T}Transfer    Bandwidth    Burst Latency avg/min/max/stdev \
                 (cnt/size) inP NetPwr  Reads=Dist"
            ),
            Self::ReadIsochTrip => format!(
                "[ ID] Interval{T}Transfer    Bandwidth    Burst Latency avg/min/max/stdev \
                 (cnt/size) NetPwr  Reads=Dist"
            ),
            Self::SumCntReadEnh => {
                format!("[SUM-cnt] Interval{T}Transfer    Bandwidth       Reads=Dist")
            }
            Self::WriteEnh => format!(
                "[ ID] Interval{T}Transfer    Bandwidth       Write/Err  Rtry     \
                 InF(pkts)/Cwnd(pkts)/RTT(var)        NetPwr"
            ),
            Self::WriteIsoch => format!(
                "[ ID] Interval{T}Transfer     Bandwidth      Write/Err  Rtry     \
                 Cwnd(pkts)/RTT(var)     isoch:tx/miss/slip  NetPwr"
            ),
            Self::WriteTimes => format!(
                "[ ID] Interval{T}Transfer    Bandwidth       Write/Err  Rtry    \
                 InF(pkts)/Cwnd(pkts)/RTT(var)   NetPwr  write-times avg/min/max/stdev (cnt)"
            ),
            Self::SumCntWriteEnh => {
                format!("[SUM-cnt] Interval{T}Transfer    Bandwidth       Write/Err  Rtry")
            }
            Self::PpsEnh => {
                format!("[ ID] Interval{T}Transfer     Bandwidth      Write/Err/Timeo  PPS")
            }
            Self::PpsIsoch => format!(
                "[ ID] Interval{T}Transfer     Bandwidth      Write/Err  PPS  isoch:tx/miss/slip"
            ),
            Self::SumCntPpsEnh => {
                format!("[SUM-cnt] Interval{T}Transfer     Bandwidth      Write/Err  PPS")
            }
            Self::JitterLossEnh => format!(
                "[ ID] Interval{T}Transfer     Bandwidth        Jitter   Lost/Total  \
                 Latency avg/min/max/stdev PPS Read/Timeo/NA NetPwr"
            ),
            Self::JitterLossTrip => format!(
                "[ ID] Interval{T}Transfer     Bandwidth        Jitter   Lost/Total  \
                 Latency avg/min/max/stdev PPS  Rx/inP  Read/Timeo/Trunc  NetPwr"
            ),
            Self::Bounceback => format!(
                "[ ID] Interval{T}Transfer    Bandwidth         BB cnt=avg/min/max/stdev         \
                 Rtry  Cwnd(pkts)/RTT(var)   Tx/Rx bytes  RPS(avg)"
            ),
            Self::SumCntJitterLoss => "[SUM-cnt] Interval     Transfer     Bandwidth       \
                 Lost/Total  Latency avg/min/max  PPS"
                .into(),
        }
    }

    /// A bit of its own, for the set of headers already printed.
    pub(crate) fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// The `[  1] ` prefix of a stream's line; `[ *1] ` for the other direction.
pub(crate) fn tag(t: Tag2) -> String {
    match t {
        Tag2::Id(n) => format!("[{n:>3}] "),
        Tag2::ReverseId(n) => format!("[{:>3}] ", format!("*{n}")),
        Tag2::Sum(_) => "[SUM] ".into(),
        Tag2::FullDuplex(n) => format!("[FD{n}] "),
    }
}

/// `[SUM-2] `: a sum in the `[SUM-cnt]` layouts (and the sums' "Sent" line).
pub(crate) fn sumcnt_tag(n: u32) -> String {
    format!("[SUM-{n}] ")
}

/// Whether sums print as `[SUM-n]` under `[SUM-cnt]` headers: always with
/// `-e`; with `--sum-only` except a TCP client's (2.2.1 prints `[SUM]` there).
pub(crate) fn sumcnt(layout: &Layout2, side: Side2, kind: &RowKind2) -> bool {
    let tcp_client =
        side == Side2::Client && matches!(kind, RowKind2::TcpSend(_) | RowKind2::TcpRecv(_));
    layout.enhanced || (layout.sum_only && !tcp_client)
}

/// Which layout a row takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowUse {
    /// A stream's or a sum's own row.
    Own,
    /// A client printing the server's report.
    ServerReport,
}

/// A row's header and text lines (an out-of-order line may follow a UDP row).
pub(crate) fn row(r: &Row2, layout: &Layout2, side: Side2, used: RowUse) -> (Header, Vec<String>) {
    let dur = r.end - r.start;
    let iv = interval(r.start, r.end);
    let xfer = transfer(r.bytes, layout.format);
    let bw = rate(r.bytes, dur, layout.format);
    let n_sum = match r.tag {
        Tag2::Sum(n) => Some(n),
        _ => None,
    };
    let cnt = n_sum.filter(|_| sumcnt(layout, side, &r.kind));
    let prefix = match cnt {
        Some(n) => sumcnt_tag(n),
        None => tag(r.tag),
    };
    let head = format!("{prefix}{iv} sec  {xfer}  {bw}/sec");
    let mut lines = Vec::with_capacity(2);
    let header = match (&r.kind, cnt.is_some(), n_sum.is_some()) {
        (RowKind2::Bounceback(b), _, _) => {
            lines.push(format!("{head}    {}", bb_columns(b)));
            Header::Bounceback
        }
        // 2.2.1 tags this sum `[SUM]` whatever its count and `-e`.
        (RowKind2::UdpDuplex(d), _, _) => {
            let head = format!("{}{iv} sec  {xfer}  {bw}/sec", tag(r.tag));
            lines.push(format!("{head} {}{:8.0} pps", d.datagrams, d.pps));
            Header::UdpDuplex
        }
        // A full-duplex pair: transfer and bandwidth only, under the plain title.
        _ if matches!(r.tag, Tag2::FullDuplex(_)) => {
            lines.push(head);
            Header::Bw
        }
        (RowKind2::TcpSend(_) | RowKind2::TcpRecv(_) | RowKind2::UdpSend(_), true, _)
            if !layout.enhanced =>
        {
            lines.push(head);
            Header::SumCntBw
        }
        (RowKind2::TcpSend(t), _, is_sum) if layout.enhanced => {
            if is_sum {
                lines.push(format!(
                    "{head}  {}/{}{:>10}",
                    t.writes, t.write_errors, t.retries
                ));
                Header::SumCntWriteEnh
            } else if let Some(i) = t.isoch {
                // Frames replace the in-flight figures.
                lines.push(format!(
                    "{head}  {}/{} {:>8} {:>8}K({})/{}({}) us  {:>9}/{}/{}       {}",
                    t.writes,
                    t.write_errors,
                    t.retries,
                    t.cwnd_bytes / 1024,
                    t.cwnd_pkts,
                    t.rtt_us,
                    t.rttvar_us,
                    i.frames,
                    i.missed,
                    i.slips,
                    netpwr(r.bytes, dur, f64::from(t.rtt_us) * 1e-6)
                ));
                Header::WriteIsoch
            } else if let Some(w) = t.write_times {
                lines.push(format!(
                    "{head}  {}/{} {:>8}{:>7}K({})/{}K({})/{}({}) us      {}  {} ms ({})",
                    t.writes,
                    t.write_errors,
                    t.retries,
                    t.inflight_bytes / 1024,
                    t.inflight_pkts,
                    t.cwnd_bytes / 1024,
                    t.cwnd_pkts,
                    t.rtt_us,
                    t.rttvar_us,
                    netpwr(r.bytes, dur, f64::from(t.rtt_us) * 1e-6),
                    ms4(w.mean_ns, w.min_ns, w.max_ns, w.stdev_ns),
                    w.count
                ));
                Header::WriteTimes
            } else {
                lines.push(format!(
                    "{head}  {}/{}{:>10} {:>8}K({})/{}K({})/{}({}) us  {}",
                    t.writes,
                    t.write_errors,
                    t.retries,
                    t.inflight_bytes / 1024,
                    t.inflight_pkts,
                    t.cwnd_bytes / 1024,
                    t.cwnd_pkts,
                    t.rtt_us,
                    t.rttvar_us,
                    netpwr(r.bytes, dur, f64::from(t.rtt_us) * 1e-6)
                ));
                Header::WriteEnh
            }
        }
        (RowKind2::TcpRecv(t), _, is_sum) if layout.enhanced => {
            let b = t.bins;
            let dist = format!(
                "{}={}:{}:{}:{}:{}:{}:{}:{}",
                t.reads, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
            );
            match (is_sum, t.latency) {
                (true, _) => {
                    lines.push(format!("{head}  {dist}"));
                    Header::SumCntReadEnh
                }
                (false, None) => {
                    lines.push(format!("{head}  {dist}"));
                    Header::ReadEnh
                }
                (false, Some(lat)) => {
                    lines.push(format!(
                        "{head}  {}  {dist}",
                        trip_columns(r, &lat, !t.frames)
                    ));
                    if t.frames {
                        Header::ReadIsochTrip
                    } else {
                        Header::ReadTrip
                    }
                }
            }
        }
        (RowKind2::UdpSend(u), _, is_sum) if layout.enhanced => {
            let p = pps(u.pps_datagrams.unwrap_or(u.writes), dur);
            if is_sum {
                lines.push(format!(
                    "{head}  {}/{} {p:8.0} pps",
                    u.writes, u.write_errors
                ));
                Header::SumCntPpsEnh
            } else if let Some(i) = u.isoch {
                lines.push(format!(
                    "{head}  {}/{}{p:8.0} pps  {:>3}/{}/{}",
                    u.writes, u.write_errors, i.frames, i.missed, i.slips
                ));
                Header::PpsIsoch
            } else {
                lines.push(format!(
                    "{head}  {}/{}/{}{p:8.0} pps",
                    u.writes, u.write_errors, u.timeouts
                ));
                Header::PpsEnh
            }
        }
        (RowKind2::TcpSend(_) | RowKind2::TcpRecv(_) | RowKind2::UdpSend(_), _, _) => {
            lines.push(head);
            Header::Bw
        }
        (RowKind2::UdpRecv(u), true, _) => {
            let lat = u.latency.unwrap_or_default();
            lines.push(format!(
                "{head}  {}/{} ({}%)  {:.3}/{:.3}/{:.3}  {:.0} pps",
                u.lost,
                u.total,
                loss_pct(u.lost, u.total),
                lat.mean * 1e3,
                lat.min * 1e3,
                lat.max * 1e3,
                pps(received(u), dur)
            ));
            Header::SumCntJitterLoss
        }
        (RowKind2::UdpRecv(u), false, true) => {
            // 2.2.1 titles a plain UDP sum with the plain bandwidth header.
            lines.push(format!(
                "{head}   {}/{} ({}%)",
                u.lost,
                u.total,
                loss_pct(u.lost, u.total)
            ));
            Header::Bw
        }
        (RowKind2::UdpRecv(u), false, false) => udp_recv(&head, r, u, layout, used, &mut lines),
    };
    if let RowKind2::UdpRecv(u) = &r.kind {
        if u.out_of_order > 0 {
            lines.push(match cnt {
                Some(n) => format!(
                    "{}{iv} sec  {} datagrams  received out-of-order",
                    sumcnt_tag(n),
                    u.out_of_order
                ),
                None => format!(
                    "{}{iv} sec  {} datagrams received out-of-order",
                    tag(r.tag),
                    u.out_of_order
                ),
            });
        }
    }
    (header, lines)
}

/// `0.141/0.040/2.817/0.397`: mean/min/max/stdev, ns shown in ms.
fn ms4(mean: u64, min: u64, max: u64, stdev: u64) -> String {
    let ms = |ns: u64| ns as f64 * 1e-6;
    format!(
        "{:.3}/{:.3}/{:.3}/{:.3}",
        ms(mean),
        ms(min),
        ms(max),
        ms(stdev)
    )
}

/// `0.064/0.026/1.995/0.082 ms (21719/131075)  178 KByte 44369592`: write
/// latency, writes measured and their mean size, bytes in flight (Little's
/// law: rate x latency; left out for frames, as 2.2.1 does) and NetPwr.
fn trip_columns(r: &Row2, lat: &TcpLatency2, in_p: bool) -> String {
    let dur = r.end - r.start;
    let ms = |ns: u64| ns as f64 * 1e-6;
    let mean_s = lat.mean_ns as f64 * 1e-9;
    let per_sec = if dur > 0.0 { r.bytes as f64 / dur } else { 0.0 };
    let in_p = if in_p {
        format!("{} ", size(per_sec * mean_s, 'A'))
    } else {
        String::new()
    };
    format!(
        "{:.3}/{:.3}/{:.3}/{:.3} ms ({}/{}) {in_p}{}",
        ms(lat.mean_ns),
        ms(lat.min_ns),
        ms(lat.max_ns),
        ms(lat.stdev_ns),
        lat.count,
        r.bytes.checked_div(lat.count).unwrap_or(0),
        netpwr(r.bytes, dur, mean_s)
    )
}

/// `10=0.041/0.017/0.218/0.063 ms    0   0K/(0)/0(0) us  Tx=1000 Byte Rx=1000
/// Byte  RPS=24213`: round trips, retries, the socket's cwnd and RTT (dashes in
/// a final row), bytes each way, and round trips per second of round-trip time.
fn bb_columns(b: &Bb2) -> String {
    let ms = |ns: f64| ns * 1e-6;
    let tcp = match b.tcp {
        Some(t) => format!(
            "{:4}K/({})/{}({}) us",
            t.cwnd_bytes / 1024,
            t.cwnd_pkts,
            t.rtt_us,
            t.rttvar_us
        ),
        None => "   -(-)/-(-)  ".into(),
    };
    let rps = if b.mean_ns > 0.0 {
        1e9 / b.mean_ns
    } else {
        0.0
    };
    format!(
        "{}={:.3}/{:.3}/{:.3}/{:.3} ms {:4}{tcp}  Tx={} Rx={}  RPS={rps:.0}",
        b.count,
        ms(b.mean_ns),
        ms(b.min_ns as f64),
        ms(b.max_ns as f64),
        ms(b.stdev_ns),
        b.retries,
        size(b.tx_bytes as f64, 'A'),
        size(b.rx_bytes as f64, 'A'),
    )
}

fn received(u: &UdpRecv2) -> u64 {
    u.total.saturating_sub(u.lost)
}

/// A stream's UDP receiver row: the server's own, or the report a client got.
fn udp_recv(
    head: &str,
    r: &Row2,
    u: &UdpRecv2,
    layout: &Layout2,
    used: RowUse,
    lines: &mut Vec<String>,
) -> Header {
    let dur = r.end - r.start;
    let base = format!(
        "{head}  {:6.3} ms {}/{} ({}%)",
        u.jitter * 1e3,
        u.lost,
        u.total,
        loss_pct(u.lost, u.total)
    );
    if !layout.enhanced {
        lines.push(base);
        return Header::JitterLoss;
    }
    let p = pps(received(u), dur);
    let trip = u.trip_times || used == RowUse::ServerReport;
    let header = if trip {
        Header::JitterLossTrip
    } else {
        Header::JitterLossEnh
    };
    let reads = format!("{}/{}/{}", u.reads, u.timeouts, u.truncated);
    match u.latency {
        None => lines.push(format!("{base} -/-/-/- ms {p:.0} pps {reads}")),
        Some(Latency2 {
            mean,
            min,
            max,
            stdev,
        }) => {
            let lat = format!(
                "{:.3}/{:.3}/{:.3}/{:.3} ms",
                mean * 1e3,
                min * 1e3,
                max * 1e3,
                stdev * 1e3
            );
            let pwr = netpwr(r.bytes, dur, mean);
            if trip {
                // Little's law: packets in progress = arrival rate x latency.
                let lambda = p.round();
                lines.push(format!(
                    "{base} {lat} {p:.0} pps {}/{:.0}({:.0}) pkts {reads} {pwr}",
                    received(u),
                    p * mean,
                    lambda * stdev
                ));
            } else {
                lines.push(format!("{base} {lat} {p:.0} pps {reads} {pwr}"));
            }
        }
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Column titles and their spacing, character for character: a title or a
    /// separator that moves by one space fails here.
    #[test]
    fn header_texts_are_2_2_1s_to_the_space() {
        let cases = [
            (Header::Bw, "[ ID] Interval       Transfer     Bandwidth"),
            (Header::SumCntBw, "[SUM-cnt] Interval       Transfer     Bandwidth"),
            (
                Header::JitterLoss,
                "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams",
            ),
            (
                Header::ReadEnh,
                "[ ID] Interval        Transfer    Bandwidth       Reads=Dist",
            ),
            (
                Header::WriteEnh,
                "[ ID] Interval        Transfer    Bandwidth       Write/Err  Rtry     InF(pkts)/Cwnd(pkts)/RTT(var)        NetPwr",
            ),
            (
                Header::PpsEnh,
                "[ ID] Interval        Transfer     Bandwidth      Write/Err/Timeo  PPS",
            ),
            (
                Header::JitterLossEnh,
                "[ ID] Interval        Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS Read/Timeo/NA NetPwr",
            ),
            (
                Header::JitterLossTrip,
                "[ ID] Interval        Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS  Rx/inP  Read/Timeo/Trunc  NetPwr",
            ),
            (
                Header::ReadTrip,
                "[ ID] Interval        Transfer    Bandwidth    Burst Latency avg/min/max/stdev (cnt/size) inP NetPwr  Reads=Dist",
            ),
            (
                Header::SumCntWriteEnh,
                "[SUM-cnt] Interval        Transfer    Bandwidth       Write/Err  Rtry",
            ),
            (
                Header::SumCntReadEnh,
                "[SUM-cnt] Interval        Transfer    Bandwidth       Reads=Dist",
            ),
            (
                Header::SumCntPpsEnh,
                "[SUM-cnt] Interval        Transfer     Bandwidth      Write/Err  PPS",
            ),
            (
                Header::SumCntJitterLoss,
                "[SUM-cnt] Interval     Transfer     Bandwidth       Lost/Total  Latency avg/min/max  PPS",
            ),
        ];
        for (h, want) in cases {
            assert_eq!(h.text(), want, "{h:?}");
        }
        // Every kind has its own bit.
        let all: u32 = cases.iter().map(|(h, _)| h.bit()).fold(0, |a, b| {
            assert_eq!(a & b, 0);
            a | b
        });
        assert_eq!(all.count_ones() as usize, cases.len());
    }

    #[test]
    fn tags() {
        assert_eq!(tag(Tag2::Id(1)), "[  1] ");
        assert_eq!(tag(Tag2::Id(12)), "[ 12] ");
        assert_eq!(tag(Tag2::ReverseId(1)), "[ *1] ");
        assert_eq!(tag(Tag2::ReverseId(12)), "[*12] ");
        assert_eq!(tag(Tag2::Sum(2)), "[SUM] ");
        assert_eq!(tag(Tag2::FullDuplex(1)), "[FD1] ");
    }

    /// 2.2.1's closing sum of a UDP full-duplex test (its own output, `-u -b
    /// 10M -t 1 --full-duplex -e`): `[SUM]` even with `-e`, no `-cnt`.
    #[test]
    fn udp_duplex_rows_as_2_2_1_prints_them() {
        let r = |t| Row2 {
            tag: t,
            addrs: None,
            start: 0.0,
            end: 1.0017,
            bytes: 2_630_000,
            kind: RowKind2::UdpDuplex(super::super::model::UdpDuplex2 {
                datagrams: 1789,
                pps: 1789.0 / 1.0017,
            }),
            at: std::time::SystemTime::UNIX_EPOCH,
        };
        let enh = Layout2 {
            enhanced: true,
            ..Layout2::default()
        };
        for (t, want) in [
            (
                Tag2::Sum(2),
                "[SUM] 0.00-1.00 sec  2.51 MBytes  21.0 Mbits/sec 1789    1786 pps",
            ),
            (
                Tag2::FullDuplex(1),
                "[FD1] 0.00-1.00 sec  2.51 MBytes  21.0 Mbits/sec 1789    1786 pps",
            ),
        ] {
            let (h, lines) = row(&r(t), &enh, Side2::Client, RowUse::Own);
            assert_eq!(lines, [want]);
            assert_eq!(
                h.text(),
                "[ ID] Interval       Transfer     Bandwidth    Datagrams   PPS"
            );
        }
        assert_eq!(sumcnt_tag(2), "[SUM-2] ");
    }
}

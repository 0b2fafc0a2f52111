//! `-y C` rows: the basic 9-field (TCP) and 14-field (UDP) records, and with
//! `-e` 2.2.1's header line of field names and records stamped
//! `+HHMM:YYYYMMDDHHMMSS.uuuuuu` with split interval bounds and extra fields.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::connection::csv_peer;
use super::model::{Layout2, Row2, RowKind2, Side2, Tag2};
use super::units::{civil, csv_bps, csv_loss_pct, csv_stamp, csv_stamp_enhanced, pps};

/// The field names 2.2.1 prints once before `-e -y C` records, by row kind.
pub(crate) fn header(kind: &RowKind2) -> &'static str {
    match kind {
        RowKind2::TcpSend(_) | RowKind2::Bounceback(_) | RowKind2::UdpDuplex(_) => "time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,writecnt,writeerr,tcpretry,tcpcwnd,tcppcwnd,tcprtt,tcprttvar",
        RowKind2::TcpRecv(_) => "time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,readcnt,bin0,bin1,bin2,bin3,bin4,bin5,bin6,bin7",
        RowKind2::UdpSend(_) => "time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,jitter,errors,datagrams,errpercent,outoforder,writecnt,writeerr,writetimeo,pps",
        RowKind2::UdpRecv(_) => "time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,jitter,errors,datagrams,errpercent,outoforder,readcnt,readtimeo,readerrlen,pps",
    }
}

/// `src,sport,dst,dport,id`: both sides name the client first. A sum names
/// the client with port 0 and transfer id -1.
fn who(r: &Row2, side: Side2, hide: bool) -> String {
    let unspec = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
    let (local, peer) = r.addrs.unwrap_or((unspec, unspec));
    let (client, server) = match side {
        Side2::Client => (local, peer),
        Side2::Server => (peer, local),
    };
    let (cport, id) = match r.tag {
        Tag2::Id(n) | Tag2::ReverseId(n) => (client.port(), i64::from(n)),
        Tag2::Sum(_) | Tag2::FullDuplex(_) => (0, -1),
    };
    format!(
        "{},{},{id}",
        csv_peer(client, cport, hide),
        csv_peer(server, server.port(), hide)
    )
}

/// One CSV record. `last` marks a stream's final row (a UDP client's final
/// record carries iperf 2's "no receiver figures" values).
pub(crate) fn record(r: &Row2, layout: &Layout2, side: Side2, last: bool) -> String {
    let dur = r.end - r.start;
    let c = civil(r.at, layout.utc_offset_secs);
    let bps = csv_bps(r.bytes, dur);
    let who = who(r, side, layout.hide_ips);
    if !layout.enhanced {
        let head = format!(
            "{},{who},{:.1}-{:.1},{},{bps}",
            csv_stamp(c),
            r.start,
            r.end,
            r.bytes
        );
        return match &r.kind {
            RowKind2::TcpSend(_)
            | RowKind2::TcpRecv(_)
            | RowKind2::Bounceback(_)
            | RowKind2::UdpDuplex(_) => head,
            // 2.2.1 divides 0 by 0 for the client's final jitter.
            RowKind2::UdpSend(_) if last => format!("{head},-nan,0,-1,-0.000,0"),
            RowKind2::UdpSend(u) => format!("{head},0.000,0,{},0.000,0", u.writes),
            RowKind2::UdpRecv(u) => format!(
                "{head},{:.3},{},{},{},{}",
                u.jitter * 1e3,
                u.lost,
                u.total,
                csv_loss_pct(u.lost, u.total),
                u.out_of_order
            ),
        };
    }
    let head = format!(
        "{},{who},{:.1},{:.1},{},{bps}",
        csv_stamp_enhanced(c, layout.utc_offset_secs),
        r.start,
        r.end,
        r.bytes
    );
    match &r.kind {
        // Both directions' bytes: the record has no column of its own for them.
        RowKind2::UdpDuplex(_) => head,
        // Round trips in the writes column; the socket's figures when known.
        RowKind2::Bounceback(b) => {
            let t = b.tcp.unwrap_or_default();
            format!(
                "{head},{},0,{},{},{},{},{}",
                b.count,
                b.retries,
                t.cwnd_bytes / 1024,
                t.cwnd_pkts,
                t.rtt_us,
                t.rttvar_us
            )
        }
        RowKind2::TcpSend(t) => format!(
            "{head},{},{},{},{},{},{},{}",
            t.writes,
            t.write_errors,
            t.retries,
            t.cwnd_bytes / 1024,
            t.cwnd_pkts,
            t.rtt_us,
            t.rttvar_us
        ),
        RowKind2::TcpRecv(t) => {
            let b = t.bins;
            format!(
                "{head},{},{},{},{},{},{},{},{},{}",
                t.reads, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
            )
        }
        RowKind2::UdpSend(u) => {
            let tail = format!(
                "{},{},{},{:.6}",
                u.writes,
                u.write_errors,
                u.timeouts,
                pps(u.writes, dur)
            );
            if last {
                format!("{head},-1.000,0,-1,-0.000,0,{tail}")
            } else {
                format!("{head},0.000,0,{},0.000,0,{tail}", u.writes)
            }
        }
        RowKind2::UdpRecv(u) => format!(
            "{head},{:.3},{},{},{},{},{},{},{},{:.6}",
            u.jitter * 1e3,
            u.lost,
            u.total,
            csv_loss_pct(u.lost, u.total),
            u.out_of_order,
            u.reads,
            u.timeouts,
            u.truncated,
            pps(u.total.saturating_sub(u.lost), dur)
        ),
    }
}

//! The settings blocks between dashes: "Server listening on ..." (a server,
//! and a `-d`/`-r` client's listener) and "Client connecting to ..." (a client,
//! and a `-d`/`-r` server's connection back), with the `-e`, `-m`, multicast
//! and socket-buffer lines in iperf 2.2.1's order.

use super::model::{HistBins2, IsochSettings2, Layout2, Mss2, Proto2, Settings2, Side2};
use super::units::size;

/// A `--histograms` server's line.
fn histograms_line(b: HistBins2) -> String {
    format!(
        "Enabled receive histograms bin-width={:.3} ms, bins={} (clients should use --trip-times)",
        b.bin_ns as f64 / 1e6,
        b.bins
    )
}

/// Whether a block is a TCP client's that times its writes (`--histograms`).
fn write_timer(s: &Settings2) -> bool {
    // 2.2.1 says so for a UDP client too (its -R direction's T8 lines).
    s.side == Side2::Client && s.histograms && s.bounceback.is_none()
}

/// The dashes above and below a block.
pub(crate) const SEPARATOR: &str = "------------------------------------------------------------";

/// The lines of one settings block, separators included.
pub(crate) fn block(s: &Settings2, layout: &Layout2) -> Vec<String> {
    let mut v = vec![SEPARATOR.to_string()];
    match s.side {
        Side2::Server => listener(s, layout, &mut v),
        Side2::Client => connector(s, layout, &mut v),
    }
    if s.connect_only {
        v.push("TCP three-way-handshake (3WHS) only".into());
    } else {
        v.push(window_line(s, layout));
    }
    if s.side == Side2::Client && s.proto == Proto2::Tcp && s.trip_times && layout.enhanced {
        v.push("Warn: Send side bloat possible per --tcp-write-prefetch not being set".into());
    }
    if write_timer(s) && layout.enhanced {
        v.push(format!(
            "Enabled write histograms bin-width={:.3} ms, bins={}",
            s.hist_bins.bin_ns as f64 / 1e6,
            s.hist_bins.bins
        ));
    }
    v.push(SEPARATOR.to_string());
    v
}

fn proto_name(p: Proto2) -> &'static str {
    match p {
        Proto2::Tcp => "TCP",
        Proto2::Udp => "UDP",
    }
}

fn listener(s: &Settings2, layout: &Layout2, v: &mut Vec<String>) {
    let proto = proto_name(s.proto);
    if layout.enhanced {
        v.push(format!(
            "Server listening on {proto} port {} with pid {}",
            s.port, s.pid
        ));
    } else {
        v.push(format!("Server listening on {proto} port {}", s.port));
    }
    let multicast = s.multicast.as_ref().filter(|_| !layout.no_multicast);
    if let Some(m) = multicast {
        match &m.source {
            Some(src) => v.push(format!("Joining multicast (S,G)={src},{}", m.group)),
            // Two spaces, as iperf 2 prints it.
            None => v.push(format!("Joining multicast group  {}", m.group)),
        }
    }
    if layout.enhanced {
        match s.proto {
            Proto2::Tcp => {
                // Eight bins of len/8 bytes each.
                v.push(format!(
                    "Read buffer size: {} (Dist bin width={})",
                    size(f64::from(s.len), 'A'),
                    size(f64::from(s.len / 8), 'A')
                ));
                if let Some(cc) = &s.congestion {
                    v.push(format!("TCP congestion control default {cc}"));
                }
                if s.histograms {
                    v.push(histograms_line(s.hist_bins));
                }
            }
            // 2.2.1 prints the UDP read size in bytes, with a trailing space.
            Proto2::Udp => {
                v.push(format!(
                    "Read buffer size: {} ",
                    size(f64::from(s.len), 'B')
                ));
                if s.histograms {
                    v.push(histograms_line(s.hist_bins));
                }
                if let Some(w) = s.jitter_bin_us {
                    v.push(format!("Enabled jitter histograms (bin-width={w} us)"));
                }
            }
        }
    }
    // 2.2.1 puts this after the -e lines (a multicast server with -e).
    if multicast.is_some() {
        v.push("Server set to single client traffic mode (per multicast receive)".into());
    }
    if let (Some(mss), Proto2::Tcp) = (s.mss, s.proto) {
        v.push(mss_line(mss));
    }
}

/// "MSS size 1448 bytes", or with `-M`, "MSS req size 1000 bytes (per
/// TCP_MAXSEG)".
fn mss_line(m: Mss2) -> String {
    if m.requested {
        format!("MSS req size {} bytes (per TCP_MAXSEG)", m.bytes)
    } else {
        format!("MSS size {} bytes", m.bytes)
    }
}

fn connector(s: &Settings2, layout: &Layout2, v: &mut Vec<String>) {
    let proto = proto_name(s.proto);
    let host = if layout.hide_ips {
        "(**hidden**)".to_string()
    } else {
        s.host.clone().unwrap_or_default()
    };
    if layout.enhanced {
        v.push(format!(
            "Client connecting to {host}, {proto} port {} with pid {} ({}/0 flows/load)",
            s.port, s.pid, s.flows
        ));
    } else {
        v.push(format!(
            "Client connecting to {host}, {proto} port {}",
            s.port
        ));
    }
    let mss = s.mss.filter(|_| s.proto == Proto2::Tcp).map(mss_line);
    if !layout.enhanced {
        v.extend(mss.clone());
    }
    if layout.enhanced {
        if let (Proto2::Tcp, Some(bb)) = (s.proto, &s.bounceback) {
            v.push(format!(
                "Bounceback test (req/reply size ={}/{}) (server hold req={} usecs{})",
                size(f64::from(bb.request), 'B'),
                size(f64::from(bb.reply), 'B'),
                bb.hold_us,
                if bb.quickack { " & tcp_quickack" } else { "" }
            ));
            // Back to back: no schedule to show.
            if bb.period > 0.0 {
                v.push(format!(
                    "Bursting request {} times every {:.2} second(s)",
                    bb.count, bb.period
                ));
            }
        } else if s.proto == Proto2::Tcp {
            v.push(format!(
                "Write buffer size: {}{}",
                size(f64::from(s.len), 'B'),
                if write_timer(s) {
                    " (write timer enabled)"
                } else {
                    ""
                }
            ));
        }
        if let Some(i) = &s.isoch {
            v.push(isoch_line(i));
        }
        v.extend(mss);
        if s.proto == Proto2::Tcp {
            match (&s.congestion_asked, &s.congestion) {
                (Some(asked), Some(cc)) => {
                    v.push(format!("TCP congestion control set to {asked} using {cc}"))
                }
                (None, Some(cc)) => v.push(format!("TCP congestion control using {cc}")),
                _ => {}
            }
        }
        v.push(tos_line(s.tos, s.nodelay, s.tos_by_dscp));
    }
    // Frames replace the paced datagrams and their gap.
    if s.proto == Proto2::Udp && s.isoch.is_none() {
        v.push(format!(
            "Sending {} byte datagrams, IPG target: {:.2} us (kalman adjust)",
            s.len,
            s.ipg_us.unwrap_or(0.0)
        ));
    }
}

/// "Isochronous: 60.00 frames/sec mean=20.0 Mbit/s, stddev=2.00 Mbit/s,
/// Period/IPG=16.67/0.000 ms".
fn isoch_line(i: &IsochSettings2) -> String {
    let period_ms = if i.fps > 0.0 { 1e3 / i.fps } else { 0.0 };
    format!(
        "Isochronous: {:.2} frames/sec mean={}/s, stddev={}/s, Period/IPG={period_ms:.2}/{:.3} ms",
        i.fps,
        size(i.mean_bps / 8.0, 'a'),
        // No deviation prints as "0.000 bit", as 2.2.1's does.
        size(i.stdev_bps.max(0.0) / 8.0, 'a'),
        i.ipg_ms
    )
}

/// "TOS defaults to 0x0 (dscp=0,ecn=0) (Nagle on)" or, with `-S`/`-N`,
/// "TOS set to 0x20 (dscp=8,ecn=0) and nodelay (Nagle off)". A byte from
/// `--dscp` still "defaults to", as in 2.2.1.
fn tos_line(tos: u8, nodelay: bool, by_dscp: bool) -> String {
    let verb = if tos != 0 && !by_dscp {
        "set to"
    } else {
        "defaults to"
    };
    let (dscp, ecn) = (tos >> 2, tos & 3);
    let warn = if ecn != 0 { " (warn ecn bits set)" } else { "" };
    let nagle = if nodelay {
        " and nodelay (Nagle off)"
    } else {
        " (Nagle on)"
    };
    format!("TOS {verb} 0x{tos:x} (dscp={dscp},ecn={ecn}){warn}{nagle}")
}

/// "TCP window size:  128 KByte (default)" / "UDP buffer size: ...": in
/// bytes with `-f b` or `-f B` ("212992 Byte"), as 2.2.1 prints it, else in
/// the unit that fits whatever `-f` says.
fn window_line(s: &Settings2, layout: &Layout2) -> String {
    let what = match s.proto {
        Proto2::Tcp => "TCP window size",
        Proto2::Udp => "UDP buffer size",
    };
    let unit = match layout.format {
        Some('b' | 'B') => 'B',
        _ => 'A',
    };
    let size_now = size(s.window as f64, unit);
    let note = match (s.window_requested, s.requested_window) {
        (false, _) => " (default)".to_string(),
        (true, Some(asked)) if asked != s.window => {
            format!(" (WARNING: requested {})", size(asked as f64, unit))
        }
        (true, _) => String::new(),
    };
    format!("{what}: {size_now}{note}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_lines_match_2_2_1() {
        assert_eq!(
            tos_line(0, false, false),
            "TOS defaults to 0x0 (dscp=0,ecn=0) (Nagle on)"
        );
        assert_eq!(
            tos_line(0x20, true, false),
            "TOS set to 0x20 (dscp=8,ecn=0) and nodelay (Nagle off)"
        );
        assert_eq!(
            tos_line(0x20, false, true),
            "TOS defaults to 0x20 (dscp=8,ecn=0) (Nagle on)"
        );
        assert_eq!(
            tos_line(0x22, false, false),
            "TOS set to 0x22 (dscp=8,ecn=2) (warn ecn bits set) (Nagle on)"
        );
    }
}

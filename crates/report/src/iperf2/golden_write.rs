//! Reads a TCP sender's figures back from a 2.2.1 capture for the golden
//! tests: its `-e` row in the three layouts (in-flight, `--isochronous`
//! frames, `--histograms` write times), the `Enabled write histograms` line
//! and any `-PDF:` histogram line.

use super::golden_parse::{int, num};
use super::model::{Hist2, HistBins2, Isoch2, Tag2, TcpLatency2, TcpSend2};

/// A TCP sender row's figures after the bandwidth, and whether the row has
/// a figure rperf3 derives itself (NetPwr).
pub(super) fn tcp_send(rest: &[&str]) -> (TcpSend2, bool) {
    let mut t = TcpSend2::default();
    if let Some(we) = rest.first() {
        let (wr, er) = we.split_once('/').unwrap_or_default();
        (t.writes, t.write_errors) = (int(wr), int(er));
        t.retries = int(rest[1]);
    }
    let kp = |s: &str| {
        let (k, n) = s.split_once("K(").unwrap_or_default();
        (int(k) * 1024, int(n.trim_end_matches(')')) as u32)
    };
    let rtt = |t: &mut TcpSend2, s: &str| {
        let (rtt, var) = s.split_once('(').unwrap_or_default();
        t.rtt_us = int(rtt) as u32;
        t.rttvar_us = int(var.trim_end_matches(')')) as u32;
    };
    if let Some(c) = rest.get(2) {
        // 63K(1)/895K(14)/68(16), or 465K(10)/18379(16138) beside frames.
        let p: Vec<&str> = c.split('/').collect();
        if p.len() == 2 {
            (t.cwnd_bytes, t.cwnd_pkts) = kp(p[0]);
            rtt(&mut t, p[1]);
        } else {
            (t.inflight_bytes, t.inflight_pkts) = kp(p[0]);
            (t.cwnd_bytes, t.cwnd_pkts) = kp(p[1]);
            rtt(&mut t, p[2]);
        }
        if p.len() == 2 {
            // `us  61/0/0  136`: frames, then NetPwr.
            let f: Vec<u64> = rest[4].split('/').map(int).collect();
            t.isoch = Some(Isoch2 {
                frames: f[0],
                missed: f[1],
                slips: f[2],
            });
        } else if let Some(w) = rest.get(5) {
            // `us  16958  0.141/0.040/2.817/0.397 ms (48)`.
            let ns: Vec<u64> = w
                .split('/')
                .map(|x| (num(x) * 1e6).round() as u64)
                .collect();
            t.write_times = Some(TcpLatency2 {
                count: int(rest[7].trim_matches(|c| c == '(' || c == ')')),
                mean_ns: ns[0],
                min_ns: ns[1],
                max_ns: ns[2],
                stdev_ns: ns[3],
            });
        }
    }
    (t, rest.len() > 2)
}

/// `Enabled write histograms bin-width=0.100 ms, bins=100000`.
pub(super) fn write_bins(rest: &str) -> HistBins2 {
    let (w, n) = rest.split_once(" ms, bins=").unwrap_or_default();
    HistBins2 {
        bin_ns: (num(w) * 1e6).round() as u64,
        bins: int(n) as u32,
    }
}

/// A `-PDF:` line's histogram: its bins turned back into the core's
/// buckets (one value in the middle of each bin) and binned again by the
/// core, in `max_bins` bins, so that its shares and outliers are the core's.
/// A receiver's largest delay is left out: the caller fills it when the line
/// has one.
pub(super) fn pdf(l: &str, tag: Tag2, max_bins: u32) -> Hist2 {
    let (head, rest) = l.split_once(" sec ").unwrap();
    let (a, b) = head[5..].trim().split_once('-').unwrap();
    let (name, rest) = rest.trim_start().split_once("-PDF: bin(w=").unwrap();
    let (w, rest) = rest.split_once("):cnt(").unwrap();
    let bin_ns = match w.strip_suffix("ms") {
        Some(ms) => int(ms) * 1_000_000,
        None => int(w.trim_end_matches("us")) * 1000,
    };
    let bins = rest.split_once(")=").map_or("", |x| x.1);
    let buckets = bins
        .split(' ')
        .next()
        .unwrap()
        .split(',')
        .filter(|kc| !kc.is_empty())
        .map(|kc| {
            let (k, c) = kc.split_once(':').unwrap();
            ((int(k) - 1) * bin_ns + bin_ns / 2, int(c))
        })
        .collect();
    let (obl, obu) = rest
        .split("obl/obu=")
        .nth(1)
        .and_then(|x| x.split(')').next()?.split_once('/'))
        .unwrap();
    let below = int(obl);
    let mut buckets: Vec<(u64, u64)> = buckets;
    // Samples past the last bin, for the core to count as such.
    buckets.push((u64::from(max_bins) * bin_ns + bin_ns / 2, int(obu)));
    buckets.retain(|b| b.1 > 0);
    Hist2 {
        tag,
        start: num(a),
        end: num(b),
        name: name.into(),
        bins: rperf3_latency::Binned::of(&buckets, below, bin_ns, max_bins),
        max_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::golden::print;
    use super::super::model::{Layout2, Row2, RowKind2, Side2, TcpRecv2};
    use super::*;

    /// A 2.2.1 server's row for a 2.2.1 client's `--isochronous=60:20m,2m
    /// --trip-times -t 1` (this machine, 2026-11-26): the latency columns
    /// without `inP`, under their own title.
    #[test]
    fn isochronous_trip_rows_have_no_in_flight_column_issue18() {
        let want = [
            "[ ID] Interval        Transfer    Bandwidth    Burst Latency avg/min/max/stdev \
             (cnt/size) NetPwr  Reads=Dist",
            "[  1] 0.00-1.00 sec  2.38 MBytes  20.0 Mbits/sec  5.683/0.059/21.770/7.905 ms \
             (60/41620) 439  61=1:0:58:2:0:0:0:0",
        ];
        let row = Row2 {
            tag: Tag2::Id(1),
            addrs: None,
            start: 0.0,
            end: 1.0,
            bytes: 60 * 41_620,
            kind: RowKind2::TcpRecv(TcpRecv2 {
                reads: 61,
                bins: [1, 0, 58, 2, 0, 0, 0, 0],
                latency: Some(TcpLatency2 {
                    count: 60,
                    mean_ns: 5_683_000,
                    min_ns: 59_000,
                    max_ns: 21_770_000,
                    stdev_ns: 7_905_000,
                }),
                frames: true,
            }),
            at: std::time::UNIX_EPOCH,
        };
        let layout = Layout2 {
            enhanced: true,
            ..Layout2::default()
        };
        let got = print(
            Side2::Server,
            &layout,
            vec![super::super::model::Event2::Interval(row)],
        );
        assert_eq!(got, want);
    }
}

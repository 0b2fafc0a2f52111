//! iperf 2's `--trip-times` on TCP: the sender stamps a burst header (its wall
//! clock) at the start of every write; the receiver reads burst by burst and
//! takes each burst's one-way delay, from its write stamp to the read that
//! completes it (what iperf 2.2.1's `-e` server rows call "Burst Latency").
//! Delays and their figures come from the latency core.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::Mutex;

use rperf3_engine::control::RunControl;
use rperf3_latency::{wall_ns, OneWay};
use rperf3_proto2::{BurstHeader, Timeval, BURST_HEADER_LEN};
use rperf3_report::iperf2::model::{Hist2, HistBins2, Row2, Tag2, TcpLatency2};

use super::tcp_io::FlowStats;

/// A burst longer than this is not one a sender of ours or iperf 2's writes;
/// the rest of the stream is then read as plain data.
const MAX_BURST: u32 = 1 << 30;

/// One-way delays of a receiver's bursts: this interval's and the whole test's.
#[derive(Debug, Default)]
pub(crate) struct TripLatency {
    delays: Mutex<[Delays; 2]>,
    /// `--histograms`: rows are followed by the delays' histogram line, in
    /// bins this wide (ns).
    pub(crate) histograms: Option<u64>,
    /// A `-R` or full-duplex client: the server's test header comes first.
    pub(crate) preamble: bool,
}

/// Delays of one span, and when its largest one arrived (wall clock, ns).
#[derive(Debug, Default, Clone)]
pub(crate) struct Delays {
    /// The delays.
    pub(crate) oneway: OneWay,
    /// (largest delay, its arrival), ns.
    pub(crate) max_at: Option<(i64, i64)>,
}

impl Delays {
    /// Accounts one delay: sent and received on the wall clock, ns.
    pub(crate) fn record(&mut self, sent_ns: i64, recv_ns: i64) {
        self.oneway.record(sent_ns, recv_ns);
        let d = recv_ns.saturating_sub(sent_ns);
        if self.max_at.is_none_or(|(m, _)| d > m) {
            self.max_at = Some((d, recv_ns));
        }
    }

    /// The row's figures.
    pub(crate) fn figures(&self) -> TcpLatency2 {
        figures(&self.oneway)
    }
}

impl TripLatency {
    /// Delays kept for `--histograms` too.
    pub(crate) fn new(histograms: Option<HistBins2>) -> Self {
        Self {
            histograms: histograms.map(|b| b.bin_ns),
            ..Self::default()
        }
    }

    /// A `-R` or full-duplex client's: the server's header comes first.
    pub(crate) fn after_header(histograms: Option<HistBins2>) -> Self {
        Self {
            histograms: histograms.map(|b| b.bin_ns),
            preamble: true,
            ..Self::default()
        }
    }

    fn record(&self, sent_ns: i64, recv_ns: i64) {
        let mut d = self.delays.lock().unwrap_or_else(|p| p.into_inner());
        d[0].record(sent_ns, recv_ns);
        d[1].record(sent_ns, recv_ns);
    }

    /// The interval's delays; the next interval starts empty.
    pub(crate) fn take_interval(&self) -> Delays {
        let mut d = self.delays.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut d[0])
    }

    /// The whole test's delays.
    pub(crate) fn total(&self) -> Delays {
        self.delays.lock().unwrap_or_else(|p| p.into_inner())[1].clone()
    }
}

fn figures(o: &OneWay) -> TcpLatency2 {
    let h = o.histogram();
    TcpLatency2 {
        count: h.count(),
        mean_ns: h.mean_ns().round() as u64,
        min_ns: h.min_ns(),
        max_ns: h.max_ns(),
        stdev_ns: h.stdev_ns().round() as u64,
    }
}

fn tv_ns(t: Timeval) -> i64 {
    t.as_micros().saturating_mul(1000)
}

/// An endless source of `-l`-byte writes, each starting with a burst header
/// stamped as it is handed to the writer (the write follows at once).
pub(crate) struct Bursts {
    fill: Vec<u8>,
    start: Timeval,
    id: u32,
    seq: u64,
}

impl Bursts {
    /// Writes of `fill`'s bytes; `start` is the report start the test header
    /// carried.
    pub(crate) fn new(fill: Vec<u8>, start: Timeval) -> Self {
        Self {
            fill,
            start,
            id: 0,
            seq: 0,
        }
    }
}

impl Read for Bursts {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(self.fill.len());
        out[..n].copy_from_slice(&self.fill[..n]);
        // A last write shorter than a header (the end of -n) goes as it is.
        if n >= BURST_HEADER_LEN {
            self.id = self.id.wrapping_add(1);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            BurstHeader {
                start: self.start,
                write_time: Timeval::from_since_epoch(now),
                period_us: 0,
                burst_id: self.id,
                burst_size: n as u32,
                seq: self.seq,
            }
            .write(&mut out[..n]);
        }
        self.seq += n as u64;
        Ok(n)
    }
}

/// Reads bursts (a header, then the rest of its size in reads of at most
/// `len`) until the peer closes or the run stops, counting every read and
/// each complete burst's delay (into `lat`); a burst header's reads count
/// only when bursts are writes, not `--isochronous` frames (2.2.1 counts a
/// read per frame). Bytes that are not a burst header end
/// the delays; the rest is counted as plain data.
pub(crate) fn recv_bursts(
    mut sock: &TcpStream,
    len: u32,
    ctl: &RunControl,
    stats: &FlowStats,
    lat: Option<&TripLatency>,
) -> io::Result<()> {
    let mut buf = vec![0u8; (len as usize).max(BURST_HEADER_LEN)];
    let mut head = [0u8; BURST_HEADER_LEN];
    let (mut have, mut left, mut sent) = (0usize, 0usize, 0i64);
    let mut plain = false;
    if lat.is_some_and(|l| l.preamble) {
        have = skip_preamble(sock, ctl, stats, &mut head)?;
    }
    while !ctl.stopped() {
        let r = if plain {
            sock.read(&mut buf)
        } else if left > 0 {
            let want = left.min(buf.len());
            sock.read(&mut buf[..want])
        } else {
            sock.read(&mut head[have..])
        };
        let n = match r {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if super::tcp_io::read_again(&e) => continue,
            Err(e) => return Err(e),
        };
        if stats.frames && !plain && left == 0 {
            stats.io.add_many(0, n as u64);
        } else {
            stats.read(n);
        }
        if plain {
            continue;
        }
        if left > 0 {
            left -= n;
        } else {
            have += n;
            if have < BURST_HEADER_LEN {
                continue;
            }
            have = 0;
            match BurstHeader::read(&head, MAX_BURST) {
                Ok(Some(h)) => {
                    sent = tv_ns(h.write_time);
                    left = h.burst_size as usize - BURST_HEADER_LEN;
                }
                _ => {
                    plain = true;
                    continue;
                }
            }
        }
        if let (0, Some(lat)) = (left, lat) {
            lat.record(sent, wall_ns());
        }
    }
    Ok(())
}

/// Reads the test header a trip-times server sends before its bursts (its
/// length is in its flags word) and counts its bytes. Returns how many bytes
/// of the first burst header are already in `head`: the first four, if they
/// are no header (a server that sends bursts at once).
fn skip_preamble(
    mut sock: &TcpStream,
    ctl: &RunControl,
    stats: &FlowStats,
    head: &mut [u8; BURST_HEADER_LEN],
) -> io::Result<usize> {
    // Reads into `b` until it is full, the peer closes or the run stops.
    let mut fill = |b: &mut [u8]| -> io::Result<usize> {
        let mut at = 0;
        while at < b.len() && !ctl.stopped() {
            match sock.read(&mut b[at..]) {
                Ok(0) => break,
                Ok(n) => at += n,
                Err(e) if super::tcp_io::read_again(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(at)
    };
    let n = fill(&mut head[..4])?;
    if n > 0 {
        stats.read(n);
    }
    let flags = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let hlen = ((flags & HEADER_LEN_MASK) >> 1) as usize;
    if n < 4 || flags & HEADER_LENBIT == 0 || flags & HEADER_EXTEND == 0 || hlen < 4 {
        return Ok(n);
    }
    let mut rest = vec![0u8; hlen - 4];
    let r = fill(&mut rest)?;
    // The header's bytes are test data, as 2.2.1's client counts them.
    stats.io.add_many(0, r as u64);
    Ok(0)
}

/// The flag every 2.x test header has (a burst's first bytes, 0xA5 filler,
/// do not).
const HEADER_EXTEND: u32 = 0x4000_0000;
/// The test header's flag saying bits 1..8 hold its length.
const HEADER_LENBIT: u32 = 0x0001_0000;
/// Those bits.
const HEADER_LEN_MASK: u32 = 0x0000_01FE;

/// iperf 2's outliers: samples in bins beyond the outer fence, which lies
/// three times the 10%–90% span of bins above the 90% bin (bins counted from
/// 1, the fence compared with a bin's 0-based index, as 2.2.1 does it).
pub(crate) fn fence_outliers(buckets: &[(u64, u64)], bin_ns: u64) -> u64 {
    let mut bins: Vec<(u64, u64)> = Vec::new();
    for &(v, n) in buckets {
        let b = v / bin_ns.max(1) + 1;
        match bins.last_mut() {
            Some((last, c)) if *last == b => *c += n,
            _ => bins.push((b, n)),
        }
    }
    let total = bins.iter().map(|b| b.1).sum::<u64>() as f64;
    let (mut run, mut lower, mut upper, mut fence, mut out) = (0u64, 0, 0, 0, 0);
    for (b, n) in bins {
        run += n;
        let share = run as f64 / total;
        if share < 0.1 {
            lower = b;
        }
        if share < 0.9 {
            upper = b;
        } else if fence == 0 {
            fence = upper + 3 * (upper - lower);
        } else if b - 1 > fence {
            out += n;
        }
    }
    out
}

/// With `--histograms`, the histogram line that follows a receiver's row:
/// its delays in iperf 2's 100 µs bins, from the latency core's buckets.
pub(crate) fn hist(
    stats: &FlowStats,
    tag: Tag2,
    r: &Row2,
    delays: Option<&Delays>,
    name: &str,
) -> Option<Hist2> {
    let d = delays?;
    let bin_ns = stats.trip.as_ref()?.histograms?;
    Some(hist_of(d, tag, r, (name, bin_ns)))
}

/// The histogram line of `d`'s delays for row `r`, named `name`, in bins
/// `bin_ns` wide.
pub(crate) fn hist_of(d: &Delays, tag: Tag2, r: &Row2, (name, bin_ns): (&str, u64)) -> Hist2 {
    let h = d.oneway.histogram();
    let buckets = h.buckets();
    Hist2 {
        // 2.2.1 tags a -R client's histogram lines `[  1]`, not `[ *1]`.
        tag: match tag {
            Tag2::ReverseId(n) => Tag2::Id(n),
            t => t,
        },
        start: r.start,
        end: r.end,
        name: name.into(),
        bin_ns,
        outliers: fence_outliers(&buckets, bin_ns),
        buckets,
        max_at: d.max_at.map(|(m, at)| {
            (
                m.max(0) as u64,
                std::time::UNIX_EPOCH + std::time::Duration::from_nanos(at.max(0) as u64),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// Three stamped writes (the last one short, as the end of `-n`) read as
    /// three bursts with one delay each; the read count covers every read.
    #[test]
    fn bursts_are_read_one_by_one_with_their_delays() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let mut src = Bursts::new(vec![0xA5; 1000], Timeval::default());
        for n in [1000, 1000, 200] {
            let mut b = vec![0u8; n];
            assert_eq!(src.read(&mut b).unwrap(), n);
            let h = BurstHeader::read(&b, MAX_BURST).unwrap().unwrap();
            assert_eq!(h.burst_size as usize, n);
            c.write_all(&b).unwrap();
        }
        drop(c);
        let (stats, lat) = (FlowStats::new(1000), TripLatency::default());
        recv_bursts(&s, 1000, &RunControl::new(None), &stats, Some(&lat)).unwrap();
        let t = lat.total().figures();
        assert_eq!(t.count, 3);
        // Loopback within this process: positive, and far below a second.
        assert!(t.min_ns > 0 && t.max_ns < 1_000_000_000, "{t:?}");
        assert_eq!(stats.sample().bytes, 2200);
        assert_eq!(lat.take_interval().figures().count, 3);
        assert_eq!(lat.take_interval().figures().count, 0);
    }

    /// The fence rule on made-up bins: the last bins below 10% and 90% are
    /// 1 and 3, so the fence is index 3 + 3·2 = 9: samples in bins 11 and
    /// 30 are outliers, those in bin 10 (index 9) are not. Everything in one
    /// bin (the 2.2.1 captures) has none.
    #[test]
    fn outliers_lie_beyond_the_outer_fence() {
        let us = |b: u64| (b - 1) * 100_000 + 50_000;
        let mut v = vec![(us(1), 5), (us(2), 5), (us(3), 40), (us(4), 40)];
        v.extend([(us(5), 5), (us(10), 2), (us(11), 2), (us(30), 1)]);
        assert_eq!(fence_outliers(&v, 100_000), 3);
        assert_eq!(
            fence_outliers(&[(17_000, 5), (40_000, 14), (218_000, 1)], 100_000),
            0
        );
        assert_eq!(fence_outliers(&[(30_000, 844)], 100_000), 0);
        // 2.2.1's tcp-hist-client: "cnt(48)=1:34,2:12,3:1,29:1 ... Outliers=1".
        let w = [(us(1), 34), (us(2), 12), (us(3), 1), (us(29), 1)];
        assert_eq!(fence_outliers(&w, 100_000), 1);
    }

    /// A -R client's stream: the server's 80-byte test header (its length in
    /// its flags word, 0x400100A0), then bursts; and a server that sends its
    /// bursts at once. Both read as two bursts, every byte counted.
    #[test]
    fn a_reverse_stream_skips_the_servers_header() {
        for header in [true, false] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (s, _) = l.accept().unwrap();
            if header {
                let mut h = vec![0u8; 80];
                h[..4].copy_from_slice(&0x4001_00A0u32.to_be_bytes());
                c.write_all(&h).unwrap();
            }
            let mut src = Bursts::new(vec![0xA5; 1000], Timeval::default());
            for _ in 0..2 {
                let mut b = vec![0u8; 1000];
                assert_eq!(src.read(&mut b).unwrap(), 1000);
                c.write_all(&b).unwrap();
            }
            drop(c);
            let (stats, lat) = (FlowStats::new(1000), TripLatency::after_header(None));
            recv_bursts(&s, 1000, &RunControl::new(None), &stats, Some(&lat)).unwrap();
            let want = if header { 2080 } else { 2000 };
            assert_eq!(
                (stats.sample().bytes, lat.total().figures().count),
                (want, 2),
                "header {header}"
            );
        }
    }

    /// Data that is no burst header is counted, without delays.
    #[test]
    fn a_stream_without_headers_is_plain_data() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        c.write_all(&[b'7'; 5000]).unwrap();
        drop(c);
        let (stats, lat) = (FlowStats::new(1000), TripLatency::default());
        recv_bursts(&s, 1000, &RunControl::new(None), &stats, Some(&lat)).unwrap();
        assert_eq!(
            (stats.sample().bytes, lat.total().figures().count),
            (5000, 0)
        );
    }
}

//! iperf 2's `--trip-times` bursts on TCP: the sender stamps a burst header
//! (its wall clock) at the start of every write; the receiver reads burst by
//! burst and records each burst's delay when the read that completes it
//! returns. `--isochronous` frames are read the same way.

use std::io::{self, Read};
use std::net::TcpStream;

use rperf3_engine::control::RunControl;
use rperf3_engine::tcp::read_again;
use rperf3_latency::wall_ns;
use rperf3_proto2::{BurstHeader, Timeval, BURST_HEADER_LEN};

use super::flow_stats::FlowStats;
use super::tcp_trip::TripLatency;

/// A burst longer than this is not one a sender of ours or iperf 2's writes;
/// the rest of the stream is then read as plain data.
const MAX_BURST: u32 = 1 << 30;

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
            Err(e) if read_again(&e) => continue,
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
                Err(e) if read_again(&e) => {}
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

//! A capture on a namespace's veth with the kernel's timestamps: `dumpcap`
//! writes a plain pcap file and the frames are dissected here afterwards, so
//! the capture never waits for a dissector or falls behind the test.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use etherparse::{LaxSlicedPacket, TransportSlice};

use super::cmd::Bg;
use super::{unavailable, Pair, Side, DEV};

/// Enough of each frame for its headers and the first bytes of its payload
/// (iperf3's UDP header, a probe frame's start).
const SNAPLEN: &str = "128";

/// One captured TCP segment or UDP datagram.
#[derive(Debug, Clone)]
pub(crate) struct Seg {
    /// When the device passed it, microseconds since the epoch.
    pub(crate) at_us: i64,
    pub(crate) udp: bool,
    pub(crate) src: u16,
    pub(crate) dst: u16,
    pub(crate) syn: bool,
    /// Payload bytes on the wire.
    pub(crate) len: u64,
    /// The payload's first bytes, as far as the snapshot reached.
    pub(crate) head: Vec<u8>,
}

/// The UDP port of the marker datagrams that show a capture has written
/// everything before them (discard's).
const MARK: u16 = 9;

/// A running `dumpcap` in one side's namespace.
pub(crate) struct NsCapture {
    bg: Bg,
    file: PathBuf,
    /// The other side's address, where the markers go.
    peer: String,
    ns: String,
}

impl NsCapture {
    /// Captures what `filter` (pcap syntax) matches on `side`'s veth; returns
    /// once dumpcap's packet socket is bound to the device. `None` after a
    /// skip note when dumpcap is missing.
    pub(crate) fn start(pair: &Pair, side: Side, filter: &str) -> Option<Self> {
        if super::cmd::run(&["dumpcap", "-v"], Duration::from_secs(10)).is_err() {
            return unavailable("dumpcap (tshark) is missing");
        }
        let file = std::env::temp_dir().join(format!("{}-{side:?}.pcap", pair.ns(side)));
        let _ = std::fs::remove_file(&file);
        let path = file.to_str().expect("a UTF-8 temporary path").to_string();
        let filter = format!("({filter}) or (udp dst port {MARK})");
        let bg = pair.spawn(
            side,
            &[
                "dumpcap", "-q", "-P", "-i", DEV, "-f", &filter, "-s", SNAPLEN, "-w", &path,
            ],
        );
        // Bound: a nonzero interface index in /proc/net/packet's fifth column.
        let bound = |t: String| {
            t.lines()
                .skip(1)
                .any(|l| l.split_whitespace().nth(4).is_some_and(|i| i != "0"))
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !bound(pair.on(side, &["cat", "/proc/net/packet"])) {
            assert!(Instant::now() < deadline, "dumpcap did not start capturing");
            std::thread::sleep(Duration::from_millis(20));
        }
        let peer = match side {
            Side::Server => pair.client_ip.clone(),
            Side::Client => pair.server_ip.clone(),
        };
        let ns = pair.ns(side).to_string();
        Some(Self { bg, file, peer, ns })
    }

    /// Stops dumpcap and returns every segment it wrote. Its ring hands
    /// packets to the file in blocks, so first a marker datagram leaves this
    /// side, again until the file holds it: what the device passed before
    /// it is in the file too.
    pub(crate) fn stop(self) -> Vec<Seg> {
        self.stop_counting_drops().0
    }

    /// As `stop`, with the packets the capture itself dropped (its ring was
    /// full: the machine did not run dumpcap in time), which dumpcap says on
    /// exit ("Packets received/dropped on interface '...': R/D").
    pub(crate) fn stop_counting_drops(self) -> (Vec<Seg>, u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let send = format!("echo mark > /dev/udp/{}/{MARK}", self.peer);
        loop {
            let _ = super::cmd::run(
                &["ip", "netns", "exec", &self.ns, "bash", "-c", &send],
                Duration::from_secs(5),
            );
            let seen = std::fs::read(&self.file)
                .map(|b| read_pcap(&b))
                .unwrap_or_default();
            if seen.iter().any(|s| s.udp && s.dst == MARK) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the capture never wrote its marker"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.bg.interrupt();
        let d = self.bg.finish(Duration::from_secs(5));
        assert!(d.success(), "dumpcap: {d}");
        let dropped = capture_drops(&d.stderr)
            .unwrap_or_else(|| panic!("dumpcap did not say what it dropped: {d}"));
        let bytes = std::fs::read(&self.file).expect("the capture file");
        let _ = std::fs::remove_file(&self.file);
        let mut segs = read_pcap(&bytes);
        segs.retain(|s| !(s.udp && s.dst == MARK));
        (segs, dropped)
    }
}

/// The drop count in dumpcap's closing line.
fn capture_drops(stderr: &str) -> Option<u64> {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("Packets received/dropped"))?;
    let counts = line.rsplit("': ").next()?.split_whitespace().next()?;
    counts.split('/').nth(1)?.parse().ok()
}

/// The TCP and UDP frames of a classic pcap file (microsecond timestamps,
/// Ethernet link type, either byte order).
pub(crate) fn read_pcap(bytes: &[u8]) -> Vec<Seg> {
    let u32_at = |i: usize, le: bool| {
        let a: [u8; 4] = bytes[i..i + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    if bytes.len() < 24 {
        return Vec::new();
    }
    let le = match u32_at(0, true) {
        0xa1b2_c3d4 => true,
        0xd4c3_b2a1 => false,
        m => panic!("not a microsecond pcap file (magic {m:#x})"),
    };
    assert_eq!(u32_at(20, le), 1, "link type is not Ethernet");
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let (sec, usec) = (u32_at(at, le), u32_at(at + 4, le));
        let caplen = u32_at(at + 8, le) as usize;
        let end = at + 16 + caplen;
        if end > bytes.len() {
            break;
        }
        let at_us = i64::from(sec) * 1_000_000 + i64::from(usec);
        out.extend(dissect(&bytes[at + 16..end], at_us));
        at = end;
    }
    out
}

fn dissect(frame: &[u8], at_us: i64) -> Option<Seg> {
    let p = LaxSlicedPacket::from_ethernet(frame).ok()?;
    let ip_payload = match p.net? {
        etherparse::LaxNetSlice::Ipv4(v4) => {
            let h = v4.header();
            u64::from(h.total_len()) - 4 * u64::from(h.ihl())
        }
        etherparse::LaxNetSlice::Ipv6(v6) => u64::from(v6.header().payload_length()),
        etherparse::LaxNetSlice::Arp(_) => return None,
    };
    match p.transport? {
        TransportSlice::Tcp(t) => Some(Seg {
            at_us,
            udp: false,
            src: t.source_port(),
            dst: t.destination_port(),
            syn: t.syn(),
            len: ip_payload - 4 * u64::from(t.data_offset()),
            head: t.payload().to_vec(),
        }),
        TransportSlice::Udp(u) => Some(Seg {
            at_us,
            udp: true,
            src: u.source_port(),
            dst: u.destination_port(),
            syn: false,
            len: u64::from(u.length()).saturating_sub(8),
            head: u.payload().to_vec(),
        }),
        _ => None,
    }
}

/// The round trips of the request/answer exchanges on the TCP connection
/// whose client port is `client_port`, as the client's device saw them:
/// from each client segment with data to the server's next segment with
/// data, microseconds, in order.
pub(crate) fn exchanges_us(segs: &[Seg], client_port: u16) -> Vec<i64> {
    let mut out = Vec::new();
    let mut asked: Option<i64> = None;
    for s in segs.iter().filter(|s| !s.udp && s.len > 0) {
        if s.src == client_port {
            asked.get_or_insert(s.at_us);
        } else if s.dst == client_port {
            if let Some(t) = asked.take() {
                out.push(s.at_us - t);
            }
        }
    }
    out
}

/// The client ports of the TCP connections to `port`, in the order their
/// SYNs left.
pub(crate) fn connections_to(segs: &[Seg], port: u16) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::new();
    for s in segs.iter().filter(|s| !s.udp && s.syn && s.dst == port) {
        if !out.contains(&s.src) {
            out.push(s.src);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_drops_of_dumpcaps_closing_line() {
        let e = "Capturing on 'veth'\nPackets captured: 6\nPackets received/dropped on \
                 interface 'Loopback: lo': 60/7 (pcap:0/dumpcap:0/flushed:0/ps_ifdrop:0) (100.0%)\n";
        assert_eq!(capture_drops(e), Some(7));
        assert_eq!(capture_drops("Packets captured: 6\n"), None);
    }

    fn seg(at_us: i64, src: u16, dst: u16, len: u64) -> Seg {
        Seg {
            at_us,
            udp: false,
            src,
            dst,
            syn: len == 0,
            len,
            head: Vec::new(),
        }
    }

    #[test]
    fn exchanges_pair_each_request_with_the_next_answer() {
        let segs = [
            seg(0, 40000, 5201, 0),
            seg(10, 40000, 5201, 48),
            seg(12, 40000, 5201, 48), // a second request before the answer
            seg(19, 5201, 40000, 48),
            seg(20, 5201, 40000, 0),  // an ACK
            seg(30, 40001, 5201, 48), // another connection
            seg(40, 40000, 5201, 48),
            seg(47, 5201, 40000, 48),
        ];
        assert_eq!(exchanges_us(&segs, 40000), vec![9, 7]);
        assert_eq!(connections_to(&segs, 5201), vec![40000]);
    }
}

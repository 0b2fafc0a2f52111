//! Packets captured on loopback by `dumpcap` and read back here.
//!
//! dumpcap starts in a fraction of a second and only writes; the packets are
//! dissected afterwards with etherparse, so a capture neither waits for a
//! dissector to start nor falls behind a fast test. Start and stop are events:
//! a marker datagram to a port of the capture's own is sent until it is in the
//! file, and what the kernel passed before it is in the file too.

use std::net::UdpSocket;
use std::path::PathBuf;
use std::time::Duration;

use etherparse::{LaxNetSlice, LaxSlicedPacket, TcpOptionElement, TransportSlice};

use super::{free_port, scratch_file, Proc, Signal};

/// Enough of each packet for every header: Ethernet, IP with options, TCP
/// with options.
const SNAPLEN: &str = "200";

/// What a test reads from one captured packet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Packet {
    /// IPv4's TOS byte, IPv6's traffic class.
    pub(crate) tos: u8,
    /// IPv6's flow label (None on IPv4).
    pub(crate) flow: Option<u32>,
    /// UDP (else TCP).
    pub(crate) udp: bool,
    pub(crate) src: u16,
    pub(crate) dst: u16,
    /// Payload bytes (the TCP segment's or the UDP datagram's data).
    pub(crate) len: u64,
    /// TCP SYN flag.
    pub(crate) syn: bool,
    /// TCP MSS option.
    pub(crate) mss: Option<u16>,
    /// When the device passed it (the kernel's stamp), microseconds since
    /// the epoch.
    pub(crate) at_us: i64,
}

/// A running capture; [`Capture::stop`] returns its packets.
pub(crate) struct Capture {
    proc: Proc,
    file: PathBuf,
    marker: u16,
}

impl Capture {
    /// Captures what `filter` (pcap syntax) matches on `lo`; returns once
    /// packets are being written.
    pub(crate) fn start(filter: &str) -> Self {
        let marker = free_port();
        let file = scratch_file(&format!("capture-{marker}.pcap"));
        let filter = format!("({filter}) or udp dst port {marker}");
        let path = file.to_str().expect("a UTF-8 scratch path");
        // -P: plain pcap, read below; -q: no packet counts on stderr.
        let args = [
            "-i", "lo", "-P", "-q", "-s", SNAPLEN, "-f", &filter, "-w", path,
        ];
        let c = Self {
            proc: Proc::spawn("dumpcap", &args),
            file,
            marker,
        };
        c.mark();
        c
    }

    fn markers(&self) -> usize {
        let m = self.marker;
        read(&self.file)
            .iter()
            .filter(|p| p.udp && p.dst == m)
            .count()
    }

    /// Sends marker datagrams until one more than before is in the file.
    fn mark(&self) {
        let before = self.markers();
        let udp = UdpSocket::bind("127.0.0.1:0").expect("a UDP socket for the marker");
        // 20 s: dumpcap is slow to start on a loaded machine.
        for _ in 0..400 {
            let _ = udp.send_to(b"x", ("127.0.0.1", self.marker));
            std::thread::sleep(Duration::from_millis(50));
            if self.markers() > before {
                return;
            }
        }
        panic!("dumpcap wrote no marker: {}", self.proc.stderr());
    }

    /// Stops the capture once everything sent so far is in it; the filter's
    /// packets in the order captured (the markers left out).
    pub(crate) fn stop(self) -> Vec<Packet> {
        self.mark();
        self.proc.signal(Signal::SIGINT);
        let out = self.proc.finish(Duration::from_secs(20));
        out.assert_ok();
        let m = self.marker;
        let packets = read(&self.file);
        let _ = std::fs::remove_file(&self.file);
        packets
            .into_iter()
            .filter(|p| !(p.udp && p.dst == m))
            .collect()
    }
}

/// The packets of a pcap file (Ethernet link type, as `lo` has); a record cut
/// short at the end (still being written) is left out.
fn read(file: &PathBuf) -> Vec<Packet> {
    let bytes = std::fs::read(file).unwrap_or_default();
    let mut out = Vec::new();
    let mut at = 24;
    while bytes.len() >= at + 16 {
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
        let caught = word(at + 8);
        let (start, end) = (at + 16, at + 16 + caught);
        if bytes.len() < end {
            break;
        }
        let at_us = word(at) as i64 * 1_000_000 + word(at + 4) as i64;
        out.extend(dissect(&bytes[start..end], at_us));
        at = end;
    }
    out
}

/// One Ethernet frame's IP and TCP/UDP fields.
fn dissect(frame: &[u8], at_us: i64) -> Option<Packet> {
    let p = LaxSlicedPacket::from_ethernet(frame).ok()?;
    let (tos, flow, ip_payload) = match p.net? {
        LaxNetSlice::Ipv4(v4) => {
            let h = v4.header();
            let tos = (h.dcp().value() << 2) | h.ecn().value();
            let payload = u64::from(h.total_len()) - 4 * u64::from(h.ihl());
            (tos, None, payload)
        }
        LaxNetSlice::Ipv6(v6) => {
            let h = v6.header();
            let flow = Some(h.flow_label().value());
            (h.traffic_class(), flow, u64::from(h.payload_length()))
        }
        LaxNetSlice::Arp(_) => return None,
    };
    let packet = |udp, src, dst, len, syn, mss| Packet {
        tos,
        flow,
        udp,
        src,
        dst,
        len,
        syn,
        mss,
        at_us,
    };
    match p.transport? {
        TransportSlice::Tcp(t) => {
            let mss = t.options_iterator().find_map(|o| match o {
                Ok(TcpOptionElement::MaximumSegmentSize(m)) => Some(m),
                _ => None,
            });
            let len = ip_payload - 4 * u64::from(t.data_offset());
            Some(packet(
                false,
                t.source_port(),
                t.destination_port(),
                len,
                t.syn(),
                mss,
            ))
        }
        TransportSlice::Udp(u) => {
            let len = u64::from(u.length()).saturating_sub(8);
            Some(packet(
                true,
                u.source_port(),
                u.destination_port(),
                len,
                false,
                None,
            ))
        }
        _ => None,
    }
}

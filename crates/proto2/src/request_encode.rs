//! The client's side of [`TestRequest`]: the header a client writes for a
//! request (§4's option-to-header matrix), so that what a client sends and what
//! a server reads are one mapping, tested as a round trip.
//!
//! Not every request survives the wire: `-X` sets VERSION2, under which VERSION1
//! no longer asks for a legacy dual test, so `-X` with `-d`/`-r` reads back as a
//! normal test; a transfer id is not sent with `-d`/`-r` for the same reason.

use crate::base::BaseHeader;
use crate::fields::{Amount, Version};
use crate::flags::{BaseFlags, LowerFlags, UpperFlags};
use crate::request::{Mode, TestEnd, TestRequest};
use crate::tcp_header::{StartBlock, TcpTestHeader};
use crate::udp_header::{IsochFrame, UdpTestHeader};

/// The shared fields for a request; `dest_port` fills the port word when no
/// connect-back port applies, as clients do.
fn base_for(req: &TestRequest, version: Version, dest_port: u16) -> BaseHeader {
    let mut flags = BaseFlags(BaseFlags::EXTEND);
    let mut upper = 0u16;
    let mut port = u32::from(dest_port);
    match req.mode {
        Mode::Normal => {}
        Mode::Reverse => {
            flags = flags.with(BaseFlags::VERSION2);
            upper |= UpperFlags::REVERSE;
        }
        Mode::FullDuplex => {
            flags = flags.with(BaseFlags::VERSION2);
            upper |= UpperFlags::FULLDUPLEX;
        }
        Mode::Dual { port: p } => {
            flags = flags.with(BaseFlags::VERSION1 | BaseFlags::RUN_NOW);
            port = u32::from(p);
        }
        Mode::Tradeoff { port: p } => {
            flags = flags.with(BaseFlags::VERSION1);
            port = u32::from(p);
        }
    }
    let legacy = matches!(req.mode, Mode::Dual { .. } | Mode::Tradeoff { .. });
    let mut num_threads = req.streams;
    if let (Some(id), false) = (req.transfer_id, legacy) {
        flags = flags.with(BaseFlags::VERSION1);
        num_threads = 0x8000_0000 | (u32::from(id) << 20 & 0xFFF0_0000) | (req.streams & 0xF_FFFF);
    }
    if req.peer_detect {
        flags = flags.with(BaseFlags::PEERDETECT | BaseFlags::VERSION2);
    }
    for (on, bit) in [
        (req.trip_times, UpperFlags::TRIPTIME),
        (req.isochronous, UpperFlags::ISOCH),
        (req.write_prefetch.is_some(), UpperFlags::WRITEPREFETCH),
        (req.quickack, UpperFlags::TCPQUICKACK),
        (req.periodic_burst || req.l4s, UpperFlags::PERIODICBURST),
        (req.txstart.is_some(), UpperFlags::EPOCH_START),
        (req.fq_rate.is_some(), UpperFlags::FQRATESET),
        (req.rate_is_pps, UpperFlags::UNITS_PPS),
        (req.no_udp_fin, UpperFlags::NOUDPFIN),
    ] {
        if on {
            upper |= bit;
        }
    }
    let amount = match req.end {
        TestEnd::Time(d) => Amount::time(d),
        TestEnd::Bytes(n) => Amount::bytes(n),
    };
    BaseHeader {
        flags,
        num_threads,
        port,
        buf_len: req.buf_len.unwrap_or(0),
        win_band: req.win_band,
        amount,
        upper: UpperFlags(upper),
        lower: if req.barrier_us.is_some() {
            LowerFlags(LowerFlags::BARRIER_TIME)
        } else {
            LowerFlags::default()
        },
        version,
        tos: u16::from(req.tos),
        rate: req.rate,
        write_prefetch: req.write_prefetch.unwrap_or(0),
        barrier_us: req.barrier_us.unwrap_or(0),
    }
}

impl TestRequest {
    /// The TCP header a client sends for this request. Trip-times and txstart
    /// share the start block; the txstart epoch wins when both are set.
    pub fn tcp_header(&self, version: Version, dest_port: u16) -> TcpTestHeader {
        let base = base_for(self, version, dest_port);
        let start = self.txstart.or(self.trip_start);
        let start =
            // 2.2.1 sends the start block with frames too (its header is 80
            // bytes long then).
            (self.trip_times || self.isochronous || self.txstart.is_some() || self.fq_rate.is_some())
                .then(|| {
                StartBlock {
                    start: start.unwrap_or_default(),
                    fq_rate: self.fq_rate.unwrap_or(0),
                }
            });
        TcpTestHeader {
            base,
            start,
            isoch: self.isoch_settings,
            cca: self.cca.as_ref().map(|c| c.as_bytes().to_vec()),
            permit_key: self.permit_key.clone(),
        }
    }

    /// The UDP header a client repeats in every datagram for this request
    /// (SEQNO64B always; UDPTESTS with the per-datagram options, -R and full
    /// duplex, which also implies no FIN).
    pub fn udp_header(&self, version: Version, dest_port: u16) -> UdpTestHeader {
        let mut base = base_for(self, version, dest_port);
        base.flags = base.flags.with(BaseFlags::SEQNO64B);
        if self.mode == Mode::FullDuplex {
            base.upper = base.upper.with(UpperFlags::NOUDPFIN);
        }
        let stateless = self.trip_times
            || self.isochronous
            || base.upper.has(UpperFlags::NOUDPFIN)
            || self.l4s
            || self.fq_rate.is_some()
            || self.txstart.is_some()
            || matches!(self.mode, Mode::Reverse | Mode::FullDuplex);
        if stateless {
            base.flags = base.flags.with(BaseFlags::UDPTESTS);
        }
        UdpTestHeader {
            base,
            // The frame fields are the sender's to fill per datagram.
            isoch: self.isochronous.then(IsochFrame::default),
            start: (self.trip_times || self.txstart.is_some())
                .then(|| self.txstart.or(self.trip_start).unwrap_or_default()),
            fq_rate: self.fq_rate,
            settings: self.isoch_settings,
        }
    }
}

/// A UDP `-b` value as the user gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UdpRate {
    /// Bits per second.
    BitsPerSec(u64),
    /// `-b Npps`.
    PacketsPerSec(u64),
}

/// The rate a UDP client puts in its header: bits per second as given; for
/// packets per second the raw count in a normal test (the server ignores it),
/// but N·8·len bits/s when the server sends (-R, full duplex, -d, -r), since it
/// must pace with it (100pps of 1470 bytes → 1 176 000).
pub fn udp_rate_on_wire(rate: UdpRate, mode: Mode, datagram_len: u32) -> u64 {
    match rate {
        UdpRate::BitsPerSec(b) => b,
        UdpRate::PacketsPerSec(n) if mode == Mode::Normal => n,
        UdpRate::PacketsPerSec(n) => n.saturating_mul(8 * u64::from(datagram_len)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §2.3 and §11: 1000pps raw in a normal test; 100pps·1470 as 0x0011F1C0
    /// when the server paces.
    #[test]
    fn pps_on_the_wire() {
        let pps = |n| UdpRate::PacketsPerSec(n);
        assert_eq!(udp_rate_on_wire(pps(1000), Mode::Normal, 1470), 1000);
        assert_eq!(udp_rate_on_wire(pps(100), Mode::Reverse, 1470), 0x0011_F1C0);
        assert_eq!(
            udp_rate_on_wire(pps(100), Mode::FullDuplex, 1470),
            0x0011_F1C0
        );
        assert_eq!(
            udp_rate_on_wire(pps(100), Mode::Dual { port: 1 }, 1470),
            0x0011_F1C0
        );
        assert_eq!(
            udp_rate_on_wire(pps(u64::MAX), Mode::Tradeoff { port: 1 }, 1470),
            u64::MAX
        );
        let bits = UdpRate::BitsPerSec(1 << 20);
        assert_eq!(udp_rate_on_wire(bits, Mode::Reverse, 1470), 1 << 20);
    }
}

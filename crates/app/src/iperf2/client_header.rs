//! What an iperf 2 TCP client puts on the wire before its data: the request
//! its test header carries (2.2.1's layout), and the header ack an `-X` client
//! waits for, read under an absolute deadline and never past its end.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

use rperf3_proto2::{HeaderAck, IsochSettings, Mode, StatPair, TestEnd, TestRequest, Transport};

use super::config::{Client2, Common2, End2, Mode2, Rate2};

/// The request the client's headers carry.
pub(crate) fn request(cl: &Client2, c: &Common2, len: u32) -> TestRequest {
    let mode = match cl.mode {
        Mode2::Normal => Mode::Normal,
        Mode2::Reverse => Mode::Reverse,
        Mode2::FullDuplex => Mode::FullDuplex,
        Mode2::Dual => Mode::Dual {
            port: cl.listen_port.unwrap_or(c.port),
        },
        Mode2::Tradeoff => Mode::Tradeoff {
            port: cl.listen_port.unwrap_or(c.port),
        },
    };
    let stamped = matches!(cl.mode, Mode2::Normal | Mode2::Reverse | Mode2::FullDuplex);
    TestRequest {
        transport: Transport::Tcp,
        end: match cl.end {
            End2::Time(d) => TestEnd::Time(d),
            End2::Bytes(n) => TestEnd::Bytes(n),
        },
        mode,
        streams: cl.parallel.max(1),
        transfer_id: None,
        rate: rate_bps(cl.rate, len),
        rate_is_pps: false,
        buf_len: c.len,
        win_band: 0,
        tos: c.tos.unwrap_or(0),
        peer_version: None,
        wants_ack: false,
        peer_detect: cl.peer_detect,
        // Bursts with write stamps and frames go both ways on the test's
        // own connection (not on a -d/-r connection back), with the start
        // block, as 2.2.1's do.
        trip_times: c.trip_times && stamped,
        trip_start: ((c.trip_times || cl.isoch.is_some()) && stamped).then(wall_now),
        txstart: None,
        skewed_start: false,
        isochronous: cl.isoch.is_some() && stamped,
        // A server that sends (-R, full duplex) reads its frames from the
        // settings block; 2.2.1's TCP client leaves the gap between a
        // frame's writes out of it.
        isoch_settings: cl
            .isoch
            .filter(|_| matches!(cl.mode, Mode2::Reverse | Mode2::FullDuplex))
            .map(|i| IsochSettings {
                burst_ipg: StatPair::default(),
                ..i.wire_settings()
            }),
        no_udp_fin: false,
        seq64: false,
        small_trip_times: false,
        fq_rate: None,
        write_prefetch: None,
        barrier_us: None,
        // The server reads when the client sends (not for -R).
        quickack: c.tcp_quickack && cl.mode != Mode2::Reverse,
        periodic_burst: false,
        l4s: false,
        cca: None,
        permit_key: c.permit_key.as_ref().map(|k| k.as_bytes().to_vec()),
    }
}

/// The wall clock as a stamp.
pub(crate) fn wall_now() -> rperf3_proto2::Timeval {
    rperf3_proto2::Timeval::from_since_epoch(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

/// `-b` in bits per second; TCP packets per second are writes of `len` bytes.
pub(crate) fn rate_bps(r: Option<Rate2>, len: u32) -> u64 {
    match r {
        None => 0,
        Some(Rate2::Bits(b)) => b,
        Some(Rate2::Packets(n)) => n.saturating_mul(u64::from(len) * 8),
    }
}

/// Reads the header ack before `deadline`: exactly its bytes, so the data of a
/// reverse test that follows stays in the socket.
pub(crate) fn read_ack(mut s: &TcpStream, deadline: Instant) -> Result<HeaderAck, String> {
    let mut buf = Vec::with_capacity(rperf3_proto2::ACK_LEN_TIMES);
    let mut need = 8;
    loop {
        match HeaderAck::decode(&buf) {
            Ok(Some(a)) => return Ok(a),
            Ok(None) if buf.len() >= 8 => {
                need = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
            }
            Ok(None) => {}
            Err(e) => return Err(format!("ERROR: peer detect: {e}")),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("ERROR: peer detect: no header ack from the server in time".into());
        }
        s.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        let mut chunk = vec![0u8; need - buf.len()];
        match s.read(&mut chunk) {
            Ok(0) => return Err("ERROR: peer detect: server closed before its header ack".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(format!("ERROR: peer detect: {e}")),
        }
    }
}

/// An OS error's text without Rust's " (os error N)" suffix, as iperf 2 prints it.
pub(crate) fn os_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf2::config::Input2;
    use rperf3_proto2::{classify_tcp, Decoded, RequestLimits, TcpStart, Timeval};
    use rperf3_proto2::{Layout, VERSION_2_2_1};
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Duration;

    fn client(mode: Mode2, end: End2) -> Client2 {
        Client2 {
            host: "127.0.0.1".into(),
            end,
            parallel: 2,
            rate: Some(Rate2::Bits(50_000_000)),
            mode,
            listen_port: Some(6001),
            compat: false,
            peer_detect: false,
            no_udp_fin: false,
            input: Input2::Pattern,
            sync_transfer_id: false,
            txstart: None,
            txdelay: None,
            connect_only: None,
            incr_dstport: false,
            bounceback: None,
            isoch: None,
        }
    }

    /// What our client writes is what a server (ours, by the same decoder as
    /// the spec's captures) reads back: modes, amount, rate, -P, -L.
    #[test]
    fn the_header_reads_back_as_the_request() {
        let c = Common2::default();
        let now = Timeval { sec: 1, usec: 0 };
        for (mode, want) in [
            (Mode2::Normal, Mode::Normal),
            (Mode2::Reverse, Mode::Reverse),
            (Mode2::FullDuplex, Mode::FullDuplex),
            (Mode2::Dual, Mode::Dual { port: 6001 }),
            (Mode2::Tradeoff, Mode::Tradeoff { port: 6001 }),
        ] {
            let cl = client(mode, End2::Bytes(1 << 20));
            let h = request(&cl, &c, 131072)
                .tcp_header(VERSION_2_2_1, 5001)
                .encode(Layout::V2_2_1)
                .unwrap();
            // 2.2.1's plain header is 64 bytes; flags as captured for -R and -d.
            assert_eq!(h.len(), 64);
            let Ok(Decoded::Done {
                value: TcpStart::Test(r),
                len: 64,
            }) = classify_tcp(&h, now, &RequestLimits::default())
            else {
                panic!("{mode:?}");
            };
            assert_eq!(r.mode, want);
            assert_eq!(r.end, TestEnd::Bytes(1 << 20));
            assert_eq!(r.rate, 50_000_000);
            assert_eq!(r.streams, 2);
            assert_eq!(
                r.wants_ack,
                matches!(mode, Mode2::Normal | Mode2::Dual | Mode2::Tradeoff)
            );
        }
        let h = request(
            &client(Mode2::Reverse, End2::Time(Duration::from_secs(1))),
            &c,
            8,
        )
        .tcp_header(VERSION_2_2_1, 5001)
        .encode(Layout::V2_2_1)
        .unwrap();
        assert_eq!(&h[..4], &[0x44, 0x01, 0x00, 0x80]);
        assert_eq!(&h[20..24], &[0xff, 0xff, 0xff, 0x9c]);
    }

    #[test]
    fn pps_on_tcp_is_writes_of_len_bytes() {
        assert_eq!(rate_bps(Some(Rate2::Packets(100)), 1000), 800_000);
        assert_eq!(rate_bps(None, 1000), 0);
    }

    #[test]
    fn the_ack_wait_has_an_absolute_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut srv, _) = l.accept().unwrap();
        // A trickler: one byte of the ack, then nothing.
        srv.write_all(&[0]).unwrap();
        let t = Instant::now();
        let e = read_ack(&c, t + Duration::from_millis(300)).unwrap_err();
        assert_eq!(
            e,
            "ERROR: peer detect: no header ack from the server in time"
        );
        assert!(t.elapsed() < Duration::from_secs(2));
        // A whole ack, in two pieces, with reverse data behind it left unread.
        let ack = HeaderAck {
            version: rperf3_proto2::VERSION_2_1_8,
            times: None,
        }
        .encode();
        let (c, mut srv) = {
            let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            (c, l.accept().unwrap().0)
        };
        srv.write_all(&ack[..5]).unwrap();
        srv.write_all(&ack[5..]).unwrap();
        srv.write_all(b"data").unwrap();
        let a = read_ack(&c, Instant::now() + Duration::from_secs(5)).unwrap();
        assert_eq!(a.version, rperf3_proto2::VERSION_2_1_8);
        let mut rest = [0u8; 4];
        (&c).read_exact(&mut rest).unwrap();
        assert_eq!(&rest, b"data");
    }
}

//! The first-bytes decoder against the protocol notes' observed headers (§3.1,
//! §4, §7.2, §7.3) and against truncated, lying and arbitrary input.

use std::time::Duration;

use proptest::prelude::*;

use crate::tcp_header_tests::PLAIN_221;
use crate::udp_tests::{first_datagram_221, hex, pattern};
use crate::*;

/// The server's clock for these tests: the send time of §11's datagram.
const NOW: Timeval = Timeval {
    sec: 0x6b07_096b,
    usec: 0,
};

fn limits() -> RequestLimits {
    RequestLimits::default()
}

fn tcp(buf: &[u8]) -> Result<(TestRequest, usize), HeaderError> {
    match classify_tcp(buf, NOW, &limits())? {
        Decoded::Done {
            value: TcpStart::Test(r),
            len,
        } => Ok((*r, len)),
        other => panic!("not a test: {other:?}"),
    }
}

fn udp(d: &[u8]) -> Result<TestRequest, HeaderError> {
    match classify_udp(d, NOW, &limits())? {
        UdpStart::Test(r) => Ok(*r),
        UdpStart::Compat => panic!("compat"),
    }
}

/// PLAIN_221 with the flags word, upper flags and then any (offset, bytes).
fn tcp_with(flags: u32, upper: u16, patches: &[(usize, &[u8])]) -> Vec<u8> {
    let mut b = PLAIN_221.to_vec();
    b[..4].copy_from_slice(&flags.to_be_bytes());
    b[32..34].copy_from_slice(&upper.to_be_bytes());
    for (off, bytes) in patches {
        b[*off..*off + bytes.len()].copy_from_slice(bytes);
    }
    b
}

#[test]
fn plain_tcp_requests() {
    let (r, len) = tcp(&PLAIN_221).unwrap();
    assert_eq!(len, 64);
    assert_eq!(r.transport, Transport::Tcp);
    assert_eq!(r.end, TestEnd::Time(Duration::from_secs(1)));
    assert_eq!(
        (r.mode, r.streams, r.rate, r.buf_len),
        (Mode::Normal, 1, 0, None)
    );
    assert_eq!(r.peer_version, Some(VERSION_2_2_1));
    assert!(r.wants_ack && !r.peer_detect && !r.trip_times);
    // 2.1.8: 60 bytes, then its header again as data.
    let mut b218 = tcp_with(0x4001_0078, 0, &[(36, &[0, 2, 0, 1, 0, 8, 0, 3])]);
    b218.truncate(60);
    b218.extend_from_slice(&b218.clone());
    let (r, len) = tcp(&b218).unwrap();
    assert_eq!((len, r.peer_version), (60, Some(VERSION_2_1_8)));
}

/// §4's option matrix, read back.
#[test]
fn modes_from_observed_words() {
    let (r, _) = tcp(&tcp_with(0x4401_0080, 0x0400, &[])).unwrap();
    assert_eq!((r.mode, r.wants_ack), (Mode::Reverse, false));
    let (r, _) = tcp(&tcp_with(0x4401_0080, 0x0800, &[])).unwrap();
    assert_eq!((r.mode, r.wants_ack), (Mode::FullDuplex, false));
    let (r, _) = tcp(&tcp_with(0x4601_0080, 0, &[])).unwrap();
    assert_eq!(
        (r.mode, r.wants_ack, r.peer_detect),
        (Mode::Normal, true, true)
    );
    let lport = 20031u32.to_be_bytes();
    let (r, _) = tcp(&tcp_with(0xC001_0081, 0, &[(8, &lport)])).unwrap();
    assert_eq!((r.mode, r.wants_ack), (Mode::Dual { port: 20031 }, true));
    let (r, _) = tcp(&tcp_with(0xC001_0080, 0, &[(8, &lport)])).unwrap();
    assert_eq!(r.mode, Mode::Tradeoff { port: 20031 });
    // Without VERSION2 the upper direction bits mean nothing.
    let (r, _) = tcp(&tcp_with(0x4001_0080, 0x0400, &[])).unwrap();
    assert_eq!(r.mode, Mode::Normal);
    assert_eq!(
        tcp(&tcp_with(0x4401_0080, 0x0C00, &[])),
        Err(HeaderError::ConflictingModes)
    );
    for port in [0u32, 70_000] {
        assert_eq!(
            tcp(&tcp_with(0xC001_0081, 0, &[(8, &port.to_be_bytes())])),
            Err(HeaderError::BadPort(port))
        );
    }
    // 2.2.1 --sync-transfer-id: VERSION1 with bit 31 of numThreads is no dual test.
    let (r, _) = tcp(&tcp_with(0xC001_0080, 0, &[(4, &hex("80100001"))])).unwrap();
    assert_eq!(
        (r.mode, r.streams, r.transfer_id),
        (Mode::Normal, 1, Some(1))
    );
}

#[test]
fn amounts_rates_lengths_tos() {
    let (r, _) = tcp(&tcp_with(0x4001_0080, 0, &[(20, &hex("00100000"))])).unwrap();
    assert_eq!(r.end, TestEnd::Bytes(1 << 20));
    let (r, _) = tcp(&tcp_with(
        0x4001_0080,
        0,
        &[(48, &hex("80000000 00000200"))],
    ))
    .unwrap();
    assert_eq!(r.rate, 10 << 30);
    let (r, _) = tcp(&tcp_with(
        0x4001_0080,
        0,
        &[(12, &hex("00002000")), (46, &[0, 0x20])],
    ))
    .unwrap();
    assert_eq!((r.buf_len, r.tos), (Some(8192), 0x20));
    let (r, _) = tcp(&tcp_with(0x4001_0080, 0, &[(4, &[0; 4])])).unwrap();
    assert_eq!(r.streams, 1);
    let (r, _) = tcp(&tcp_with(0x4001_0080, 0xC000, &[(56, &hex("00010000"))])).unwrap();
    assert_eq!((r.write_prefetch, r.quickack), (Some(65536), true));
}

/// Absurd counts are refused with the value named, before anything is sized
/// from them.
#[test]
fn absurd_counts_are_refused() {
    assert_eq!(
        tcp(&tcp_with(0x4001_0080, 0, &[(4, &hex("7fffffff"))])),
        Err(HeaderError::TooManyStreams {
            streams: 0x7FFF_FFFF,
            max: 256
        })
    );
    assert_eq!(
        tcp(&tcp_with(0x4001_0080, 0, &[(12, &hex("ffffffff"))])),
        Err(HeaderError::BufLenTooLarge {
            len: u32::MAX,
            max: 16 << 20
        })
    );
    let e = tcp(&tcp_with(0x4001_0080, 0, &[(4, &hex("00001000"))])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "4096 parallel streams requested, more than the limit of 256"
    );
    let mut d = first_datagram_221();
    d[28..32].copy_from_slice(&hex("00011170"));
    assert_eq!(
        udp(&d),
        Err(HeaderError::BufLenTooLarge {
            len: 70_000,
            max: 65_535
        })
    );
}

#[test]
fn trip_times_and_txstart_against_the_clock() {
    let start = |t: Timeval| [t.sec.to_be_bytes(), t.usec.to_be_bytes()].concat();
    let near = Timeval {
        sec: NOW.sec - 599,
        usec: 0,
    };
    let far = Timeval {
        sec: NOW.sec + 601,
        usec: 0,
    };
    let mut h = tcp_with(0x4001_00A0, UpperFlags::TRIPTIME, &[]);
    h.resize(80, 0);
    h[64..72].copy_from_slice(&start(near));
    let (r, len) = tcp(&h).unwrap();
    assert_eq!(
        (len, r.trip_times, r.trip_start, r.skewed_start),
        (80, true, Some(near), false)
    );
    h[64..72].copy_from_slice(&start(far));
    let (r, _) = tcp(&h).unwrap();
    assert_eq!(
        (r.trip_times, r.trip_start, r.skewed_start),
        (false, None, true)
    );
    h[32..34].copy_from_slice(&UpperFlags::EPOCH_START.to_be_bytes());
    let (r, _) = tcp(&h).unwrap();
    assert_eq!((r.txstart, r.skewed_start), (Some(far), false));
}

#[test]
fn other_tcp_starts() {
    let bb = hex("00800000 00000064");
    assert_eq!(
        classify_tcp(&bb, NOW, &limits()),
        Ok(Decoded::Done {
            value: TcpStart::Bounceback,
            len: 0
        })
    );
    // Compat clients and legacy connect-backs send data from the first byte.
    assert_eq!(
        classify_tcp(&pattern(100), NOW, &limits()),
        Ok(Decoded::Done {
            value: TcpStart::Compat,
            len: 0
        })
    );
    assert_eq!(
        classify_tcp(&PLAIN_221[..3], NOW, &limits()),
        Ok(Decoded::NeedMore { need: 4 })
    );
    assert_eq!(
        classify_tcp(&PLAIN_221[..30], NOW, &limits()),
        Ok(Decoded::NeedMore { need: 64 })
    );
    let mut keyed = TcpTestHeader::decode(&PLAIN_221)
        .map(|d| match d {
            Decoded::Done { value, .. } => value,
            _ => unreachable!(),
        })
        .unwrap();
    keyed.permit_key = Some(b"secret".to_vec());
    keyed.cca = Some(b"cubic".to_vec());
    let b = keyed.encode(Layout::V2_2_1).unwrap();
    let (r, len) = tcp(&b).unwrap();
    assert_eq!(len, b.len());
    assert_eq!(
        (r.permit_key.as_deref(), r.cca.as_deref()),
        (Some(&b"secret"[..]), Some("cubic"))
    );
}

#[test]
fn udp_requests() {
    let r = udp(&first_datagram_221()).unwrap();
    assert_eq!(r.transport, Transport::Udp);
    assert_eq!(r.end, TestEnd::Time(Duration::from_secs(1)));
    assert_eq!(
        (r.mode, r.rate, r.seq64, r.no_udp_fin),
        (Mode::Normal, 1000, true, false)
    );
    assert_eq!(
        (r.streams, r.peer_version, r.wants_ack),
        (1, Some(VERSION_2_2_1), false)
    );
    // §7.2: --full-duplex 0x6C0100A0 with upper 0x0808; -d 0xC80100A1.
    let mut d = first_datagram_221();
    d[16..20].copy_from_slice(&hex("6c0100a0"));
    d[48..50].copy_from_slice(&hex("0808"));
    let r = udp(&d).unwrap();
    assert_eq!((r.mode, r.no_udp_fin), (Mode::FullDuplex, true));
    let mut d = first_datagram_221();
    d[16..20].copy_from_slice(&hex("c80100a1"));
    assert_eq!(udp(&d).unwrap().mode, Mode::Dual { port: 20040 });
    // Trip-times: the start time at 112, past the announced length.
    let mut d = first_datagram_221();
    d[16..20].copy_from_slice(&hex("680100e0"));
    d[48..50].copy_from_slice(&UpperFlags::TRIPTIME.to_be_bytes());
    d[112..120].copy_from_slice(&hex("6b07096b 000109b8"));
    let r = udp(&d).unwrap();
    assert_eq!(
        r.trip_start,
        Some(Timeval {
            sec: 0x6b07_096b,
            usec: 0x109b8
        })
    );
}

#[test]
fn udp_ends_and_odd_starts() {
    let mut fin = first_datagram_221();
    fin[..4].copy_from_slice(&hex("fffffc16"));
    fin[12..16].fill(0xFF);
    assert_eq!(udp(&fin), Err(HeaderError::StaleFin(-1002)));
    assert_eq!(
        classify_udp(&[0; 15], NOW, &limits()),
        Err(HeaderError::Truncated { have: 15, need: 16 })
    );
    let mut compat = pattern(200);
    compat[..4].copy_from_slice(&[0, 0, 0, 1]);
    assert_eq!(classify_udp(&compat, NOW, &limits()), Ok(UdpStart::Compat));
    assert_eq!(
        classify_udp(&compat[..18], NOW, &limits()),
        Ok(UdpStart::Compat)
    );
    let mut cut = first_datagram_221();
    cut.truncate(30);
    assert_eq!(
        udp(&cut),
        Err(HeaderError::Truncated { have: 30, need: 40 })
    );
}

/// §7.3: a 2.1.8 small header's pattern is no start epoch (a 2.2.1 server
/// reads it as one); the send time starts trip-times.
#[test]
fn small_trip_times_requests() {
    let mut d = pattern(64);
    d[..16].copy_from_slice(&first_datagram_221()[..16]);
    SmallTripTimes::default().encode(Layout::V2_1_8, &mut d);
    let r = udp(&d).unwrap();
    assert!(r.small_trip_times && r.trip_times && !r.seq64);
    assert_eq!(
        r.trip_start,
        Some(Timeval {
            sec: 0x6b07_096b,
            usec: 0x109b8
        })
    );
    assert_eq!((r.txstart, r.skewed_start), (None, true));
    SmallTripTimes::default().encode(Layout::V2_2_1, &mut d);
    let r = udp(&d).unwrap();
    assert_eq!((r.txstart, r.skewed_start), (None, false));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// Arbitrary first bytes: no panic; more bytes are asked for only up to the
    /// protocol's bound, and a complete header never claims more than it got.
    #[test]
    fn arbitrary_first_bytes(b in proptest::collection::vec(any::<u8>(), 0..400), now in any::<(u32, u32)>()) {
        let now = Timeval { sec: now.0, usec: now.1 };
        match classify_tcp(&b, now, &limits()) {
            Ok(Decoded::NeedMore { need }) => prop_assert!(need > b.len() && need <= 255 + MAX_PERMIT_KEY),
            Ok(Decoded::Done { len, .. }) => prop_assert!(len <= b.len()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        if let Ok(UdpStart::Test(r)) = classify_udp(&b, now, &limits()) {
            prop_assert!(r.streams >= 1 && r.streams <= 256);
        }
    }

    /// A header arriving in any two pieces gives the same request as whole.
    #[test]
    fn split_delivery(cut in 0usize..=74) {
        let mut h = TcpTestHeader::decode(&PLAIN_221).map(|d| match d {
            Decoded::Done { value, .. } => value,
            _ => unreachable!(),
        }).unwrap();
        h.permit_key = Some(b"12345678".to_vec());
        let b = h.encode(Layout::V2_2_1).unwrap();
        let whole = classify_tcp(&b, NOW, &limits()).unwrap();
        match classify_tcp(&b[..cut], NOW, &limits()).unwrap() {
            Decoded::NeedMore { need } => prop_assert!(cut < b.len() && need > cut && need <= b.len()),
            done => prop_assert_eq!(done, whole),
        }
    }
}

/// Requests a client can express, with stamps near `NOW` so the server's
/// clock checks pass.
fn any_request(transport: Transport) -> impl Strategy<Value = TestRequest> {
    let udp = transport == Transport::Udp;
    let mode = prop_oneof![
        Just(Mode::Normal),
        Just(Mode::Reverse),
        Just(Mode::FullDuplex),
        (1u16..).prop_map(|port| Mode::Dual { port }),
        (1u16..).prop_map(|port| Mode::Tradeoff { port }),
    ];
    let end = prop_oneof![
        (1u64..=1 << 31).prop_map(|t| TestEnd::Time(Duration::from_millis(t * 10))),
        (0u64..1 << 31).prop_map(TestEnd::Bytes),
    ];
    let pair = || (any::<i32>(), 0i32..1_000_000).prop_map(|(int, frac)| StatPair { int, frac });
    let settings = (pair(), pair(), pair(), pair())
        .prop_map(|(fps, mean, variance, burst_ipg)| IsochSettings {
            fps,
            mean,
            variance,
            burst_ipg,
        })
        .prop_filter("a zero block reads as absent", |s| !s.is_zero());
    let near = |skew: u32| {
        (0..2 * skew, 0u32..1_000_000).prop_map(move |(d, usec)| Timeval {
            sec: NOW.sec - skew + d,
            usec,
        })
    };
    let max_len: u32 = if udp { 65_535 } else { 16 << 20 };
    (
        (
            mode,
            end,
            1u32..=256,
            proptest::option::of(0u16..0x800),
            0..=MAX_RATE,
            any::<bool>(),
        ),
        (
            proptest::option::of(1..=max_len),
            any::<u32>(),
            any::<u8>(),
            any::<bool>(),
            proptest::option::of(near(599)),
        ),
        (
            proptest::option::of(near(3599)),
            any::<bool>(),
            proptest::option::of(settings),
            any::<bool>(),
            proptest::option::of(any::<u64>()),
        ),
        (
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<u32>()),
            any::<[bool; 3]>(),
        ),
        (
            proptest::option::of("[a-z0-9]{0,40}"),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 1..=MAX_PERMIT_KEY)),
        ),
    )
        .prop_map(move |(a, b, c, d, e)| {
            let (mode, end, streams, transfer_id, rate, rate_is_pps) = a;
            let (buf_len, win_band, tos, peer_detect, trip) = b;
            let (txstart, isochronous, isoch_settings, no_fin, fq_rate) = c;
            let (write_prefetch, barrier_us, [quickack, burst, l4s]) = d;
            let (cca, permit_key) = e;
            let legacy = matches!(mode, Mode::Dual { .. } | Mode::Tradeoff { .. });
            let trip_times = trip.is_some();
            // Trip-times and txstart share one start stamp.
            let txstart = if trip_times {
                txstart.and(trip)
            } else {
                txstart
            };
            let mut r = TestRequest {
                transport,
                end,
                mode,
                streams,
                transfer_id: transfer_id.filter(|_| !legacy),
                rate,
                rate_is_pps,
                buf_len,
                win_band,
                tos,
                peer_version: Some(VERSION_2_2_1),
                wants_ack: false,
                // -X sets VERSION2, which makes VERSION1 no legacy dual test.
                peer_detect: peer_detect && !legacy,
                trip_times,
                trip_start: trip,
                txstart,
                skewed_start: false,
                isochronous,
                isoch_settings,
                no_udp_fin: udp && (no_fin || mode == Mode::FullDuplex),
                seq64: udp,
                small_trip_times: false,
                fq_rate,
                write_prefetch,
                barrier_us,
                quickack,
                periodic_burst: !udp && burst,
                l4s: udp && l4s,
                cca: cca.filter(|_| !udp),
                permit_key: permit_key.filter(|_| !udp),
            };
            if !udp {
                let h = r.tcp_header(VERSION_2_2_1, 5001);
                r.wants_ack = ack_expected(
                    h.encode(Layout::V2_2_1)
                        .map(|b| BaseFlags(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
                        .unwrap(),
                );
            }
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// What a client writes for a request, a server reads back as that request.
    #[test]
    fn tcp_requests_round_trip(req in any_request(Transport::Tcp)) {
        let bytes = req.tcp_header(VERSION_2_2_1, 5001).encode(Layout::V2_2_1).unwrap();
        let (back, len) = tcp(&bytes).unwrap();
        prop_assert_eq!(len, bytes.len());
        prop_assert_eq!(back, req);
    }

    #[test]
    fn udp_requests_round_trip(req in any_request(Transport::Udp), extra in 0usize..64) {
        let h = req.udp_header(VERSION_2_2_1, 5001);
        let mut d = pattern(h.extent(Layout::V2_2_1) + extra);
        DatagramHeader { seq: 1, sent: NOW }.encode(&mut d, true).unwrap();
        h.encode(Layout::V2_2_1, &mut d);
        prop_assert_eq!(udp(&d).unwrap(), req);
    }
}

//! Golden bytes from the protocol notes' UDP captures (§7, §11) and properties
//! of the UDP header, small trip-times header and server report codecs.

use std::time::Duration;

use proptest::prelude::*;

use crate::*;

/// Bytes from a dump written as hex words (spaces and newlines ignored).
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// The byte pattern 2.2.1 puts in its buffer: '0' + index mod 10.
pub(crate) fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'0' + (i % 10) as u8).collect()
}

/// §11: the first datagram of `-u -t 1 -b 1000pps` from 2.2.1 (1470 bytes):
/// header words, zeros up to 0x9f, then the pattern from offset 160.
pub(crate) fn first_datagram_221() -> Vec<u8> {
    let mut d = pattern(1470);
    let head = hex("00000001 6b07096b 000109b8 00000000
         480100a0 00000001 00004e48 00000000 00000000 ffffff9c
         00000000 00000000
         0000 0000 00020002 00010001 0000 0000
         000003e8 00000000");
    d[..head.len()].copy_from_slice(&head);
    d[head.len()..160].fill(0);
    d
}

/// §11: the server report of a 2.2.1 server with `-e` (128-byte payload).
const REPORT_221_E: &str = "
    00000000 00000000 00000000 00000000
    c8000000 00000000 00167f6a 00000001
    00000434 00000000 00000000 000003eb
    00000000 00000001 00000000 00000002
    00000000 0000000e 00000000 000014fd
    00000000 00000005 00000f63 000bb9cf
    00000000 00000000 000003eb 000003e9
    00000001 00000000 00000000 00000000";

#[test]
fn golden_first_datagram() {
    let d = first_datagram_221();
    let h = UdpTestHeader::decode(&d).unwrap();
    assert_eq!(h.base.flags, BaseFlags(0x4801_00A0));
    assert_eq!(udp_layout_of_len(80), Layout::V2_2_1);
    assert_eq!(
        (h.base.num_threads, h.base.port, h.base.buf_len),
        (1, 20040, 0)
    );
    assert_eq!(h.base.amount, Amount::Ticks(100));
    assert_eq!(h.base.version, VERSION_2_2_1);
    assert_eq!(h.base.rate, 1000); // raw pps in a normal test
    assert_eq!(
        (h.isoch, h.start, h.fq_rate, h.settings),
        (None, None, None, None)
    );
    // Encoding the decoded header over the datagram's own bytes changes nothing.
    let mut again = d.clone();
    assert_eq!(h.encode(Layout::V2_2_1, &mut again), 80);
    assert_eq!(again, d);
    let dh = DatagramHeader::decode(&d, true).unwrap();
    assert_eq!(dh.seq, 1);
}

#[test]
fn golden_server_report() {
    let b = hex(REPORT_221_E);
    assert_eq!(b.len(), SERVER_REPORT_LEN);
    let r = ServerReport::decode(&b).unwrap();
    assert!(r.enhanced);
    assert_eq!(r.flags(), BaseFlags(0xC800_0000));
    assert_eq!(r.total_bytes, 1_474_410);
    assert_eq!(r.duration, Duration::from_micros(1_001_076));
    assert_eq!((r.lost, r.out_of_order, r.datagrams), (0, 0, 1003));
    assert_eq!(r.jitter.to_f64(), 0.000001);
    assert_eq!(r.transit.min, StatPair { int: 0, frac: 2 });
    assert_eq!(r.transit.max.to_f64(), 0.000014);
    assert_eq!(r.transit.sum.to_f64(), 0.005373);
    assert_eq!(r.transit.mean.to_f64(), 0.000005);
    assert_eq!(
        r.transit.m2,
        StatPair {
            int: 0xf63,
            frac: 0xbb9cf
        }
    );
    assert_eq!(r.transit.vd, StatPair::default());
    assert_eq!((r.transit.count, r.pps, r.pps_divisor), (1003, 1001, 1));
    assert_eq!(r.encode().to_vec(), b);
}

/// §7.5: the start of a 2.1.8 server's report (`88000000 00000000 001679ac
/// 00000001 00000488`): not enhanced, 1 472 940 bytes (1002 × 1470), 1.001160 s.
#[test]
fn golden_report_prefix_218() {
    let mut b =
        hex("00000000 00000000 00000000 00000000 88000000 00000000 001679ac 00000001 00000488");
    b.resize(SERVER_REPORT_LEN, 0);
    let r = ServerReport::decode(&b).unwrap();
    assert!(!r.enhanced);
    assert_eq!(r.total_bytes, 1002 * 1470);
    assert_eq!(r.duration, Duration::from_micros(1_001_160));
}

/// §7.5: repeats from upstream servers echo the client's late FIN; they are not
/// reports. Short datagrams are not either.
#[test]
fn fin_echo_is_not_a_report() {
    let mut echo = first_datagram_221();
    echo[..4].copy_from_slice(&(-1004i32).to_be_bytes());
    echo[12..16].fill(0xFF);
    assert_eq!(
        ServerReport::decode(&echo[..128]),
        Err(HeaderError::NotAReport(0x4801_00A0))
    );
    let mut b = hex(REPORT_221_E);
    b[16] = 0x48;
    assert_eq!(
        ServerReport::decode(&b),
        Err(HeaderError::NotAReport(0x4800_0000))
    );
    assert_eq!(
        ServerReport::decode(&b[..127]),
        Err(HeaderError::Truncated {
            have: 127,
            need: 128
        })
    );
}

/// §7.5: counts past 32 bits use the high words only with SEQNO64B.
#[test]
fn report_high_words() {
    let r = ServerReport {
        lost: 0x1_0000_0002,
        out_of_order: 3,
        datagrams: 0x2_0000_0004,
        ..ServerReport::default()
    };
    let mut b = r.encode();
    assert_eq!(&b[116..128], &hex("00000001 00000000 00000002")[..]);
    assert_eq!(ServerReport::decode(&b).unwrap(), r);
    b[16..20].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    let narrow = ServerReport::decode(&b).unwrap();
    assert_eq!((narrow.lost, narrow.datagrams), (2, 4));
}

/// §7.2's observed lengths: 2.1.8 puts the isochronous block at 76, 2.2.1 at 80.
#[test]
fn layouts_and_isoch_offsets() {
    let mut h = UdpTestHeader::default();
    h.base.flags = BaseFlags(BaseFlags::EXTEND | BaseFlags::SEQNO64B);
    assert_eq!(h.announced_len(Layout::V2_1_8), 76);
    assert_eq!(h.announced_len(Layout::V2_2_1), 80);
    h.base.upper = UpperFlags(UpperFlags::TRIPTIME);
    h.start = Some(Timeval { sec: 7, usec: 8 });
    assert_eq!(h.announced_len(Layout::V2_1_8), 108);
    assert_eq!(h.announced_len(Layout::V2_2_1), 112);
    let mut d = vec![0u8; 1470];
    h.encode(Layout::V2_2_1, &mut d);
    assert_eq!(&d[16..20], &[0x48, 0x01, 0x00, 0xE0]);
    assert_eq!(&d[112..120], &hex("00000007 00000008")[..]);
    h.encode(Layout::V2_1_8, &mut d);
    assert_eq!(&d[16..20], &[0x48, 0x01, 0x00, 0xD8]);
    h.isoch = Some(IsochFrame {
        period_us: 0xAABB,
        frame_id: 9,
        ..IsochFrame::default()
    });
    let mut d = vec![0u8; 1470];
    h.encode(Layout::V2_1_8, &mut d);
    assert_eq!(&d[76..80], &[0, 0, 0xAA, 0xBB]);
    let back = UdpTestHeader::decode(&d).unwrap();
    assert_eq!((back.isoch, back.base.barrier_us), (h.isoch, 0));
    let mut d = vec![0u8; 1470];
    h.encode(Layout::V2_2_1, &mut d);
    assert_eq!(&d[80..84], &[0, 0, 0xAA, 0xBB]);
    assert_eq!(UdpTestHeader::decode(&d).unwrap().isoch, h.isoch);
    h.settings = Some(IsochSettings::default());
    assert_eq!(h.announced_len(Layout::V2_2_1), 144);
    assert_eq!(h.announced_len(Layout::V2_1_8), 140);
    assert_eq!(h.extent(Layout::V2_2_1), UDP_PATTERN_OFF);
}

/// `-l 64` (fixture udp-64B: real servers run the test): a 64-byte datagram
/// holds the header up to the TOS field; the rest reads as absent.
#[test]
fn header_cut_by_a_short_datagram() {
    let full = first_datagram_221();
    let mut d = full[..64].to_vec();
    d[62..64].copy_from_slice(&[0, 0x20]);
    let h = UdpTestHeader::decode(&d).unwrap();
    assert_eq!(
        (h.base.version, h.base.tos, h.base.rate),
        (VERSION_2_2_1, 0x20, 0)
    );
    let mut out = pattern(64);
    assert_eq!(h.encode(Layout::V2_2_1, &mut out), 80);
    assert_eq!(&out[16..64], &d[16..64]);
    assert_eq!(&out[..16], &pattern(16)[..]);
    assert_eq!(
        UdpTestHeader::decode(&d[..39]),
        Err(HeaderError::Truncated { have: 39, need: 40 })
    );
    let mut liar = d.clone();
    liar[16..20].copy_from_slice(&0x4801_0020u32.to_be_bytes()); // announces 16 bytes
    assert_eq!(
        UdpTestHeader::decode(&liar),
        Err(HeaderError::TooShort { len: 16, min: 40 })
    );
}

/// §7.3: 2.1.8's small header is the marker then pattern from 20; 2.2.1's has a
/// start time at 20 and the pattern from 28. Compat "6789" is not one.
#[test]
fn small_trip_times() {
    let mut d218 = pattern(64);
    d218[..16].fill(0);
    let s = SmallTripTimes::default();
    assert_eq!(s.encode(Layout::V2_1_8, &mut d218), 20);
    assert_eq!(&d218[16..24], &hex("00020000 30313233")[..]);
    let got = SmallTripTimes::decode(&d218).unwrap();
    assert_eq!(
        got.txstart,
        Timeval {
            sec: 0x3031_3233,
            usec: 0x3435_3637
        }
    );
    let mut d221 = pattern(64);
    let s = SmallTripTimes {
        txstart: Timeval { sec: 5, usec: 6 },
    };
    assert_eq!(s.encode(Layout::V2_2_1, &mut d221), 28);
    assert_eq!(&d221[16..28], &hex("00020000 00000005 00000006")[..]);
    assert_eq!(&d221[28..30], b"89");
    assert_eq!(SmallTripTimes::decode(&d221), Some(s));
    let compat = pattern(64); // "6789" at 16 has the SMALLTT bit set
    assert!(BaseFlags(0x3637_3839).has(BaseFlags::SMALLTT));
    assert_eq!(SmallTripTimes::decode(&compat), None);
    assert_eq!(SmallTripTimes::decode(&d221[..19]), None);
    assert_eq!(
        SmallTripTimes::decode(&d221[..20]),
        Some(SmallTripTimes::default())
    );
    assert_eq!(s.encode(Layout::V2_2_1, &mut [0u8; 10]), 28);
}

fn any_udp_header() -> impl Strategy<Value = (UdpTestHeader, Layout)> {
    let pair = || any::<(i32, i32)>().prop_map(|(int, frac)| StatPair { int, frac });
    let settings = (pair(), pair(), pair(), pair()).prop_map(|(fps, mean, variance, burst_ipg)| {
        IsochSettings {
            fps,
            mean,
            variance,
            burst_ipg,
        }
    });
    let frame = any::<[u32; 7]>().prop_map(|w| IsochFrame {
        period_us: w[0],
        start: Timeval {
            sec: w[1],
            usec: w[2],
        },
        prev_frame_id: w[3],
        frame_id: w[4],
        burst_size: w[5],
        remaining: w[6],
    });
    (
        any::<([u32; 8], [u16; 3], u64)>(),
        proptest::option::of(frame),
        proptest::option::of(any::<(u32, u32)>()),
        proptest::option::of(any::<u64>()),
        proptest::option::of(settings),
        any::<bool>(),
    )
        .prop_map(|((w, h, rate), isoch, start, fq_rate, settings, v218)| {
            let base = BaseHeader {
                flags: BaseFlags(w[0] | BaseFlags::EXTEND),
                num_threads: w[1],
                port: w[2],
                buf_len: w[3],
                win_band: w[4],
                amount: Amount::from_word(w[5]),
                upper: UpperFlags(h[0]),
                lower: LowerFlags(h[1]),
                version: Version::from_words(w[6], w[7]),
                tos: h[2],
                rate: rate & MAX_RATE,
                write_prefetch: w[7],
                barrier_us: if v218 { 0 } else { w[6] },
            };
            let timed = base.upper.0 & (UpperFlags::TRIPTIME | UpperFlags::EPOCH_START) != 0;
            // The flags say whether a start time is there; a reader takes them at
            // their word.
            let start = timed.then(|| {
                start
                    .map(|(sec, usec)| Timeval { sec, usec })
                    .unwrap_or_default()
            });
            let layout = if v218 { Layout::V2_1_8 } else { Layout::V2_2_1 };
            (
                UdpTestHeader {
                    base,
                    isoch,
                    start,
                    fq_rate,
                    settings,
                },
                layout,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// Every header written into a datagram long enough reads back, with the
    /// structural bits the encoder sets.
    #[test]
    fn udp_headers_round_trip((h, layout) in any_udp_header(), extra in 0usize..100) {
        let mut d = pattern(h.extent(layout) + extra);
        let extent = h.encode(layout, &mut d);
        prop_assert_eq!(extent, h.extent(layout));
        let back = UdpTestHeader::decode(&d).unwrap();
        let mut want = h;
        want.base.flags = BaseFlags(u32::from_be_bytes([d[16], d[17], d[18], d[19]]));
        want.base.upper = UpperFlags(u16::from_be_bytes([d[48], d[49]]));
        prop_assert_eq!(back, want);
        prop_assert_eq!(udp_layout_of_len(h.announced_len(layout)), layout);
    }

    #[test]
    fn reports_round_trip(
        counts in any::<[u64; 4]>(), secs in any::<u32>(), usec in 0u32..1_000_000,
        pairs in any::<[(i32, i32); 7]>(), words in any::<[u32; 3]>(), enhanced in any::<bool>(),
    ) {
        let p = |i: usize| StatPair { int: pairs[i].0, frac: pairs[i].1 };
        let r = ServerReport {
            enhanced,
            total_bytes: counts[0],
            duration: Duration::from_secs(u64::from(secs)) + Duration::from_micros(u64::from(usec)),
            lost: counts[1],
            out_of_order: counts[2],
            datagrams: counts[3],
            jitter: p(0),
            transit: TransitStats { min: p(1), max: p(2), sum: p(3), mean: p(4), m2: p(5), vd: p(6), count: words[0] },
            pps: words[1],
            pps_divisor: words[2],
        };
        prop_assert_eq!(ServerReport::decode(&r.encode()), Ok(r));
    }

    /// Arbitrary datagrams into every UDP decoder: no panic, and what decodes
    /// encodes again.
    #[test]
    fn arbitrary_datagrams_never_panic(mut d in proptest::collection::vec(any::<u8>(), 0..200), marker in any::<bool>()) {
        if marker && d.len() >= 20 {
            d[16..20].copy_from_slice(&[0, 2, 0, 0]);
        }
        if let Ok(h) = UdpTestHeader::decode(&d) {
            let layout = udp_layout_of_len(h.base.flags.header_len().unwrap_or(80));
            let mut out = vec![0u8; d.len()];
            h.encode(layout, &mut out);
        }
        if let Some(s) = SmallTripTimes::decode(&d) {
            prop_assert!(d.len() >= 20);
            let mut out = d.clone();
            s.encode(Layout::V2_2_1, &mut out);
            prop_assert_eq!(SmallTripTimes::decode(&out), Some(s).filter(|_| out.len() >= 28).or(SmallTripTimes::decode(&out)));
        }
        if let Ok(r) = ServerReport::decode(&d) {
            prop_assert!(d.len() >= SERVER_REPORT_LEN);
            prop_assert!(ServerReport::decode(&r.encode()).is_ok());
        }
    }
}

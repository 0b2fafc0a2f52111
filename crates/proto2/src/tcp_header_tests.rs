//! Golden bytes from the protocol notes' captures (§3.1, §11) and properties of
//! the TCP header codec.

use proptest::prelude::*;

use crate::*;

/// §11: `-c 127.0.0.1 -p 20011 -t 1` from 2.2.1, the first segment (64 bytes).
pub(crate) const PLAIN_221: [u8; 64] = [
    0x40, 0x01, 0x00, 0x80, 0, 0, 0, 1, 0, 0, 0x4e, 0x2b, 0, 0, 0, 0, //
    0, 0, 0, 0, 0xff, 0xff, 0xff, 0x9c, 0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 2, 0, 2, 0, 1, 0, 1, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

fn plain(version: Version) -> BaseHeader {
    BaseHeader {
        flags: BaseFlags(BaseFlags::EXTEND),
        num_threads: 1,
        port: 20011,
        amount: Amount::Ticks(100),
        version,
        ..BaseHeader::default()
    }
}

fn header(base: BaseHeader) -> TcpTestHeader {
    TcpTestHeader {
        base,
        ..TcpTestHeader::default()
    }
}

fn done(d: Decoded<TcpTestHeader>) -> (TcpTestHeader, usize) {
    match d {
        Decoded::Done { value, len } => (value, len),
        other => panic!("not complete: {other:?}"),
    }
}

#[test]
fn golden_plain_221() {
    let h = header(plain(VERSION_2_2_1));
    assert_eq!(h.encode(Layout::V2_2_1).unwrap(), PLAIN_221);
    let (d, len) = done(TcpTestHeader::decode(&PLAIN_221).unwrap());
    assert_eq!(len, 64);
    assert_eq!(d.base.flags, BaseFlags(0x4001_0080));
    assert_eq!(d.base.port, 20011);
    assert_eq!(
        d.base.amount.duration(),
        Some(std::time::Duration::from_secs(1))
    );
    assert_eq!(d.base.version.to_string(), "2.2.1-rc");
    assert_eq!(
        (d.start, d.isoch, d.cca.clone(), d.permit_key.clone()),
        (None, None, None, None)
    );
}

/// §3.1: 2.1.8 writes 60 bytes, flags 0x40010078, version words 0x00020001 /
/// 0x00080003; the test data that follows is not part of the header.
#[test]
fn golden_plain_218() {
    let mut want = PLAIN_221[..60].to_vec();
    want[3] = 0x78;
    want[36..44].copy_from_slice(&[0, 2, 0, 1, 0, 8, 0, 3]);
    let h = header(plain(VERSION_2_1_8));
    assert_eq!(h.encode(Layout::V2_1_8).unwrap(), want);
    want.extend_from_slice(&want.clone()); // 2.1.8 repeats its header in the data
    let (d, len) = done(TcpTestHeader::decode(&want).unwrap());
    assert_eq!(len, 60);
    assert_eq!(
        d,
        TcpTestHeader {
            base: BaseHeader {
                flags: BaseFlags(0x4001_0078),
                ..h.base
            },
            ..h
        }
    );
}

/// §3.1's observed first words, one per option, built from typed fields.
#[test]
fn observed_option_words() {
    let with = |flags: u32, upper: u16| {
        let mut b = plain(VERSION_2_2_1);
        b.flags = BaseFlags(flags);
        b.upper = UpperFlags(upper);
        header(b).encode(Layout::V2_2_1).unwrap()
    };
    let word = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(word(&with(0x4400_0000, 0x0400)), 0x4401_0080); // -R
    assert_eq!(word(&with(0x4400_0000, 0x0800)), 0x4401_0080); // --full-duplex
    assert_eq!(word(&with(0xC000_0001, 0)), 0xC001_0081); // -d
    assert_eq!(word(&with(0x4600_0000, 0)), 0x4601_0080); // -X
    let mut r = header(plain(VERSION_2_1_8));
    r.base.flags = BaseFlags(0xC000_0000);
    assert_eq!(word(&r.encode(Layout::V2_1_8).unwrap()), 0xC001_0078); // -r from 2.1.8
    let mut tt = header(plain(VERSION_2_2_1));
    tt.base.upper = UpperFlags(UpperFlags::TRIPTIME);
    tt.start = Some(StartBlock {
        start: Timeval {
            sec: 1_700_000_000,
            usec: 5,
        },
        fq_rate: 0,
    });
    for layout in [Layout::V2_1_8, Layout::V2_2_1] {
        let b = tt.encode(layout).unwrap();
        assert_eq!((b.len(), word(&b)), (80, 0x4001_00A0));
        assert_eq!(&b[64..72], &[0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 5]);
    }
}

/// §3.1/§3.4: `--permit-key` gives 0x50010084 and 74 bytes: a 64-byte header,
/// the 2-byte key length (inside LEN) and an 8-byte key (outside).
#[test]
fn permit_key_layout() {
    let mut h = header(plain(VERSION_2_2_1));
    h.permit_key = Some(b"abcdefgh".to_vec());
    let b = h.encode(Layout::V2_2_1).unwrap();
    assert_eq!(b.len(), 74);
    assert_eq!(&b[..4], &[0x50, 0x01, 0x00, 0x84]);
    assert_eq!(&b[64..66], &[0, 8]);
    assert_eq!(&b[66..], b"abcdefgh");
    for n in [4, 60, 65, 66, 73] {
        let need = match TcpTestHeader::decode(&b[..n]).unwrap() {
            Decoded::NeedMore { need } => need,
            d => panic!("{n}: {d:?}"),
        };
        assert!(need > n && need <= 74, "{n} -> {need}");
    }
    let (d, len) = done(TcpTestHeader::decode(&b).unwrap());
    assert_eq!((len, d.permit_key.as_deref()), (74, Some(&b"abcdefgh"[..])));
    // A lying key length: zero, or longer than any client sends.
    let mut bad = b.clone();
    bad[64..66].copy_from_slice(&[0x10, 0x00]);
    assert_eq!(
        TcpTestHeader::decode(&bad),
        Err(HeaderError::PermitKeyLength {
            len: 4096,
            max: MAX_PERMIT_KEY
        })
    );
    bad[64..66].copy_from_slice(&[0, 0]);
    assert!(matches!(
        TcpTestHeader::decode(&bad),
        Err(HeaderError::PermitKeyLength { len: 0, .. })
    ));
    h.permit_key = Some(vec![b'k'; 129]);
    assert_eq!(
        h.encode(Layout::V2_2_1),
        Err(EncodeError::PermitKeyLength { len: 129, max: 128 })
    );
}

/// §3.1: 2.2.1 `-P 2`, second stream: lower BARRIER_TIME, 159 µs at offset 60.
#[test]
fn barrier_word() {
    let mut h = header(plain(VERSION_2_2_1));
    h.base.lower = LowerFlags(LowerFlags::BARRIER_TIME);
    h.base.barrier_us = 159;
    let b = h.encode(Layout::V2_2_1).unwrap();
    assert_eq!(&b[34..36], &[0x40, 0]);
    assert_eq!(&b[60..64], &[0, 0, 0, 159]);
    // 2.1.8's layout has no room for it.
    assert_eq!(h.encode(Layout::V2_1_8).unwrap().len(), 60);
}

/// 2.2.1 `-Z`: the name at 112 after a zeroed isochronous block.
#[test]
fn cca_name_at_112() {
    let mut h = header(plain(VERSION_2_2_1));
    h.cca = Some(b"bbr".to_vec());
    let b = h.encode(Layout::V2_2_1).unwrap();
    assert_eq!(b.len(), 117);
    assert_eq!(
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x1FF,
        117 << 1
    );
    assert_eq!(&b[34..36], &[0x80, 0]);
    assert_eq!(&b[112..], &[0, 3, b'b', b'b', b'r']);
    assert!(b[64..112].iter().all(|&x| x == 0));
    let (d, _) = done(TcpTestHeader::decode(&b).unwrap());
    assert_eq!(d, h.clone().normalized(Layout::V2_2_1));
    // A name longer than the header.
    let mut bad = b.clone();
    bad[113] = 9;
    assert_eq!(
        TcpTestHeader::decode(&bad),
        Err(HeaderError::CcaOverrun { len: 9, room: 3 })
    );
    // The flag without room for even the length field.
    let mut short = PLAIN_221;
    short[34] = 0x80;
    assert_eq!(
        TcpTestHeader::decode(&short),
        Err(HeaderError::CcaOverrun { len: 0, room: 0 })
    );
    h.cca = Some(vec![b'x'; 200]);
    assert_eq!(
        h.encode(Layout::V2_2_1),
        Err(EncodeError::TooLong { len: 314 })
    );
}

#[test]
fn lengths_before_lenbit() {
    assert_eq!(tcp_header_len(BaseFlags(0)), 0);
    assert_eq!(tcp_header_len(BaseFlags(BaseFlags::VERSION1)), 24);
    assert_eq!(tcp_header_len(BaseFlags(BaseFlags::EXTEND)), 64);
    assert_eq!(tcp_header_len(BaseFlags(0x4001_0078)), 60);
    // A v1-only header decodes with the later fields absent.
    let mut v1 = PLAIN_221[..24].to_vec();
    v1[0..4].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    let (d, len) = done(TcpTestHeader::decode(&v1).unwrap());
    assert_eq!(
        (len, d.base.version, d.base.port),
        (24, Version::default(), 20011)
    );
    assert_eq!(
        TcpTestHeader::decode(&[0x40, 1, 0, 0x10]),
        Err(HeaderError::TooShort { len: 8, min: 24 })
    );
    assert_eq!(
        TcpTestHeader::decode(b"0123"),
        Err(HeaderError::NoHeader(0x3031_3233))
    );
    assert_eq!(
        TcpTestHeader::decode(&[0, 0x80, 0, 0]),
        Err(HeaderError::NoHeader(0x0080_0000))
    );
}

impl TcpTestHeader {
    /// What a header reads back as: structural bits set, zero blocks inside a
    /// longer header absent, fields past the layout's end zero.
    fn normalized(mut self, layout: Layout) -> Self {
        let tail = self.cca.is_some() || self.isoch.is_some();
        if self.isoch.is_some_and(|i| i.is_zero()) {
            self.isoch = None;
        }
        if tail && self.start.is_some_and(|s| s == StartBlock::default()) {
            self.start = None;
        }
        if layout == Layout::V2_1_8 && self.start.is_none() && !tail {
            self.base.barrier_us = 0;
        }
        let bytes = self.encode(layout).unwrap();
        self.base.flags = BaseFlags(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
        self.base.lower = LowerFlags(u16::from_be_bytes([bytes[34], bytes[35]]));
        self
    }
}

fn any_header() -> impl Strategy<Value = TcpTestHeader> {
    let base =
        (any::<[u32; 9]>(), any::<[u16; 3]>(), 0..=MAX_RATE).prop_map(|(w, h, rate)| BaseHeader {
            flags: BaseFlags((w[0] | BaseFlags::EXTEND) & !BaseFlags::BOUNCEBACK),
            num_threads: w[1],
            port: w[2],
            buf_len: w[3],
            win_band: w[4],
            amount: Amount::from_word(w[5]),
            upper: UpperFlags(h[0]),
            lower: LowerFlags(h[1]),
            version: Version::from_words(w[6], w[7]),
            tos: h[2],
            rate,
            write_prefetch: w[8],
            barrier_us: w[8].rotate_left(7),
        });
    let pair = || any::<(i32, i32)>().prop_map(|(int, frac)| StatPair { int, frac });
    let isoch = (pair(), pair(), pair(), pair()).prop_map(|(fps, mean, variance, burst_ipg)| {
        IsochSettings {
            fps,
            mean,
            variance,
            burst_ipg,
        }
    });
    let start = any::<(u32, u32, u64)>().prop_map(|(sec, usec, fq_rate)| StartBlock {
        start: Timeval { sec, usec },
        fq_rate,
    });
    (
        base,
        proptest::option::of(start),
        proptest::option::of(isoch),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..100)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 1..=MAX_PERMIT_KEY)),
    )
        .prop_map(|(base, start, isoch, cca, permit_key)| TcpTestHeader {
            base,
            start,
            isoch,
            cca,
            permit_key,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// Every header encodes in both layouts and reads back; every proper
    /// prefix asks for more bytes than it has.
    #[test]
    fn headers_round_trip(h in any_header(), v218 in any::<bool>()) {
        let layout = if v218 { Layout::V2_1_8 } else { Layout::V2_2_1 };
        let bytes = h.encode(layout).unwrap();
        let mut stream = bytes.clone();
        stream.extend_from_slice(b"0123456789");
        let (d, len) = done(TcpTestHeader::decode(&stream).unwrap());
        prop_assert_eq!(len, bytes.len());
        prop_assert_eq!(d, h.clone().normalized(layout));
        for n in 0..bytes.len() {
            match TcpTestHeader::decode(&bytes[..n]) {
                Ok(Decoded::NeedMore { need }) => prop_assert!(need > n && need <= bytes.len()),
                other => prop_assert!(false, "prefix {} gave {:?}", n, other),
            }
        }
    }

    /// Arbitrary bytes: never a panic, a complete header never claims more
    /// bytes than it was given or than the protocol allows, and what decodes
    /// encodes again.
    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..400)) {
        match TcpTestHeader::decode(&b) {
            Ok(Decoded::Done { value, len }) => {
                prop_assert!(len <= b.len() && len <= 255 + MAX_PERMIT_KEY);
                let again = value.encode(Layout::V2_2_1);
                prop_assert!(again.is_ok(), "{:?}", again);
            }
            Ok(Decoded::NeedMore { need }) => prop_assert!(need > b.len() && need <= 255 + MAX_PERMIT_KEY),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

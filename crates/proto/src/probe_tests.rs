use super::*;

fn decode_all(bytes: &[u8]) -> Result<Vec<Frame>, ProbeError> {
    let mut d = ProbeDecoder::new();
    d.push(bytes);
    let mut out = Vec::new();
    while let Some(f) = d.next_frame()? {
        out.push(f);
    }
    assert_eq!(d.buffered(), 0, "left over");
    Ok(out)
}

#[test]
fn request_layout_byte_for_byte() {
    let r = Request::new(7, 0x0102_0304_0506_0708, 0, 0);
    let b = Frame::Request(r).encode();
    assert_eq!(b.len(), REQUEST_MIN_LEN as usize);
    assert_eq!(
        b,
        [
            b'R', b'P', b'Q', 1, 0, 0, 0, 28, 0, 0, 0, 7, // header
            1, 2, 3, 4, 5, 6, 7, 8, // send time
            0, 0, 0, 28, 0, 0, 0, 44, // sizes (clamped up to the minimums)
        ]
    );
}

#[test]
fn every_frame_round_trips_with_its_padding() {
    let r = Request::new(1, -5, 200, 1000);
    let a = r.answer(1_700_000_000_000_000_000, 1_700_000_000_000_100_000);
    let s = Sample {
        seq: 3,
        kind: SampleKind::SelfLoaded,
        rtt_ns: 151_000_000,
        server_ns: 42,
    };
    let frames = [Frame::Request(r), Frame::Answer(a), Frame::Sample(s)];
    let lens = [200, 1000, SAMPLE_LEN as usize];
    let mut wire = Vec::new();
    for (f, n) in frames.iter().zip(lens) {
        let b = f.encode();
        assert_eq!(b.len(), n);
        wire.extend_from_slice(&b);
    }
    assert_eq!(decode_all(&wire).unwrap(), frames);
}

#[test]
fn frames_split_anywhere_reassemble() {
    let mut wire = Frame::Request(Request::new(9, 123, 64, 64)).encode();
    wire.extend(Frame::Answer(Request::new(9, 123, 64, 64).answer(1, 2)).encode());
    for cut in 0..wire.len() {
        let mut d = ProbeDecoder::new();
        let mut got = Vec::new();
        for part in [&wire[..cut], &wire[cut..]] {
            d.push(part);
            while let Some(f) = d.next_frame().unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got.len(), 2, "cut at {cut}");
    }
}

#[test]
fn sizes_are_clamped_to_what_a_reader_takes() {
    let r = Request::new(0, 0, u32::MAX, 1);
    assert_eq!((r.size, r.reply_size), (MAX_PROBE_FRAME, ANSWER_MIN_LEN));
    assert_eq!(decode_all(&Frame::Request(r).encode()).unwrap().len(), 1);
}

#[test]
fn garbage_is_refused_early_with_the_reason() {
    let mut d = ProbeDecoder::new();
    d.push(b"GE");
    assert_eq!(d.next_frame(), Err(ProbeError::BadMagic(*b"GE")));
    // One byte is not enough to tell.
    let mut d = ProbeDecoder::new();
    d.push(b"R");
    assert_eq!(d.next_frame(), Ok(None));
    let good = Frame::Request(Request::new(1, 1, 0, 0)).encode();
    let mut bad = good.clone();
    bad[3] = 2;
    assert_eq!(decode_all(&bad), Err(ProbeError::BadVersion(2)));
    let mut bad = good.clone();
    bad[2] = b'Z';
    assert_eq!(decode_all(&bad), Err(ProbeError::UnknownType(b'Z')));
    let mut bad = good.clone();
    bad[7] = 27; // one below a request's fields
    assert_eq!(decode_all(&bad), Err(ProbeError::BadLength(27)));
    let mut bad = good;
    bad[4..8].copy_from_slice(&(MAX_PROBE_FRAME + 1).to_be_bytes());
    assert_eq!(
        decode_all(&bad),
        Err(ProbeError::BadLength(MAX_PROBE_FRAME + 1))
    );
    let mut s = Frame::Sample(Sample {
        seq: 0,
        kind: SampleKind::SelfLoaded,
        rtt_ns: 1,
        server_ns: 1,
    })
    .encode();
    s[12] = 9;
    assert_eq!(decode_all(&s), Err(ProbeError::UnknownSample(9)));
    assert_eq!(
        ProbeError::UnknownType(b'Z').to_string(),
        "probe frame type 0x5a unknown"
    );
}

#[test]
fn a_short_frame_waits_for_the_rest() {
    let b = Frame::Answer(Request::new(2, 2, 0, 500).answer(3, 4)).encode();
    let mut d = ProbeDecoder::new();
    d.push(&b[..499]);
    assert_eq!(d.next_frame(), Ok(None));
    assert_eq!(d.buffered(), 499);
    d.push(&b[499..]);
    assert!(matches!(d.next_frame(), Ok(Some(Frame::Answer(_)))));
}

#[test]
fn negative_times_survive() {
    let r = Request::new(u32::MAX, i64::MIN, 0, 0);
    let a = r.answer(-1, i64::MAX);
    assert_eq!(
        decode_all(&Frame::Answer(a).encode()).unwrap(),
        [Frame::Answer(a)]
    );
}

#[test]
fn every_sample_kind_round_trips_and_the_codes_are_fixed() {
    let kinds = [
        (SampleKind::SelfLoaded, 1),
        (SampleKind::Idle, 2),
        (SampleKind::ForeignConnect, 3),
        (SampleKind::ForeignRequest, 4),
    ];
    for (kind, code) in kinds {
        let f = Frame::Sample(Sample {
            seq: 1,
            kind,
            rtt_ns: 9,
            server_ns: 10,
        });
        let b = f.encode();
        assert_eq!(b[12], code);
        assert_eq!(decode_all(&b).unwrap(), [f]);
    }
    let mut b = Frame::Sample(Sample {
        seq: 1,
        kind: SampleKind::Idle,
        rtt_ns: 9,
        server_ns: 10,
    })
    .encode();
    for bad in [0, 5, 255] {
        b[12] = bad;
        assert_eq!(decode_all(&b), Err(ProbeError::UnknownSample(bad)));
    }
}

#[test]
fn delays_frames_carry_their_body_and_direction_issue18() {
    let f = Frame::Delays(Delays {
        seq: 9,
        up: true,
        last: false,
        body: vec![1, 2, 3, 4, 5],
    });
    let wire = f.encode();
    assert_eq!(&wire[..4], b"RPO\x01");
    assert_eq!(wire.len(), DELAYS_MIN_LEN as usize + 5);
    assert_eq!(&wire[12..16], &[1, 0, 0, 0]);
    let mut d = ProbeDecoder::new();
    // Split anywhere: the frame comes out whole, once.
    d.push(&wire[..14]);
    assert_eq!(d.next_frame().unwrap(), None);
    d.push(&wire[14..]);
    assert_eq!(d.next_frame().unwrap(), Some(f));
    assert_eq!(d.buffered(), 0);
    let down = Frame::Delays(Delays {
        seq: 1,
        up: false,
        last: false,
        body: Vec::new(),
    });
    d.push(&down.encode());
    assert_eq!(d.next_frame().unwrap(), Some(down));
}

#[test]
fn the_last_delays_frame_is_marked_in_a_byte_older_readers_skip_issue18() {
    let last = Frame::Delays(Delays {
        seq: 4,
        up: true,
        last: true,
        body: vec![9; 3],
    });
    let wire = last.encode();
    assert_eq!(&wire[12..16], &[1, 1, 0, 0]);
    let mut d = ProbeDecoder::new();
    d.push(&wire);
    let Some(Frame::Delays(got)) = d.next_frame().unwrap() else {
        panic!("not a delays frame");
    };
    assert!(got.last && !got.is_agreement(), "{got:?}");
    // The agreement: bodiless, not last, and not taken for delays.
    let agreed = Frame::Delays(Delays::agreed()).encode();
    assert_eq!(agreed.len(), DELAYS_MIN_LEN as usize);
    assert_eq!(&agreed[12..16], &[1, 0, 0, 0]);
    d.push(&agreed);
    let Some(Frame::Delays(got)) = d.next_frame().unwrap() else {
        panic!("not a delays frame");
    };
    assert!(got.is_agreement() && !got.last, "{got:?}");
}

//! Cutting the control connection's byte stream into protocol units, and encoding
//! the one multi-byte unit we write (length-prefixed JSON).
//!
//! The control connection has no tags: what comes next (a state byte, a cookie, a
//! JSON document, or the two error integers after SERVER_ERROR) follows from the
//! protocol state, and TCP may split or merge any of them. [`ControlDecoder`] buffers
//! raw bytes and hands out one complete unit at a time, of the kind the caller asks
//! for, keeping whatever follows for the next call.

use serde_json::Value;

use crate::cookie::COOKIE_LEN;

/// The kind of unit the reader expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// One state byte.
    State,
    /// The 37-byte cookie.
    Cookie,
    /// A JSON document: u32 big-endian length, then that many bytes. A length of 0 or
    /// above `max_len` is an error.
    Json {
        /// Largest length accepted.
        max_len: u32,
    },
    /// The 8 bytes after SERVER_ERROR: error code and errno, int32 big-endian each.
    /// At end of stream, 4 bytes are enough (3.12 sends no errno on auth failure).
    ServerErrorCodes,
}

/// A complete unit cut from the byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// A state byte (see [`crate::Msg::from_byte`]).
    State(u8),
    /// The cookie, as received.
    Cookie([u8; COOKIE_LEN]),
    /// The body of a JSON document, without its length prefix. Not yet parsed.
    Json(Vec<u8>),
    /// The error code and errno that follow SERVER_ERROR.
    ServerErrorCodes {
        /// iperf3 error number.
        code: i32,
        /// errno, 0 if the peer sent none.
        errno: i32,
    },
}

/// Why the byte stream cannot be cut into the expected unit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// The JSON length prefix was 0.
    #[error("JSON document length is 0")]
    ZeroLength,
    /// The JSON length prefix was above the limit.
    #[error("JSON document length {len} is larger than the limit of {max} bytes")]
    TooLong {
        /// Announced length.
        len: u32,
        /// Limit in force.
        max: u32,
    },
    /// The stream ended inside a unit.
    #[error("connection closed after {have} of {need} bytes of a unit")]
    Truncated {
        /// Bytes of the unit that arrived.
        have: usize,
        /// Bytes the unit needs.
        need: usize,
    },
}

/// Buffers control-connection bytes and cuts them into units on request.
#[derive(Debug, Default, Clone)]
pub struct ControlDecoder {
    buf: Vec<u8>,
    /// Index of the first unread byte in `buf`.
    pos: usize,
}

impl ControlDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends bytes read from the socket.
    pub fn push(&mut self, bytes: &[u8]) {
        // Drop consumed bytes before growing, so the buffer stays as small as the
        // largest unit in flight.
        if self.pos > 0 && (self.pos == self.buf.len() || self.pos >= 4096) {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes received and not yet handed out.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next unread byte, without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// The bytes received and not yet handed out.
    pub(crate) fn rest(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Cuts the next unit of the given kind, if it has fully arrived. `Ok(None)`
    /// means "need more bytes". A bad JSON length fails as soon as its prefix is in.
    pub fn next_unit(&mut self, expect: Expect) -> Result<Option<Unit>, FramingError> {
        let rest = self.rest();
        match expect {
            Expect::State => match rest.first() {
                Some(&b) => {
                    self.pos += 1;
                    Ok(Some(Unit::State(b)))
                }
                None => Ok(None),
            },
            Expect::Cookie => {
                if rest.len() < COOKIE_LEN {
                    return Ok(None);
                }
                let mut c = [0u8; COOKIE_LEN];
                c.copy_from_slice(&rest[..COOKIE_LEN]);
                self.pos += COOKIE_LEN;
                Ok(Some(Unit::Cookie(c)))
            }
            Expect::Json { max_len } => {
                let Some(len) = be_u32(rest) else {
                    return Ok(None);
                };
                if len == 0 {
                    return Err(FramingError::ZeroLength);
                }
                if len > max_len {
                    return Err(FramingError::TooLong { len, max: max_len });
                }
                // Saturating: on 32-bit targets 4 + u32::MAX does not fit.
                let total = (len as usize).saturating_add(4);
                if rest.len() < total {
                    return Ok(None);
                }
                let body = rest[4..total].to_vec();
                self.pos += total;
                Ok(Some(Unit::Json(body)))
            }
            Expect::ServerErrorCodes => {
                if rest.len() < 8 {
                    return Ok(None);
                }
                let (code, errno) = (be_i32(rest), be_i32(&rest[4..]));
                self.pos += 8;
                Ok(Some(Unit::ServerErrorCodes { code, errno }))
            }
        }
    }

    /// Called when the peer has closed the connection: cuts what can still be cut.
    /// `Ok(None)` if nothing is buffered. SERVER_ERROR codes are complete with only
    /// their first 4 bytes here (errno is then 0). Anything else partial is
    /// [`FramingError::Truncated`].
    pub fn next_unit_at_eof(&mut self, expect: Expect) -> Result<Option<Unit>, FramingError> {
        if let Some(u) = self.next_unit(expect)? {
            return Ok(Some(u));
        }
        let have = self.buffered();
        if have == 0 {
            return Ok(None);
        }
        let need = match expect {
            Expect::State => 1,
            Expect::Cookie => COOKIE_LEN,
            Expect::Json { .. } => {
                be_u32(self.rest()).map_or(4, |l| (l as usize).saturating_add(4))
            }
            Expect::ServerErrorCodes => {
                if have >= 4 {
                    let code = be_i32(self.rest());
                    self.pos = self.buf.len();
                    return Ok(Some(Unit::ServerErrorCodes { code, errno: 0 }));
                }
                8
            }
        };
        Err(FramingError::Truncated { have, need })
    }
}

fn be_u32(b: &[u8]) -> Option<u32> {
    b.get(..4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Parses a JSON document as iperf3's cJSON does: string bytes that are not
/// UTF-8 (a Latin-1 `--extra-data` from a stock client) are taken, here as
/// U+FFFD, instead of failing the document. Bytes outside strings must still
/// be JSON.
pub(crate) fn decode_json(body: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_str(&String::from_utf8_lossy(body))
}

/// A JSON document on the wire: u32 big-endian length, then compact JSON text.
pub fn encode_json(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec());
    let mut out = Vec::with_capacity(4 + body.len());
    // Documents we build are far below 4 GiB; saturate rather than wrap if not.
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const J: Expect = Expect::Json { max_len: 8192 };

    #[test]
    fn strings_that_are_not_utf8_are_taken_as_cjson_takes_them() {
        let v = decode_json(b"{\"extra_data\":\"caf\xe9\",\"time\":1}").unwrap();
        assert_eq!(v["extra_data"], "caf\u{fffd}");
        assert_eq!(v["time"], 1);
        assert!(decode_json(b"{\"time\":\xe9}").is_err());
    }

    #[test]
    fn json_prefix_and_body_split_across_pushes() {
        let doc = encode_json(&serde_json::json!({"tcp": true, "omit": 0}));
        assert_eq!(&doc[..4], &[0, 0, 0, 21]);
        let mut d = ControlDecoder::new();
        for (i, b) in doc.iter().enumerate() {
            assert_eq!(d.next_unit(J).unwrap(), None, "early unit at byte {i}");
            d.push(&[*b]);
        }
        assert_eq!(d.next_unit(J).unwrap(), Some(Unit::Json(doc[4..].to_vec())));
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn leftovers_are_kept_across_units() {
        let mut d = ControlDecoder::new();
        let mut bytes = vec![0x09];
        bytes.extend(encode_json(&serde_json::json!([1])));
        bytes.extend([0x0e, 0xfe, 0, 0, 0, 0x1b, 0, 0, 0, 0]);
        d.push(&bytes);
        assert_eq!(d.next_unit(Expect::State).unwrap(), Some(Unit::State(9)));
        assert_eq!(d.next_unit(J).unwrap(), Some(Unit::Json(b"[1]".to_vec())));
        assert_eq!(d.peek(), Some(0x0e));
        assert_eq!(d.next_unit(Expect::State).unwrap(), Some(Unit::State(0x0e)));
        assert_eq!(d.next_unit(Expect::State).unwrap(), Some(Unit::State(0xfe)));
        assert_eq!(
            d.next_unit(Expect::ServerErrorCodes).unwrap(),
            Some(Unit::ServerErrorCodes { code: 27, errno: 0 })
        );
        assert_eq!(d.next_unit(Expect::State).unwrap(), None);
    }

    #[test]
    fn bad_lengths_are_rejected_from_the_prefix_alone() {
        let mut d = ControlDecoder::new();
        d.push(&[0, 0, 0, 0]);
        assert_eq!(d.next_unit(J), Err(FramingError::ZeroLength));
        let mut d = ControlDecoder::new();
        d.push(&[0, 0, 0x20, 0x01]);
        assert_eq!(
            d.next_unit(J),
            Err(FramingError::TooLong {
                len: 8193,
                max: 8192
            })
        );
        let mut d = ControlDecoder::new();
        d.push(&[0, 0, 0x20, 0x00]);
        assert_eq!(d.next_unit(J), Ok(None), "8192 itself is allowed");
    }

    #[test]
    fn cookie_needs_all_37_bytes() {
        let mut d = ControlDecoder::new();
        d.push(&[b'a'; 36]);
        assert_eq!(d.next_unit(Expect::Cookie).unwrap(), None);
        d.push(&[0, 9]);
        let mut c = [b'a'; 37];
        c[36] = 0;
        assert_eq!(d.next_unit(Expect::Cookie).unwrap(), Some(Unit::Cookie(c)));
        assert_eq!(d.buffered(), 1);
    }

    #[test]
    fn server_error_codes_at_eof_accept_four_bytes() {
        let mut d = ControlDecoder::new();
        d.push(&[0, 0, 0, 0x8e]);
        assert_eq!(d.next_unit(Expect::ServerErrorCodes).unwrap(), None);
        assert_eq!(
            d.next_unit_at_eof(Expect::ServerErrorCodes).unwrap(),
            Some(Unit::ServerErrorCodes {
                code: 142,
                errno: 0
            })
        );
        let mut d = ControlDecoder::new();
        d.push(&[0, 0]);
        assert_eq!(
            d.next_unit_at_eof(Expect::ServerErrorCodes),
            Err(FramingError::Truncated { have: 2, need: 8 })
        );
    }

    #[test]
    fn eof_inside_json_is_truncated_and_empty_eof_is_clean() {
        let mut d = ControlDecoder::new();
        assert_eq!(d.next_unit_at_eof(J), Ok(None));
        d.push(&[0, 0, 0, 10, b'{']);
        assert_eq!(
            d.next_unit_at_eof(J),
            Err(FramingError::Truncated { have: 5, need: 14 })
        );
    }

    fn kind(k: u8, max_len: u32) -> Expect {
        match k % 4 {
            0 => Expect::State,
            1 => Expect::Cookie,
            2 => Expect::Json { max_len },
            _ => Expect::ServerErrorCodes,
        }
    }

    /// The largest unit of any kind under a JSON limit.
    fn unit_limit(max_len: u32) -> usize {
        (4 + max_len as usize).max(COOKIE_LEN).max(8)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Read as the machines read: push what the socket gave, then cut units
        /// until one is incomplete or the stream is bad. Unread bytes never exceed
        /// one incomplete unit plus the last read, and the buffer holding them
        /// never keeps more than 4 KiB of consumed bytes besides.
        #[test]
        fn buffering_is_one_unit_plus_one_read(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..48),
            kinds in proptest::collection::vec(any::<u8>(), 1..8),
            max_len in prop_oneof![0u32..64, 64u32..2048, Just(8192), Just(u32::MAX - 4), Just(u32::MAX)],
        ) {
            let limit = unit_limit(max_len);
            let mut d = ControlDecoder::new();
            let mut k = kinds.iter().cycle();
            'read: for c in &chunks {
                d.push(c);
                prop_assert!(d.buffered() < limit + c.len());
                prop_assert!(d.buf.len() < 4096 + limit + c.len());
                loop {
                    let before = d.buffered();
                    match d.next_unit(kind(*k.next().unwrap(), max_len)) {
                        Ok(Some(_)) => prop_assert!(d.buffered() < before),
                        Ok(None) => break,
                        Err(_) => break 'read,
                    }
                }
                prop_assert!(d.buffered() < limit);
            }
        }

        /// A JSON length above the limit, up to 0xFFFFFFFF, fails as soon as its
        /// 4 bytes are in, however they are split and whatever follows: no body
        /// byte is ever waited for.
        #[test]
        fn too_long_is_refused_from_the_prefix_alone(
            (max_len, len) in prop_oneof![Just(0u32), 1u32..9000, Just(u32::MAX - 1)]
                .prop_flat_map(|m| (Just(m), prop_oneof![Just(u32::MAX), (m + 1)..=u32::MAX])),
            step in 1usize..8,
            tail in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut bytes = len.to_be_bytes().to_vec();
            bytes.extend(&tail);
            let mut d = ControlDecoder::new();
            let mut fed = 0;
            let want = Err(FramingError::TooLong { len, max: max_len });
            loop {
                let end = (fed + step).min(bytes.len());
                d.push(&bytes[fed..end]);
                fed = end;
                let got = d.next_unit(Expect::Json { max_len });
                if fed < 4 {
                    prop_assert_eq!(got, Ok(None));
                } else {
                    prop_assert_eq!(got, want.clone());
                    prop_assert!(d.buffered() < 4 + step);
                    prop_assert_eq!(d.next_unit_at_eof(Expect::Json { max_len }), want);
                    break;
                }
            }
        }

        /// At end of stream a unit is complete, absent, or truncated with fewer
        /// bytes than it needs, never anything else.
        #[test]
        fn eof_reports_what_is_missing(
            bytes in proptest::collection::vec(any::<u8>(), 0..80),
            k in any::<u8>(),
            max_len in prop_oneof![0u32..100, Just(u32::MAX)],
        ) {
            let mut d = ControlDecoder::new();
            d.push(&bytes);
            match d.next_unit_at_eof(kind(k, max_len)) {
                Ok(Some(_)) | Err(FramingError::ZeroLength | FramingError::TooLong { .. }) => {}
                Ok(None) => prop_assert!(bytes.is_empty()),
                Err(FramingError::Truncated { have, need }) => {
                    prop_assert_eq!(have, bytes.len());
                    prop_assert!(have < need);
                }
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32),
            kinds in proptest::collection::vec(0u8..4, 1..64),
            max in 0u32..100,
        ) {
            let mut d = ControlDecoder::new();
            let mut k = kinds.iter().cycle();
            for c in &chunks {
                d.push(c);
                let e = match k.next().copied().unwrap_or(0) {
                    0 => Expect::State,
                    1 => Expect::Cookie,
                    2 => Expect::Json { max_len: max },
                    _ => Expect::ServerErrorCodes,
                };
                let before = d.buffered();
                match d.next_unit(e) {
                    Ok(Some(_)) => prop_assert!(d.buffered() < before),
                    _ => prop_assert_eq!(d.buffered(), before),
                }
                let _ = d.next_unit_at_eof(e);
            }
        }
    }

    proptest! {
        #[test]
        fn any_split_of_a_document_decodes_the_same(
            body in "[a-z0-9]{1,200}",
            cut in proptest::collection::vec(1usize..20, 1..50),
        ) {
            let doc = encode_json(&Value::String(body.clone()));
            let mut d = ControlDecoder::new();
            let mut off = 0;
            let mut got = None;
            for c in cut.iter().cycle() {
                let end = (off + c).min(doc.len());
                d.push(&doc[off..end]);
                off = end;
                if let Some(u) = d.next_unit(Expect::Json { max_len: 1024 }).unwrap() {
                    got = Some(u);
                    break;
                }
                prop_assert!(off < doc.len());
            }
            let want = serde_json::to_vec(&Value::String(body)).unwrap();
            prop_assert_eq!(got, Some(Unit::Json(want)));
        }
    }
}

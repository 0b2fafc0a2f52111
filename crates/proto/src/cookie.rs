//! The 37-byte test cookie: made by the client, sent on the control connection and
//! again on every TCP/SCTP data connection so the server can tell its streams apart
//! from strangers.

/// Bytes on the wire: 36 characters and a NUL.
pub const COOKIE_LEN: usize = 37;

/// The characters a cookie uses: RFC 4648 base32 in lower case.
pub const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Builds a cookie from 36 random bytes (the caller supplies the randomness; this
/// crate has no access to the OS). Each byte picks `alphabet[byte % 32]`.
pub fn make_cookie(random: &[u8; COOKIE_LEN - 1]) -> [u8; COOKIE_LEN] {
    let mut c = [0u8; COOKIE_LEN];
    for (dst, r) in c.iter_mut().zip(random) {
        *dst = COOKIE_ALPHABET[usize::from(*r % 32)];
    }
    c
}

/// The cookie as text, up to its first NUL (what JSON output shows as
/// `start.cookie`). Bytes that are not UTF-8 end the text early, which never
/// happens with cookies made by [`make_cookie`].
pub fn cookie_str(cookie: &[u8; COOKIE_LEN]) -> &str {
    let bytes = c_str_bytes(cookie);
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// Compares two cookies the way the server does (`strcmp`): up to the first NUL.
/// A cookie without a NUL is compared in full.
pub fn cookie_matches(a: &[u8; COOKIE_LEN], b: &[u8; COOKIE_LEN]) -> bool {
    c_str_bytes(a) == c_str_bytes(b)
}

/// The cookie of an rperf3-only connection of the test (a probe connection, or
/// another kind named by `marker`): the test's cookie with its final NUL replaced
/// by the marker. A stock iperf3 server compares up to the NUL and so never takes
/// it for one of its tests' streams.
pub fn marked_cookie(cookie: &[u8; COOKIE_LEN], marker: u8) -> [u8; COOKIE_LEN] {
    let mut c = *cookie;
    c[COOKIE_LEN - 1] = marker;
    c
}

/// Whether a cookie's 37th byte is one of rperf3's markers (an ASCII capital
/// letter): `Some((the test's cookie, marker))`. A data stream's cookie (NUL
/// there) and anything else is `None`.
pub fn cookie_marker(c: &[u8; COOKIE_LEN]) -> Option<([u8; COOKIE_LEN], u8)> {
    let m = c[COOKIE_LEN - 1];
    m.is_ascii_uppercase().then(|| (marked_cookie(c, 0), m))
}

fn c_str_bytes(c: &[u8]) -> &[u8] {
    match c.iter().position(|&b| b == 0) {
        Some(n) => &c[..n],
        None => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_uses_alphabet_modulo_and_ends_in_nul() {
        let mut r = [0u8; 36];
        for (i, b) in r.iter_mut().enumerate() {
            *b = (i * 7 + 250) as u8;
        }
        let c = make_cookie(&r);
        assert_eq!(c[36], 0);
        for (i, ch) in c[..36].iter().enumerate() {
            assert_eq!(*ch, COOKIE_ALPHABET[(r[i] % 32) as usize]);
        }
        assert_eq!(cookie_str(&c).len(), 36);
    }

    #[test]
    fn captured_cookie_reads_back() {
        let mut c = [0u8; 37];
        c[..36].copy_from_slice(b"ggbj47k5kjkqj4ikskay3k5hnkya4braddmt");
        assert_eq!(cookie_str(&c), "ggbj47k5kjkqj4ikskay3k5hnkya4braddmt");
    }

    #[test]
    fn markers_replace_the_nul_and_come_back_out() {
        let mut c = [b'k'; 37];
        c[36] = 0;
        let p = marked_cookie(&c, b'P');
        assert_eq!(&p[..36], &c[..36]);
        assert_eq!(p[36], b'P');
        assert_eq!(cookie_marker(&p), Some((c, b'P')));
        // Data streams, lower case and other bytes carry no marker.
        assert_eq!(cookie_marker(&c), None);
        assert_eq!(cookie_marker(&marked_cookie(&c, b'p')), None);
        assert_eq!(cookie_marker(&marked_cookie(&c, 0xC3)), None);
        // A stock server's strcmp sees a different test.
        assert!(!cookie_matches(&p, &c));
    }

    #[test]
    fn matching_stops_at_nul_like_strcmp() {
        let mut a = [b'a'; 37];
        a[36] = 0;
        let mut b = a;
        assert!(cookie_matches(&a, &b));
        b[5] = b'b';
        assert!(!cookie_matches(&a, &b));
        // Bytes after the first NUL do not count.
        let mut c = a;
        c[10] = 0;
        let mut d = c;
        d[20] = b'z';
        assert!(cookie_matches(&c, &d));
        // A shorter C string differs from a longer one.
        assert!(!cookie_matches(&a, &c));
        // No NUL at all: compared in full.
        let e = [b'q'; 37];
        assert!(cookie_matches(&e, &e));
        assert!(!cookie_matches(&e, &a));
    }
}

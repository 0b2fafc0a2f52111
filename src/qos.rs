//! The DSCP and TOS names both command lines read: iperf3's `--dscp` and
//! iperf 2's `-S` share the code points; each adds a few of its own.

/// DSCP names and their code points (RFC 2474, 2597, 3246).
pub(crate) const CODEPOINTS: [(&str, u8); 21] = [
    ("af11", 10),
    ("af12", 12),
    ("af13", 14),
    ("af21", 18),
    ("af22", 20),
    ("af23", 22),
    ("af31", 26),
    ("af32", 28),
    ("af33", 30),
    ("af41", 34),
    ("af42", 36),
    ("af43", 38),
    ("cs0", 0),
    ("cs1", 8),
    ("cs2", 16),
    ("cs3", 24),
    ("cs4", 32),
    ("cs5", 40),
    ("cs6", 48),
    ("cs7", 56),
    ("ef", 46),
];

/// The old RFC 1349 names, which are TOS bytes already.
pub(crate) const TOS_NAMES: [(&str, u8); 3] = [
    ("lowdelay", 0x10),
    ("throughput", 0x08),
    ("reliability", 0x04),
];

/// The code point named `s` (any case).
pub(crate) fn codepoint(s: &str) -> Option<u8> {
    find(&CODEPOINTS, s)
}

/// The TOS byte an RFC 1349 name stands for.
pub(crate) fn tos_name(s: &str) -> Option<u8> {
    find(&TOS_NAMES, s)
}

/// The value `s` (any case) has in `table`.
pub(crate) fn find(table: &[(&str, u8)], s: &str) -> Option<u8> {
    table
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(s))
        .map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_any_case() {
        assert_eq!(codepoint("AF11"), Some(10));
        assert_eq!(codepoint("ef"), Some(46));
        assert_eq!(codepoint("lowdelay"), None);
        assert_eq!(tos_name("LowDelay"), Some(0x10));
    }
}

//! `-S` and `--dscp` values: C's `strtol(…, 0)` numbers and iperf3's DSCP
//! names (the shared table and `va`).

use rperf3_proto::MAX_FLOWLABEL;

use crate::cnum::strtol0;
use crate::qos::{CODEPOINTS, TOS_NAMES};

/// `-S N`: a TOS byte; like iperf3, trailing text after the number is ignored.
pub(crate) fn tos(s: &str) -> Option<u8> {
    strtol0(s).and_then(|(v, _)| u8::try_from(v).ok())
}

/// `-L N`: an IPv6 flow label, 1..=[`MAX_FLOWLABEL`] (C number syntax, trailing text ignored).
pub(crate) fn flowlabel(s: &str) -> Option<u32> {
    strtol0(s)
        .and_then(|(v, _)| u32::try_from(v).ok())
        .filter(|v| (1..=MAX_FLOWLABEL).contains(v))
}

/// The one name iperf3 adds to the shared table: VOICE-ADMIT (RFC 5865).
const VOICE_ADMIT: (&str, u8) = ("va", 44);

/// Every name `--dscp` accepts (for shell completion).
pub(crate) fn dscp_names() -> impl Iterator<Item = &'static str> {
    CODEPOINTS
        .iter()
        .chain([&VOICE_ADMIT])
        .chain(&TOS_NAMES)
        .map(|(n, _)| *n)
}

/// `--dscp N|name`: the TOS byte (a DSCP number shifted into place, or a name's
/// byte). The names are the ones iperf3 accepts.
pub(crate) fn dscp(s: &str) -> Option<u8> {
    if let Some((v, true)) = strtol0(s) {
        return u8::try_from(v).ok().filter(|v| *v <= 63).map(|v| v << 2);
    }
    crate::qos::codepoint(s)
        .or_else(|| crate::qos::find(&[VOICE_ADMIT], s))
        .map(|v| v << 2)
        .or_else(|| crate::qos::tos_name(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_reads_c_numbers() {
        assert_eq!(tos("52"), Some(52));
        assert_eq!(tos("064"), Some(52));
        assert_eq!(tos("0x34"), Some(52));
        assert_eq!(tos("5x"), Some(5));
        assert_eq!(tos("255"), Some(255));
        assert_eq!(tos("256"), None);
        assert_eq!(tos("-1"), None);
        assert_eq!(tos(""), None);
        assert_eq!(tos("abc"), None);
    }

    #[test]
    fn flow_labels() {
        assert_eq!(flowlabel("0x12345"), Some(0x12345));
        assert_eq!(flowlabel("5x"), Some(5));
        assert_eq!(flowlabel("0"), None);
        assert_eq!(flowlabel("0x100000"), None);
        assert_eq!(flowlabel("abc"), None);
    }

    #[test]
    fn dscp_numbers_and_names() {
        assert_eq!(dscp("46"), Some(184));
        assert_eq!(dscp("0x3f"), Some(252));
        assert_eq!(dscp("EF"), Some(184));
        assert_eq!(dscp("af11"), Some(40));
        assert_eq!(dscp("cs0"), Some(0));
        assert_eq!(dscp("va"), Some(176));
        assert_eq!(dscp("lowdelay"), Some(0x10));
        assert_eq!(dscp("64"), None);
        assert_eq!(dscp("5x"), None);
        assert_eq!(dscp("le"), None);
    }
}

//! `--bounceback` in the iperf3 personality: what the client offers under
//! [`BOUNCEBACK_PARAM_KEY`], and the request/response frames its TCP streams
//! then carry instead of bulk data.
//!
//! A request is `request` bytes and a reply `reply` bytes, both agreed in the
//! parameters, so neither end needs a length on the wire: the server reads a
//! request whole, holds, and writes the reply. Each frame opens with an 8-byte
//! header, the transaction's sequence number (big endian), which the reply
//! echoes: a client that reads a reply to another request (a lost byte, a
//! confused peer) fails instead of timing the wrong thing. The rest of a frame
//! is payload left as it is.

use serde_json::{Map, Value};

/// The parameters key of the offer: absent unless `--bounceback` is given, so
/// the document is a 3.21 client's otherwise.
pub const BOUNCEBACK_PARAM_KEY: &str = "rperf3_bounceback";
/// The exchange's version.
pub const BOUNCEBACK_VERSION: u32 = 1;
/// The frame header: the sequence number.
pub const HEADER_LEN: usize = 8;
/// The smallest request or reply: the header.
pub const MIN_SIZE: usize = HEADER_LEN;
/// The largest request or reply (a round trip, not a transfer).
pub const MAX_SIZE: usize = 1 << 20;
/// The default request and reply size.
pub const DEFAULT_SIZE: usize = 100;

/// Which way the working load beside the round trips flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbLoad {
    /// The client sends.
    Up,
    /// The server sends.
    Down,
    /// Both.
    Bidir,
}

impl BbLoad {
    /// The name on the command line and in the parameters.
    pub fn name(self) -> &'static str {
        match self {
            Self::Up => "up",
            Self::Down => "down",
            Self::Bidir => "bidir",
        }
    }

    /// The load named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "up" => Some(Self::Up),
            "down" => Some(Self::Down),
            "bidir" => Some(Self::Bidir),
            _ => None,
        }
    }
}

/// What the client asks for: `{"v":1,"request":100,"reply":100,"hold_us":0,
/// "period_us":0}`, with `"load":"down"` when a working load is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BouncebackOffer {
    /// [`BOUNCEBACK_VERSION`].
    pub version: u32,
    /// Request size in bytes.
    pub request: u32,
    /// Reply size in bytes.
    pub reply: u32,
    /// How long the server holds a request before replying, in µs.
    pub hold_us: u64,
    /// The client's period between transaction starts, in µs (0: back to back).
    pub period_us: u64,
    /// The working load, if any.
    pub load: Option<BbLoad>,
}

impl BouncebackOffer {
    /// The offer as the parameters carry it.
    pub(crate) fn to_json(self) -> Value {
        let mut m = Map::new();
        m.insert("v".into(), self.version.into());
        m.insert("request".into(), self.request.into());
        m.insert("reply".into(), self.reply.into());
        m.insert("hold_us".into(), self.hold_us.into());
        m.insert("period_us".into(), self.period_us.into());
        if let Some(l) = self.load {
            m.insert("load".into(), l.name().into());
        }
        Value::Object(m)
    }

    /// Reads the key's value; anything but an object with a numeric `v` is no
    /// offer. Sizes out of [`MIN_SIZE`]..=[`MAX_SIZE`] are clamped, so a server
    /// never allocates what a client names.
    pub(crate) fn from_json(v: &Value) -> Option<Self> {
        let m = v.as_object()?;
        let num = |k: &str| m.get(k).and_then(Value::as_u64);
        let size = |k: &str| {
            let n = num(k).unwrap_or(DEFAULT_SIZE as u64);
            n.clamp(MIN_SIZE as u64, MAX_SIZE as u64) as u32
        };
        Some(Self {
            version: num("v")?.min(u64::from(u32::MAX)) as u32,
            request: size("request"),
            reply: size("reply"),
            hold_us: num("hold_us").unwrap_or(0),
            period_us: num("period_us").unwrap_or(0),
            load: m
                .get("load")
                .and_then(Value::as_str)
                .and_then(BbLoad::parse),
        })
    }
}

/// Writes the header of transaction `seq` into `frame` (at least [`HEADER_LEN`]).
pub fn put_seq(frame: &mut [u8], seq: u64) {
    frame[..HEADER_LEN].copy_from_slice(&seq.to_be_bytes());
}

/// The transaction number of `frame`.
pub fn seq_of(frame: &[u8]) -> u64 {
    let mut b = [0u8; HEADER_LEN];
    b.copy_from_slice(&frame[..HEADER_LEN]);
    u64::from_be_bytes(b)
}

/// The server's answer to `request`: the reply frame with its number echoed.
pub fn answer(request: &[u8], reply: &mut [u8]) {
    reply[..HEADER_LEN].copy_from_slice(&request[..HEADER_LEN]);
}

/// Whether `reply` answers transaction `seq`.
pub fn answers(reply: &[u8], seq: u64) -> bool {
    seq_of(reply) == seq
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offer_round_trips_through_json() {
        let o = BouncebackOffer {
            version: 1,
            request: 200,
            reply: 4000,
            hold_us: 10_000,
            period_us: 50_000,
            load: Some(BbLoad::Down),
        };
        let v = o.to_json();
        assert_eq!(
            v.to_string(),
            r#"{"v":1,"request":200,"reply":4000,"hold_us":10000,"period_us":50000,"load":"down"}"#
        );
        assert_eq!(BouncebackOffer::from_json(&v), Some(o));
        let plain = BouncebackOffer { load: None, ..o };
        assert!(!plain.to_json().to_string().contains("load"));
        assert_eq!(BouncebackOffer::from_json(&plain.to_json()), Some(plain));
    }

    #[test]
    fn a_malformed_offer_is_none_and_sizes_are_bounded() {
        assert_eq!(BouncebackOffer::from_json(&Value::from(1)), None);
        let no_version: Value = serde_json::from_str(r#"{"request":10}"#).unwrap();
        assert_eq!(BouncebackOffer::from_json(&no_version), None);
        let wild: Value =
            serde_json::from_str(r#"{"v":1,"request":1,"reply":99999999999,"load":"x"}"#).unwrap();
        let o = BouncebackOffer::from_json(&wild).unwrap();
        assert_eq!((o.request, o.reply), (MIN_SIZE as u32, MAX_SIZE as u32));
        assert_eq!((o.hold_us, o.period_us, o.load), (0, 0, None));
    }

    #[test]
    fn a_reply_echoes_its_request_number_and_nothing_else() {
        let mut req = vec![0xAAu8; 100];
        put_seq(&mut req, 0x0102_0304_0506_0708);
        assert_eq!(&req[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(req[8], 0xAA, "the payload after the header is untouched");
        let mut reply = vec![0x55u8; 30];
        answer(&req, &mut reply);
        assert!(answers(&reply, 0x0102_0304_0506_0708));
        assert!(!answers(&reply, 0x0102_0304_0506_0709));
        assert_eq!(reply[8..], [0x55u8; 22]);
    }

    #[test]
    fn loads_are_named_as_typed() {
        for l in [BbLoad::Up, BbLoad::Down, BbLoad::Bidir] {
            assert_eq!(BbLoad::parse(l.name()), Some(l));
        }
        assert_eq!(BbLoad::parse("sideways"), None);
    }
}

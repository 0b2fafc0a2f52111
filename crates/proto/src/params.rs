//! The test parameters document (client → server after PARAM_EXCHANGE).
//!
//! The client must send exactly the key set and JSON types a 3.21 client sends, or
//! 3.18+ servers silently ignore keys. The server must read any 3.x client the way
//! iperf3 does: booleans and some number flags mean "on" by their mere presence, a
//! key with the wrong type is ignored, unknown keys are ignored, missing keys keep
//! their defaults. Range checks come after parsing, in iperf3's order, each with its
//! own error code.

use serde_json::{Map, Value};

use crate::bounceback::{BouncebackOffer, BOUNCEBACK_PARAM_KEY};
use crate::constants::{
    CLIENT_VERSION, DEFAULT_DURATION, DEFAULT_GSRO_BF_SIZE, DEFAULT_PACING_TIMER,
    DEFAULT_TCP_BLKSIZE, LATENCY_PARAM_KEY,
};
use crate::error::IperfError;
use crate::error_codes::IE_RECV_PARAMS;
use crate::framing::{decode_json, encode_json};
use crate::json_num::{as_c_int, as_u64_sat};

/// Transport of the data streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// TCP (the default on both sides).
    #[default]
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

impl Protocol {
    /// The name iperf3 prints (`TCP`, `UDP`, `SCTP`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Tcp => "TCP",
            Self::Udp => "UDP",
            Self::Sctp => "SCTP",
        }
    }

    /// The protocol [`Protocol::name`] names (a document's `test_start.protocol`).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Tcp, Self::Udp, Self::Sctp]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// Direction of test data, derived from `reverse` / `bidirectional`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// Client sends.
    #[default]
    Normal,
    /// Server sends (`-R`).
    Reverse,
    /// Both send (`--bidir`).
    Bidir,
}

/// Every parameter key of spec §5.2, typed.
///
/// Integer fields that iperf3 holds in a C `int` are `i32` and hold what a server
/// read, out-of-range values included, so that [`TestParams::validate`] can reject
/// them with iperf3's codes. Zero means "not set" for the optional numeric keys
/// (`MSS`, `window`, `fqrate`, `burst`, `TOS`, `flowlabel`), as in iperf3.
#[derive(Debug, Clone, PartialEq)]
pub struct TestParams {
    /// `tcp` / `udp` / `sctp`.
    pub protocol: Protocol,
    /// `omit`: seconds omitted at the start.
    pub omit: i32,
    /// `server_affinity`: CPU for the server (`-A n,m`).
    pub server_affinity: Option<i32>,
    /// `time`: duration in seconds; 0 in byte/block mode.
    pub time: i32,
    /// `num`: byte limit, 0 = none.
    pub num: u64,
    /// `blockcount`: block limit, 0 = none.
    pub blockcount: u64,
    /// `MSS`: TCP_MAXSEG for data sockets, 0 = not set.
    pub mss: i32,
    /// `nodelay`: TCP_NODELAY on data sockets.
    pub nodelay: bool,
    /// `parallel`: streams per direction.
    pub parallel: i32,
    /// `reverse`: server sends.
    pub reverse: bool,
    /// `bidirectional`: both send.
    pub bidirectional: bool,
    /// `mptcp`: use MPTCP for TCP streams.
    pub mptcp: bool,
    /// `window`: socket buffer size, 0 = not set.
    pub window: i32,
    /// `len`: block / datagram size.
    pub len: i32,
    /// `bandwidth`: target bit/s per stream, 0 = unlimited.
    pub bandwidth: u64,
    /// `fqrate`: pacing rate in bit/s, 0 = not set.
    pub fqrate: u64,
    /// `pacing_timer`: µs (sent, unused by 3.21).
    pub pacing_timer: i32,
    /// `burst`: packets per burst, 0 = not set.
    pub burst: i32,
    /// `gso` (UDP): 1 if the client uses UDP GSO.
    pub gso: i32,
    /// `gso_dg_size` (UDP).
    pub gso_dg_size: i32,
    /// `gso_bf_size` (UDP).
    pub gso_bf_size: i32,
    /// `gro` (UDP): 1 if the client uses UDP GRO.
    pub gro: i32,
    /// `gro_bf_size` (UDP).
    pub gro_bf_size: i32,
    /// `TOS`: IP TOS byte, 0 = not set.
    pub tos: i32,
    /// `flowlabel`: IPv6 flow label, 0 = not set.
    pub flowlabel: i32,
    /// `title`.
    pub title: Option<String>,
    /// `extra_data`.
    pub extra_data: Option<String>,
    /// `congestion`: TCP congestion control to use.
    pub congestion: Option<String>,
    /// `congestion_used`: informational.
    pub congestion_used: Option<String>,
    /// `get_server_output`.
    pub get_server_output: bool,
    /// `udp_counters_64bit`.
    pub udp_counters_64bit: bool,
    /// `repeating_payload`.
    pub repeating_payload: bool,
    /// `zerocopy`: server sends with sendfile.
    pub zerocopy: bool,
    /// `dont_fragment`.
    pub dont_fragment: bool,
    /// `skip_rx_copy`.
    pub skip_rx_copy: bool,
    /// `authtoken`: base64 RSA token (§10).
    pub authtoken: Option<String>,
    /// `client_version` as received; [`TestParams::to_json`] writes
    /// [`CLIENT_VERSION`] when this is `None`.
    pub client_version: Option<String>,
    /// rperf3's `--latency` ([`LATENCY_PARAM_KEY`]): absent unless asked for, so
    /// the document is byte for byte a 3.21 client's otherwise.
    pub latency: Option<LatencyOffer>,
    /// rperf3's `--bounceback` ([`crate::bounceback::BOUNCEBACK_PARAM_KEY`]):
    /// absent unless asked for, as `latency`.
    pub bounceback: Option<BouncebackOffer>,
}

/// What an rperf3 client asks for under [`LATENCY_PARAM_KEY`]:
/// `{"v": 1, "rate": 10}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyOffer {
    /// The probe exchange's version ([`LATENCY_VERSION`]).
    pub version: u32,
    /// Foreign probes per second the client will open.
    pub rate: u32,
    /// `--rpm`: the test is a stage of the responsiveness test, and the client
    /// will open load connections (markers 'D' and 'U') besides its streams.
    /// Written as `"rpm": 1` only when set, so `--latency` is unchanged.
    pub rpm: bool,
    /// UDP senders stamp the wall clock in the datagram header instead of the
    /// monotonic clock, so the receiver can time each datagram's one-way delay.
    /// Written as `"owd": 1` only when set.
    pub owd: bool,
}

impl LatencyOffer {
    fn to_json(self) -> Value {
        let mut m = Map::new();
        m.insert("v".into(), self.version.into());
        m.insert("rate".into(), self.rate.into());
        if self.rpm {
            m.insert("rpm".into(), 1.into());
        }
        if self.owd {
            m.insert("owd".into(), 1.into());
        }
        Value::Object(m)
    }

    /// Reads the key's value; anything but an object with a numeric `v` is no
    /// offer (the server then answers as iperf3 would).
    fn from_json(v: &Value) -> Option<Self> {
        let m = v.as_object()?;
        let num = |k: &str| {
            m.get(k)
                .and_then(Value::as_u64)
                .map(|n| n.min(u64::from(u32::MAX)) as u32)
        };
        Some(Self {
            version: num("v")?,
            rate: num("rate").unwrap_or(0),
            rpm: num("rpm").is_some_and(|n| n != 0),
            owd: num("owd").is_some_and(|n| n != 0),
        })
    }
}

impl Default for TestParams {
    /// What an iperf3 server assumes for keys the client did not send.
    fn default() -> Self {
        Self {
            protocol: Protocol::Tcp,
            omit: 0,
            server_affinity: None,
            time: DEFAULT_DURATION as i32,
            num: 0,
            blockcount: 0,
            mss: 0,
            nodelay: false,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            mptcp: false,
            window: 0,
            len: DEFAULT_TCP_BLKSIZE as i32,
            bandwidth: 0,
            fqrate: 0,
            pacing_timer: DEFAULT_PACING_TIMER as i32,
            burst: 0,
            gso: 0,
            gso_dg_size: 0,
            gso_bf_size: DEFAULT_GSRO_BF_SIZE as i32,
            gro: 0,
            gro_bf_size: DEFAULT_GSRO_BF_SIZE as i32,
            tos: 0,
            flowlabel: 0,
            title: None,
            extra_data: None,
            congestion: None,
            congestion_used: None,
            get_server_output: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            zerocopy: false,
            dont_fragment: false,
            skip_rx_copy: false,
            authtoken: None,
            client_version: None,
            latency: None,
            bounceback: None,
        }
    }
}

impl TestParams {
    /// Direction of test data. `bidirectional` wins over `reverse`, as on an iperf3
    /// server (the client refuses both with error 25).
    pub fn direction(&self) -> Direction {
        if self.bidirectional {
            Direction::Bidir
        } else if self.reverse {
            Direction::Reverse
        } else {
            Direction::Normal
        }
    }

    /// Number of data streams the server accepts: `parallel`, twice in bidir mode.
    /// 0 for a non-positive `parallel` (never the case after [`Self::validate`]).
    pub fn streams_expected(&self) -> usize {
        let p = usize::try_from(self.parallel).unwrap_or(0);
        if self.bidirectional {
            p * 2
        } else {
            p
        }
    }

    /// Whether the server has sending streams (reverse or bidir).
    pub fn server_sends(&self) -> bool {
        self.direction() != Direction::Normal
    }

    /// Whether the server has receiving streams (normal or bidir).
    pub fn server_receives(&self) -> bool {
        self.direction() != Direction::Reverse
    }

    /// The parameters document as a 3.21 client writes it: key order, key set and
    /// JSON types of the reference client (spec §5.2), `client_version` last.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_owned(), v);
        };
        let proto_key = match self.protocol {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        };
        put(proto_key, Value::Bool(true));
        put("omit", self.omit.into());
        if let Some(a) = self.server_affinity {
            put("server_affinity", a.into());
        }
        put("time", self.time.into());
        put("num", self.num.into());
        put("blockcount", self.blockcount.into());
        if self.mss != 0 {
            put("MSS", self.mss.into());
        }
        if self.nodelay {
            put("nodelay", Value::Bool(true));
        }
        put("parallel", self.parallel.into());
        if self.reverse {
            put("reverse", Value::Bool(true));
        }
        if self.bidirectional {
            put("bidirectional", Value::Bool(true));
        }
        if self.mptcp {
            put("mptcp", Value::Bool(true));
        }
        if self.window != 0 {
            put("window", self.window.into());
        }
        if self.len != 0 {
            put("len", self.len.into());
        }
        if self.bandwidth != 0 {
            put("bandwidth", self.bandwidth.into());
        }
        if self.fqrate != 0 {
            put("fqrate", self.fqrate.into());
        }
        if self.pacing_timer != 0 {
            put("pacing_timer", self.pacing_timer.into());
        }
        if self.burst != 0 {
            put("burst", self.burst.into());
        }
        if self.protocol == Protocol::Udp {
            put("gso", self.gso.into());
            put("gso_dg_size", self.gso_dg_size.into());
            put("gso_bf_size", self.gso_bf_size.into());
            put("gro", self.gro.into());
            put("gro_bf_size", self.gro_bf_size.into());
        }
        if self.tos != 0 {
            put("TOS", self.tos.into());
        }
        if self.flowlabel != 0 {
            put("flowlabel", self.flowlabel.into());
        }
        let strings = [
            ("title", &self.title),
            ("extra_data", &self.extra_data),
            ("congestion", &self.congestion),
            ("congestion_used", &self.congestion_used),
        ];
        for (k, v) in strings {
            if let Some(s) = v {
                put(k, Value::String(s.clone()));
            }
        }
        let flags = [
            ("get_server_output", self.get_server_output),
            ("udp_counters_64bit", self.udp_counters_64bit),
            ("repeating_payload", self.repeating_payload),
            ("zerocopy", self.zerocopy),
            ("dont_fragment", self.dont_fragment),
        ];
        for (k, on) in flags {
            if on {
                put(k, 1.into());
            }
        }
        if let Some(t) = &self.authtoken {
            put("authtoken", Value::String(t.clone()));
        }
        if self.skip_rx_copy {
            put("skip_rx_copy", 1.into());
        }
        let version = self.client_version.as_deref().unwrap_or(CLIENT_VERSION);
        put("client_version", Value::String(version.to_owned()));
        if let Some(l) = self.latency {
            put(LATENCY_PARAM_KEY, l.to_json());
        }
        if let Some(b) = self.bounceback {
            put(BOUNCEBACK_PARAM_KEY, b.to_json());
        }
        Value::Object(m)
    }

    /// The parameters document framed for the wire (length prefix + JSON).
    pub fn encode(&self) -> Vec<u8> {
        encode_json(&self.to_json())
    }

    /// Reads a parameters document with iperf3 3.21 server semantics. Fails with
    /// error 114 (IERECVPARAMS) only if the text is not a JSON object.
    pub fn from_json(body: &[u8]) -> Result<Self, IperfError> {
        let v = decode_json(body).map_err(|_| IperfError::new(IE_RECV_PARAMS))?;
        match v {
            Value::Object(m) => Ok(Self::from_map(&m)),
            _ => Err(IperfError::new(IE_RECV_PARAMS)),
        }
    }

    /// [`Self::from_json`] on an already parsed object.
    pub fn from_map(m: &Map<String, Value>) -> Self {
        let mut p = Self::default();
        // Booleans: present as a JSON boolean (any value) means on.
        let flag = |k: &str| matches!(m.get(k), Some(Value::Bool(_)));
        // Numbers as cJSON's saturated int; other types are ignored.
        let int = |k: &str| m.get(k).and_then(as_c_int);
        let u64v = |k: &str| m.get(k).and_then(as_u64_sat);
        let string = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);

        // Later protocol keys win, as in iperf3's order of checks.
        if flag("tcp") {
            p.protocol = Protocol::Tcp;
        }
        if flag("udp") {
            p.protocol = Protocol::Udp;
        }
        if flag("sctp") {
            p.protocol = Protocol::Sctp;
        }
        if let Some(v) = int("omit") {
            p.omit = v;
        }
        p.server_affinity = int("server_affinity");
        if let Some(v) = int("time") {
            p.time = v;
        }
        p.num = u64v("num").unwrap_or(0);
        p.blockcount = u64v("blockcount").unwrap_or(0);
        if let Some(v) = int("MSS") {
            p.mss = v;
        }
        p.nodelay = flag("nodelay");
        if let Some(v) = int("parallel") {
            p.parallel = v;
        }
        p.reverse = flag("reverse");
        p.bidirectional = flag("bidirectional");
        p.mptcp = flag("mptcp");
        if let Some(v) = int("window") {
            p.window = v;
        }
        if let Some(v) = int("len") {
            p.len = v;
        }
        if let Some(v) = u64v("bandwidth") {
            p.bandwidth = v;
        }
        if let Some(v) = u64v("fqrate") {
            p.fqrate = v;
        }
        if let Some(v) = int("pacing_timer") {
            p.pacing_timer = v;
        }
        if let Some(v) = int("burst") {
            p.burst = v;
        }
        let gsro = [
            ("gso", &mut p.gso),
            ("gso_dg_size", &mut p.gso_dg_size),
            ("gso_bf_size", &mut p.gso_bf_size),
            ("gro", &mut p.gro),
            ("gro_bf_size", &mut p.gro_bf_size),
        ];
        for (k, field) in gsro {
            if let Some(v) = int(k) {
                *field = v;
            }
        }
        if let Some(v) = int("TOS") {
            p.tos = v;
        }
        if let Some(v) = int("flowlabel") {
            p.flowlabel = v;
        }
        p.title = string("title");
        p.extra_data = string("extra_data");
        p.congestion = string("congestion");
        p.congestion_used = string("congestion_used");
        // Presence of any number turns these on, even 0.
        p.get_server_output = int("get_server_output").is_some();
        p.udp_counters_64bit = int("udp_counters_64bit").is_some();
        p.repeating_payload = int("repeating_payload").is_some();
        // These take the value: 0 is off.
        p.zerocopy = int("zerocopy").is_some_and(|v| v != 0);
        p.dont_fragment = int("dont_fragment").is_some_and(|v| v != 0);
        p.skip_rx_copy = int("skip_rx_copy").is_some_and(|v| v != 0);
        p.authtoken = string("authtoken");
        p.client_version = string("client_version");
        p.latency = m.get(LATENCY_PARAM_KEY).and_then(LatencyOffer::from_json);
        p.bounceback = m
            .get(BOUNCEBACK_PARAM_KEY)
            .and_then(BouncebackOffer::from_json);
        p
    }
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;

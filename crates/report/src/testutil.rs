//! Shared builders for the tests of this crate.

use crate::input::{Protocol, Side, StreamInfo, TestInfo};

pub(crate) fn test_info(side: Side, protocol: Protocol) -> TestInfo {
    TestInfo {
        side,
        protocol,
        num_streams: 1,
        blksize: 131072,
        omit: 0,
        duration: 2,
        bytes: 0,
        blocks: 0,
        reverse: false,
        bidir: false,
        tos: 0,
        target_bitrate: 0,
        fq_rate: 0,
        interval: 1.0,
        gso: false,
        gro: false,
    }
}

pub(crate) fn stream(socket: i32, id: u32, sender: bool, local: &str, remote: &str) -> StreamInfo {
    StreamInfo {
        socket,
        id,
        sender,
        local: local.parse().unwrap(),
        remote: remote.parse().unwrap(),
    }
}

use crate::input::{
    IntervalInput, MssInfo, PeerStream, SampleExtra, StartInfo, StreamFinal, StreamSample,
    TcpSample, TcpTotals, UdpRecvSample,
};
use crate::{ReportOptions, Reporter};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// A writer whose bytes the test can read back.
#[derive(Clone, Default)]
pub(crate) struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub(crate) const VERSION: &str = "iperf 3.21+";
pub(crate) const UNAME: &str = "Linux vm 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0 x86_64";

/// A reporter writing into buffers: (reporter, stdout, stderr).
pub(crate) fn reporter(
    opts: impl FnOnce(&mut ReportOptions),
    side: Side,
) -> (Reporter, Shared, Shared) {
    let mut o = ReportOptions::new(side, VERSION, UNAME);
    opts(&mut o);
    let (out, err) = (Shared::default(), Shared::default());
    (
        Reporter::new(o, Box::new(out.clone()), Box::new(err.clone())),
        out,
        err,
    )
}

pub(crate) fn start_info(side: Side, tcp: bool) -> StartInfo {
    StartInfo {
        version: VERSION.into(),
        system_info: UNAME.into(),
        timestamp_millis: 1_795_236_827_254,
        connecting_to: (side == Side::Client).then(|| ("127.0.0.1".to_string(), 27911)),
        accepted_connection: (side == Side::Server).then(|| "127.0.0.1:41188".parse().unwrap()),
        cookie: "yys3vtkxwb6ffuu6vtmbwsixxjlwweqwngq6".into(),
        tcp_mss: tcp.then_some(MssInfo::Default(if side == Side::Client {
            32768
        } else {
            0
        })),
        sock_bufsize: 0,
        sndbuf_actual: 16384,
        rcvbuf_actual: 131072,
    }
}

pub(crate) fn fixture(name: &str) -> String {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/iperf-3.21")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// Text with its figures masked, to compare a layout with a capture whose
/// numbers came from another run: every number becomes `#`, unit prefixes go
/// (`MBytes` and `GBytes` are both `Bytes`), runs of spaces become one.
pub(crate) fn masked(text: &str) -> String {
    let line = |l: &str| {
        l.split_whitespace()
            .map(|w| {
                let w = if w.ends_with("Bytes") || w.ends_with("bits/sec") {
                    w.trim_start_matches(['K', 'M', 'G', 'T'])
                } else {
                    w
                };
                let mut out = String::new();
                let mut in_num = false;
                for c in w.chars() {
                    let digit = c.is_ascii_digit() || (in_num && c == '.');
                    if !digit {
                        out.push(c);
                    } else if !in_num {
                        out.push('#');
                    }
                    in_num = digit;
                }
                out
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    text.lines().map(line).collect::<Vec<_>>().join("\n")
}

pub(crate) fn sample(start: f64, end: f64, bytes: u64, extra: SampleExtra) -> StreamSample {
    StreamSample {
        start,
        end,
        bytes,
        omitted: false,
        extra,
    }
}

pub(crate) fn tcp_tx(
    start: f64,
    end: f64,
    bytes: u64,
    retransmits: u64,
    snd_cwnd: u64,
) -> StreamSample {
    let t = TcpSample {
        retransmits,
        snd_cwnd,
        ..Default::default()
    };
    sample(start, end, bytes, SampleExtra::TcpSender(t))
}

pub(crate) fn plain(start: f64, end: f64, bytes: u64) -> StreamSample {
    sample(start, end, bytes, SampleExtra::None)
}

pub(crate) fn udp_tx(start: f64, end: f64, bytes: u64, packets: u64) -> StreamSample {
    sample(start, end, bytes, SampleExtra::UdpSender { packets })
}

pub(crate) fn udp_rx(start: f64, end: f64, bytes: u64, jitter: f64, packets: i64) -> StreamSample {
    let r = UdpRecvSample {
        jitter,
        lost: 0,
        packets,
        out_of_order: 0,
    };
    sample(start, end, bytes, SampleExtra::UdpReceiver(r))
}

pub(crate) fn fin(bytes: u64, duration: f64) -> StreamFinal {
    StreamFinal {
        bytes,
        duration,
        tcp: None,
        udp: None,
    }
}

pub(crate) fn tcp_fin(bytes: u64, duration: f64, retransmits: u64) -> StreamFinal {
    let tcp = TcpTotals {
        retransmits,
        ..Default::default()
    };
    StreamFinal {
        tcp: Some(tcp),
        ..fin(bytes, duration)
    }
}

pub(crate) fn peer(id: u32, bytes: u64, retransmits: i64, duration: f64) -> PeerStream {
    PeerStream {
        id,
        bytes,
        retransmits,
        duration: Some(duration),
        ..Default::default()
    }
}

pub(crate) fn iv(streams: Vec<StreamSample>) -> IntervalInput {
    IntervalInput {
        latency: None,
        bounceback: None,
        streams,
    }
}

pub(crate) fn done(mut r: Reporter, out: &Shared) -> String {
    r.finish().unwrap();
    out.text()
}

pub(crate) fn client_tcp(verbose: bool) -> (Reporter, Shared) {
    let (r, out, _) = reporter(|o| o.verbose = verbose, Side::Client);
    (r, out)
}

pub(crate) fn udp_test(side: Side) -> TestInfo {
    TestInfo {
        blksize: 1400,
        target_bitrate: 1_000_000,
        ..test_info(side, Protocol::Udp)
    }
}

/// Each line of a `--json-stream` (or any JSON-lines) output, parsed.
pub(crate) fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The `data` of each `--json-stream` event named `name`, in order.
pub(crate) fn event_data<'a>(
    events: &'a [serde_json::Value],
    name: &str,
) -> Vec<&'a serde_json::Value> {
    events
        .iter()
        .filter(|e| e["event"] == name)
        .map(|e| &e["data"])
        .collect()
}

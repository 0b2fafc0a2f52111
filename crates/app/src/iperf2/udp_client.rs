//! iperf 2's UDP client: `-P` flows, each a connected socket sending paced
//! datagrams with iperf 2's header and the test header repeated in every
//! datagram, then the FIN handshake that fetches the server report (none for
//! multicast or `--no-udp-fin`).
//!
//! The datagrams move through the shared engine loops (trains or batches);
//! only the header is iperf 2's.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use rperf3_engine::budget::{Budget, BudgetUnit};
use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::pacing::Pacer;
use rperf3_engine::udp::{send_stamped, UdpSendSpec};
use rperf3_engine::udp2::{wall_now, Stamp2};
use rperf3_proto2::{
    fin_seq, next_fin_seq, udp_rate_on_wire, DatagramHeader, Mode, ServerReport, TestEnd,
    TestRequest, Transport, UdpRate, FIN_MAX_SENDS, FIN_RETRY_WAIT, VERSION_2_2_1,
};
use rperf3_report::iperf2::model::{
    Connection2, Event2, Proto2, Row2, RowKind2, Settings2, Side2, Tag2, UdpSend2,
};
use rperf3_report::iperf2::Report2;
use rperf3_sys::net::resolve;

use super::config::{Client2, Config2, End2, Rate2, DEFAULT_UDP_RATE};
use super::udp_common::{parse_report, payload, report_row, Ticks};
use super::Outcome2;
use crate::Interrupt;

/// Flows start this far apart. A stock server hands its listening socket to
/// each new flow and binds a new one; first datagrams of other flows that
/// arrive in between are read by the wrong flow or refused, and that flow is
/// never served (iperf 2.2.1's own `-P 4` loses flows so on loopback).
const FLOW_STAGGER: Duration = Duration::from_millis(10);

/// The request every datagram of a client's flows carries.
pub(crate) fn request(cfg: &Config2, c: &Client2, len: u32) -> TestRequest {
    let rate = match c.rate.unwrap_or(Rate2::Bits(DEFAULT_UDP_RATE)) {
        Rate2::Bits(b) => UdpRate::BitsPerSec(b),
        Rate2::Packets(n) => UdpRate::PacketsPerSec(n),
    };
    TestRequest {
        transport: Transport::Udp,
        end: match c.end {
            End2::Time(d) => TestEnd::Time(d),
            End2::Bytes(n) => TestEnd::Bytes(n),
        },
        mode: Mode::Normal,
        streams: c.parallel.max(1),
        transfer_id: None,
        rate: udp_rate_on_wire(rate, Mode::Normal, len),
        rate_is_pps: false,
        buf_len: cfg.common.len,
        win_band: 0,
        tos: cfg.common.tos.unwrap_or(0),
        peer_version: Some(VERSION_2_2_1),
        wants_ack: false,
        peer_detect: c.peer_detect,
        trip_times: cfg.common.trip_times,
        trip_start: cfg.common.trip_times.then(wall_now),
        txstart: None,
        skewed_start: false,
        isochronous: false,
        isoch_settings: None,
        no_udp_fin: c.no_udp_fin,
        seq64: true,
        small_trip_times: false,
        fq_rate: None,
        write_prefetch: None,
        barrier_us: None,
        quickack: false,
        periodic_burst: false,
        l4s: false,
        cca: None,
        permit_key: None,
    }
}

/// The sending rate in bits per second (`None`: unpaced, `-b 0`).
pub(crate) fn bits_per_sec(rate: Option<Rate2>, len: u32) -> Option<u64> {
    let b = match rate.unwrap_or(Rate2::Bits(DEFAULT_UDP_RATE)) {
        Rate2::Bits(b) => b,
        Rate2::Packets(n) => n.saturating_mul(8 * u64::from(len)),
    };
    (b > 0).then_some(b)
}

/// One flow's socket, connected to the server (or group).
fn open(cfg: &Config2, dest: SocketAddr, multicast: bool) -> io::Result<UdpSocket> {
    let local: SocketAddr = match (&cfg.common.bind, dest) {
        (Some(b), _) if !b.host.is_empty() => {
            let ip = resolve(&b.host, 0, cfg.common.family)?[0].ip();
            SocketAddr::new(ip, b.port.unwrap_or(0))
        }
        (b, SocketAddr::V4(_)) => SocketAddr::new(
            [0, 0, 0, 0].into(),
            b.as_ref().and_then(|b| b.port).unwrap_or(0),
        ),
        (b, SocketAddr::V6(_)) => SocketAddr::new(
            std::net::Ipv6Addr::UNSPECIFIED.into(),
            b.as_ref().and_then(|b| b.port).unwrap_or(0),
        ),
    };
    let dev = cfg.common.bind.as_ref().and_then(|b| b.device.as_deref());
    let s = rperf3_sys::net::udp_bind(local, false, dev)?;
    if let Some(w) = cfg.common.window {
        rperf3_sys::net::set_buffer_sizes(&s, w as usize)?;
    }
    if let Some(t) = cfg.common.tos {
        rperf3_sys::sockopt::set_tos(&s, dest.is_ipv6(), t)?;
    }
    if multicast {
        rperf3_sys::mcast::set_multicast_ttl(&s, dest.is_ipv6(), cfg.common.ttl)?;
    }
    s.connect(dest)?;
    Ok(s)
}

/// What a flow's thread hands back.
struct FlowEnd {
    /// Sending time (first datagram to the FIN).
    elapsed: Duration,
    /// Data datagrams sent.
    data: u64,
    /// The report, if one came.
    report: Option<ServerReport>,
    /// FINs sent.
    fins: u32,
    error: Option<io::Error>,
}

struct Flow {
    tag: Tag2,
    addrs: (SocketAddr, SocketAddr),
    counters: Arc<StreamCounters>,
    ctl: Arc<RunControl>,
    handle: Option<JoinHandle<FlowEnd>>,
    end: Option<FlowEnd>,
    last: (u64, u64),
}

/// Sends one flow's data and its FIN, then waits for the report.
fn run_flow(
    sock: UdpSocket,
    payload: Arc<Vec<u8>>,
    spec: UdpSendSpec,
    ctl: Arc<RunControl>,
    counters: Arc<StreamCounters>,
    handshake: bool,
    delay: Duration,
) -> FlowEnd {
    ctl.nap(delay);
    let t0 = Instant::now();
    let mut stamp = Stamp2::new(true);
    let error = send_stamped(&sock, &payload, spec, &ctl, &counters, &mut stamp).err();
    let data = counters.snapshot().blocks;
    let elapsed = t0.elapsed();
    let (report, fins) = finish(
        &sock,
        &payload[..spec.len.min(payload.len())],
        data,
        handshake,
    );
    FlowEnd {
        elapsed,
        data,
        report,
        fins,
        error,
    }
}

/// The end handshake: a FIN (negative sequence number), repeated with the
/// number counting down every [`FIN_RETRY_WAIT`] until a report arrives, at
/// most [`FIN_MAX_SENDS`] times; a single FIN without `handshake`. Returns the
/// report and how many FINs went out.
fn finish(
    sock: &UdpSocket,
    datagram: &[u8],
    data: u64,
    handshake: bool,
) -> (Option<ServerReport>, u32) {
    let mut d = datagram.to_vec();
    let mut seq = fin_seq(data as i64);
    let sent = wall_now();
    let mut buf = [0u8; 2048];
    let _ = sock.set_read_timeout(Some(FIN_RETRY_WAIT));
    for n in 1..=FIN_MAX_SENDS {
        DatagramHeader { seq, sent }.encode(&mut d, true);
        let _ = sock.send(&d);
        if !handshake {
            return (None, n);
        }
        let until = Instant::now() + FIN_RETRY_WAIT;
        while Instant::now() < until {
            match sock.recv(&mut buf) {
                Ok(k) => {
                    if let Some(r) = parse_report(&buf[..k]) {
                        return (Some(r), n);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A refused port (no server) or the timeout: send the next FIN.
                Err(_) => break,
            }
        }
        seq = next_fin_seq(seq);
    }
    (None, FIN_MAX_SENDS)
}

fn send_row(tag: Tag2, span: (f64, f64), bytes: u64, writes: u64) -> Row2 {
    Row2 {
        tag,
        addrs: None,
        start: span.0,
        end: span.1,
        bytes,
        kind: RowKind2::UdpSend(UdpSend2 {
            writes,
            write_errors: 0,
            timeouts: 0,
        }),
        at: SystemTime::now(),
    }
}

/// Runs the UDP client of `cfg` (whose role is a client).
pub(crate) fn run(
    cfg: &Config2,
    c: &Client2,
    report: Arc<dyn Report2>,
    mut intr: Interrupt,
) -> Outcome2 {
    let fail = |msg: String| {
        report.event(Event2::Message(msg));
        Outcome2 { status: 1 }
    };
    let dest = match resolve(&c.host, cfg.common.port, cfg.common.family) {
        Ok(a) => a[0],
        Err(e) => return fail(format!("ERROR: failed name resolution for {}: {e}", c.host)),
    };
    let multicast = dest.ip().is_multicast();
    let len = cfg.common.len_or_default(dest.is_ipv6());
    let req = request(cfg, c, len);
    let header = req.udp_header(VERSION_2_2_1, cfg.common.port);
    let body = Arc::new(payload(len as usize, &header));
    let rate = bits_per_sec(c.rate, len);
    let n = c.parallel.max(1);
    let mut flows = Vec::new();
    let mut socks = Vec::new();
    for _ in 0..n {
        match open(cfg, dest, multicast) {
            Ok(s) => socks.push(s),
            Err(e) => return fail(format!("ERROR: connect failed: {e}")),
        }
    }
    let window = rperf3_sys::net::buffer_sizes(&socks[0]).0;
    report.event(Event2::Settings(Settings2 {
        side: Side2::Client,
        proto: Proto2::Udp,
        host: Some(c.host.clone()),
        port: cfg.common.port,
        pid: std::process::id(),
        flows: n,
        len,
        ipg_us: rate.map(|b| len as f64 * 8.0 / b as f64 * 1e6),
        window,
        window_requested: cfg.common.window.is_some(),
        congestion: None,
        tos: cfg.common.tos.unwrap_or(0),
        nodelay: false,
        mss: None,
        multicast: None,
        ttl: multicast.then_some(cfg.common.ttl),
        mode_note: None,
    }));
    let handshake = !multicast && !c.no_udp_fin;
    let spec = UdpSendSpec {
        len: len as usize,
        pacer: rate.map(Pacer::new),
        burst: 1,
        counters_64bit: true,
    };
    let start = Instant::now();
    for (i, s) in socks.into_iter().enumerate() {
        let tag = Tag2::Id(i as u32 + 1);
        let local = s.local_addr().unwrap_or(dest);
        report.event(Event2::Connected(Connection2 {
            tag,
            local,
            device: None,
            peer: dest,
            notes: Vec::new(),
            peer_version: None,
            tcp: None,
            connect_time: None,
            at: SystemTime::now(),
        }));
        let budget = match c.end {
            End2::Bytes(b) => Some(Budget::new(BudgetUnit::Bytes, b)),
            End2::Time(_) => None,
        };
        let ctl = Arc::new(RunControl::new(budget));
        let counters = Arc::new(StreamCounters::default());
        let (b2, c2, k2) = (body.clone(), ctl.clone(), counters.clone());
        let handle = std::thread::Builder::new()
            .name(format!("udp2-tx-{}", i + 1))
            .spawn(move || run_flow(s, b2, spec, c2, k2, handshake, FLOW_STAGGER * i as u32));
        let handle = match handle {
            Ok(h) => h,
            Err(e) => return fail(format!("ERROR: thread: {e}")),
        };
        flows.push(Flow {
            tag,
            addrs: (local, dest),
            counters,
            ctl,
            handle: Some(handle),
            end: None,
            last: (0, 0),
        });
    }
    let deadline = match c.end {
        End2::Time(d) => Some(start + d),
        End2::Bytes(_) => None,
    };
    let mut ticks = Ticks::new(start, cfg.common.interval);
    let mut stopped = false;
    loop {
        let now = Instant::now();
        if !stopped && (deadline.is_some_and(|d| now >= d) || intr.triggered()) {
            flows.iter().for_each(|f| f.ctl.stop());
            stopped = true;
        }
        for f in &mut flows {
            if f.handle.as_ref().is_some_and(|h| h.is_finished()) {
                f.end = f.handle.take().and_then(|h| h.join().ok());
            }
        }
        if flows.iter().all(|f| f.handle.is_none()) {
            break;
        }
        if let Some(t) = ticks.next().filter(|&t| now >= t) {
            let span = ticks.take();
            // A flow whose sending ended before the tick has no interval row.
            if deadline.is_none_or(|d| t <= d) {
                interval_rows(&mut flows, span, &*report);
            }
            continue;
        }
        let mut wake = now + Duration::from_millis(if stopped { 5 } else { 50 });
        for t in [ticks.next(), deadline.filter(|_| !stopped)]
            .into_iter()
            .flatten()
        {
            wake = wake.min(t);
        }
        let _ = rperf3_sys::poll::readable(&intr.fd(), wake.saturating_duration_since(now));
    }
    // A tick that fell due as the flows ended (the last one of `-t`).
    let end = deadline.unwrap_or_else(Instant::now);
    while ticks
        .next()
        .is_some_and(|t| t <= end + Duration::from_millis(1))
    {
        let span = ticks.take();
        interval_rows(&mut flows, span, &*report);
    }
    finals(&flows, &*report, len as u64)
}

fn interval_rows(flows: &mut [Flow], span: (f64, f64), report: &dyn Report2) {
    let (mut sb, mut sw) = (0, 0);
    for f in flows.iter_mut() {
        let s = f.counters.snapshot();
        let (b, w) = (s.bytes - f.last.0, s.blocks - f.last.1);
        f.last = (s.bytes, s.blocks);
        sb += b;
        sw += w;
        report.event(Event2::Interval(send_row(f.tag, span, b, w)));
    }
    if flows.len() > 1 {
        report.event(Event2::Interval(send_row(
            Tag2::Sum(flows.len() as u32),
            span,
            sb,
            sw,
        )));
    }
}

/// The closing rows: each flow's total (the first FIN counts as a write, as
/// iperf 2 counts it) and "Sent" (iperf 2 prints the FIN's number plus one),
/// the sum, then the server reports or the warning that none came.
fn finals(flows: &[Flow], report: &dyn Report2, len: u64) -> Outcome2 {
    let n = flows.len() as u32;
    let (mut sum_b, mut sum_w, mut sum_sent, mut longest) = (0, 0, 0, 0.0f64);
    let mut status = 0;
    for f in flows {
        let Some(e) = &f.end else {
            status = 1;
            continue;
        };
        if let Some(err) = &e.error {
            report.event(Event2::Message(format!(
                "[{:>3}] ERROR: write failed: {err}",
                tag_id(f.tag)
            )));
            status = 1;
        }
        let writes = e.data + 1;
        let bytes = f.counters.snapshot().bytes + len;
        let secs = e.elapsed.as_secs_f64();
        longest = longest.max(secs);
        sum_b += bytes;
        sum_w += writes;
        sum_sent += writes + 1;
        report.event(Event2::Final(Row2 {
            addrs: Some(f.addrs),
            ..send_row(f.tag, (0.0, secs), bytes, writes)
        }));
        report.event(Event2::Sent {
            tag: f.tag,
            datagrams: writes + 1,
        });
    }
    if n > 1 {
        report.event(Event2::Final(send_row(
            Tag2::Sum(n),
            (0.0, longest),
            sum_b,
            sum_w,
        )));
        report.event(Event2::Sent {
            tag: Tag2::Sum(n),
            datagrams: sum_sent,
        });
    }
    for f in flows {
        let Some(e) = &f.end else { continue };
        match &e.report {
            Some(r) => report.event(Event2::ServerReport(report_row(f.tag, f.addrs, r))),
            None if e.fins > 1 => report.event(Event2::Message(format!(
                "[{:>3}] WARNING: did not receive ack of last datagram after {} tries.",
                tag_id(f.tag),
                e.fins
            ))),
            None => {}
        }
    }
    Outcome2 { status }
}

fn tag_id(t: Tag2) -> u32 {
    match t {
        Tag2::Id(i) | Tag2::ReverseId(i) | Tag2::Sum(i) => i,
    }
}

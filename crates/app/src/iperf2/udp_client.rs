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
use std::time::{Duration, Instant, SystemTime};

use super::udp_wire::wall_now;
use rperf3_engine::control::RunControl;
use rperf3_engine::pacing::Pacer;
use rperf3_engine::udp::UdpSendSpec;
use rperf3_proto2::{
    udp_rate_on_wire, ClientClock, Layout, Mode, SmallTripTimes, TestEnd, TestRequest, Transport,
    UdpRate, VERSION_2_2_1,
};
use rperf3_report::iperf2::model::{
    Connection2, Event2, IsochSettings2, Proto2, Row2, RowKind2, Settings2, Side2, Tag2,
};
use rperf3_report::iperf2::{isoch_schedule_line, tos_note, Report2};
use rperf3_sys::net::{resolve, udp_bind};

use super::config::{Client2, Config2, End2, Mode2, Rate2, DEFAULT_UDP_RATE};
use super::tcp_setup::device_of;
use super::udp_back::{any_of, back_due, listener_block, receive_back, BackRecv};
use super::udp_common::{
    datagrams_of, duplex_rows, pattern, payload, report_row, trip, Duplex, Ticks,
};
use super::udp_send::{send_row, Rx, Tx, TxPlan};
use super::Outcome2;
use crate::Interrupt;

/// Flows start this far apart. A stock server hands its listening socket to
/// each new flow and binds a new one; first datagrams of other flows that
/// arrive in between are read by the wrong flow or refused, and that flow is
/// never served (iperf 2.2.1's own `-P 4` loses flows so on loopback).
const FLOW_STAGGER: Duration = Duration::from_millis(10);

/// Datagram lengths below this carry the small trip-times header.
const SMALL_TT_BELOW: usize = 128;

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
        mode: wire_mode(cfg, c),
        streams: c.parallel.max(1),
        transfer_id: None,
        rate: udp_rate_on_wire(rate, wire_mode(cfg, c), len),
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
        isochronous: c.isoch.is_some(),
        // The server sends frames too (-R, full duplex): it reads how from
        // the settings block, as 2.2.1's does.
        isoch_settings: c
            .isoch
            .filter(|_| matches!(wire_mode(cfg, c), Mode::Reverse | Mode::FullDuplex))
            .map(|i| i.wire_settings()),
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

/// The bytes after each datagram's header, and whether they are the small
/// trip-times header: datagrams too short for the full header carry
/// trip-times in the small one (no 64-bit sequence numbers then), as iperf 2
/// sends them.
pub(crate) fn body(cfg: &Config2, req: &TestRequest, len: u32) -> (Vec<u8>, bool) {
    let small = req.trip_times && (len as usize) < SMALL_TT_BELOW && req.mode == Mode::Normal;
    if small {
        let mut p = pattern(len as usize);
        SmallTripTimes::default().encode(Layout::V2_2_1, &mut p);
        (p, true)
    } else {
        let h = req.udp_header(VERSION_2_2_1, cfg.common.port);
        (payload(len as usize, &h), false)
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
    let s = udp_bind(local, false, dev)?;
    if let Some(w) = cfg.common.window {
        rperf3_sys::net::set_buffer_sizes(&s, w as usize)?;
    }
    if let Some(t) = cfg.common.tos {
        rperf3_sys::sockopt::set_tos(&s, dest.is_ipv6(), t)?;
    }
    if multicast {
        rperf3_sys::mcast::set_multicast_ttl(&s, dest.is_ipv6(), cfg.common.ttl)?;
        // -B picks the interface the group's datagrams leave by.
        let ifindex = match dev {
            Some(d) => rperf3_sys::mcast::interface_index(d)?,
            None => 0,
        };
        let bound = cfg.common.bind.as_ref().is_some_and(|b| !b.host.is_empty());
        if bound || ifindex != 0 {
            rperf3_sys::mcast::set_multicast_interface(&s, local.ip(), ifindex)?;
        }
    }
    s.connect(dest)?;
    Ok(s)
}

/// One flow of the client: its sending and/or receiving direction.
struct Flow {
    id: u32,
    /// When this flow's sending ends (`-t` from its own start).
    until: Option<Instant>,
    addrs: (SocketAddr, SocketAddr),
    tx: Option<Tx>,
    rx: Option<Rx>,
    /// Held to the end of the run: late report repeats of a server still
    /// draining this flow's FINs (during a `-r` test back) land here instead
    /// of being refused.
    _sock: Arc<UdpSocket>,
}

impl Flow {
    fn done(&mut self) -> bool {
        let t = self.tx.as_mut().is_none_or(Tx::poll);
        let r = self.rx.as_mut().is_none_or(Rx::poll);
        t && r
    }
}

fn wire_mode(cfg: &Config2, c: &Client2) -> Mode {
    // -d/-r: the server sends back to the -L port (default: -p's).
    let port = c.listen_port.unwrap_or(cfg.common.port);
    match c.mode {
        Mode2::Reverse => Mode::Reverse,
        Mode2::FullDuplex => Mode::FullDuplex,
        Mode2::Dual => Mode::Dual { port },
        Mode2::Tradeoff => Mode::Tradeoff { port },
        Mode2::Normal => Mode::Normal,
    }
}

/// The connection line's notes, in 2.2.1's order: a full-duplex client
/// (which ends without the FIN handshake) says `(no-udp-fin)` as well.
fn conn_notes(c: &Client2, mode: Mode, trip_times: bool, tos: Option<u8>) -> Vec<String> {
    let mut notes: Vec<String> = [
        (c.isoch.is_some(), "(isoch)"),
        (mode == Mode::Reverse, "(reverse)"),
        (mode == Mode::FullDuplex, "(full-duplex)"),
        (mode == Mode::FullDuplex, "(no-udp-fin)"),
        (trip_times, "(trip-times)"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| n.to_string())
    .collect();
    notes.extend(tos_note(
        tos.unwrap_or(0),
        matches!(mode, Mode::Reverse | Mode::FullDuplex),
        mode != Mode::Reverse,
    ));
    notes
}

/// Runs the UDP client described by `cfg`: its flows (`-P`), each sending,
/// receiving (`-R`) or both (full duplex), and a `-d`/`-r` direction back.
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
    let t = Test::new(cfg, c, dest);
    if t.multicast && t.mode != Mode::Normal {
        return fail("ERROR: a multicast test only sends from the client".into());
    }
    let mut socks = Vec::new();
    for i in 0..c.parallel.max(1) {
        let to = if c.incr_dstport {
            SocketAddr::new(dest.ip(), dest.port().wrapping_add(i as u16))
        } else {
            dest
        };
        match open(cfg, to, t.multicast) {
            Ok(s) => socks.push(Arc::new(s)),
            Err(e) => return fail(format!("ERROR: connect failed: {e}")),
        }
    }
    // -d/-r: the socket the server's datagrams come back to, bound before
    // the request goes out.
    let back_sock = match t.mode {
        Mode::Dual { port } | Mode::Tradeoff { port } => match open_back(cfg, dest, port) {
            Ok(s) => Some((s, port)),
            Err(e) => return fail(format!("ERROR: listener bind failed: {e}")),
        },
        _ => None,
    };
    // -r prints its listener block first, -d after the client's.
    let listener = back_sock.as_ref().map(|(s, p)| {
        (
            listener_block(s, *p, t.len),
            !matches!(t.mode, Mode::Dual { .. }),
        )
    });
    if let Some((b, true)) = &listener {
        report.event(b.clone());
    }
    let window = rperf3_sys::net::buffer_sizes(&*socks[0]).0;
    report.event(Event2::Settings(t.settings(socks.len() as u32, window)));
    if let Some((b, false)) = listener {
        report.event(b);
    }
    // --txdelay-time: nothing is sent before the wait (where 2.2.1 sends
    // its first datagram and idles, so its server's rates count the wait).
    let delayed = c
        .txdelay
        .map(|d| (SystemTime::now() + d, Instant::now() + d));
    t.announce(&socks, delayed.map(|d| d.0), &*report);
    if let Some((_, until)) = delayed {
        super::tcp_setup::wait_until(until, &mut intr);
        if intr.triggered() {
            return Outcome2 { status: 0 };
        }
    }
    let start = Instant::now();
    let mut flows = match t.start_flows(socks, start) {
        Ok(f) => f,
        Err(e) => return fail(format!("ERROR: thread: {e}")),
    };
    let back_ctl = Arc::new(RunControl::new(None));
    let back = back_sock.map(|(sock, _)| BackRecv {
        sock,
        server: dest.ip(),
        local: flows[0].addrs.0,
        id: c.parallel.max(1) + 1,
        len: t.len as usize,
        time: match c.end {
            End2::Time(d) => Some(d),
            End2::Bytes(_) => None,
        },
        interval: cfg.common.interval,
        // -e shows the latency columns here, as iperf 2's listener does.
        latency: cfg.common.trip_times || cfg.common.enhanced,
    });
    let (mut back_now, mut back_after) = match t.mode {
        Mode::Dual { .. } => (back, None),
        _ => (None, back),
    };
    let mut back_job = match back_now.take().map(|b| spawn_back(b, &back_ctl, &report)) {
        Some(Err(e)) => return fail(format!("ERROR: thread: {e}")),
        Some(Ok(j)) => Some(j),
        None => None,
    };
    drive(
        &mut flows,
        Ticks::new(start, cfg.common.interval),
        &mut intr,
        &*report,
    );
    // 2.2.1 sums a full-duplex test's directions only when it reports no
    // intervals.
    let duplex_sum = (t.mode == Mode::FullDuplex && cfg.common.interval.is_none())
        .then_some(cfg.common.enhanced);
    let (out, forward) = finals(
        &mut flows,
        &*report,
        u64::from(t.len),
        cfg.common.trip_times,
        duplex_sum,
    );
    if let Some(b) = back_after.take().filter(|_| !intr.triggered()) {
        match spawn_back(b, &back_ctl, &report) {
            Ok(j) => back_job = Some(j),
            Err(e) => report.event(Event2::Message(format!("ERROR: thread: {e}"))),
        }
    }
    if let Some(j) = back_job {
        let dual = matches!(t.mode, Mode::Dual { .. });
        finish_back(
            j,
            &back_ctl,
            (forward.filter(|_| dual), &mut intr),
            &*report,
        );
    }
    out
}

/// One UDP client test as its options make it: where it goes, in which
/// mode, with what datagrams.
struct Test<'a> {
    cfg: &'a Config2,
    c: &'a Client2,
    dest: SocketAddr,
    multicast: bool,
    mode: Mode,
    /// The client sends a normal test (also the forward part of -d/-r).
    forward: bool,
    len: u32,
    req: TestRequest,
    /// What follows each datagram's header; whether it is the small
    /// trip-times layout.
    body: Arc<Vec<u8>>,
    small: bool,
    rate: Option<u64>,
}

impl<'a> Test<'a> {
    fn new(cfg: &'a Config2, c: &'a Client2, dest: SocketAddr) -> Self {
        let mode = wire_mode(cfg, c);
        let len = cfg.common.len_or_default(dest.is_ipv6());
        let req = request(cfg, c, len);
        let (body, small) = body(cfg, &req, len);
        Self {
            cfg,
            c,
            dest,
            multicast: dest.ip().is_multicast(),
            mode,
            // The forward direction of -d/-r is a normal test.
            forward: matches!(
                mode,
                Mode::Normal | Mode::Dual { .. } | Mode::Tradeoff { .. }
            ),
            len,
            req,
            body: Arc::new(body),
            small,
            rate: bits_per_sec(c.rate, len),
        }
    }

    /// The client's settings block.
    fn settings(&self, n: u32, window: u64) -> Settings2 {
        let (cfg, c, len, rate, multicast) =
            (self.cfg, self.c, self.len, self.rate, self.multicast);
        let note = match self.mode {
            Mode::Reverse => Some("(reverse)"),
            Mode::FullDuplex => Some("(full-duplex)"),
            _ => None,
        };
        Settings2 {
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
            requested_window: cfg.common.window.map(u64::from),
            congestion_asked: None,
            trip_times: cfg.common.trip_times,
            congestion: None,
            tos: cfg.common.tos.unwrap_or(0),
            tos_by_dscp: cfg.common.tos_by_dscp,
            connect_only: false,
            nodelay: false,
            mss: None,
            multicast: None,
            ttl: multicast.then_some(cfg.common.ttl),
            mode_note: note.map(str::to_string),
            bounceback: None,
            histograms: cfg.common.histograms,
            hist_bins: cfg.common.hist_bins,
            jitter_bin_us: None,
            isoch: c.isoch.map(|i| IsochSettings2 {
                fps: i.fps,
                mean_bps: i.mean_bps,
                stdev_bps: i.stdev_bps,
                ipg_ms: i.ipg_ms,
            }),
        }
    }

    /// Each flow's connection line (and `--txdelay-time`'s start line).
    fn announce(
        &self,
        socks: &[Arc<UdpSocket>],
        txstart: Option<SystemTime>,
        report: &dyn Report2,
    ) {
        let (cfg, c, dest) = (self.cfg, self.c, self.dest);
        for (i, s) in socks.iter().enumerate() {
            let id = i as u32 + 1;
            let local = s.local_addr().unwrap_or(dest);
            report.event(Event2::Connected(Connection2 {
                tag: Tag2::Id(id),
                local,
                device: device_of(
                    &local,
                    cfg.common.bind.as_ref().and_then(|b| b.device.as_deref()),
                ),
                peer: s.peer_addr().unwrap_or(dest),
                notes: conn_notes(c, self.mode, cfg.common.trip_times, cfg.common.tos),
                peer_version: None,
                tcp: None,
                connect_time: None,
                connect_only: false,
                at: SystemTime::now(),
            }));
            if let Some(start) = txstart {
                report.event(Event2::TxStart {
                    tag: Tag2::Id(id),
                    start,
                    now: SystemTime::now(),
                });
            }
        }
    }

    /// Starts each flow's sender and receiver (flows 10 ms apart).
    fn start_flows(&self, socks: Vec<Arc<UdpSocket>>, start: Instant) -> io::Result<Vec<Flow>> {
        let (cfg, c, len, mode) = (self.cfg, self.c, self.len, self.mode);
        let spec = UdpSendSpec {
            len: len as usize,
            pacer: self.rate.map(Pacer::new),
            burst: 1,
            counters_64bit: true,
            end: None,
        };
        let bytes = match c.end {
            End2::Bytes(b) => Some(b),
            End2::Time(_) => None,
        };
        let mut flows = Vec::new();
        for (i, s) in socks.into_iter().enumerate() {
            let id = i as u32 + 1;
            let local = s.local_addr().unwrap_or(self.dest);
            let to = s.peer_addr().unwrap_or(self.dest);
            let delay = FLOW_STAGGER * i as u32;
            let held = s.clone();
            let tx = if mode == Mode::Reverse {
                None
            } else {
                let plan = TxPlan {
                    payload: self.body.clone(),
                    spec,
                    bytes,
                    handshake: self.forward && !self.multicast && !c.no_udp_fin,
                    delay,
                    seq64: !self.small,
                    isoch: c
                        .isoch
                        .map(|i| (i, self.req.udp_header(VERSION_2_2_1, cfg.common.port))),
                };
                Some(Tx::start(Tag2::Id(id), s.clone(), plan)?)
            };
            let rx = if self.forward {
                None
            } else {
                let hello = (mode == Mode::Reverse).then(|| self.body[..len as usize].to_vec());
                // --histograms: the delays need the sender's stamps (trip times).
                let hist = (cfg.common.histograms && cfg.common.trip_times)
                    .then_some(cfg.common.hist_bins);
                Some(Rx::start(
                    Tag2::ReverseId(id),
                    s,
                    len as usize,
                    hello,
                    // -e shows the delays too (the server's wall-clock
                    // stamps), as 2.1.8's and 2.2.1's clients do.
                    (
                        cfg.common.trip_times || cfg.common.enhanced,
                        cfg.common.trip_times,
                    ),
                    hist,
                )?)
            };
            flows.push(Flow {
                id,
                until: match c.end {
                    End2::Time(d) => Some(start + delay + d),
                    End2::Bytes(_) => None,
                },
                addrs: (local, to),
                tx,
                rx,
                _sock: held,
            });
        }
        Ok(flows)
    }
}

/// The socket a `-d`/`-r` client receives the direction back on.
fn open_back(cfg: &Config2, dest: SocketAddr, port: u16) -> io::Result<UdpSocket> {
    let s = udp_bind(any_of(&dest, port), false, None)?;
    if let Some(w) = cfg.common.window {
        let _ = rperf3_sys::net::set_buffer_sizes(&s, w as usize);
    }
    Ok(s)
}

/// Runs the flows to their ends: each sender to its time, each receiver to
/// its FIN (or silence, or a grace after the test), a signal ends all;
/// interval rows at each tick.
fn drive(flows: &mut [Flow], mut ticks: Ticks, intr: &mut Interrupt, report: &dyn Report2) {
    let clock = ClientClock::new(flows.iter().map(|f| f.until).collect());
    // Once over, the flows' last threads are checked for often.
    let mut ended = false;
    loop {
        let now = Instant::now();
        let interrupted = intr.triggered();
        ended |= clock.ended(now, interrupted);
        for (i, f) in flows.iter().enumerate() {
            if let (Some(t), true) = (&f.tx, clock.sender_over(i, now, interrupted)) {
                t.ctl.stop();
            }
        }
        for r in flows.iter_mut().filter_map(|f| f.rx.as_mut()) {
            // A server that falls silent (its FIN lost, `-n` with no clock)
            // ends the direction too.
            if clock.receiver_over(now, r.idle(now), interrupted) {
                r.ctl.stop();
            }
        }
        // Every flow is polled (each collects its finished threads).
        let mut all_done = true;
        for f in flows.iter_mut() {
            all_done &= f.done();
        }
        if all_done {
            break;
        }
        if let Some(t) = ticks.next().filter(|&t| now >= t) {
            let span = ticks.take();
            // A flow whose sending ended before the tick has no interval row.
            if clock.rows_at(t) {
                interval_rows(flows, span, report);
            }
            continue;
        }
        let mut wake = now + Duration::from_millis(if ended { 5 } else { 50 });
        for t in [ticks.next(), clock.next_end(now)].into_iter().flatten() {
            wake = wake.min(t);
        }
        let _ = rperf3_sys::poll::readable(&intr.fd(), wake.saturating_duration_since(now));
    }
    // A tick that fell due as the flows ended (the last one of `-t`).
    let end = clock.end().unwrap_or_else(Instant::now);
    while ticks
        .next()
        .is_some_and(|t| t <= end + Duration::from_millis(1))
    {
        let span = ticks.take();
        interval_rows(flows, span, report);
    }
}

/// Waits for the `-d`/`-r` direction back (a signal ends it too); with
/// `forward` (a `-d` client's figures sent: bytes, writes, datagrams, end),
/// prints 2.2.1's sum of both directions.
fn finish_back(
    j: std::thread::JoinHandle<Option<Row2>>,
    back_ctl: &RunControl,
    (forward, intr): (Option<(u64, u64, u64, f64)>, &mut Interrupt),
    report: &dyn Report2,
) {
    while !j.is_finished() {
        if intr.triggered() {
            back_ctl.stop();
        }
        let _ = rperf3_sys::poll::readable(&intr.fd(), Duration::from_millis(50));
    }
    let back = j.join().ok().flatten();
    // -d: 2.2.1's client sums both directions (bytes, and datagrams sent
    // plus received) once both have ended.
    if let (Some(b), Some((bytes, writes, sent, end))) = (back, forward) {
        let got = datagrams_of(&b);
        let mut row = send_row(Tag2::Sum(2), (0.0, end.max(b.end)), bytes + b.bytes, writes);
        if let RowKind2::UdpSend(u) = &mut row.kind {
            u.pps_datagrams = Some(sent + got);
        }
        report.event(Event2::Final(row));
        report.event(Event2::Sent {
            tag: Tag2::Sum(2),
            datagrams: sent + got,
        });
    }
}

/// Starts a `-d`/`-r` client's receiving direction on a thread of its own;
/// the server's first datagram is due within the grace from now.
fn spawn_back(
    b: BackRecv,
    ctl: &Arc<RunControl>,
    report: &Arc<dyn Report2>,
) -> io::Result<std::thread::JoinHandle<Option<Row2>>> {
    let (c, r) = (ctl.clone(), report.clone());
    let due = back_due(Instant::now());
    std::thread::Builder::new()
        .name("udp2-back".into())
        .spawn(move || receive_back(b, due, &c, &*r))
}

/// The rows of the interval `span`: each flow's, then their sums.
fn interval_rows(flows: &mut [Flow], span: (f64, f64), report: &dyn Report2) {
    let n = flows.len() as u32;
    let mut tx_sum = (0, 0);
    for f in flows.iter_mut() {
        if let Some(t) = &mut f.tx {
            let row = t.interval(span);
            tx_sum.0 += row.bytes;
            if let RowKind2::UdpSend(u) = row.kind {
                tx_sum.1 += u.writes;
            }
            report.event(Event2::Interval(row));
        }
        if let Some(r) = &mut f.rx {
            let (row, lines) = r.interval(span);
            report.event(Event2::Interval(row));
            for l in lines {
                report.event(Event2::Histogram(l));
            }
        }
    }
    if n > 1 && flows.iter().any(|f| f.tx.is_some()) {
        report.event(Event2::Interval(send_row(
            Tag2::Sum(n),
            span,
            tx_sum.0,
            tx_sum.1,
        )));
    }
}

/// The closing rows: each flow's totals and "Sent", the sums, then the
/// server reports or the warning that none came.
/// The client's closing rows; with `duplex_sum` (`Some(-e)`), the sum of a
/// full-duplex test's directions.
fn finals(
    flows: &mut [Flow],
    report: &dyn Report2,
    len: u64,
    trip_times: bool,
    duplex_sum: Option<bool>,
) -> (Outcome2, Option<(u64, u64, u64, f64)>) {
    let n = flows.len() as u32;
    let (mut sum_b, mut sum_w, mut sum_sent, mut longest) = (0, 0, 0, 0.0f64);
    let mut status = 0;
    let mut duplex = Vec::new();
    for f in flows.iter_mut() {
        let received = f.rx.as_mut().map(|r| {
            let mut row = r.total();
            row.addrs = Some(f.addrs);
            report.event(Event2::Final(row.clone()));
            for l in r.total_lines(&row) {
                report.event(Event2::Histogram(l));
            }
            row
        });
        let Some(t) = &f.tx else { continue };
        let Some((row, sent)) = t.total(len) else {
            status = 1;
            continue;
        };
        if let Some(r) = received {
            duplex.push((f.id, row.clone(), sent, r));
        }
        if let Some(err) = t.end.as_ref().and_then(|e| e.error.as_ref()) {
            report.event(Event2::Message(format!(
                "[{:>3}] ERROR: write failed: {err}",
                f.id
            )));
            status = 1;
        }
        longest = longest.max(row.end);
        sum_b += row.bytes;
        if let RowKind2::UdpSend(u) = row.kind {
            sum_w += u.writes;
        }
        sum_sent += sent;
        report.event(Event2::Final(Row2 {
            addrs: Some(f.addrs),
            ..row
        }));
        report.event(Event2::Sent {
            tag: t.tag,
            datagrams: sent,
        });
        // 2.2.1 prints it on stderr.
        if let Some((m, lo, hi, sd)) = t.isoch.as_ref().and_then(|i| i.0.schedule_errors_ms()) {
            report.event(Event2::Message(isoch_schedule_line(t.tag, m, lo, hi, sd)));
        }
    }
    if let (Some(enhanced), false) = (duplex_sum, duplex.is_empty()) {
        let parts: Vec<Duplex> = duplex
            .iter()
            .map(|(id, s, n, r)| Duplex {
                id: *id,
                sent: (s, *n),
                received: r,
            })
            .collect();
        let (rows, datagrams) = duplex_rows(&parts, enhanced);
        let tag = rows.last().map_or(Tag2::Sum(2), |r| r.tag);
        for r in rows {
            report.event(Event2::Final(r));
        }
        report.event(Event2::Sent { tag, datagrams });
    } else if n > 1 && flows.iter().any(|f| f.tx.is_some()) {
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
    for f in flows.iter() {
        let Some(e) = f.tx.as_ref().and_then(|t| t.end.as_ref()) else {
            continue;
        };
        match &e.report {
            Some(r) => report.event(Event2::ServerReport(trip(
                report_row(Tag2::Id(f.id), f.addrs, r),
                trip_times,
            ))),
            None if e.fins > 1 => report.event(Event2::Message(format!(
                "[{:>3}] WARNING: did not receive ack of last datagram after {} tries.",
                f.id, e.fins
            ))),
            None => {}
        }
    }
    // What the sending directions moved (bytes, writes, datagrams, seconds).
    let forward = flows
        .iter()
        .any(|f| f.tx.is_some())
        .then_some((sum_b, sum_w, sum_sent, longest));
    (Outcome2 { status }, forward)
}

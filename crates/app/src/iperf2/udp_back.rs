//! iperf 2's legacy UDP dual tests (`-d` at once, `-r` after the forward
//! test): the server starts a UDP sender toward the client's address and the
//! header's `-L` port, with the request's rate, length and time; the client
//! receives it on a socket bound to that port and answers its FIN with a
//! server report. Each direction is the sender or receiver of a normal test
//! (`udp_send`), driven here with its own interval rows and end.
//!
//! Every wait has an absolute deadline: a server that never sends back, a
//! client that is not listening, a FIN that never comes.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rperf3_engine::control::RunControl;
use rperf3_engine::pacing::Pacer;
use rperf3_engine::udp::UdpSendSpec;
use rperf3_proto2::{TestEnd, TestRequest};
use rperf3_report::iperf2::model::{Connection2, Event2, Proto2, Row2, Settings2, Side2, Tag2};
use rperf3_report::iperf2::Report2;
use rperf3_sys::net::{udp_bind, unmap};

use super::config::DEFAULT_UDP_RATE;
use super::connect_back::{same_host, BACK_GRACE, NO_BACK};
use super::tcp_setup::device_of;
use rperf3_proto2::IDLE_END;

use super::udp_common::{pattern, report_row, send_report, Ticks};
use super::udp_send::{Rx, Tx, TxPlan};

/// How long past its announced time a receiving direction waits for its FIN.
const FIN_GRACE: Duration = Duration::from_secs(2);

/// The unspecified address of `a`'s family, on `port`.
pub(crate) fn any_of(a: &SocketAddr, port: u16) -> SocketAddr {
    let ip: IpAddr = match a {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    SocketAddr::new(ip, port)
}

/// The listener block a `-d`/`-r` client prints for its `-L` socket.
pub(crate) fn listener_block(sock: &UdpSocket, port: u16, len: u32) -> Event2 {
    Event2::Settings(Settings2 {
        side: Side2::Server,
        proto: Proto2::Udp,
        host: None,
        port,
        pid: std::process::id(),
        flows: 1,
        len,
        ipg_us: None,
        window: rperf3_sys::net::buffer_sizes(sock).1,
        window_requested: false,
        requested_window: None,
        congestion_asked: None,
        trip_times: false,
        congestion: None,
        tos: 0,
        tos_by_dscp: false,
        connect_only: false,
        nodelay: false,
        mss: None,
        multicast: None,
        ttl: None,
        mode_note: None,
        bounceback: None,
        histograms: false,
        hist_bins: Default::default(),
        jitter_bin_us: None,
        isoch: None,
    })
}

/// The server's direction back: sends to `to` as the request asks, tagged
/// `[ *id]`, then prints its totals and the report the client sends back.
/// `cancel` (the flow's stop) ends it early. Returns its total row and the
/// datagrams it sent.
pub(crate) fn send_back(
    to: SocketAddr,
    id: u32,
    req: &TestRequest,
    len: usize,
    interval: Option<Duration>,
    cancel: &RunControl,
    report: &dyn Report2,
) -> Option<(Row2, u64)> {
    let warn = |e: io::Error| {
        report.event(Event2::Message(format!(
            "WARNING: send back to {} port {} failed: {e}",
            to.ip(),
            to.port()
        )));
    };
    let sock = match udp_bind(any_of(&to, 0), false, None).and_then(|s| {
        s.connect(to)?;
        Ok(s)
    }) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            warn(e);
            return None;
        }
    };
    if req.tos != 0 {
        let _ = rperf3_sys::sockopt::set_tos(&*sock, to.is_ipv6(), req.tos);
    }
    let rate = if req.rate == 0 {
        DEFAULT_UDP_RATE
    } else {
        req.rate
    };
    report.event(Event2::Settings(Settings2 {
        side: Side2::Client,
        proto: Proto2::Udp,
        host: Some(to.ip().to_string()),
        port: to.port(),
        pid: std::process::id(),
        flows: 1,
        len: len as u32,
        ipg_us: Some(len as f64 * 8.0 / rate as f64 * 1e6),
        window: rperf3_sys::net::buffer_sizes(&*sock).0,
        window_requested: false,
        requested_window: None,
        congestion_asked: None,
        trip_times: false,
        congestion: None,
        tos: req.tos,
        tos_by_dscp: false,
        connect_only: false,
        nodelay: false,
        mss: None,
        multicast: None,
        ttl: None,
        mode_note: None,
        bounceback: None,
        histograms: false,
        hist_bins: Default::default(),
        jitter_bin_us: None,
        isoch: None,
    }));
    let local = sock.local_addr().unwrap_or(to);
    report.event(Event2::Connected(Connection2 {
        tag: Tag2::ReverseId(id),
        local,
        device: device_of(&local, None),
        peer: to,
        notes: vec!["(reverse)".into()],
        peer_version: None,
        tcp: None,
        connect_time: None,
        connect_only: false,
        at: SystemTime::now(),
    }));
    let plan = TxPlan {
        payload: Arc::new(pattern(len)),
        spec: UdpSendSpec {
            len,
            pacer: Some(Pacer::new(rate)),
            burst: 1,
            counters_64bit: true,
            end: None,
        },
        bytes: match req.end {
            TestEnd::Bytes(n) => Some(n),
            TestEnd::Time(_) => None,
        },
        handshake: true,
        delay: Duration::ZERO,
        seq64: true,
        isoch: None,
    };
    let start = Instant::now();
    let mut tx = match Tx::start(Tag2::ReverseId(id), sock, plan) {
        Ok(t) => t,
        Err(e) => {
            warn(e);
            return None;
        }
    };
    let end = match req.end {
        TestEnd::Time(d) => Some(start + d),
        TestEnd::Bytes(_) => None,
    };
    let mut ticks = Ticks::new(start, interval);
    while !tx.poll() {
        let now = Instant::now();
        if cancel.stopped() || end.is_some_and(|e| now >= e) {
            tx.ctl.stop();
        }
        if ticks
            .next()
            .is_some_and(|t| now >= t && end.is_none_or(|e| t <= e))
        {
            let span = ticks.take();
            report.event(Event2::Interval(tx.interval(span)));
            continue;
        }
        let mut wake = now + Duration::from_millis(20);
        for t in [ticks.next(), end.filter(|&e| e > now)]
            .into_iter()
            .flatten()
        {
            wake = wake.min(t);
        }
        std::thread::sleep(wake.saturating_duration_since(now));
    }
    let addrs = (local, to);
    let total = tx.total(len as u64);
    if let Some((row, sent)) = &total {
        report.event(Event2::Final(Row2 {
            addrs: Some(addrs),
            ..row.clone()
        }));
        report.event(Event2::Sent {
            tag: Tag2::Id(id),
            datagrams: *sent,
        });
    }
    if let Some(e) = tx.end.as_ref() {
        match &e.report {
            Some(r) => report.event(Event2::ServerReport(report_row(
                Tag2::ReverseId(id),
                addrs,
                r,
            ))),
            None => report.event(Event2::Message(format!(
                "[{id:>3}] WARNING: did not receive ack of last datagram after {} tries.",
                e.fins
            ))),
        }
    }
    total
}

/// What a `-d`/`-r` client's receiving direction needs.
pub(crate) struct BackRecv {
    /// The socket bound to the `-L` port.
    pub(crate) sock: UdpSocket,
    /// Only datagrams from this host are taken.
    pub(crate) server: IpAddr,
    /// Our address, for the connection line (the socket is a wildcard).
    pub(crate) local: SocketAddr,
    /// The direction's tag number.
    pub(crate) id: u32,
    /// The longest datagram.
    pub(crate) len: usize,
    /// The test's time, if timed: the direction ends this long after its
    /// first datagram, plus a grace for the FIN.
    pub(crate) time: Option<Duration>,
    pub(crate) interval: Option<Duration>,
    /// Latency columns (`-e` or trip-times).
    pub(crate) latency: bool,
}

/// The client's direction back: waits until `due` for the server's first
/// datagram, then receives (rows tagged `[  id]`) to the FIN and answers it
/// with a server report. `cancel` ends it early. Returns the direction's
/// total row, if the server's data came.
pub(crate) fn receive_back(
    b: BackRecv,
    due: Instant,
    cancel: &RunControl,
    report: &dyn Report2,
) -> Option<Row2> {
    let Some(peer) = first_from(&b.sock, b.server, due, cancel) else {
        if !cancel.stopped() {
            report.event(Event2::Message(NO_BACK.into()));
        }
        return None;
    };
    if b.sock.connect(peer).is_err() {
        report.event(Event2::Message(NO_BACK.into()));
        return None;
    }
    let local = SocketAddr::new(b.local.ip(), b.sock.local_addr().map_or(0, |a| a.port()));
    report.event(Event2::Connected(Connection2 {
        tag: Tag2::Id(b.id),
        local,
        device: device_of(&local, None),
        peer: unmap(peer),
        notes: Vec::new(),
        peer_version: None,
        tcp: None,
        connect_time: None,
        connect_only: false,
        at: SystemTime::now(),
    }));
    let sock = Arc::new(b.sock);
    let start = Instant::now();
    let mut rx = match Rx::start(
        Tag2::Id(b.id),
        sock.clone(),
        b.len,
        None,
        (b.latency, b.latency),
        None,
    ) {
        Ok(r) => r,
        Err(e) => {
            report.event(Event2::Message(format!("ERROR: thread: {e}")));
            return None;
        }
    };
    let limit = b.time.map(|t| start + t + FIN_GRACE);
    let mut ticks = Ticks::new(start, b.interval);
    while !rx.poll() {
        let now = Instant::now();
        if cancel.stopped() || limit.is_some_and(|l| now >= l) || rx.idle(now) >= IDLE_END {
            rx.ctl.stop();
        }
        if ticks.next().is_some_and(|t| now >= t) {
            let span = ticks.take();
            report.event(Event2::Interval(rx.interval(span).0));
            continue;
        }
        let wake = ticks.next().map_or(now + Duration::from_millis(20), |t| {
            t.min(now + Duration::from_millis(20))
        });
        std::thread::sleep(wake.saturating_duration_since(now));
    }
    let mut row = rx.total();
    row.addrs = Some((local, unmap(peer)));
    report.event(Event2::Final(row.clone()));
    let s = rx.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if s.fin {
        send_report(&sock, &s, s.span(), b.latency);
    }
    Some(row)
}

/// Waits for the first datagram from `server` (left queued for the
/// receiver); datagrams from other hosts are dropped.
fn first_from(
    sock: &UdpSocket,
    server: IpAddr,
    due: Instant,
    cancel: &RunControl,
) -> Option<SocketAddr> {
    let mut buf = [0u8; 64];
    loop {
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() || cancel.stopped() {
            return None;
        }
        let _ = sock.set_read_timeout(Some(left.min(Duration::from_millis(50))));
        match sock.peek_from(&mut buf) {
            Ok((_, from)) if same_host(unmap(from).ip(), server) => return Some(from),
            Ok(_) => {
                let _ = sock.recv_from(&mut buf);
            }
            // A timeout, or a truncated peek (EMSGSIZE is not reported here).
            Err(_) => {}
        }
    }
}

/// How long a client waits for the server's first datagram back once it is
/// due (at once for `-d`, at the end of the forward test for `-r`).
pub(crate) fn back_due(from: Instant) -> Instant {
    from + BACK_GRACE
}

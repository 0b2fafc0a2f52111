//! iperf 2's UDP server: a listener on the port (or a joined multicast group)
//! that turns each new flow (client address and port) into its own test, as
//! iperf 2 does. The flow gets its own socket connected to the client, so the
//! kernel hands it that flow's datagrams; the few that reached the listener
//! first are passed on to it. `-U` and multicast serve one flow at a time on
//! the listener itself.
//!
//! A first datagram whose test header is garbage, truncated or asks for
//! absurd counts ends only that flow, with a message; the listener goes on.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::udp_wire::wall_now;
use rperf3_proto2::{classify_udp, HeaderError, Mode, RequestLimits, TestRequest, UdpStart};
use rperf3_report::iperf2::model::{Event2, Multicast2, Proto2, Settings2, Side2};
use rperf3_report::iperf2::Report2;
use rperf3_sys::net::{resolve, udp_bind, Family};
use rperf3_sys::udp_io;

use super::config::{Config2, Server2};
use super::udp_flow::{handle_for, serve, FlowHandle, FlowStart};
use super::udp_group::Group;
use super::Outcome2;
use crate::Interrupt;

/// How often a `-1` server with another client's datagrams waiting looks
/// whether its running flow has ended.
const HELD_TICK: Duration = Duration::from_millis(20);

/// Sources whose first datagram was refused, remembered so that the rest of
/// their flow is dropped quietly (bounded: cleared when full).
const REFUSED_MEMORY: usize = 4096;
/// Flows served at once at most: a flood of valid headers from many ports
/// must not cost a thread each without bound.
const MAX_FLOWS: usize = 256;
/// Receive buffer asked for on every flow socket: rates the offloaded
/// sender reaches need more than the default to avoid drops.
const RECV_BUFFER: usize = 8 << 20;

/// The listener's socket and what it is bound to.
struct Listener {
    sock: UdpSocket,
    addr: SocketAddr,
    group: Option<IpAddr>,
}

fn listen(cfg: &Config2, s: &Server2) -> io::Result<Listener> {
    let port = cfg
        .common
        .bind
        .as_ref()
        .and_then(|b| b.port)
        .unwrap_or(cfg.common.port);
    let host = cfg
        .common
        .bind
        .as_ref()
        .map(|b| b.host.as_str())
        .filter(|h| !h.is_empty());
    let ip = match host {
        Some(h) => resolve(h, port, cfg.common.family)?[0].ip(),
        None if cfg.common.family == Family::V6 => Ipv6Addr::UNSPECIFIED.into(),
        None => Ipv4Addr::UNSPECIFIED.into(),
    };
    let addr = SocketAddr::new(ip, port);
    let group = ip.is_multicast().then_some(ip);
    let dev = cfg.common.bind.as_ref().and_then(|b| b.device.as_deref());
    // A group's interface is chosen by the join, not by binding to the device.
    let sock = udp_bind(addr, false, if group.is_some() { None } else { dev })?;
    if let Some(g) = group {
        let ifindex = match dev {
            Some(d) => rperf3_sys::mcast::interface_index(d)?,
            None => 0,
        };
        let source = match &s.ssm_source {
            Some(h) => Some(resolve(h, 0, cfg.common.family)?[0].ip()),
            None => None,
        };
        rperf3_sys::mcast::join(&sock, g, source, ifindex)?;
    }
    if let Some(w) = cfg.common.window {
        let _ = rperf3_sys::net::set_buffer_sizes(&sock, w as usize);
    }
    Ok(Listener { sock, addr, group })
}

/// Sizes a socket that receives a flow: `-w`, or large enough for the rates
/// the offloaded sender reaches. (The settings block shows the listener's
/// size before this, as iperf 2 shows the default.)
fn size_buffers(cfg: &Config2, sock: &UdpSocket) {
    match cfg.common.window {
        Some(w) => {
            let _ = rperf3_sys::net::set_buffer_sizes(sock, w as usize);
        }
        None => {
            let _ = rperf3_sys::net::raise_recv_buffer(sock, RECV_BUFFER);
        }
    }
}

/// Our address on the route to `peer` (what a wildcard listener was reached at).
fn route_local(peer: SocketAddr, port: u16) -> Option<SocketAddr> {
    let any: SocketAddr = match peer {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let probe = UdpSocket::bind(any).ok()?;
    probe.connect(peer).ok()?;
    Some(SocketAddr::new(probe.local_addr().ok()?.ip(), port))
}

/// A socket of the flow's own, bound to our address and connected to `peer`.
fn flow_socket(
    cfg: &Config2,
    l: &Listener,
    peer: SocketAddr,
) -> io::Result<(UdpSocket, SocketAddr)> {
    let local = if l.addr.ip().is_unspecified() {
        route_local(peer, l.addr.port()).unwrap_or(l.addr)
    } else {
        l.addr
    };
    let dev = cfg.common.bind.as_ref().and_then(|b| b.device.as_deref());
    let s = udp_bind(local, false, dev)?;
    s.connect(peer)?;
    size_buffers(cfg, &s);
    Ok((s, local))
}

/// Runs the UDP server described by `cfg` until `-t`, `-P` flows, or a signal.
pub(crate) fn run(
    cfg: &Config2,
    s: &Server2,
    report: Arc<dyn Report2>,
    mut intr: Interrupt,
) -> Outcome2 {
    let l = match listen(cfg, s) {
        Ok(l) => l,
        Err(e) => {
            report.event(Event2::Message(format!("ERROR: listener bind failed: {e}")));
            return Outcome2 { status: 1 };
        }
    };
    report.event(Event2::Settings(listener_settings(cfg, s, &l)));
    let mut host = Host {
        cfg,
        s,
        report,
        only_from: s.only_from.as_ref().map(|h| {
            resolve(h, 0, Family::Any)
                .map(|v| v.iter().map(|a| a.ip()).collect())
                .unwrap_or_default()
        }),
        limits: RequestLimits::default(),
        served: 0,
        next_id: 1,
        flows: HashMap::new(),
        refused: HashSet::new(),
        groups: HashMap::new(),
    };
    let status = host.serve(l, &mut intr);
    host.end(intr.triggered());
    Outcome2 { status }
}

/// The settings block a UDP listener prints.
fn listener_settings(cfg: &Config2, s: &Server2, l: &Listener) -> Settings2 {
    Settings2 {
        side: Side2::Server,
        proto: Proto2::Udp,
        host: None,
        port: l.addr.port(),
        pid: std::process::id(),
        flows: 1,
        len: cfg.common.len_or_default(l.addr.is_ipv6()),
        ipg_us: None,
        window: rperf3_sys::net::buffer_sizes(&l.sock).1,
        window_requested: cfg.common.window.is_some(),
        requested_window: cfg.common.window.map(u64::from),
        congestion_asked: None,
        trip_times: cfg.common.trip_times,
        congestion: None,
        tos: 0,
        tos_by_dscp: false,
        connect_only: false,
        nodelay: false,
        mss: None,
        multicast: l.group.map(|g| Multicast2 {
            group: g.to_string(),
            source: s.ssm_source.clone(),
        }),
        ttl: None,
        mode_note: None,
        bounceback: None,
        histograms: cfg.common.histograms,
        hist_bins: cfg.common.hist_bins,
        jitter_bin_us: cfg.common.jitter_histograms,
        isoch: None,
    }
}

/// A UDP server's state: its flows by client address, the sources it
/// refused, the open `-P` groups, and its counts.
struct Host<'a> {
    cfg: &'a Config2,
    s: &'a Server2,
    report: Arc<dyn Report2>,
    /// `--only-from`: the addresses served.
    only_from: Option<HashSet<IpAddr>>,
    limits: RequestLimits,
    /// Flows started (`-P` on a server ends it after that many).
    served: u32,
    next_id: u32,
    flows: HashMap<SocketAddr, (FlowHandle, JoinHandle<()>)>,
    refused: HashSet<SocketAddr>,
    groups: HashMap<IpAddr, Arc<Group>>,
}

/// A datagram that starts a flow: its source, bytes and arrival (µs since
/// the epoch).
struct First<'d> {
    peer: SocketAddr,
    d: &'d [u8],
    at_us: i64,
}

impl Host<'_> {
    /// Reads the listener until the server ends; the exit status.
    fn serve(&mut self, mut l: Listener, intr: &mut Interrupt) -> i32 {
        let (cfg, s) = (self.cfg, self.s);
        // One flow at a time on the listener itself: multicast and -U.
        let inline = l.group.is_some() || s.single_udp;
        let stop_at = cfg.common.time.map(|t| Instant::now() + t);
        let mut buf = vec![0u8; 65_536];
        let _ = l.sock.set_nonblocking(true);
        // A flow's first datagrams are read here: their arrival is the
        // kernel's stamp, as its own socket's are (jitter and latency).
        udp_io::enable_rx_stamps(&l.sock);
        loop {
            self.flows.retain(|_, (_, j)| !j.is_finished());
            let now = Instant::now();
            let done = s.max_clients.is_some_and(|m| self.served >= m);
            if intr.triggered()
                || stop_at.is_some_and(|t| now >= t)
                || (done && self.flows.is_empty())
            {
                return 0;
            }
            let wait = stop_at.map_or(Duration::from_millis(250), |t| {
                t.saturating_duration_since(now)
                    .min(Duration::from_millis(250))
            });
            // -1 with a flow running: another client's datagrams stay queued
            // on the socket (as on 2.2.1's single thread) until the flow has
            // ended; only the running flow's own early datagrams are read.
            let held = s.single_client
                && !self.flows.is_empty()
                && l.sock
                    .peek_from(&mut [0u8; 1])
                    .is_ok_and(|(_, from)| !self.flows.contains_key(&rperf3_sys::net::unmap(from)));
            if held {
                let _ = rperf3_sys::poll::wait_readable(&[intr.fd()], HELD_TICK.min(wait));
                continue;
            }
            let ready = rperf3_sys::poll::wait_readable(&[l.sock.as_fd(), intr.fd()], wait);
            if !ready.is_ok_and(|r| r[0]) {
                continue;
            }
            let Ok((n, peer, at_ns)) = udp_io::recv_from_stamped(&l.sock, &mut buf) else {
                continue;
            };
            let at_us = if at_ns == 0 {
                wall_now().as_micros()
            } else {
                i64::try_from(at_ns / 1000).unwrap_or(i64::MAX)
            };
            let peer = rperf3_sys::net::unmap(peer);
            let first = First {
                peer,
                d: &buf[..n],
                at_us,
            };
            if let Some((h, _)) = self.flows.get(&peer) {
                h.feed(first.d, at_us);
                continue;
            }
            let Some(req) = self.admit(&first, done) else {
                continue;
            };
            let flow = self.new_flow(peer, req);
            if inline {
                match self.run_inline(flow, &first, &l, intr) {
                    Inline::Next(n) => {
                        udp_io::enable_rx_stamps(&n.sock);
                        l = n;
                    }
                    Inline::Skipped => {}
                    Inline::End(status) => return status,
                }
                continue;
            }
            let (sock, local) = match flow_socket(cfg, &l, peer) {
                Ok(x) => x,
                Err(e) => {
                    self.warn(format!("WARNING: flow from {peer}: {e}"));
                    continue;
                }
            };
            let f = self.flow_start(flow, &first, (Arc::new(sock), local), &l);
            let h = handle_for(&f);
            let (h2, r2) = (h.clone(), self.report.clone());
            match std::thread::Builder::new()
                .name(format!("udp2-flow-{}", f.id))
                .spawn(move || serve(f, h2, r2))
            {
                Ok(j) => {
                    self.flows.insert(peer, (h, j));
                }
                Err(e) => self.warn(format!("WARNING: flow from {peer}: {e}")),
            }
        }
    }

    fn warn(&self, text: String) {
        self.report.event(Event2::Message(text));
    }

    /// The request of a new source's first datagram, if it is served: not
    /// past `-P`, not refused before, within the flow limit and `--only-from`,
    /// and a valid test header (a refused source is remembered).
    fn admit(&mut self, first: &First<'_>, done: bool) -> Option<TestRequest> {
        let peer = first.peer;
        if done || self.refused.contains(&peer) {
            return None;
        }
        if self.flows.len() >= MAX_FLOWS {
            self.warn(format!(
                "WARNING: {MAX_FLOWS} flows at once already; flow from {peer} refused"
            ));
            remember(&mut self.refused, peer);
            return None;
        }
        if self
            .only_from
            .as_ref()
            .is_some_and(|ok| !ok.contains(&peer.ip()))
        {
            remember(&mut self.refused, peer);
            return None;
        }
        match classify_udp(first.d, wall_now(), &self.limits) {
            Ok(UdpStart::Test(r)) => Some(*r),
            // A late FIN of a finished flow: drained, never a new test.
            Err(HeaderError::StaleFin(_)) => None,
            Ok(UdpStart::Compat) => {
                self.warn(format!(
                    "WARNING: datagram from {peer} has no test header (compat -C clients are not served)"
                ));
                remember(&mut self.refused, peer);
                None
            }
            Err(e) => {
                self.warn(format!(
                    "WARNING: bad test header from {peer}: {e}; flow dropped"
                ));
                remember(&mut self.refused, peer);
                None
            }
        }
    }

    /// A new flow of `req` from `peer`: its ids and its `-P` group.
    fn new_flow(&mut self, peer: SocketAddr, req: TestRequest) -> NewFlow {
        let id = self.next_id;
        self.next_id += 1;
        // A -d/-r flow's direction back takes the next id, as in iperf 2.
        let back_id = self.next_id;
        if matches!(req.mode, Mode::Dual { .. } | Mode::Tradeoff { .. }) {
            self.next_id += 1;
        }
        self.served += 1;
        // Flows of one -P client add up in [SUM] rows.
        let group = (req.streams > 1 && req.mode != Mode::Reverse).then(|| {
            let g = self
                .groups
                .get(&peer.ip())
                .filter(|g| g.open() && g.expected == req.streams)
                .cloned()
                .unwrap_or_else(|| Group::new(req.streams));
            let member = g.join().unwrap_or(0);
            if g.open() {
                self.groups.insert(peer.ip(), g.clone());
            } else {
                self.groups.remove(&peer.ip());
            }
            (g, member)
        });
        NewFlow {
            id,
            back_id,
            req,
            group,
        }
    }

    /// What flow `n` starts with: its first datagram, its socket and local
    /// address, and the server's options.
    fn flow_start(
        &self,
        n: NewFlow,
        first: &First<'_>,
        (sock, local): (Arc<UdpSocket>, SocketAddr),
        l: &Listener,
    ) -> FlowStart {
        let cfg = self.cfg;
        FlowStart {
            id: n.id,
            sock,
            local,
            peer: first.peer,
            req: n.req,
            first: first.d.to_vec(),
            first_at_us: first.at_us,
            read_len: cfg.common.len_or_default(l.addr.is_ipv6()) as usize,
            at: Instant::now(),
            server_time: cfg.common.time,
            interval: cfg.common.interval,
            enhanced: cfg.common.enhanced,
            device: cfg.common.bind.as_ref().and_then(|b| b.device.clone()),
            multicast: l.group.is_some(),
            group: n.group,
            back_id: n.back_id,
            histograms: cfg.common.histograms,
            hist_bins: cfg.common.hist_bins,
            jitter_bin_us: cfg.common.jitter_histograms,
        }
    }

    /// Runs flow `n` on the listener's own socket (multicast, `-U`) to its
    /// end, then hands back a fresh listener for the next one.
    fn run_inline(
        &self,
        n: NewFlow,
        first: &First<'_>,
        l: &Listener,
        intr: &mut Interrupt,
    ) -> Inline {
        let (cfg, s, peer) = (self.cfg, self.s, first.peer);
        if let Err(e) = l
            .sock
            .set_nonblocking(false)
            .and_then(|_| l.sock.connect(peer))
        {
            self.warn(format!("WARNING: flow from {peer}: {e}"));
            return Inline::Skipped;
        }
        size_buffers(cfg, &l.sock);
        let Ok(sock) = l.sock.try_clone() else {
            return Inline::Skipped;
        };
        // A unicast listener for the next client is bound at once, so that
        // its datagrams wait in the queue instead of being refused; a
        // group's is joined only after the flow (it would also queue this
        // flow's datagrams).
        let next = if l.group.is_none() {
            // Sized now: the next client's datagrams queue in it.
            Some(listen(cfg, s).inspect(|n| size_buffers(cfg, &n.sock)))
        } else {
            None
        };
        let f = self.flow_start(n, first, (Arc::new(sock), l.addr), l);
        let id = f.id;
        let h = handle_for(&f);
        let (h2, r2) = (h.clone(), self.report.clone());
        let Ok(j) = std::thread::Builder::new()
            .name(format!("udp2-flow-{id}"))
            .spawn(move || serve(f, h2, r2))
        else {
            return Inline::Skipped;
        };
        // The flow runs alone; a signal still ends it (and the server).
        while !j.is_finished() {
            if intr.triggered() {
                if h.running() {
                    self.warn(super::WAITING.into());
                }
                h.interrupt();
                let _ = j.join();
                return Inline::End(0);
            }
            let _ = rperf3_sys::poll::readable(&intr.fd(), Duration::from_millis(50));
        }
        let _ = j.join();
        // A fresh socket (and join) for the next flow, as iperf 2 does.
        match next.unwrap_or_else(|| listen(cfg, s)) {
            Ok(n) => {
                let _ = n.sock.set_nonblocking(true);
                Inline::Next(n)
            }
            Err(e) => {
                self.warn(format!("ERROR: listener bind failed: {e}"));
                Inline::End(1)
            }
        }
    }

    /// Ends the flows still running: at once after a signal (each still
    /// sends its report), else as the server's `-t` says.
    fn end(&mut self, interrupted: bool) {
        self.flows.retain(|_, (_, j)| !j.is_finished());
        if interrupted && self.flows.values().any(|(h, _)| h.running()) {
            self.warn(super::WAITING.into());
        }
        for (_, (h, j)) in self.flows.drain() {
            if interrupted {
                h.interrupt();
            } else {
                h.ctl.stop();
            }
            let _ = j.join();
        }
    }
}

/// A flow's identity before its socket: its ids, request and `-P` group.
struct NewFlow {
    id: u32,
    back_id: u32,
    req: TestRequest,
    group: Option<(Arc<Group>, usize)>,
}

/// How a flow served on the listener's own socket ended.
enum Inline {
    /// Served: the next flow's listener.
    Next(Listener),
    /// Not served (the socket would not connect, no thread).
    Skipped,
    /// The server ends with this status.
    End(i32),
}

fn remember(set: &mut HashSet<SocketAddr>, a: SocketAddr) {
    if set.len() >= REFUSED_MEMORY {
        set.clear();
    }
    set.insert(a);
}

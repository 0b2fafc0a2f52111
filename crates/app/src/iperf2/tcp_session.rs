//! One accepted connection of the iperf 2 TCP server: its test header read
//! under an absolute deadline and classified, the header ack when asked for,
//! and the test the header requests (receive, `-R` send, `--full-duplex`, and
//! the `-d`/`-r` connection back). A header that never completes or is not
//! one we accept ends this connection only, with a message naming why.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_proto2::{
    classify_tcp, AckTimes, Decoded, Directions, HeaderAck, HeaderError, IsochSpec, Layout, Mode,
    RequestLimits, SessionClock, TcpStart, TestEnd, TestRequest, Timeval, VERSION_2_2_1,
};
use rperf3_report::iperf2::model::{Event2, Tag2};
use rperf3_report::iperf2::{isoch_schedule_line, tos_note};
use rperf3_sys::net;

use super::connect_back::connect_back;
use super::flow_stats::FlowStats;
use super::interval::{addrs_of, key, Dir, FlowSpec, Intervals, SumKind};
use super::tcp_bursts::Bursts;
use super::tcp_io::{pacer_for, pattern, ReadHow};
use super::tcp_isoch::FramePlan;
use super::tcp_setup::{self, Wake};
use super::tcp_shared::{Group, Member, Pending, Shared, Tracked};
use super::workers::{SendPlan, Source, Workers};
use crate::measurement::choice::{cork_sender, paces_itself, sendfile_suits, size_sender};

/// How long a client has to send its whole test header (iperf 2.1.8's limit).
pub(crate) const HEADER_LIMIT: Duration = Duration::from_secs(4);

/// Why a connection ended before its test.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The header did not complete in time.
    Slow { have: usize, need: usize },
    /// The bytes are not a header we serve.
    Bad(HeaderError),
    /// The socket failed.
    Io(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Slow { have, need } => write!(
                f,
                "test header incomplete after {:.1} s ({have} of {need} bytes)",
                HEADER_LIMIT.as_secs_f64()
            ),
            Self::Bad(e) => write!(f, "{e}"),
            Self::Io(e) => write!(f, "read of the test header failed: {e}"),
        }
    }
}

/// What the first bytes said, and every byte read so far (all of it test data).
pub(crate) struct Start {
    /// The request; `None` for a compat (`-C`) client's plain data.
    pub(crate) req: Option<TestRequest>,
    /// Bytes read (the header and anything after it).
    pub(crate) read: usize,
    /// A bounceback request: the bytes read so far.
    pub(crate) bounceback: Option<Vec<u8>>,
}

fn now_tv() -> Timeval {
    Timeval::from_since_epoch(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

/// Reads exactly the header's bytes (never data after it) before `deadline`.
pub(crate) fn read_start(
    mut s: &TcpStream,
    deadline: Instant,
    limits: &RequestLimits,
) -> Result<Start, Refused> {
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    loop {
        let need = match classify_tcp(&buf, now_tv(), limits) {
            Ok(Decoded::Done { value, .. }) => {
                let req = match value {
                    TcpStart::Test(r) => Some(*r),
                    TcpStart::Compat => None,
                    TcpStart::Bounceback => {
                        return Ok(Start {
                            req: None,
                            read: buf.len(),
                            bounceback: Some(buf),
                        })
                    }
                };
                return Ok(Start {
                    req,
                    read: buf.len(),
                    bounceback: None,
                });
            }
            Ok(Decoded::NeedMore { need }) => need,
            Err(e) => return Err(Refused::Bad(e)),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Refused::Slow {
                have: buf.len(),
                need,
            });
        }
        s.set_read_timeout(Some(left))
            .map_err(|e| Refused::Io(e.to_string()))?;
        let have = buf.len();
        buf.resize(need, 0);
        match s.read(&mut buf[have..]) {
            Ok(0) => {
                return Err(Refused::Bad(HeaderError::Truncated { have, need }));
            }
            Ok(n) => buf.truncate(have + n),
            Err(e) => {
                buf.truncate(have);
                if !rperf3_engine::tcp::read_again(&e) {
                    return Err(Refused::Io(e.to_string()));
                }
            }
        }
    }
}

/// The ack for `req`, sent with TCP_NODELAY on so it leaves at once. With
/// trip-times it carries the three stamps (52 bytes): an `-X --trip-times`
/// client reads that many, and would wait forever on the short form.
fn ack_for(req: &TestRequest, accepted: Timeval) -> HeaderAck {
    HeaderAck {
        version: VERSION_2_2_1,
        times: req.trip_start.filter(|_| req.trip_times).map(|c| AckTimes {
            client_start: c,
            server_accept: accepted,
            server_sent: now_tv(),
        }),
    }
}

fn send_ack(mut s: &TcpStream, ack: &HeaderAck, nodelay: bool) -> io::Result<()> {
    let ack = ack.encode();
    s.set_nodelay(true)?;
    s.set_write_timeout(Some(HEADER_LIMIT))?;
    let r = s.write_all(&ack);
    s.set_write_timeout(None)?;
    s.set_nodelay(nodelay)?;
    r
}

/// Serves one connection to its end; `pending` is its place among the
/// connections still sending their header.
pub(crate) fn serve(s: TcpStream, peer: SocketAddr, sh: &Arc<Shared>, pending: Pending) {
    let c = &sh.cfg.common;
    let accepted = now_tv();
    let accepted_at = Instant::now();
    let start = read_start(&s, Instant::now() + HEADER_LIMIT, &RequestLimits::default());
    pending.done();
    let start = match start {
        Ok(x) => x,
        // A --connect-only client: a handshake, then its close.
        Err(Refused::Bad(HeaderError::Truncated { have: 0, .. })) => {
            sh.report.event(Event2::Message(format!(
                "{} port {}: closed before any test header (a connect-only client)",
                peer.ip(),
                peer.port()
            )));
            return;
        }
        Err(e) => {
            let text = format!(
                "WARNING: {} port {}: {e}; connection closed",
                peer.ip(),
                peer.port()
            );
            log::warn!("{text}");
            sh.report.event(Event2::Message(text));
            return;
        }
    };
    let _ = s.set_read_timeout(None);
    if let Some(first) = start.bounceback {
        sh.served.fetch_add(1, Ordering::Relaxed);
        super::tcp_bounceback::serve(s, first, accepted_at, sh);
        return;
    }
    if let Some(r) = &start.req {
        if r.wants_ack {
            if let Err(e) = send_ack(&s, &ack_for(r, accepted), c.nodelay) {
                sh.report.event(Event2::Message(format!(
                    "WARNING: {} port {}: header ack failed: {e}",
                    peer.ip(),
                    peer.port()
                )));
                return;
            }
        }
        if r.tos != 0 {
            let _ = rperf3_sys::sockopt::set_tos(&s, peer.is_ipv6(), r.tos);
        }
    }
    sh.served.fetch_add(1, Ordering::Relaxed);
    Test::new(s, peer, start, sh).run();
}

struct Test<'a> {
    sh: &'a Arc<Shared>,
    s: Arc<TcpStream>,
    /// The client's address (known after its connection has closed, for `-r`).
    peer: SocketAddr,
    req: Option<TestRequest>,
    pre: usize,
    id: u32,
    len: u32,
}

impl<'a> Test<'a> {
    fn new(s: TcpStream, peer: SocketAddr, start: Start, sh: &'a Arc<Shared>) -> Self {
        Self {
            sh,
            s: Arc::new(s),
            peer,
            req: start.req,
            pre: start.read,
            id: sh.next_id(),
            len: sh.cfg.common.len_or_default(false),
        }
    }

    /// A `--trip-times` test: its writes, either way, are stamped bursts.
    fn trip(&self) -> bool {
        self.req.as_ref().is_some_and(|r| r.trip_times)
    }

    fn mode(&self) -> Mode {
        self.req.as_ref().map_or(Mode::Normal, |r| r.mode)
    }

    /// The interval set this stream reports in: its client's `-P` group, or its own.
    fn join_group(&self, start: Instant) -> Member {
        let streams = self.req.as_ref().map_or(1, |r| r.streams);
        let sum = if streams > 1 || matches!(self.mode(), Mode::Dual { .. }) {
            Some(SumKind::Sum)
        } else if self.mode() == Mode::FullDuplex && self.sh.cfg.common.enhanced {
            Some(SumKind::FullDuplex(self.id))
        } else {
            None
        };
        let fresh = || {
            let iv = Intervals::start(
                self.sh.report.clone(),
                start,
                self.sh.cfg.common.interval,
                sum,
            );
            self.sh.watch(&iv.open_flows());
            iv
        };
        self.sh.join(net::unmap(self.peer).ip(), streams, fresh)
    }

    /// With trip-times, what a `-R` or full-duplex sender writes before its
    /// bursts: this server's own test header (mode and rate cleared, its clock
    /// as the start), which a 2.2.1 client reads (by its length) and checks
    /// against its clock; and that start.
    fn reverse_header(&self) -> Option<(Vec<u8>, Timeval)> {
        let r = self.req.as_ref()?;
        if !(r.trip_times && matches!(r.mode, Mode::Reverse | Mode::FullDuplex)) {
            return None;
        }
        let start = now_tv();
        let h = TestRequest {
            mode: Mode::Normal,
            transfer_id: None,
            rate: 0,
            rate_is_pps: false,
            peer_detect: false,
            wants_ack: false,
            trip_start: Some(start),
            txstart: None,
            isochronous: false,
            isoch_settings: None,
            no_udp_fin: false,
            fq_rate: None,
            write_prefetch: None,
            barrier_us: None,
            quickack: false,
            periodic_burst: false,
            l4s: false,
            cca: None,
            permit_key: None,
            ..r.clone()
        };
        let bytes = h
            .tcp_header(VERSION_2_2_1, self.sh.port)
            .encode(Layout::V2_2_1);
        Some((bytes.ok()?, start))
    }

    /// Gives `sock`, about to send `plan`, its short-path send buffer when
    /// the plan is bulk, and corks a full-rate sendfile sender where that
    /// suits: the client's streams are each served here, and together get
    /// what the client's own senders would.
    fn prepare_sender(&self, sock: &TcpStream, plan: &SendPlan) {
        if let Source::Pattern { sendfile, .. } = plan.source {
            let streams = self.req.as_ref().map_or(1, |r| r.streams as usize);
            size_sender(sock, streams, self.sh.cfg.common.window.is_some());
            if sendfile && plan.pacer.is_none() {
                cork_sender(sock, streams);
            }
        }
    }

    /// `stamps`: the start a `--trip-times` sender's bursts carry.
    fn send_plan(&self, drain: bool, start: Instant, stamps: Option<Timeval>) -> SendPlan {
        let r = self.req.as_ref();
        let len = r.and_then(|r| r.buf_len).unwrap_or(self.len);
        // With trip-times a -R or full-duplex client reads bursts whose
        // headers carry this side's write times (filled with 0xA5, as 2.2.1).
        let frames = r.filter(|r| r.isochronous).map(|r| {
            r.isoch_settings
                .map_or_else(IsochSpec::default, IsochSpec::from_wire)
        });
        let source = match (frames, stamps) {
            // --isochronous -R or full duplex: frames as the client's
            // settings say, each burst stamped like the client's.
            (Some(spec), _) => Source::Frames(FramePlan {
                spec,
                len,
                start: stamps.unwrap_or_else(now_tv),
                origin: start,
                end: self.send_time().map(|t| start + t),
            }),
            (None, Some(t)) => {
                Source::Reader(Box::new(Bursts::new(vec![0xA5; len as usize], t)), len)
            }
            (None, None) => Source::Pattern {
                block: Arc::new(pattern(len)),
                sendfile: sendfile_suits(len as usize, r.map_or(1, |r| r.streams as usize), || {
                    net::tcp_congestion(&self.s).is_some_and(|c| paces_itself(&c))
                }),
            },
        };
        SendPlan {
            source,
            pacer: pacer_for(
                r.map_or(0, |r| r.rate),
                start,
                self.send_time().map(|t| start + t),
            ),
            bytes: match r.map(|r| r.end) {
                Some(TestEnd::Bytes(n)) => Some(n),
                _ => None,
            },
            drain: drain.then_some(Duration::from_secs(2)),
        }
    }

    /// TCP_QUICKACK before each read: the client asked (`--tcp-quickack`)
    /// or this server's own option.
    fn quickack(&self) -> bool {
        self.sh.cfg.common.tcp_quickack || self.req.as_ref().is_some_and(|r| r.quickack)
    }

    /// How long this server sends (the header's `-t`), if by time.
    fn send_time(&self) -> Option<Duration> {
        match self.req.as_ref().map(|r| r.end) {
            Some(TestEnd::Time(d)) => Some(d),
            _ => None,
        }
    }

    fn run(self) {
        let sh = self.sh;
        let start = Instant::now();
        // 2.2.1's order: (isoch) (reverse) (trip-times).
        let mut notes: Vec<&str> = Vec::new();
        if self.req.as_ref().is_some_and(|r| r.isochronous) {
            notes.push("(isoch)");
        }
        match self.mode() {
            Mode::Reverse => notes.push("(reverse)"),
            Mode::FullDuplex => notes.push("(full-duplex)"),
            _ => {}
        }
        if self.trip() {
            notes.push("(trip-times)");
        }
        // A server prints the client's byte as `tx` but in full duplex.
        let tos = tos_note(
            self.req.as_ref().map_or(0, |r| r.tos),
            self.mode() == Mode::FullDuplex,
            true,
        );
        notes.extend(tos.as_deref());
        // 2.2.1 prints it after the peer's version, and not for -R.
        if self.quickack() && self.mode() != Mode::Reverse {
            notes.push("(qack)");
        }
        let dev = sh
            .cfg
            .common
            .bind
            .as_ref()
            .and_then(|b| b.device.as_deref());
        if let Ok(mut line) = tcp_setup::connection(Tag2::Id(self.id), &self.s, &notes, dev) {
            line.peer_version = self
                .req
                .as_ref()
                .and_then(|r| r.peer_version)
                .map(|v| v.to_string());
            sh.report.event(Event2::Connected(line));
        }
        let track = sh.track(std::slice::from_ref(&self.s));
        let gr = self.join_group(start);
        let Ok(wake) = Wake::new() else {
            return;
        };
        let mut w = Workers::default();
        let addrs = addrs_of(&self.s);
        let mode = self.mode();
        let dirs = Directions::of(mode);
        let (recv, send) = (dirs.receives, dirs.sends);
        if recv {
            let mut st = if self.trip() {
                FlowStats::with_trip(self.len, {
                    let c = &self.sh.cfg.common;
                    c.histograms.then_some(c.hist_bins)
                })
            } else {
                FlowStats::new(self.len)
            };
            st.frames = self.req.as_ref().is_some_and(|r| r.isochronous);
            let st = Arc::new(st);
            // The header and whatever came with it are test data.
            st.io.add_many(0, self.pre as u64);
            let k = key(self.id, Dir::Recv);
            gr.iv.add(
                k,
                FlowSpec::of(Tag2::Id(self.id), Dir::Recv, &st, &self.s, addrs),
            );
            if let Ok(wk) = wake.waker() {
                let qa = self.quickack();
                let alone = self.req.as_ref().is_some_and(|r| r.streams == 1);
                let how = ReadHow::of(qa, alone, self.sh.cfg.common.enhanced);
                let _ = w.recv(&self.s, (self.len, !send, how), &st, (gr.iv.ender(), k), wk);
            }
        }
        let mut frames = None;
        if send {
            let isoch = self.req.as_ref().is_some_and(|r| r.isochronous);
            let st = Arc::new(FlowStats::sender(self.len, isoch, None));
            frames = isoch.then(|| st.clone());
            let tag = if recv {
                Tag2::ReverseId(self.id)
            } else {
                Tag2::Id(self.id)
            };
            let k = key(self.id, Dir::Send);
            gr.iv
                .add(k, FlowSpec::of(tag, Dir::Send, &st, &self.s, addrs));
            let stamps = self.reverse_header().and_then(|(h, t)| {
                let _ = self.s.set_write_timeout(Some(HEADER_LIMIT));
                let sent = (&*self.s).write_all(&h).is_ok();
                let _ = self.s.set_write_timeout(None);
                sent.then_some(t)
            });
            let plan = self.send_plan(!recv, start, stamps);
            self.prepare_sender(&self.s, &plan);
            if let Ok(wk) = wake.waker() {
                let _ = w.send(&self.s, plan, &st, (gr.iv.ender(), k), wk);
            }
        }
        if let Mode::Dual { port } = mode {
            self.back(port, &gr, &wake, &mut w, &track);
        }
        self.wait(&mut w, &wake, start, dirs.timed_send);
        drop(gr);
        let errs = frames.and_then(|st| st.isoch.as_ref()?.schedule_errors_ms());
        if let Some((m, lo, hi, sd)) = errs {
            let line = isoch_schedule_line(Tag2::Id(self.id), m, lo, hi, sd);
            sh.report.event(Event2::Message(line));
        }
        if let Mode::Tradeoff { port } = mode {
            if !sh.stopping.load(Ordering::Acquire) {
                let set = Intervals::start(
                    sh.report.clone(),
                    Instant::now(),
                    sh.cfg.common.interval,
                    None,
                );
                sh.watch(&set.open_flows());
                let g = sh.join(net::unmap(self.peer).ip(), 1, || set);
                self.back(port, &g, &wake, &mut w, &track);
                self.wait(&mut w, &wake, Instant::now(), true);
            }
        }
    }

    /// Waits for the workers; the sender stops at the header's time, and the
    /// server's own `-t` ends everything.
    fn wait(&self, w: &mut Workers, wake: &Wake, start: Instant, sends: bool) {
        let paced = self.req.as_ref().is_some_and(|r| r.rate > 0);
        let send_time = self.send_time().filter(|_| sends);
        let mut clock = SessionClock::new(start, self.sh.cfg.common.time, send_time, paced);
        while !w.finished() {
            let now = Instant::now();
            let step = clock.poll(now);
            if step.abort {
                w.abort();
            }
            if step.stop_sending {
                w.stop();
            }
            let next = step.wake.map(|t| t.saturating_duration_since(now));
            tcp_setup::wait(&[wake.fd()], next.or(Some(Duration::from_millis(500))));
            wake.clear();
        }
        w.join();
    }

    /// `-d`/`-r`: connects back to the client's `-L` port and sends there.
    fn back(&self, port: u16, gr: &Group, wake: &Wake, w: &mut Workers, track: &Tracked) {
        let sh = self.sh;
        let peer = self.peer;
        let local = self.s.local_addr().ok();
        if local.is_some_and(|l| net::unmap(l).ip() == net::unmap(peer).ip()) && port == sh.port {
            sh.report.event(Event2::Message(format!(
                "WARNING: connect back to {} port {port} refused: that is this server's own port",
                net::unmap(peer).ip()
            )));
            return;
        }
        let b = match connect_back(peer, port, &sh.cfg.common) {
            Ok(b) => Arc::new(b),
            Err(e) => {
                sh.report.event(Event2::Message(format!(
                    "WARNING: connect back to {} port {port} failed: {}",
                    net::unmap(peer).ip(),
                    super::client_header::os_text(&e)
                )));
                return;
            }
        };
        track.add(&b);
        let id = sh.next_id();
        let host = net::unmap(peer).ip().to_string();
        let block = tcp_setup::connector_settings(&b, &sh.cfg.common, &host, port, self.len, 1);
        sh.report.event(Event2::Settings(block));
        if let Ok(line) = tcp_setup::connection(Tag2::ReverseId(id), &b, &["(reverse)"], None) {
            sh.report.event(Event2::Connected(line));
        }
        let st = Arc::new(FlowStats::new(self.len));
        let k = key(id, Dir::Send);
        gr.iv.add(
            k,
            FlowSpec::of(Tag2::ReverseId(id), Dir::Send, &st, &b, addrs_of(&b)),
        );
        let plan = self.send_plan(true, Instant::now(), None);
        self.prepare_sender(&b, &plan);
        if let Ok(wk) = wake.waker() {
            let _ = w.send(&b, plan, &st, (gr.iv.ender(), k), wk);
        }
    }
}

#[cfg(test)]
#[path = "tcp_session_tests.rs"]
mod tests;

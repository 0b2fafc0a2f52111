//! The iperf 2 TCP client: connects `-P` streams, writes each one's test header
//! (2.2.1's layout; none with `-C`), waits for the header ack with `-X`, and
//! runs the directions the mode asks for, with a listener for the server's
//! connection back under `-d`/`-r`.

#[path = "tcp_client_back.rs"]
mod back;

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_proto2::{Layout, VERSION_2_2_1};
use rperf3_report::iperf2::model::{BbSettings2, Event2, IsochSettings2, Settings2, Side2, Tag2};
use rperf3_report::iperf2::{isoch_schedule_line, tos_note, Report2};
use rperf3_sys::net;

use super::client_header::{os_text, rate_bps, read_ack, request};
use super::config::{Bounceback2, Client2, Common2, Config2, End2, Input2, Mode2, Role2};
use super::connect_back::{accept_back, BACK_GRACE, NO_BACK};
use super::flow_stats::FlowStats;
use super::interval::{addrs_of, key, Dir, FlowSpec, Intervals, SumKind};
use super::tcp_bounceback;
use super::tcp_bursts::Bursts;
use super::tcp_connect_only;
use super::tcp_io::{pacer_for, pattern, ReadHow};
use super::tcp_isoch::FramePlan;
use super::tcp_setup::{self, apply_opts, Wake};
use super::workers::{SendPlan, Source, Workers};
use super::Outcome2;
use crate::measurement::choice::{cork_sender, paces_itself, sendfile_suits, size_sender};
use crate::Interrupt;
use rperf3_proto2::PACED_GRACE;

/// How long a connect may take.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);
/// How long an `-X` client waits for the server's header ack.
pub(crate) const ACK_LIMIT: Duration = Duration::from_secs(10);

/// Runs the client described by `cfg` (its role must be a client).
pub(crate) fn run(cfg: &Config2, report: Arc<dyn Report2>, mut intr: Interrupt) -> Outcome2 {
    let Role2::Client(cl) = &cfg.role else {
        return Outcome2 { status: 1 };
    };
    match Client::new(cl, &cfg.common, report.clone()).and_then(|c| c.run(&mut intr)) {
        Ok(status) => Outcome2 { status },
        Err(e) => {
            report.event(Event2::Message(e));
            Outcome2 { status: 1 }
        }
    }
}

struct Client<'a> {
    cl: &'a Client2,
    c: &'a Common2,
    report: Arc<dyn Report2>,
    len: u32,
    addrs: Vec<SocketAddr>,
    /// `--trip-times`: the report start the header carried; writes are
    /// stamped bursts.
    trip: Option<rperf3_proto2::Timeval>,
    /// `--isochronous` (a forward test): the report start the header
    /// carried, which every frame's burst header repeats.
    frames: Option<rperf3_proto2::Timeval>,
}

impl<'a> Client<'a> {
    fn new(cl: &'a Client2, c: &'a Common2, report: Arc<dyn Report2>) -> Result<Self, String> {
        let addrs = net::resolve(&cl.host, c.port, c.family)
            .map_err(|e| format!("ERROR: failed to find host {}: {e}", cl.host))?;
        let len = c.len_or_default(addrs[0].is_ipv6());
        Ok(Self {
            cl,
            c,
            report,
            len,
            addrs,
            trip: None,
            frames: None,
        })
    }

    fn legacy(&self) -> bool {
        matches!(self.cl.mode, Mode2::Dual | Mode2::Tradeoff)
    }

    /// The window a fresh socket with our options has (the settings block is
    /// shown before connecting, as iperf 2 does, even when the connect fails).
    fn probe_window(&self) -> (u64, u32) {
        let a = self.addrs[0];
        let Ok(s) = net::fresh_tcp_socket(a) else {
            return (0, 0);
        };
        let _ = apply_opts(std::os::fd::AsFd::as_fd(&s), a.is_ipv6(), self.c);
        (net::buffer_sizes(&s).0, net::tcp_mss(&s))
    }

    /// The settings block, printed before any connection, as 2.2.1 does:
    /// its window and (`-m` without `-M`) MSS are an unconnected socket's.
    fn settings_block(&self) -> Settings2 {
        let (window, mss) = self.probe_window();
        let mut block = tcp_setup::settings(Side2::Client, self.c, self.c.port, self.len, window);
        block.host = Some(self.cl.host.clone());
        block.mss = tcp_setup::client_mss(self.c, mss);
        block
    }

    /// The port stream `id` connects to: the next ones with `--incr-dstport`.
    fn port_of(&self, id: u32) -> u16 {
        if self.cl.incr_dstport {
            self.c.port.wrapping_add(id.saturating_sub(1) as u16)
        } else {
            self.c.port
        }
    }

    /// iperf 2's line for connection `id` that could not connect.
    fn connect_failed(&self, id: u32, e: &io::Error) {
        self.report.event(Event2::Message(format!(
            "[{id:>3}] tcp connect to {} port {} failed ({}) on {}",
            self.addrs[0].ip(),
            self.port_of(id),
            os_text(e),
            rperf3_sys::time::strftime_now("%Y-%m-%d %H:%M:%S (%Z)")
        )));
    }

    /// Connects stream `id` (from 1).
    fn connect(&self, id: u32) -> io::Result<(TcpStream, Duration)> {
        let bind = self.c.bind.as_ref();
        let prep = |fd: std::os::fd::BorrowedFd<'_>, v6: bool| apply_opts(fd, v6, self.c);
        let port = self.port_of(id);
        let addrs: Vec<SocketAddr> = self
            .addrs
            .iter()
            .map(|a| SocketAddr::new(a.ip(), port))
            .collect();
        let t = Instant::now();
        let s = net::connect_tcp_prepared(
            &addrs,
            bind.map(|b| b.host.as_str()),
            bind.and_then(|b| b.port).unwrap_or(0),
            bind.and_then(|b| b.device.as_deref()),
            Some(CONNECT_LIMIT),
            net::Transport::Tcp,
            &prep,
        )
        .map_err(|e| match e {
            net::Prepared::Options(e) | net::Prepared::Connect(e) => e,
        })?;
        Ok((s, t.elapsed()))
    }

    fn run(mut self, intr: &mut Interrupt) -> Result<i32, String> {
        if let Some(bb) = self.cl.bounceback {
            return self.bounceback(bb, intr);
        }
        let listener = self.listen()?;
        let mut block = self.settings_block();
        block.flows = self.cl.parallel.max(1);
        block.trip_times = self.c.trip_times;
        block.isoch = self.cl.isoch.map(|i| IsochSettings2 {
            fps: i.fps,
            mean_bps: i.mean_bps,
            stdev_bps: i.stdev_bps,
            ipg_ms: i.ipg_ms,
        });
        if let Some(count) = self.cl.connect_only {
            block.connect_only = true;
            self.report.event(Event2::Settings(block));
            let plan = tcp_connect_only::Plan {
                count,
                streams: self.cl.parallel,
                every: self.c.interval,
                end: self.cl.end,
                device: self.c.bind.as_ref().and_then(|b| b.device.as_deref()),
            };
            return Ok(tcp_connect_only::run(
                &plan,
                &|id| self.connect(id),
                &|id, e| self.connect_failed(id, e),
                &*self.report,
                intr,
            ));
        }
        self.report.event(Event2::Settings(block));
        let req = request(self.cl, self.c, self.len);
        self.trip = req.trip_start.filter(|_| req.trip_times);
        self.frames = req.trip_start.filter(|_| req.isochronous);
        let header = req
            .tcp_header(VERSION_2_2_1, self.c.port)
            .encode(Layout::V2_2_1)
            .map_err(|e| format!("ERROR: {e}"))?;
        // The header is the first bytes of the test data: it counts, and -n
        // includes it (a 2.1.8 or 2.2.1 server reports exactly -n bytes).
        let sent_header = if self.cl.compat {
            0
        } else {
            header.len() as u64
        };
        let mut streams = Vec::new();
        for id in 1..=self.cl.parallel.max(1) {
            let (s, ct) = match self.connect(id) {
                Ok(x) => x,
                Err(e) => {
                    // iperf 2 reports a failed connect and exits 0.
                    self.connect_failed(id, &e);
                    return Ok(0);
                }
            };
            if !self.cl.compat {
                use std::io::Write;
                s.set_write_timeout(Some(CONNECT_LIMIT))
                    .map_err(|e| e.to_string())?;
                (&s).write_all(&header)
                    .map_err(|e| format!("ERROR: write of the test header failed: {e}"))?;
                s.set_write_timeout(None).map_err(|e| e.to_string())?;
            }
            if self.cl.peer_detect && !self.cl.compat {
                read_ack(&s, Instant::now() + ACK_LIMIT)?;
                s.set_read_timeout(None).map_err(|e| e.to_string())?;
            }
            streams.push((id, Arc::new(s), ct, Instant::now()));
        }
        // 2.2.1's order: (isoch) (reverse) (trip-times).
        let mut notes: Vec<&str> = Vec::new();
        if self.cl.isoch.is_some() && self.frames.is_some() {
            notes.push("(isoch)");
        }
        match self.cl.mode {
            Mode2::Reverse => notes.push("(reverse)"),
            Mode2::FullDuplex => notes.push("(full-duplex)"),
            _ => {}
        }
        if self.c.trip_times {
            notes.push("(trip-times)");
        }
        if self.cl.txstart.is_some() {
            notes.push("(epoch-start)");
        }
        let tos = tos_note(
            self.c.tos.unwrap_or(0),
            matches!(self.cl.mode, Mode2::Reverse | Mode2::FullDuplex),
            self.cl.mode != Mode2::Reverse,
        );
        notes.extend(tos.as_deref());
        if self.c.tcp_quickack {
            notes.push("(qack)");
        }
        let dev = self.c.bind.as_ref().and_then(|b| b.device.as_deref());
        // --txdelay-time: the header has gone (the server's clock runs from
        // it, as 2.2.1's does); ours starts after the wait.
        let delayed = self
            .cl
            .txdelay
            .map(|d| (std::time::SystemTime::now() + d, Instant::now() + d));
        for (id, s, ct, _) in &streams {
            if let Ok(mut line) = tcp_setup::connection(Tag2::Id(*id), s, &notes, dev) {
                line.connect_time = Some(*ct);
                self.report.event(Event2::Connected(line));
            }
            if let Some((start, _)) = delayed {
                self.report.event(Event2::TxStart {
                    tag: Tag2::Id(*id),
                    start,
                    now: std::time::SystemTime::now(),
                });
            }
        }
        if let Some(t) = self.cl.txstart {
            self.wait_start(t, intr);
        }
        if let Some((_, until)) = delayed {
            tcp_setup::wait_until(until, intr);
        }
        self.drive(streams, sent_header, listener.as_ref(), intr)
    }

    /// `--txstart-time`: says when traffic starts and waits for it (an
    /// interrupt ends the wait); the test's clock starts then, as 2.2.1's.
    fn wait_start(&self, epoch: f64, intr: &mut Interrupt) {
        let now = std::time::SystemTime::now();
        let start = std::time::UNIX_EPOCH + Duration::from_secs_f64(epoch.max(0.0));
        self.report.event(Event2::TxStart {
            tag: Tag2::Id(1),
            start,
            now,
        });
        let Ok(left) = start.duration_since(now) else {
            return;
        };
        tcp_setup::wait_until(Instant::now() + left, intr);
    }

    /// `--bounceback`: one connection of requests and replies.
    fn bounceback(&self, bb: Bounceback2, intr: &mut Interrupt) -> Result<i32, String> {
        let mut block = self.settings_block();
        block.flows = 1;
        block.bounceback = Some(BbSettings2 {
            request: bb.request,
            reply: bb.reply,
            hold_us: bb.hold_us,
            quickack: bb.quickack,
            count: bb.count,
            period: bb.period,
        });
        self.report.event(Event2::Settings(block));
        let (s, ct) = match self.connect(1) {
            Ok(x) => x,
            Err(e) => {
                self.connect_failed(1, &e);
                return Ok(0);
            }
        };
        let note = tcp_bounceback::note(bb.quickack, bb.request, bb.reply, bb.hold_us);
        let dev = self.c.bind.as_ref().and_then(|b| b.device.as_deref());
        if let Ok(mut line) = tcp_setup::connection(Tag2::Id(1), &s, &[note.as_str()], dev) {
            line.connect_time = Some(ct);
            self.report.event(Event2::Connected(line));
        }
        if bb.txdelay > 0.0 {
            // 2.2.1 holds its first request back on the client (nothing on
            // the wire asks the server to wait), saying so as --txstart-time.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            self.wait_start(now.as_secs_f64() + bb.txdelay, intr);
        }
        let time = match self.cl.end {
            End2::Time(d) => d,
            // iperf 2 runs a bounceback test by time only.
            End2::Bytes(_) => Duration::from_secs(10),
        };
        if let Err(e) = tcp_bounceback::client(&s, bb, time, self.c.interval, &self.report, intr) {
            self.report.event(Event2::Message(e));
        }
        Ok(0)
    }

    /// What a sender sends; frames are scheduled from `origin` to `end`. A
    /// `-F` file that cannot be opened falls back to the pattern, with iperf
    /// 2's two lines.
    fn source(&self, origin: Instant, end: Option<Instant>, sendfile: bool) -> Source {
        if let (Some(start), Some(spec)) = (self.frames, self.cl.isoch) {
            return Source::Frames(FramePlan {
                spec,
                len: self.len,
                start,
                origin,
                end,
            });
        }
        let pat = || Source::Pattern {
            block: Arc::new(pattern(self.len)),
            sendfile,
        };
        match &self.cl.input {
            // 2.2.1 fills stamped writes with 0xA5.
            Input2::Pattern => match self.trip {
                Some(t) => Source::Reader(
                    Box::new(Bursts::new(vec![0xA5; self.len as usize], t)),
                    self.len,
                ),
                None => pat(),
            },
            Input2::File(f) => match std::fs::File::open(f) {
                Ok(file) => Source::Reader(Box::new(file), self.len),
                Err(_) => {
                    for l in [
                        "Unable to open the file stream",
                        "Will use the default data stream",
                    ] {
                        self.report.event(Event2::Message(l.into()));
                    }
                    pat()
                }
            },
            Input2::Stdin => Source::Reader(Box::new(io::stdin()), self.len),
        }
    }

    fn drive(
        &self,
        streams: Vec<(u32, Arc<TcpStream>, Duration, Instant)>,
        sent_header: u64,
        listener: Option<&TcpListener>,
        intr: &mut Interrupt,
    ) -> Result<i32, String> {
        let start = Instant::now();
        let time = match self.cl.end {
            End2::Time(d) => Some(d),
            End2::Bytes(_) => None,
        };
        let p = streams.len() as u32;
        // Read before any data moves: a -n test can be over, and the
        // connection gone (no peer address), before the connections back come.
        let server_ip = streams
            .first()
            .and_then(|s| s.1.peer_addr().ok())
            .map(|a| net::unmap(a).ip());
        let sum = if p > 1 || self.cl.mode == Mode2::Dual {
            Some(SumKind::Sum)
        } else if self.cl.mode == Mode2::FullDuplex && self.c.enhanced {
            Some(SumKind::FullDuplex(1))
        } else {
            None
        };
        let iv = Intervals::start(self.report.clone(), start, self.c.interval, sum);
        let wake = Wake::new().map_err(|e| e.to_string())?;
        let mut w = Workers::default();
        let sends = !matches!(self.cl.mode, Mode2::Reverse);
        let recvs = matches!(self.cl.mode, Mode2::Reverse | Mode2::FullDuplex);
        let drain = time.unwrap_or(Duration::ZERO).max(Duration::from_secs(2));
        let mut senders = Vec::new();
        for (id, s, _, connected) in &streams {
            let addrs = addrs_of(s);
            if sends {
                size_sender(s, streams.len(), self.c.window.is_some());
                let sendfile = sendfile_suits(self.len as usize, streams.len(), || {
                    net::tcp_congestion(s).is_some_and(|c| paces_itself(&c))
                });
                let source = self.source(start, time.map(|t| start + t), sendfile);
                let timer = self.c.histograms.then_some(self.c.hist_bins);
                let st = Arc::new(FlowStats::sender(self.len, self.frames.is_some(), timer));
                senders.push((*id, st.clone()));
                st.io.add(sent_header);
                iv.add(
                    key(*id, Dir::Send),
                    FlowSpec::of(Tag2::Id(*id), Dir::Send, &st, s, addrs),
                );
                let pacer = pacer_for(
                    rate_bps(self.cl.rate, self.len),
                    *connected,
                    time.map(|t| start + t),
                );
                if matches!(source, Source::Pattern { sendfile: true, .. }) && pacer.is_none() {
                    cork_sender(s, streams.len());
                }
                let plan = SendPlan {
                    source,
                    // The rate counts from the connection, where the peer's
                    // receiver starts its clock.
                    pacer,
                    bytes: match self.cl.end {
                        End2::Bytes(n) => Some(n.saturating_sub(sent_header)),
                        End2::Time(_) => None,
                    },
                    drain: (!recvs).then_some(drain),
                };
                let waker = wake.waker().map_err(|e| e.to_string())?;
                w.send(s, plan, &st, (iv.ender(), key(*id, Dir::Send)), waker)
                    .map_err(|e| e.to_string())?;
            }
            if recvs {
                // With trip-times the server's writes are stamped bursts.
                let st = Arc::new(match self.trip {
                    Some(_) => FlowStats::with_trip_back(
                        self.len,
                        self.c.histograms.then_some(self.c.hist_bins),
                    ),
                    None => FlowStats::new(self.len),
                });
                let tag = Tag2::ReverseId(*id);
                iv.add(
                    key(*id, Dir::Recv),
                    FlowSpec::of(tag, Dir::Recv, &st, s, addrs),
                );
                let waker = wake.waker().map_err(|e| e.to_string())?;
                w.recv(
                    s,
                    (
                        self.len,
                        !sends,
                        ReadHow::of(self.c.tcp_quickack, p == 1, self.c.enhanced),
                    ),
                    &st,
                    (iv.ender(), key(*id, Dir::Recv)),
                    waker,
                )
                .map_err(|e| e.to_string())?;
            }
        }
        let mut back = Back {
            pending: if self.cl.mode == Mode2::Dual { p } else { 0 },
            next_id: p + 1,
            due: start + BACK_GRACE,
        };
        let mut stopped = false;
        let mut aborted = false;
        // A paced sender ends itself at the end of -t (a block due then still
        // goes, however late its thread wakes); the stop is its backstop.
        let t_stop = time.map(|t| match (self.cl.rate, self.frames) {
            (None, None) => t,
            _ => t + PACED_GRACE,
        });
        loop {
            if intr.triggered() && !aborted {
                w.abort();
                aborted = true;
            }
            let now = Instant::now();
            if let (Some(t), false) = (t_stop, stopped) {
                if now >= start + t {
                    w.stop();
                    stopped = true;
                }
            }
            // A receiver whose sender never ends (a server not honouring -t)
            // is cut off at the test's time plus the drain allowance.
            if let Some(t) = time {
                if now >= start + t + drain + BACK_GRACE && !aborted {
                    w.abort();
                    aborted = true;
                }
            }
            if back.pending > 0 && !aborted {
                if let (Some(l), Some(ip)) = (listener, server_ip) {
                    let mut run = Run {
                        iv: &iv,
                        wake: &wake,
                        w: &mut w,
                    };
                    self.accept_one((l, ip), &mut back, &mut run, intr)?;
                    continue;
                }
            }
            if w.finished() {
                break;
            }
            let limit = t_stop
                .map(|t| (start + t).saturating_duration_since(now))
                .filter(|d| !d.is_zero() && !stopped);
            tcp_setup::wait(
                &[intr.fd(), wake.fd()],
                limit.or(Some(Duration::from_millis(500))),
            );
            wake.clear();
        }
        let errors = w.join();
        iv.finish();
        for (id, st) in senders {
            let errs = st.isoch.as_ref().and_then(|i| i.schedule_errors_ms());
            if let Some((m, lo, hi, sd)) = errs {
                let line = isoch_schedule_line(Tag2::Id(id), m, lo, hi, sd);
                self.report.event(Event2::Message(line));
            }
        }
        for e in errors {
            self.report.event(Event2::Message(e));
        }
        if self.cl.mode == Mode2::Tradeoff && !aborted {
            if let (Some(l), Some(ip)) = (listener, server_ip) {
                self.tradeoff_back(l, ip, p, intr)?;
            }
        }
        Ok(0)
    }
}

/// What a running test's driver holds.
struct Run<'a> {
    iv: &'a Intervals,
    wake: &'a Wake,
    w: &'a mut Workers,
}

/// Connections back a `-d` client still expects.
struct Back {
    pending: u32,
    next_id: u32,
    due: Instant,
}

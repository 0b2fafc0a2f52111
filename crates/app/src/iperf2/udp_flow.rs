//! One UDP flow on iperf 2's server: its receiver (the shared engine loop with
//! iperf 2's statistics), its interval and final rows, and the server report
//! sent back after the client's FIN.
//!
//! A flow ends at its FIN, at the server's `-t`, at the listener's stop, or
//! when its client falls silent (absolute deadlines: nothing waits forever).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::pacing::Pacer;
use rperf3_engine::udp::UdpSendSpec;
use rperf3_proto2::Udp2Stats;

use super::udp_wire::{recv_loop2, RECV_POLL};
use rperf3_proto2::{
    FlowTerms, IsochSpec, Mode, ServerFlow, TestEnd, TestRequest, IDLE_END, VERSION_2_2_1,
};
use rperf3_report::iperf2::model::{
    Connection2, Event2, HistBins2, Row2, RowKind2, Tag2, UdpRecv2,
};
use rperf3_report::iperf2::{isoch_schedule_line, tos_note, Report2};

use super::config::DEFAULT_UDP_RATE;
use super::connect_back::same_host;
use super::tcp_setup::device_of;
use super::udp_back::send_back;
use super::udp_common::{
    duplex_rows, latency, pattern, recv_row, send_report, server_report, trip, Duplex, RecvMark,
    Ticks,
};
use super::udp_group::Group;
use super::udp_jitter::RowHists;
use super::udp_send::{Tx, TxPlan};

/// What the listener knows of a new flow.
pub(crate) struct FlowStart {
    /// The transfer id.
    pub(crate) id: u32,
    /// The flow's socket, connected to the client.
    pub(crate) sock: Arc<UdpSocket>,
    /// Our address as the client sees it (the group for multicast).
    pub(crate) local: SocketAddr,
    /// The client.
    pub(crate) peer: SocketAddr,
    /// What the first datagram asked for.
    pub(crate) req: TestRequest,
    /// The first datagram (accounted by the flow).
    pub(crate) first: Vec<u8>,
    /// Its arrival, µs since the epoch (the kernel's stamp).
    pub(crate) first_at_us: i64,
    /// The server's read length (`-l`): longer datagrams count as truncated.
    pub(crate) read_len: usize,
    /// When the first datagram arrived.
    pub(crate) at: Instant,
    /// The server's `-t`, if any.
    pub(crate) server_time: Option<Duration>,
    /// Interval reports.
    pub(crate) interval: Option<Duration>,
    /// `-e`: enhanced rows and report.
    pub(crate) enhanced: bool,
    /// `-B ...%dev`: the device the listener is bound to.
    pub(crate) device: Option<String>,
    /// A multicast flow: no report.
    pub(crate) multicast: bool,
    /// The client's `-P` group and this flow's place in it.
    pub(crate) group: Option<(Arc<Group>, usize)>,
    /// The transfer id of a `-d`/`-r` direction back.
    pub(crate) back_id: u32,
    /// `--histograms`: with trip-times, each row is followed by its
    /// datagrams' one-way delays in bins.
    pub(crate) histograms: bool,
    /// `--histograms=width,bins`: the delay histograms' bins.
    pub(crate) hist_bins: HistBins2,
    /// `--jitter-histograms`: each row is followed by its datagrams' transit
    /// differences in bins this many µs wide.
    pub(crate) jitter_bin_us: Option<u32>,
}

/// A running flow as the listener sees it: datagrams that reached the
/// listener before the flow's socket took over are fed in here.
#[derive(Clone)]
pub(crate) struct FlowHandle {
    pub(crate) stats: Arc<Mutex<Udp2Stats>>,
    pub(crate) counters: Arc<StreamCounters>,
    pub(crate) ctl: Arc<RunControl>,
    /// The client sends data (not a `-R` test, whose datagrams are requests).
    pub(crate) receives: bool,
    /// The server was interrupted (Ctrl-C): the flow ends now, and its
    /// client still gets the Server Report of what arrived.
    interrupted: Arc<AtomicBool>,
}

impl FlowHandle {
    /// The flow still moves data: not stopped, and its FIN not yet in (a flow
    /// sending its report after the FIN has ended as far as a signal goes).
    pub(crate) fn running(&self) -> bool {
        let fin = || self.stats.lock().unwrap_or_else(|p| p.into_inner()).fin;
        !(self.ctl.stopped() || (self.receives && fin()))
    }

    /// Ends the flow because the server was interrupted.
    pub(crate) fn interrupt(&self) {
        self.interrupted.store(true, Ordering::Release);
        self.ctl.stop();
    }

    /// Accounts a datagram the listener read for this flow, which arrived
    /// at `at_us` (µs since the epoch).
    pub(crate) fn feed(&self, d: &[u8], at_us: i64) {
        if !self.receives {
            return;
        }
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        if s.fin {
            return;
        }
        // The listener reads whole datagrams (2.2.1's reads a flow's first
        // into its full buffer): none is truncated here.
        let read_len = std::mem::take(&mut s.read_len);
        let b = s.on_message(d, 0, at_us);
        s.read_len = read_len;
        self.counters.add_many(b.blocks, b.bytes);
    }
}

/// Prepares a flow's shared state; the first datagram is already counted.
pub(crate) fn handle_for(f: &FlowStart) -> FlowHandle {
    let h = FlowHandle {
        stats: Arc::new(Mutex::new(Udp2Stats::new(f.req.seq64))),
        counters: Arc::new(StreamCounters::default()),
        ctl: Arc::new(RunControl::new(None)),
        receives: f.req.mode != Mode::Reverse,
        interrupted: Arc::new(AtomicBool::new(false)),
    };
    {
        let mut s = h.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.keep_samples = hist_wanted(f) || jitter_wanted(f);
        s.read_len = f.read_len;
    }
    h.feed(&f.first, f.first_at_us);
    h
}

/// Serves a flow to its end: receives (and reports) what the client sends,
/// sends what a `-R` or full-duplex client asks for, answers the FIN, and
/// runs a `-d`/`-r` direction back.
pub(crate) fn serve(f: FlowStart, h: FlowHandle, report: Arc<dyn Report2>) {
    let receives = f.req.mode != Mode::Reverse;
    let sends = matches!(f.req.mode, Mode::Reverse | Mode::FullDuplex);
    // The direction the server sends is tagged `[ *N]` beside a received one.
    let (tag, tx_tag) = if receives {
        (Tag2::Id(f.id), Tag2::ReverseId(f.id))
    } else {
        (Tag2::ReverseId(f.id), Tag2::Id(f.id))
    };
    announce(&f, sends, &*report);
    let _ = f.sock.set_read_timeout(Some(RECV_POLL));
    // The client's -S applies to what the server sends back (-R, full duplex,
    // the report), as iperf 2 applies it.
    if f.req.tos != 0 {
        let _ = rperf3_sys::sockopt::set_tos(&*f.sock, f.peer.is_ipv6(), f.req.tos);
    }
    let len = f.req.buf_len.map_or(0, |l| l as usize).max(f.first.len());
    let back = back_to(&f, &*report);
    // -d: the direction back runs beside this one, on a thread of its own.
    let dual = match back {
        Some((to, true)) => {
            let (r, c, q) = (report.clone(), h.ctl.clone(), f.req.clone());
            let (id, iv) = (f.back_id, f.interval);
            std::thread::Builder::new()
                .name(format!("udp2-back-{id}"))
                .spawn(move || send_back(to, id, &q, len, iv, &c, &*r))
                .ok()
        }
        _ => None,
    };
    let rx = if receives {
        match start_receiver(&f, &h, len) {
            Some(j) => Some(j),
            None => {
                report.event(Event2::Message(format!(
                    "[{:>3}] ERROR: cannot start a receiver",
                    f.id
                )));
                return;
            }
        }
    } else {
        None
    };
    let tx = if sends {
        start_sender(&f, &h, (len, tx_tag), &*report)
    } else {
        None
    };
    let mut live = Live {
        // --histograms: (this interval's, the whole flow's) delays.
        hists: RowHists::new(
            hist_wanted(&f).then_some(f.hist_bins),
            f.jitter_bin_us.filter(|_| jitter_wanted(&f)),
        ),
        // When each direction stops: the header's time, the server's -t, a
        // silent client (absolute deadlines, see rperf3_proto2::ServerFlow).
        flow: ServerFlow::new(FlowTerms::of(&f.req, f.multicast), f.at, f.server_time),
        ticks: Ticks::new(f.at, f.interval),
        mark: RecvMark::default(),
        tx,
        tag,
        f: &f,
        h: &h,
    };
    live.run(rx, &*report);
    let sent = live.sender_total(len, &*report);
    if !receives {
        return;
    }
    let (row, s) = live.receiver_total(sent.as_ref(), &*report);
    answer_fin(&f, &h, &s);
    // -r: the direction back once this one has ended with its FIN.
    if let Some((to, false)) = back {
        if s.fin && !h.ctl.stopped() {
            send_back(to, f.back_id, &f.req, len, f.interval, &h.ctl, &*report);
        }
    }
    let back = dual.and_then(|j| j.join().ok().flatten());
    // -d: 2.2.1's server sums both directions once both have ended: bytes,
    // and the datagrams it sent back among the total.
    if let (Some((b, sent)), RowKind2::UdpRecv(u)) = (back, row.kind) {
        report.event(Event2::Final(Row2 {
            tag: Tag2::Sum(2),
            addrs: None,
            start: 0.0,
            end: row.end.max(b.end),
            bytes: row.bytes + b.bytes,
            kind: RowKind2::UdpRecv(UdpRecv2 {
                total: u.total + sent,
                ..u
            }),
            at: SystemTime::now(),
        }));
    }
}

/// The connection line: the flow's modes as 2.2.1 notes them.
fn announce(f: &FlowStart, sends: bool, report: &dyn Report2) {
    let mut notes = Vec::new();
    for (on, note) in [
        (f.req.isochronous, "(isoch)"),
        (f.req.mode == Mode::Reverse, "(reverse)"),
        (f.req.mode == Mode::FullDuplex, "(full-duplex)"),
        // 2.2.1 says so for every test it sends in (no FIN handshake ends it).
        (f.req.no_udp_fin || sends, "(no-udp-fin)"),
        (f.req.trip_times, "(trip-times)"),
    ] {
        if on {
            notes.push(note.to_string());
        }
    }
    notes.extend(tos_note(f.req.tos, f.req.mode == Mode::FullDuplex, true));
    report.event(Event2::Connected(Connection2 {
        tag: Tag2::Id(f.id),
        local: f.local,
        device: device_of(&f.local, f.device.as_deref()),
        peer: f.peer,
        notes,
        peer_version: f.req.peer_version.map(|v| v.to_string()),
        tcp: None,
        connect_time: None,
        connect_only: false,
        at: SystemTime::now(),
    }));
}

/// The receiver of the client's datagrams, on a thread of its own.
fn start_receiver(f: &FlowStart, h: &FlowHandle, len: usize) -> Option<JoinHandle<io::Result<()>>> {
    let (s, c, k, st) = (
        f.sock.clone(),
        h.ctl.clone(),
        h.counters.clone(),
        h.stats.clone(),
    );
    std::thread::Builder::new()
        .name(format!("udp2-rx-{}", f.id))
        .spawn(move || recv_loop2(&s, len, &c, &k, &st))
        .ok()
}

/// The sender of what a `-R` or full-duplex client asks for.
fn start_sender(
    f: &FlowStart,
    h: &FlowHandle,
    (len, tx_tag): (usize, Tag2),
    report: &dyn Report2,
) -> Option<Tx> {
    let plan = TxPlan {
        payload: Arc::new(pattern(len)),
        spec: UdpSendSpec {
            len,
            pacer: Some(Pacer::new(if f.req.rate == 0 {
                DEFAULT_UDP_RATE
            } else {
                f.req.rate
            })),
            burst: 1,
            counters_64bit: true,
            end: None,
        },
        bytes: match f.req.end {
            TestEnd::Bytes(n) => Some(n),
            TestEnd::Time(_) => None,
        },
        handshake: false,
        delay: Duration::ZERO,
        seq64: true,
        // -R or full duplex with --isochronous: frames as the client's
        // settings say, each datagram with the client's header.
        isoch: f.req.isochronous.then(|| {
            let spec = f
                .req
                .isoch_settings
                .map_or_else(IsochSpec::default, IsochSpec::from_wire);
            (spec, f.req.udp_header(VERSION_2_2_1, f.local.port()))
        }),
    };
    match Tx::start(tx_tag, f.sock.clone(), plan) {
        Ok(t) => Some(t),
        Err(e) => {
            report.event(Event2::Message(format!(
                "[{:>3}] ERROR: cannot send: {e}",
                f.id
            )));
            h.ctl.stop();
            None
        }
    }
}

/// A flow while it runs: its directions, deadlines, interval rows and
/// histograms.
struct Live<'a> {
    f: &'a FlowStart,
    h: &'a FlowHandle,
    tx: Option<Tx>,
    tag: Tag2,
    hists: RowHists,
    flow: ServerFlow,
    ticks: Ticks,
    /// The receiver's figures at the last interval row.
    mark: RecvMark,
}

impl Live<'_> {
    /// Whether the receiver's rows carry delays.
    fn with_latency(&self) -> bool {
        self.f.enhanced || self.f.req.trip_times
    }

    /// Runs until both directions have ended, printing interval rows.
    fn run(&mut self, rx: Option<JoinHandle<io::Result<()>>>, report: &dyn Report2) {
        let h = self.h;
        loop {
            let now = Instant::now();
            self.hists.drain(&h.stats);
            let step = self.flow.poll(now, h.counters.snapshot().blocks);
            if let (Some(t), true) = (&self.tx, step.stop_sending) {
                t.ctl.stop();
            }
            let tx_done = self.tx.as_mut().is_none_or(Tx::poll);
            let rx_done = rx.as_ref().is_none_or(|j| j.is_finished());
            if tx_done && rx_done {
                break;
            }
            if step.stop_receiving {
                h.ctl.stop();
            }
            if self.ticks.next().is_some_and(|t| now >= t) {
                let span = self.ticks.take();
                if let Some(t) = &mut self.tx {
                    report.event(Event2::Interval(t.interval(span)));
                }
                if rx.is_some() {
                    self.receiver_interval(span, report);
                }
                continue;
            }
            let mut wake = now + Duration::from_millis(20);
            let sending = self.tx.as_ref().is_some_and(|t| !t.ctl.stopped());
            for t in [self.ticks.next(), step.wake.filter(|_| sending)]
                .into_iter()
                .flatten()
            {
                wake = wake.min(t);
            }
            std::thread::sleep(wake.saturating_duration_since(now));
        }
        if let Some(j) = rx {
            let _ = j.join();
        }
    }

    /// The receiver's row of `span` and its histogram lines.
    fn receiver_interval(&mut self, span: (f64, f64), report: &dyn Report2) {
        let (f, h, tag) = (self.f, self.h, self.tag);
        let (m, jitter, lat) = {
            let mut s = h.stats.lock().unwrap_or_else(|p| p.into_inner());
            let lat = s.take_interval();
            // The histograms' samples are the row's datagrams.
            self.hists.take(&mut s);
            (RecvMark::of(&s), s.jitter.seconds, lat)
        };
        let lat = self.with_latency().then(|| latency(&lat));
        let row = trip(
            recv_row(tag, span, self.mark, m, jitter, lat),
            f.req.trip_times,
        );
        report.event(Event2::Interval(row.clone()));
        for l in self.hists.interval_lines(tag, &row) {
            report.event(Event2::Histogram(l));
        }
        if let Some((g, i)) = &f.group {
            g.interval(*i, self.ticks.done - 1, &row, report);
        }
        self.mark = m;
    }

    /// The sender's whole-test row, its "Sent" line and its schedule
    /// errors; the row and the datagrams it sent.
    fn sender_total(&self, len: usize, report: &dyn Report2) -> Option<(Row2, u64)> {
        let f = self.f;
        let tx = self.tx.as_ref()?;
        let (row, sent) = tx.total(len as u64)?;
        report.event(Event2::Final(Row2 {
            addrs: Some((f.local, f.peer)),
            ..row.clone()
        }));
        // iperf 2 tags "Sent" with the transfer id whichever way it went.
        report.event(Event2::Sent {
            tag: Tag2::Id(f.id),
            datagrams: sent,
        });
        if let Some((m, lo, hi, sd)) = tx.isoch.as_ref().and_then(|i| i.0.schedule_errors_ms()) {
            report.event(Event2::Message(isoch_schedule_line(
                Tag2::Id(f.id),
                m,
                lo,
                hi,
                sd,
            )));
        }
        Some((row, sent))
    }

    /// The receiver's last interval and whole-flow rows, with the sums and
    /// warnings that follow them; the whole-flow row and the statistics.
    fn receiver_total(
        &mut self,
        sent: Option<&(Row2, u64)>,
        report: &dyn Report2,
    ) -> (Row2, Udp2Stats) {
        let (f, h, tag) = (self.f, self.h, self.tag);
        self.hists.drain(&h.stats);
        let s = h.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let dur = s.span();
        let with_latency = self.with_latency();
        // The interval the flow ended in, when it is most of one (the sender's
        // clock and ours start a little apart).
        if let (Some(every), Some(_)) = (self.ticks.every, self.ticks.next()) {
            let (from, _) = self.ticks.take();
            if dur.as_secs_f64() - from >= every.as_secs_f64() / 2.0 {
                let lat = with_latency.then(|| latency(&s.interval));
                let span = (from, dur.as_secs_f64());
                let row = recv_row(
                    tag,
                    span,
                    self.mark,
                    RecvMark::of(&s),
                    s.jitter.seconds,
                    lat,
                );
                let row = trip(row, f.req.trip_times);
                report.event(Event2::Interval(row.clone()));
                // 2.2.1 follows an interval row printed at the flow's end with
                // the whole flow's lines (`T8(f)`, `J8(f)`).
                for l in self.hists.total_lines(tag, &row) {
                    report.event(Event2::Histogram(l));
                }
                if let Some((g, i)) = &f.group {
                    g.interval(*i, self.ticks.done - 1, &row, report);
                }
            }
        }
        let mut row = recv_row(
            tag,
            (0.0, dur.as_secs_f64()),
            RecvMark::default(),
            RecvMark::of(&s),
            // 2.2.1's whole-flow rows (and its Server Report) give the mean
            // of the estimate over the flow, not its last value.
            s.jitter_mean(),
            with_latency.then(|| latency(&s.transit)),
        );
        row.addrs = Some((f.local, f.peer));
        let row = trip(row, f.req.trip_times);
        report.event(Event2::Final(row.clone()));
        for l in self.hists.total_lines(tag, &row) {
            report.event(Event2::Histogram(l));
        }
        // 2.2.1 sums a full-duplex test's directions only when it reports no
        // intervals (its server prints no "Sent" for the sum).
        if let (Some((s_row, n)), Mode::FullDuplex, None) = (sent, f.req.mode, f.interval) {
            let part = Duplex {
                id: f.id,
                sent: (s_row, *n),
                received: &row,
            };
            for r in duplex_rows(&[part], f.enhanced).0 {
                report.event(Event2::Final(r));
            }
        }
        if let Some((g, i)) = &f.group {
            g.total(*i, &row, report);
        }
        if self.flow.silent() && !f.multicast && !f.req.no_udp_fin {
            report.event(Event2::Message(format!(
                "[{:>3}] WARNING: no datagram for {} s, the flow ends without its FIN",
                f.id,
                IDLE_END.as_secs()
            )));
        }
        (row, s)
    }
}

/// The Server Report: after the FIN (again for late ones), or once when
/// Ctrl-C cut the flow short, ahead of the FIN the client sends later (it
/// reads it then), as 2.2.1's does. None without a FIN (multicast,
/// `--no-udp-fin`).
fn answer_fin(f: &FlowStart, h: &FlowHandle, s: &Udp2Stats) {
    if f.multicast || f.req.no_udp_fin {
        return;
    }
    let enhanced = f.enhanced || f.req.trip_times;
    if s.fin {
        send_report(&f.sock, s, s.span(), enhanced);
    } else if h.interrupted.load(Ordering::Acquire) {
        let _ = f.sock.send(&server_report(s, s.span(), enhanced).encode());
    }
}

/// Whether a flow's rows get histogram lines: `--histograms` on a test
/// with trip-times (the delays need the sender's clock).
fn hist_wanted(f: &FlowStart) -> bool {
    f.histograms && f.req.trip_times && f.req.mode != Mode::Reverse
}

/// Whether a flow's rows get jitter histogram lines: `--jitter-histograms`
/// on a flow the client sends.
fn jitter_wanted(f: &FlowStart) -> bool {
    f.jitter_bin_us.is_some() && f.req.mode != Mode::Reverse
}

/// Where a `-d`/`-r` flow's direction back goes (the client's address, the
/// header's port) and whether it starts at once; never this server's own
/// port on the same host (which would start a test against itself).
fn back_to(f: &FlowStart, report: &dyn Report2) -> Option<(SocketAddr, bool)> {
    let (port, now) = match f.req.mode {
        Mode::Dual { port } => (port, true),
        Mode::Tradeoff { port } => (port, false),
        _ => return None,
    };
    let ip = rperf3_sys::net::unmap(f.peer).ip();
    if port == f.local.port() && same_host(ip, f.local.ip()) {
        report.event(Event2::Message(format!(
            "WARNING: send back to {ip} port {port} refused: that is this server's own port"
        )));
        return None;
    }
    Some((SocketAddr::new(ip, port), now))
}

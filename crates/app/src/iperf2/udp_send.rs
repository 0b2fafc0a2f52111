//! The two halves of an iperf 2 UDP direction, for whichever end runs them:
//! the sender (paced datagrams through the shared engine loop, then the FIN
//! and, for a client's forward test, the wait for the server report) and the
//! receiver (the engine's receive loop with iperf 2's statistics), each on
//! its own thread with counters a reporting loop samples.

use std::io;
use std::net::UdpSocket;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use rperf3_engine::budget::{Budget, BudgetUnit};
use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::udp::{send_stamped, UdpSendSpec};
use rperf3_proto2::{
    DatagramHeader, FinExchange, IsochSpec, ServerReport, Udp2Stats, UdpTestHeader, FIN_RETRY_WAIT,
};
use rperf3_report::iperf2::model::{Hist2, HistBins2, Isoch2, Row2, RowKind2, Tag2, UdpSend2};

use super::udp_common::{latency, recv_row, trip, RecvMark};
use super::udp_isoch::{send_frames, since, IsochStats};
use super::udp_jitter::RowHists;
use super::udp_wire::{recv_loop2, wall_now, Stamp2, RECV_POLL};

/// What a sender's thread hands back.
#[derive(Debug)]
pub(crate) struct SendEnd {
    /// Sending time (first datagram to the FIN).
    pub(crate) elapsed: Duration,
    /// Data datagrams sent.
    pub(crate) data: u64,
    /// The report, if one came.
    pub(crate) report: Option<ServerReport>,
    /// FINs sent.
    pub(crate) fins: u32,
    /// Whether the first FIN left (iperf 2 counts it as a write; one the
    /// kernel refused, as a datagram over the path's limit, is not).
    pub(crate) fin_sent: bool,
    /// Why sending stopped early, if it did.
    pub(crate) error: Option<io::Error>,
}

/// A sending direction: its thread, what it counts, how to stop it.
pub(crate) struct Tx {
    pub(crate) tag: Tag2,
    pub(crate) counters: Arc<StreamCounters>,
    pub(crate) ctl: Arc<RunControl>,
    pub(crate) handle: Option<JoinHandle<SendEnd>>,
    pub(crate) end: Option<SendEnd>,
    /// (bytes, datagrams) at the last interval row.
    pub(crate) last: (u64, u64),
    /// `--isochronous`: the frames, and their tally at the last interval row.
    pub(crate) isoch: Option<(Arc<IsochStats>, Isoch2)>,
}

/// How a sender runs.
pub(crate) struct TxPlan {
    /// The bytes of every datagram after its header.
    pub(crate) payload: Arc<Vec<u8>>,
    pub(crate) spec: UdpSendSpec,
    /// `-n`: bytes to send.
    pub(crate) bytes: Option<u64>,
    /// Wait for the server report after the FIN (a client's forward test).
    pub(crate) handshake: bool,
    /// Wait this long before the first datagram.
    pub(crate) delay: Duration,
    /// 64-bit sequence numbers (all but the small trip-times header).
    pub(crate) seq64: bool,
    /// `--isochronous`: frames instead of paced datagrams, with the test
    /// header whose frame block each datagram rewrites.
    pub(crate) isoch: Option<(IsochSpec, UdpTestHeader)>,
}

impl Tx {
    /// Starts sending on `sock` on a thread of its own.
    pub(crate) fn start(tag: Tag2, sock: Arc<UdpSocket>, plan: TxPlan) -> io::Result<Self> {
        let budget = plan.bytes.map(|b| Budget::new(BudgetUnit::Bytes, b));
        let ctl = Arc::new(RunControl::new(budget));
        let counters = Arc::new(StreamCounters::default());
        let (c2, k2) = (ctl.clone(), counters.clone());
        let isoch = plan
            .isoch
            .is_some()
            .then(|| (Arc::new(IsochStats::default()), Isoch2::default()));
        let i2 = isoch.as_ref().map(|i| i.0.clone());
        let handle = std::thread::Builder::new()
            .name("udp2-tx".into())
            .spawn(move || send_flow(&sock, plan, &c2, &k2, i2.as_deref()))?;
        Ok(Self {
            tag,
            counters,
            ctl,
            handle: Some(handle),
            end: None,
            last: (0, 0),
            isoch,
        })
    }

    /// Collects the thread's result once it is done; whether it is.
    pub(crate) fn poll(&mut self) -> bool {
        if self.handle.as_ref().is_some_and(|h| h.is_finished()) {
            self.end = self.handle.take().and_then(|h| h.join().ok());
        }
        self.handle.is_none()
    }

    /// The row of the span since the last interval row.
    pub(crate) fn interval(&mut self, span: (f64, f64)) -> Row2 {
        let s = self.counters.snapshot();
        let (b, w) = (s.bytes - self.last.0, s.blocks - self.last.1);
        self.last = (s.bytes, s.blocks);
        let mut row = send_row(self.tag, span, b, w);
        if let Some((stats, last)) = &mut self.isoch {
            let now = stats.tally();
            set_isoch(&mut row, since(now, *last));
            *last = now;
        }
        row
    }

    /// The whole test's row (the first FIN counts as a write, as iperf 2
    /// counts it) and the "Sent" count (iperf 2 prints the FIN's number plus
    /// one), once the sender is done.
    pub(crate) fn total(&self, len: u64) -> Option<(Row2, u64)> {
        let e = self.end.as_ref()?;
        let fin = u64::from(e.fin_sent);
        let writes = e.data + fin;
        let bytes = self.counters.snapshot().bytes + fin * len;
        let mut row = send_row(self.tag, (0.0, e.elapsed.as_secs_f64()), bytes, writes);
        if let Some((stats, _)) = &self.isoch {
            set_isoch(&mut row, stats.tally());
        }
        Some((row, writes + fin))
    }
}

/// Sends one direction's data and its FIN, then (with `handshake`) waits
/// for the report.
fn send_flow(
    sock: &UdpSocket,
    plan: TxPlan,
    ctl: &RunControl,
    counters: &StreamCounters,
    isoch: Option<&IsochStats>,
) -> SendEnd {
    ctl.nap(plan.delay);
    let t0 = Instant::now();
    let error = match (&plan.isoch, isoch) {
        (Some((spec, header)), Some(stats)) => {
            let p = &plan.payload[..plan.spec.len.min(plan.payload.len())];
            send_frames(sock, p, *header, *spec, ctl, counters, stats).err()
        }
        _ => {
            let mut stamp = Stamp2::new(plan.seq64);
            send_stamped(sock, &plan.payload, plan.spec, ctl, counters, &mut stamp).err()
        }
    };
    let data = counters.snapshot().blocks;
    let elapsed = t0.elapsed();
    let d = &plan.payload[..plan.spec.len.min(plan.payload.len())];
    let (report, fins, fin_sent) = finish(sock, d, data, plan.handshake, plan.seq64);
    SendEnd {
        elapsed,
        data,
        report,
        fins,
        fin_sent,
        error,
    }
}

/// The end of a direction: FINs as [`FinExchange`] numbers them, each
/// followed by [`FIN_RETRY_WAIT`] for the report when one is awaited
/// (`handshake`). Returns the report, how many FINs were sent and whether the
/// first left.
fn finish(
    sock: &UdpSocket,
    datagram: &[u8],
    data: u64,
    handshake: bool,
    seq64: bool,
) -> (Option<ServerReport>, u32, bool) {
    let mut d = datagram.to_vec();
    let mut fins = FinExchange::new(data, handshake);
    let sent = wall_now();
    let mut buf = [0u8; 2048];
    if handshake {
        let _ = sock.set_read_timeout(Some(FIN_RETRY_WAIT));
    }
    let mut first = false;
    while let Some(seq) = fins.next_fin() {
        DatagramHeader { seq, sent }.encode(&mut d, seq64);
        let ok = sock.send(&d).is_ok();
        first |= fins.sends() == 1 && ok;
        if !handshake {
            break;
        }
        let until = Instant::now() + FIN_RETRY_WAIT;
        while Instant::now() < until {
            match sock.recv(&mut buf) {
                Ok(k) => {
                    if let Some(r) = fins.on_reply(&buf[..k]) {
                        return (Some(r), fins.sends(), first);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A refused port (no server) or the timeout: send the next FIN.
                Err(_) => break,
            }
        }
    }
    (None, fins.sends(), first)
}

/// An `--isochronous` sender's row: its frames, and no timeout count (2.2.1
/// shows `Write/Err` there).
fn set_isoch(row: &mut Row2, frames: Isoch2) {
    if let RowKind2::UdpSend(u) = &mut row.kind {
        u.isoch = Some(frames);
    }
}

/// A sender's row.
pub(crate) fn send_row(tag: Tag2, span: (f64, f64), bytes: u64, writes: u64) -> Row2 {
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
            isoch: None,
            pps_datagrams: None,
        }),
        at: SystemTime::now(),
    }
}

/// A receiving direction: its thread and statistics.
pub(crate) struct Rx {
    pub(crate) tag: Tag2,
    pub(crate) stats: Arc<Mutex<Udp2Stats>>,
    pub(crate) ctl: Arc<RunControl>,
    pub(crate) handle: Option<JoinHandle<io::Result<()>>>,
    pub(crate) mark: RecvMark,
    pub(crate) latency: bool,
    /// The sender stamps bursts' trip times: rows take that layout.
    pub(crate) trip_times: bool,
    /// Datagrams at the last look, and when that count last changed.
    seen: (u64, Instant),
    /// `--histograms` with trip times: the delay histograms and the tag
    /// their lines carry (2.2.1 tags a `[ *1]` row's lines `[  1]`).
    hists: Option<(RowHists, Tag2)>,
}

impl Rx {
    /// Starts receiving on `sock` (up to `len`-byte datagrams). With `hello`,
    /// first sends it (a reverse test's request) until data arrives, at most
    /// 100 times, 10 ms apart.
    pub(crate) fn start(
        tag: Tag2,
        sock: Arc<UdpSocket>,
        len: usize,
        hello: Option<Vec<u8>>,
        (latency, trip_times): (bool, bool),
        hist_bins: Option<HistBins2>,
    ) -> io::Result<Self> {
        let mut st = Udp2Stats::new(true);
        st.keep_samples = hist_bins.is_some();
        let stats = Arc::new(Mutex::new(st));
        let counters = Arc::new(StreamCounters::default());
        let ctl = Arc::new(RunControl::new(None));
        let (s2, k2, c2) = (stats.clone(), counters.clone(), ctl.clone());
        let handle = std::thread::Builder::new()
            .name("udp2-rx".into())
            .spawn(move || {
                sock.set_read_timeout(Some(RECV_POLL))?;
                if let Some(mut d) = hello {
                    let sent = wall_now();
                    DatagramHeader { seq: 1, sent }.encode(&mut d, true);
                    for _ in 0..100 {
                        sock.send(&d)?;
                        if c2.stopped()
                            || rperf3_sys::poll::readable(&*sock, Duration::from_millis(10))?
                        {
                            break;
                        }
                    }
                }
                recv_loop2(&sock, len, &c2, &k2, &s2)
            })?;
        Ok(Self {
            tag,
            stats,
            ctl,
            handle: Some(handle),
            mark: RecvMark::default(),
            latency,
            trip_times,
            seen: (0, Instant::now()),
            hists: hist_bins.map(|b| {
                let id = match tag {
                    Tag2::Id(n) | Tag2::ReverseId(n) => n,
                    _ => 1,
                };
                (RowHists::new(Some(b), None), Tag2::Id(id))
            }),
        })
    }

    /// Whether the receiver is done (its FIN came, or it was stopped).
    pub(crate) fn poll(&mut self) -> bool {
        if self.handle.as_ref().is_some_and(|h| h.is_finished()) {
            if let Some(h) = self.handle.take() {
                let _ = h.join();
            }
        }
        self.handle.is_none()
    }

    /// How long no datagram has arrived, at `now`.
    pub(crate) fn idle(&mut self, now: Instant) -> Duration {
        let n = self
            .stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .datagrams;
        if n != self.seen.0 {
            self.seen = (n, now);
        }
        now.duration_since(self.seen.1)
    }

    /// The row of the span since the last interval row, and its histogram
    /// lines.
    pub(crate) fn interval(&mut self, span: (f64, f64)) -> (Row2, Vec<Hist2>) {
        let (m, jitter, lat) = {
            let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((h, _)) = &mut self.hists {
                h.take(&mut s);
            }
            let lat = s.take_interval();
            (RecvMark::of(&s), s.jitter.seconds, lat)
        };
        let row = recv_row(
            self.tag,
            span,
            self.mark,
            m,
            jitter,
            self.latency.then(|| latency(&lat)),
        );
        self.mark = m;
        let row = trip(row, self.trip_times);
        let lines = match &mut self.hists {
            Some((h, tag)) => h.interval_lines(*tag, &row),
            None => Vec::new(),
        };
        (row, lines)
    }

    /// The histogram lines after the whole test's row.
    pub(crate) fn total_lines(&mut self, row: &Row2) -> Vec<Hist2> {
        match &mut self.hists {
            Some((h, tag)) => {
                h.drain(&self.stats);
                h.total_lines(*tag, row)
            }
            None => Vec::new(),
        }
    }

    /// The whole test's row, from the first datagram to the last.
    pub(crate) fn total(&self) -> Row2 {
        let s = self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let row = recv_row(
            self.tag,
            (0.0, s.span().as_secs_f64()),
            RecvMark::default(),
            RecvMark::of(&s),
            // 2.2.1's whole-flow rows (and its Server Report) give the mean
            // of the estimate over the flow, not its last value.
            s.jitter_mean(),
            self.latency.then(|| latency(&s.transit)),
        );
        trip(row, self.trip_times)
    }
}

//! The interval and final rows of a set of TCP flows that report together (a
//! client's `-P` streams, both directions of `--full-duplex` or `-d`, a server's
//! streams from one `-P` client), on one thread per set.
//!
//! Workers only count ([`FlowStats`]); this thread samples them every `-i`,
//! emits a row per live flow and a `[SUM]` row, a flow's final row when its
//! worker says it ended, and the sum's final row once the set is closed and
//! every flow has ended. Flows can join while the set runs (a server's streams
//! arrive one by one, a `-d` connection back comes later). Rows carry raw
//! figures; the formatters compute rates.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use rperf3_report::iperf2::model::{
    Event2, Hist2, Row2, RowKind2, Tag2, TcpLatency2, TcpRecv2, TcpSend2,
};
use rperf3_report::iperf2::Report2;
use rperf3_sys::tcp_info::tcp_info;

use super::flow_stats::{FlowSample, FlowStats};
use super::tcp_trip::{hist, Delays};
use super::tcp_wtimer;
use crate::measurement::ticker::{Due, Ticker};

/// Which way a flow's bytes go, seen from this side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    /// This side writes.
    Send,
    /// This side reads.
    Recv,
}

/// One flow of a set.
#[derive(Debug, Clone)]
pub(crate) struct FlowSpec {
    /// How its rows are tagged.
    pub(crate) tag: Tag2,
    /// Sender or receiver.
    pub(crate) dir: Dir,
    /// What its worker counts.
    pub(crate) stats: Arc<FlowStats>,
    /// Its socket, for a sender's TCP_INFO figures (retries, cwnd, RTT).
    pub(crate) sock: Option<Arc<TcpStream>>,
    /// Local and peer address (CSV rows name them).
    pub(crate) addrs: Option<(SocketAddr, SocketAddr)>,
}

impl FlowSpec {
    /// A flow on `s`; a sender keeps the socket for its TCP_INFO figures.
    pub(crate) fn of(
        tag: Tag2,
        dir: Dir,
        stats: &Arc<FlowStats>,
        s: &Arc<TcpStream>,
        addrs: Option<(SocketAddr, SocketAddr)>,
    ) -> Self {
        Self {
            tag,
            dir,
            stats: stats.clone(),
            sock: (dir == Dir::Send).then(|| s.clone()),
            addrs,
        }
    }
}

/// Local and peer address of a connection, as iperf 2 shows them.
pub(crate) fn addrs_of(s: &TcpStream) -> Option<(SocketAddr, SocketAddr)> {
    Some((
        rperf3_sys::net::unmap(s.local_addr().ok()?),
        rperf3_sys::net::unmap(s.peer_addr().ok()?),
    ))
}

enum Msg {
    Add(u64, Box<FlowSpec>),
    Done(u64, Instant),
    Close,
    /// The owner is gone: flows not yet ended end now.
    Abort,
}

/// A running set of flows; dropping it without [`Intervals::finish`] closes it
/// and waits for its thread.
#[derive(Debug)]
pub(crate) struct Intervals {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<()>>,
    /// Flows added and not yet ended: a flow's count drops when its worker
    /// says it ended, before its final row is out.
    open: Arc<AtomicUsize>,
}

impl Intervals {
    /// Starts the reporting thread; times count from `start`. With `sum`, a
    /// set of two or more flows also reports sum rows of that kind.
    pub(crate) fn start(
        report: Arc<dyn Report2>,
        start: Instant,
        every: Option<Duration>,
        sum: Option<SumKind>,
    ) -> Self {
        let (tx, rx) = mpsc::channel();
        let mut set = Set {
            report,
            start,
            sum,
            flows: Vec::new(),
            every,
            ticker: Ticker::new(start, every, Duration::ZERO),
            last_tick: start,
            partials: None,
        };
        let thread = std::thread::Builder::new()
            .name("iperf2-report".into())
            .spawn(move || set.run(&rx))
            .ok();
        Self {
            tx,
            thread,
            open: Arc::default(),
        }
    }

    /// Adds a flow under `key` (the caller's name for it in [`Intervals::done`]).
    pub(crate) fn add(&self, key: u64, spec: FlowSpec) {
        self.open.fetch_add(1, Ordering::AcqRel);
        let _ = self.tx.send(Msg::Add(key, Box::new(spec)));
    }

    /// A handle a worker uses to say its flow ended.
    pub(crate) fn ender(&self) -> Ender {
        Ender {
            tx: self.tx.clone(),
            open: self.open.clone(),
        }
    }

    /// The count of this set's flows still moving data (a server's signal
    /// handling asks whether any test runs).
    pub(crate) fn open_flows(&self) -> Arc<AtomicUsize> {
        self.open.clone()
    }

    /// No flow joins any more; the set ends when its flows have.
    pub(crate) fn close(&self) {
        let _ = self.tx.send(Msg::Close);
    }

    /// Closes the set and waits until every flow has ended and every row is
    /// out.
    pub(crate) fn finish(mut self) {
        self.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a worker holds to mark its flow ended.
#[derive(Debug, Clone)]
pub(crate) struct Ender {
    tx: Sender<Msg>,
    open: Arc<AtomicUsize>,
}

impl Ender {
    /// The flow `key` ended now.
    pub(crate) fn done(&self, key: u64) {
        let _ = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        let _ = self.tx.send(Msg::Done(key, Instant::now()));
    }
}

impl Drop for Intervals {
    fn drop(&mut self) {
        // Whatever has not ended by now (a worker that never started, a
        // driver that bailed out) ends here: the thread must not wait on it.
        let _ = self.tx.send(Msg::Abort);
        self.open.store(0, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// TCP_INFO figures of a sender at one instant.
#[derive(Debug, Clone, Copy, Default)]
struct Tcp {
    retrans: u64,
    send: TcpSend2,
}

fn tcp_now(sock: Option<&Arc<TcpStream>>) -> Tcp {
    let Some(s) = sock else {
        return Tcp::default();
    };
    let Some(i) = tcp_info(&**s) else {
        return Tcp::default();
    };
    let mss = u64::from(rperf3_sys::net::tcp_mss(s).max(1));
    Tcp {
        retrans: u64::from(i.total_retrans),
        send: TcpSend2 {
            inflight_bytes: u64::from(i.unacked) * mss,
            inflight_pkts: i.unacked,
            cwnd_bytes: i.snd_cwnd_bytes,
            cwnd_pkts: (i.snd_cwnd_bytes / mss) as u32,
            rtt_us: i.rtt,
            rttvar_us: i.rttvar,
            ..TcpSend2::default()
        },
    }
}

struct Flow {
    key: u64,
    spec: FlowSpec,
    last: FlowSample,
    last_retrans: u64,
    first_retrans: u64,
    end: Option<Instant>,
    total: FlowSample,
}

struct Set {
    report: Arc<dyn Report2>,
    start: Instant,
    sum: Option<SumKind>,
    flows: Vec<Flow>,
    every: Option<Duration>,
    ticker: Ticker,
    last_tick: Instant,
    /// The partial rows of flows that ended since the last tick: the sum of
    /// their interval counts them.
    partials: Option<Row2>,
}

impl Set {
    fn run(&mut self, rx: &Receiver<Msg>) {
        let mut closed = false;
        loop {
            let wait = self.ticker.next().map_or(Duration::from_secs(3600), |t| {
                t.saturating_duration_since(Instant::now())
            });
            let msg = rx.recv_timeout(wait);
            // A tick that fell due before the message is reported first, so a
            // flow ending just after a tick still shows that last interval.
            let due = self.ticker.next();
            if let (Due::Interval, Some(t)) = (self.ticker.poll(Instant::now()), due) {
                self.intervals(t);
            }
            match msg {
                Ok(Msg::Add(key, spec)) => self.add(key, *spec),
                Ok(Msg::Done(key, at)) => self.done(key, at),
                Ok(Msg::Close) => closed = true,
                Ok(Msg::Abort) | Err(RecvTimeoutError::Disconnected) => {
                    let now = Instant::now();
                    let open: Vec<u64> = self
                        .flows
                        .iter()
                        .filter(|f| f.end.is_none())
                        .map(|f| f.key)
                        .collect();
                    for k in open {
                        self.done(k, now);
                    }
                    closed = true;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if closed && self.flows.iter().all(|f| f.end.is_some()) {
                self.final_sum();
                return;
            }
        }
    }

    fn add(&mut self, key: u64, spec: FlowSpec) {
        let r = tcp_now(spec.sock.as_ref()).retrans;
        self.flows.push(Flow {
            key,
            spec,
            last: FlowSample::default(),
            last_retrans: r,
            first_retrans: r,
            end: None,
            total: FlowSample::default(),
        });
    }

    fn secs(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }

    /// Rows for the interval that ended at the tick `t`.
    fn intervals(&mut self, t: Instant) {
        let begin = self.secs(self.last_tick);
        let end = self.secs(t);
        self.last_tick = t;
        let mut rows = Vec::new();
        let mut hists = Vec::new();
        for f in self.flows.iter_mut().filter(|f| f.end.is_none()) {
            let (row, h) = interval_row(f, begin, end);
            hists.extend(h);
            rows.push(row);
        }
        let mut sum = rows.iter().cloned().reduce(|a, r| add_rows(a, &r));
        if let Some(p) = self.partials.take() {
            sum = Some(sum.map_or(p.clone(), |s| add_rows(s, &p)));
        }
        for r in rows {
            self.report.event(Event2::Interval(r));
        }
        for h in hists {
            self.report.event(Event2::Histogram(h));
        }
        self.sum_interval(sum);
    }

    /// The sum row of an interval, if this set has sums.
    fn sum_interval(&self, sum: Option<Row2>) {
        if let (Some(tag), Some(mut s)) = (self.sum_tag(), sum) {
            s.tag = tag;
            s.addrs = None;
            if matches!(tag, Tag2::FullDuplex(_)) {
                s.kind = plain(s.kind);
            }
            self.report.event(Event2::Interval(s));
        }
    }

    fn done(&mut self, key: u64, at: Instant) {
        let begin = self.secs(self.last_tick);
        let end = self.secs(at);
        // iperf 2 prints a flow's last, partial interval when it ended more
        // than a quarter of -i after the last tick (PARTIALPERCENT) with
        // bytes in it, as the receiver of a stream that ended just before a
        // tick does.
        let partial = self
            .every
            .is_some_and(|i| at.saturating_duration_since(self.last_tick) > i / 4);
        let Some(f) = self
            .flows
            .iter_mut()
            .find(|f| f.key == key && f.end.is_none())
        else {
            return;
        };
        if partial {
            let (row, hists) = interval_row(f, begin, end);
            if row.bytes > 0 {
                self.report.event(Event2::Interval(row.clone()));
                for h in hists {
                    self.report.event(Event2::Histogram(h));
                }
                self.partials = Some(match self.partials.take() {
                    None => row,
                    Some(p) => add_rows(p, &row),
                });
            }
        }
        f.end = Some(at);
        let total = f.spec.stats.sample();
        f.total = total;
        let mut tcp = tcp_now(f.spec.sock.as_ref());
        let retries = tcp.retrans.saturating_sub(f.first_retrans);
        let delays = f.spec.stats.trip.as_ref().map(|t| t.total());
        let lat = delays.as_ref().map(Delays::figures);
        let writes = f.spec.stats.wtimer.as_ref().map(|w| (w.total(), w.bins));
        tcp.send.write_times = writes.as_ref().map(|w| TcpLatency2::of(&w.0));
        let r = row(&f.spec, 0.0, end, (&total, lat), retries, tcp.send);
        let h = hist(
            f.spec.stats.trip.as_ref(),
            f.spec.tag,
            &r,
            delays.as_ref(),
            "F8(f)",
        )
        .or_else(|| writes.map(|(w, b)| tcp_wtimer::hist(&w, b, f.spec.tag, &r, "W8(f)")));
        // The socket is closed by its worker once nothing else holds it.
        f.spec.sock = None;
        self.report.event(Event2::Final(r));
        if let Some(h) = h {
            self.report.event(Event2::Histogram(h));
        }
    }

    /// The tag of this set's sum rows, if it has them.
    fn sum_tag(&self) -> Option<Tag2> {
        let n = self.flows.len() as u32;
        match self.sum? {
            _ if n < 2 => None,
            SumKind::Sum => Some(Tag2::Sum(n)),
            SumKind::FullDuplex(id) => Some(Tag2::FullDuplex(id)),
        }
    }

    fn final_sum(&mut self) {
        // Flows that all ended between two ticks: their sum's partial row.
        let partials = self.partials.take();
        self.sum_interval(partials);
        let Some(tag) = self.sum_tag() else {
            return;
        };
        let end = self
            .flows
            .iter()
            .filter_map(|f| f.end)
            .max()
            .map_or(0.0, |t| self.secs(t));
        let mut acc: Option<Row2> = None;
        for f in &self.flows {
            let r = row(&f.spec, 0.0, end, (&f.total, None), 0, TcpSend2::default());
            acc = Some(match acc {
                None => r,
                Some(a) => add_rows(a, &r),
            });
        }
        if let Some(mut s) = acc {
            s.tag = tag;
            s.addrs = None;
            // A sum across directions has no one kind: iperf 2 prints it
            // with the plain columns.
            if matches!(tag, Tag2::FullDuplex(_)) {
                s.kind = plain(s.kind);
            }
            self.report.event(Event2::Final(s));
        }
    }
}

/// A live flow's row (and histogram lines) for the interval `begin..end`,
/// from its counts since the last one.
fn interval_row(f: &mut Flow, begin: f64, end: f64) -> (Row2, Vec<Hist2>) {
    let s = f.spec.stats.sample();
    let d = s.since(&f.last);
    f.last = s;
    let mut tcp = tcp_now(f.spec.sock.as_ref());
    let retries = tcp.retrans.saturating_sub(f.last_retrans);
    f.last_retrans = tcp.retrans;
    let delays = f.spec.stats.trip.as_ref().map(|t| t.take_interval());
    let lat = delays.as_ref().map(Delays::figures);
    let writes = f.spec.stats.wtimer.as_ref().map(|w| w.take_interval());
    tcp.send.write_times = writes.as_ref().map(TcpLatency2::of);
    let row = row(&f.spec, begin, end, (&d, lat), retries, tcp.send);
    let mut hists = Vec::new();
    if let Some(h) = hist(
        f.spec.stats.trip.as_ref(),
        f.spec.tag,
        &row,
        delays.as_ref(),
        "F8",
    ) {
        hists.push(h);
    }
    if let (Some(w), Some(t)) = (&writes, &f.spec.stats.wtimer) {
        hists.push(tcp_wtimer::hist(w, t.bins, f.spec.tag, &row, "W8"));
    }
    (row, hists)
}

/// A row for `d` (an interval's or the whole stream's counts) and, for a
/// `--trip-times` receiver, the same span's delays.
fn row(
    spec: &FlowSpec,
    start: f64,
    end: f64,
    (d, latency): (&FlowSample, Option<TcpLatency2>),
    retries: u64,
    tcp: TcpSend2,
) -> Row2 {
    let kind = match spec.dir {
        Dir::Send => RowKind2::TcpSend(TcpSend2 {
            writes: d.calls,
            write_errors: d.errors,
            retries,
            isoch: spec.stats.isoch.is_some().then_some(d.isoch),
            ..tcp
        }),
        Dir::Recv => RowKind2::TcpRecv(TcpRecv2 {
            reads: d.calls,
            bins: d.bins,
            latency,
            frames: spec.stats.frames,
        }),
    };
    Row2 {
        tag: spec.tag,
        addrs: spec.addrs,
        start,
        end,
        bytes: d.bytes,
        kind,
        at: SystemTime::now(),
    }
}

/// How a set sums its flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SumKind {
    /// `[SUM]` over streams (`-P`, `-d`).
    Sum,
    /// `[FD1]`: both directions of full-duplex stream `n` (`-e`).
    FullDuplex(u32),
}

/// A row kind without the per-direction extras.
fn plain(k: RowKind2) -> RowKind2 {
    match k {
        RowKind2::TcpSend(_) => RowKind2::TcpSend(TcpSend2::default()),
        RowKind2::TcpRecv(_) => RowKind2::TcpRecv(TcpRecv2::default()),
        other => other,
    }
}

/// A sum row: bytes and counts add up; the kind (and the momentary TCP
/// figures) are the first flow's.
fn add_rows(mut a: Row2, b: &Row2) -> Row2 {
    a.bytes += b.bytes;
    a.end = a.end.max(b.end);
    match (&mut a.kind, &b.kind) {
        (RowKind2::TcpSend(x), RowKind2::TcpSend(y)) => {
            x.writes += y.writes;
            x.write_errors += y.write_errors;
            x.retries += y.retries;
        }
        (RowKind2::TcpRecv(x), RowKind2::TcpRecv(y)) => {
            x.reads += y.reads;
            for (p, q) in x.bins.iter_mut().zip(y.bins) {
                *p += q;
            }
        }
        _ => {}
    }
    a
}

/// Keys the caller uses for flows: stream index and direction.
pub(crate) fn key(stream: u32, dir: Dir) -> u64 {
    u64::from(stream) << 1 | u64::from(dir == Dir::Recv)
}

#[cfg(test)]
#[path = "interval_tests.rs"]
mod tests;

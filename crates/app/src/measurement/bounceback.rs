//! `--bounceback` on the data streams: each TCP stream a loop of transactions
//! instead of bulk data. The client writes a request, the server reads it whole,
//! holds, writes the reply; the client times the transaction from its write to
//! the reply's last byte on the latency core's monotonic clock.
//!
//! The loops are lean because the figure is the loop: TCP_NODELAY, one write per
//! frame, blocking reads with no poll before them, the buffers made once. Round
//! trips go to one histogram per test ([`BbStats`]) under a lock no other thread
//! holds for more than a swap at an interval tick.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_latency::{oneway_wire, Clock, Histogram, OneWay};
use rperf3_proto::bounceback::{answer, answers, put_seq, BbLoad, BouncebackOffer};
use rperf3_report::input::BouncebackFigures;

use crate::rpm::load::LoadSet;

/// What the streams of a bounceback test do, from the agreed offer.
#[derive(Debug, Clone)]
pub(crate) struct BbSpec {
    /// Request size.
    pub(crate) request: usize,
    /// Reply size.
    pub(crate) reply: usize,
    /// The server's hold before each reply.
    pub(crate) hold: Duration,
    /// The client's period between transaction starts (zero: back to back).
    pub(crate) period: Duration,
    /// Where the streams of this side count.
    pub(crate) stats: Arc<BbStats>,
}

impl BbSpec {
    /// The spec of `offer`.
    pub(crate) fn of(offer: &BouncebackOffer) -> Self {
        Self {
            request: offer.request as usize,
            reply: offer.reply as usize,
            hold: Duration::from_micros(offer.hold_us),
            period: Duration::from_micros(offer.period_us),
            stats: Arc::default(),
        }
    }
}

/// The transactions of one side of a test: the client's round trips since the
/// last interval tick, and the server's count of requests it answered.
#[derive(Debug, Default)]
pub(crate) struct BbStats {
    interval: Mutex<Histogram>,
    answered: AtomicU64,
}

impl BbStats {
    fn record(&self, ns: u64) {
        self.interval
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(ns);
    }

    /// The round trips since the last call.
    pub(crate) fn take_interval(&self) -> Histogram {
        let mut g = self.interval.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *g)
    }

    /// Requests answered so far (server).
    pub(crate) fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

/// What a run keeps of its transactions between interval ticks.
pub(crate) struct BbTally {
    stats: Arc<BbStats>,
    /// The client: it times round trips (the server counts answers).
    client: bool,
    total: Histogram,
    answered_taken: u64,
    answered_total: u64,
    /// Where the counted span (after `-O`) began, and the last tick.
    start: Instant,
    last: Instant,
    load: Option<LoadSet>,
    /// The load's bytes (up, down) over the counted span.
    load_total: (u64, u64),
}

impl std::fmt::Debug for BbTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BbTally")
            .field("client", &self.client)
            .field("count", &self.total.count())
            .field("answered", &self.answered_total)
            .field("load", &self.load.as_ref().map(LoadSet::len))
            .finish()
    }
}

fn per_sec(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

impl BbTally {
    /// Counting from `now` for the streams of `stats`.
    pub(crate) fn new(stats: Arc<BbStats>, client: bool, now: Instant) -> Self {
        Self {
            stats,
            client,
            total: Histogram::new(),
            answered_taken: 0,
            answered_total: 0,
            start: now,
            last: now,
            load: None,
            load_total: (0, 0),
        }
    }

    /// The load connections beside the streams, from now on.
    pub(crate) fn attach_load(&mut self, load: LoadSet) {
        self.load = Some(load);
    }

    /// The interval ending at `now`; `counted` when it is past `-O` (the
    /// totals start after the omitted intervals, as iperf3's do).
    pub(crate) fn interval(&mut self, now: Instant, counted: bool) -> BouncebackFigures {
        let span = now.saturating_duration_since(self.last);
        self.last = now;
        let h = self.stats.take_interval();
        let answered = self.stats.answered();
        let n_answered = answered - self.answered_taken;
        self.answered_taken = answered;
        let load = self
            .load
            .as_mut()
            .map(|l| (l.take_acked(), l.take_received()));
        if !counted {
            self.start = now;
        } else {
            self.total.merge(&h);
            self.answered_total += n_answered;
            if let Some((up, down)) = load {
                self.load_total.0 += up;
                self.load_total.1 += down;
            }
        }
        let bps = |b: u64| per_sec(b * 8, span);
        let count = if self.client { h.count() } else { n_answered };
        BouncebackFigures {
            count,
            tps: per_sec(count, span),
            rtt: self.client.then(|| h.summary()),
            load_bps: load.map(|(up, down)| (bps(up), bps(down))),
        }
    }

    /// The whole test, up to the last interval.
    pub(crate) fn total(&self) -> BouncebackFigures {
        let span = self.last.saturating_duration_since(self.start);
        let count = if self.client {
            self.total.count()
        } else {
            self.answered_total
        };
        let (up, down) = self.load_total;
        BouncebackFigures {
            count,
            tps: per_sec(count, span),
            rtt: self.client.then(|| self.total.summary()),
            load_bps: self
                .load
                .as_ref()
                .map(|_| (per_sec(up * 8, span), per_sec(down * 8, span))),
        }
    }

    /// The client's round trips of the whole test, for the server's metrics
    /// (the latency core's encoding, in hex); `None` on the server.
    pub(crate) fn wire_total(&self) -> Option<String> {
        self.client.then(|| {
            let o = OneWay::from_raw(self.total.clone(), 0, 0);
            hex(&oneway_wire::encode(&o))
        })
    }

    /// Stops the load, if any (the test is over).
    pub(crate) fn stop_load(&mut self) {
        if let Some(l) = &mut self.load {
            l.stop();
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Round trips a client sent with its results ([`BbTally::wire_total`]);
/// `None` when the text is not that.
pub(crate) fn from_wire(text: &str) -> Option<Histogram> {
    let b = text.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = b
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect();
    oneway_wire::decode(&bytes?).map(|o| o.histogram().clone())
}

/// `--bounceback-load`: the load connections beside the streams, one each way
/// asked for (one TCP connection fills a path's queue; more would only share
/// it), carrying bulk data as the responsiveness test's do.
pub(crate) fn open_load(
    server: std::net::SocketAddr,
    cookie: [u8; 37],
    load: BbLoad,
) -> io::Result<LoadSet> {
    use crate::rpm::link::{connect_marked, MARKER_DOWN, MARKER_UP};
    let mut set = LoadSet::new();
    if matches!(load, BbLoad::Up | BbLoad::Bidir) {
        set.add_sender(connect_marked(server, cookie, MARKER_UP)?)?;
    }
    if matches!(load, BbLoad::Down | BbLoad::Bidir) {
        set.add_receiver(connect_marked(server, cookie, MARKER_DOWN)?)?;
    }
    Ok(set)
}

/// Waits until `t` unless the run stops first (a nap may wake early).
fn wait_until(ctl: &RunControl, t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t || ctl.stopped() {
            return;
        }
        ctl.nap(t - now);
    }
}

/// An error after the run was told to stop is the end of the test (the sockets
/// are shut under a blocked read), not a failure.
fn ended(ctl: &RunControl, e: io::Error) -> io::Result<()> {
    if ctl.stopped() {
        Ok(())
    } else {
        Err(e)
    }
}

/// The client's loop: a transaction at a time until stopped or the `-n`/`-k`
/// budget (counted in request bytes, one block per transaction) is used up.
/// Each counts in `counters` once its reply is in.
pub(crate) fn client_loop(
    mut sock: &TcpStream,
    spec: &BbSpec,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    rperf3_sys::sockopt::set_nodelay(sock)?;
    let clock = Clock::new();
    let mut req = rperf3_engine::payload::make(spec.request, true);
    let mut reply = vec![0u8; spec.reply];
    let mut seq: u64 = 0;
    let mut next = Instant::now();
    while !ctl.stopped() {
        if !spec.period.is_zero() {
            wait_until(ctl, next);
            if ctl.stopped() {
                break;
            }
        }
        if let Some(b) = ctl.budget() {
            if b.claim(spec.request) < spec.request {
                return Ok(());
            }
        }
        put_seq(&mut req, seq);
        let t0 = clock.now_ns();
        next = clock.instant(t0) + spec.period;
        if let Err(e) = sock.write_all(&req) {
            return ended(ctl, e);
        }
        if let Err(e) = sock.read_exact(&mut reply) {
            return ended(ctl, e);
        }
        let rtt = clock.now_ns().saturating_sub(t0);
        if !answers(&reply, seq) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bounceback reply to request {} instead of {seq}", {
                    rperf3_proto::bounceback::seq_of(&reply)
                }),
            ));
        }
        spec.stats.record(rtt);
        counters.add(spec.request as u64);
        seq = seq.wrapping_add(1);
    }
    Ok(())
}

/// The server's loop: read a request whole, hold, reply, until the client
/// closes or the test ends. A request counts as answered before its reply is
/// written, so the client never has a reply the server has not counted.
pub(crate) fn server_loop(
    mut sock: &TcpStream,
    spec: &BbSpec,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    rperf3_sys::sockopt::set_nodelay(sock)?;
    let mut req = vec![0u8; spec.request];
    let mut reply = rperf3_engine::payload::make(spec.reply, true);
    loop {
        if let Err(e) = sock.read_exact(&mut req) {
            // The client closing between requests ends the loop too.
            return if e.kind() == io::ErrorKind::UnexpectedEof {
                Ok(())
            } else {
                ended(ctl, e)
            };
        }
        counters.add(spec.request as u64);
        if !spec.hold.is_zero() {
            wait_until(ctl, Instant::now() + spec.hold);
        }
        answer(&req, &mut reply);
        spec.stats.answered.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = sock.write_all(&reply) {
            return ended(ctl, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn spec(hold_ms: u64, period_ms: u64) -> BbSpec {
        BbSpec {
            request: 64,
            reply: 1000,
            hold: Duration::from_millis(hold_ms),
            period: Duration::from_millis(period_ms),
            stats: Arc::default(),
        }
    }

    /// Runs both loops over loopback for `run`; (client spec, server spec,
    /// client counters).
    fn exchange(c: BbSpec, s: BbSpec, run: Duration) -> (BbSpec, BbSpec, Arc<StreamCounters>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        let (cctl, sctl) = (
            Arc::new(RunControl::new(None)),
            Arc::new(RunControl::new(None)),
        );
        let counters = Arc::new(StreamCounters::default());
        let (s2, sctl2) = (s.clone(), sctl.clone());
        let srv = std::thread::spawn(move || {
            server_loop(&server, &s2, &sctl2, &StreamCounters::default())
        });
        let (c2, cctl2, k2) = (c.clone(), cctl.clone(), counters.clone());
        let cli = std::thread::spawn(move || {
            let r = client_loop(&client, &c2, &cctl2, &k2);
            drop(client);
            r
        });
        std::thread::sleep(run);
        cctl.stop();
        cli.join().unwrap().unwrap();
        srv.join().unwrap().unwrap();
        (c, s, counters)
    }

    #[test]
    fn the_clients_round_trips_cross_to_the_server_whole_issue18() {
        let stats = Arc::new(BbStats::default());
        let mut t = BbTally::new(stats.clone(), true, Instant::now());
        for us in [20, 25, 40, 5000] {
            stats.record(us * 1000);
        }
        t.interval(Instant::now(), true);
        let h = from_wire(&t.wire_total().unwrap()).unwrap();
        assert_eq!((h.count(), h.min_ns(), h.max_ns()), (4, 20_000, 5_000_000));
        assert_eq!(h.mean_ns(), 5_085_000.0 / 4.0);
        assert!(from_wire("0g").is_none() && from_wire("abc").is_none());
        let server = BbTally::new(stats, false, Instant::now());
        assert_eq!(server.wire_total(), None);
    }

    #[test]
    fn every_timed_transaction_was_answered_once() {
        let (c, s, k) = exchange(spec(0, 0), spec(0, 0), Duration::from_millis(200));
        let h = c.stats.take_interval();
        assert!(h.count() > 10, "{}", h.count());
        assert_eq!(s.stats.answered(), h.count());
        let snap = k.snapshot();
        assert_eq!((snap.blocks, snap.bytes), (h.count(), h.count() * 64));
    }

    #[test]
    fn hold_and_period_bound_the_round_trips_and_the_rate() {
        let (c, s, _) = exchange(spec(0, 50), spec(20, 0), Duration::from_millis(330));
        let h = c.stats.take_interval();
        // Starts at 0, 50, ..., 300 ms: 7, each held 20 ms at the server.
        assert!((6..=7).contains(&h.count()), "{}", h.count());
        assert!(h.min_ns() >= 20_000_000, "{}", h.min_ns());
        assert_eq!(s.stats.answered(), h.count());
    }
}

//! The client's prober: one thread that measures round trips while the test runs.
//!
//! With an rperf3 server it opens the test's dedicated probe connection before
//! the data streams and times a few idle round trips on it ([`Kind::Idle`]);
//! once the load runs it opens foreign probes at the configured rate (handshake
//! and one request each, on short-lived threads of their own so that a probe
//! stuck behind a long queue does not delay the next), samples the round trips
//! of this side's sending TCP streams from TCP_INFO, and reads the round trips
//! the server pushes for its own sending streams: both are self probes. Against
//! a stock server it only samples its own streams; the driver adds the connect
//! times. Stopping shuts every probe socket, so the prober ends with the test,
//! but for one: when the server said it times the data (its first frame on the
//! dedicated connection), that connection stays open after the stop until
//! [`Prober::await_last_data`] has read the server's last delays.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rperf3_latency::{oneway_wire, wall_ns, Collector, Kind, OneWay, Samples, Way};
use rperf3_proto::probe::{Delays, Frame, ProbeDecoder, Request, Sample, SampleKind};
use rperf3_proto::{marked_cookie, COOKIE_LEN, MARKER_FOREIGN, MARKER_PROBE};

use crate::latency::frame_io::{read_frame, timed_out, write_all};

/// Idle round trips before the load, at most.
pub(crate) const IDLE_COUNT: usize = 10;
/// Longest the idle round trips may take in all.
pub(crate) const IDLE_BUDGET: Duration = Duration::from_secs(1);
/// How often the round trips of the loaded TCP streams are sampled.
const SELF_PERIOD: Duration = Duration::from_millis(100);
/// Longest a foreign probe (connect, request, answer) may take.
const FOREIGN_LIMIT: Duration = Duration::from_secs(3);
/// Foreign probes in flight at once, at most: beyond that the path is so slow
/// that more probes would only add to the queue they measure.
const MAX_IN_FLIGHT: usize = 8;
/// Request and answer sizes: small, as a tiny request/response.
const REQUEST_LEN: u32 = 64;

/// Where and how to probe.
#[derive(Debug, Clone)]
pub(crate) struct ProbeSetup {
    /// The server (its control connection's address).
    pub server: SocketAddr,
    /// `-B`: the local address of every probe connection.
    pub bind: Option<String>,
    /// The test's cookie.
    pub cookie: [u8; COOKIE_LEN],
    /// Foreign probes per second.
    pub rate: u32,
    /// The server answers probes (an rperf3 server that sent LATENCY_READY).
    pub with_server: bool,
}

/// What the prober and the driver share.
#[derive(Debug, Default)]
struct Shared {
    collector: Mutex<Collector>,
    stop: AtomicBool,
    /// This side's sending TCP streams, once the load runs.
    load: Mutex<Option<Vec<Arc<TcpStream>>>>,
    /// Probe sockets open now (shut on stop).
    open: Mutex<Vec<Arc<TcpStream>>>,
    /// The probe connection is open: what the client measures is also sent
    /// to the server (for its metrics).
    forwarding: AtomicBool,
    /// Samples not yet sent to the server.
    forward: Mutex<Vec<(Kind, u64)>>,
    /// `--rpm`: foreign probes per second, in thousandths, once set (0: the
    /// setup's fixed rate).
    rate_milli: AtomicU64,
    /// The server said it times the data this client sends.
    server_times_data: AtomicBool,
    /// The dedicated connection after the stop, while the server's last data
    /// delays are awaited.
    parked: Mutex<Option<(Arc<TcpStream>, ProbeDecoder)>>,
}

/// Adds a sample the client measured (and queues it for the server).
fn note(s: &Shared, kind: Kind, ns: u64) {
    lock(&s.collector).record(kind, ns);
    if s.forwarding.load(Ordering::Relaxed) {
        lock(&s.forward).push((kind, ns));
    }
}

/// The wire's kind of a sample; `None` for a TLS handshake, which this prober
/// (plain TCP) never times and the wire has no kind for.
fn sample_kind(k: Kind) -> Option<SampleKind> {
    Some(match k {
        Kind::Idle => SampleKind::Idle,
        Kind::ForeignConnect => SampleKind::ForeignConnect,
        Kind::ForeignTls => return None,
        Kind::ForeignRequest => SampleKind::ForeignRequest,
        Kind::SelfLoaded => SampleKind::SelfLoaded,
    })
}

/// Sends what is queued for the server without blocking: `out` keeps what the
/// socket did not take. False once the connection failed.
fn forward(s: &Shared, c: &TcpStream, out: &mut Vec<u8>, seq: &mut u32) -> bool {
    use std::io::Write;
    for (kind, ns) in std::mem::take(&mut *lock(&s.forward)) {
        let Some(kind) = sample_kind(kind) else {
            continue;
        };
        *seq = seq.wrapping_add(1);
        let f = Frame::Sample(Sample {
            seq: *seq,
            kind,
            rtt_ns: ns,
            server_ns: wall_ns(),
        });
        out.extend(f.encode());
    }
    while !out.is_empty() {
        match (&*c).write(out) {
            Ok(n) => drop(out.drain(..n)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The prober of one test.
#[derive(Debug)]
pub(crate) struct Prober {
    shared: Arc<Shared>,
    with_server: bool,
    thread: Option<JoinHandle<()>>,
    idle_done: Option<mpsc::Receiver<()>>,
}

impl Prober {
    /// Starts the prober: with a server, its idle round trips begin at once.
    pub(crate) fn start(setup: ProbeSetup) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let (done_tx, done_rx) = mpsc::channel();
        let with_server = setup.with_server;
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("latency".into())
            .spawn(move || run(&s, &setup, &done_tx))?;
        Ok(Self {
            shared,
            with_server,
            thread: Some(thread),
            idle_done: Some(done_rx),
        })
    }

    /// Whether the server takes part.
    pub(crate) fn with_server(&self) -> bool {
        self.with_server
    }

    /// Whether the server said it times the data (known once the idle round
    /// trips are over: it says so first on the dedicated connection).
    pub(crate) fn server_times_data(&self) -> bool {
        self.shared.server_times_data.load(Ordering::SeqCst)
    }

    /// After [`Prober::stop`]: reads the server's data delays up to its last
    /// frame (sent once its streams were read to the end), by `deadline`, then
    /// closes the dedicated connection. False when they did not all come.
    pub(crate) fn await_last_data(&self, deadline: Instant) -> bool {
        let Some((c, mut dec)) = lock(&self.shared.parked).take() else {
            return !self.server_times_data();
        };
        let _ = c.set_nonblocking(false);
        let complete = loop {
            match read_frame(&c, &mut dec, deadline) {
                Ok(Frame::Delays(d)) if d.is_agreement() => {}
                Ok(Frame::Delays(d)) => {
                    merge_delays(&self.shared, &d);
                    if d.last {
                        break true;
                    }
                }
                // Round trips after the stop are not of the test.
                Ok(_) => {}
                Err(e) => {
                    log::warn!("latency: the server's last data delays did not come: {e}");
                    break false;
                }
            }
        };
        let _ = c.shutdown(std::net::Shutdown::Both);
        complete
    }

    /// Adds a round trip measured elsewhere (a connection's handshake).
    pub(crate) fn record(&self, kind: Kind, d: Duration) {
        lock(&self.shared.collector).record(kind, nanos(d));
    }

    /// Waits (at most until `deadline`) for the idle round trips to end, so
    /// that the load starts after them.
    pub(crate) fn wait_idle(&mut self, deadline: Instant) {
        if let Some(rx) = self.idle_done.take() {
            let _ = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        }
    }

    /// The load runs: these are this side's sending TCP streams.
    pub(crate) fn load_started(&self, senders: Vec<Arc<TcpStream>>) {
        // What came before the load (idle round trips, handshakes) belongs to
        // the whole test only: intervals report the loaded path.
        drop(lock(&self.shared.collector).take_interval());
        self.set_senders(senders);
    }

    /// This side's sending TCP streams from now on (`--rpm` adds load
    /// connections during a stage), keeping the samples taken so far.
    pub(crate) fn set_senders(&self, senders: Vec<Arc<TcpStream>>) {
        *lock(&self.shared.load) = Some(senders);
        self.wake();
    }

    /// `--rpm`: foreign probes per second from now on.
    pub(crate) fn set_rate(&self, per_sec: f64) {
        let milli = (per_sec.max(0.001) * 1000.0).round() as u64;
        self.shared.rate_milli.store(milli, Ordering::SeqCst);
        self.wake();
    }

    fn wake(&self) {
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// Adds the one-way delays of the test's data sent `way`.
    pub(crate) fn merge_data(&self, way: Way, d: &OneWay) {
        lock(&self.shared.collector).merge_data(way, d);
    }

    /// The samples since the last call.
    pub(crate) fn take_interval(&self) -> Samples {
        lock(&self.shared.collector).take_interval()
    }

    /// The whole test's samples.
    pub(crate) fn total(&self) -> Samples {
        lock(&self.shared.collector).total().clone()
    }

    /// Ends every probe and the thread (probes cut short are not counted).
    pub(crate) fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        shut_all(&self.shared);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop();
        if let Some((c, _)) = lock(&self.shared.parked).take() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn stopped(s: &Shared) -> bool {
    s.stop.load(Ordering::SeqCst)
}

fn shut_all(s: &Shared) {
    for c in lock(&s.open).iter() {
        let _ = c.shutdown(std::net::Shutdown::Both);
    }
}

/// Keeps `c` among the sockets a stop shuts; returns it shared.
fn track(s: &Shared, c: TcpStream) -> Arc<TcpStream> {
    let c = Arc::new(c);
    lock(&s.open).push(c.clone());
    if stopped(s) {
        // The stop may have shut the others before this one was listed.
        let _ = c.shutdown(std::net::Shutdown::Both);
    }
    c
}

fn untrack(s: &Shared, c: &Arc<TcpStream>) {
    lock(&s.open).retain(|o| !Arc::ptr_eq(o, c));
}

/// Opens a probe connection within `limit`: the connection, a second handle
/// on it that a stop shuts (from before the SYN: a stop aborts a connect stuck
/// behind a full queue), and the handshake's duration. The caller untracks the
/// handle when done.
fn open(
    s: &Shared,
    setup: &ProbeSetup,
    limit: Duration,
) -> std::io::Result<(TcpStream, Arc<TcpStream>, Duration)> {
    let shadow = std::cell::RefCell::new(None);
    let prepare = |fd: std::os::fd::BorrowedFd<'_>, _v6: bool| -> std::io::Result<()> {
        if stopped(s) {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        let dup = TcpStream::from(fd.try_clone_to_owned()?);
        *shadow.borrow_mut() = Some(track(s, dup));
        Ok(())
    };
    let t = Instant::now();
    let r = rperf3_sys::net::connect_tcp_prepared(
        &[setup.server],
        setup.bind.as_deref(),
        0,
        None,
        Some(limit),
        rperf3_sys::net::Transport::Tcp,
        &prepare,
    );
    let took = t.elapsed();
    let shadow = shadow.into_inner();
    let c = match r {
        Ok(c) => c,
        Err(rperf3_sys::net::Prepared::Options(e) | rperf3_sys::net::Prepared::Connect(e)) => {
            if let Some(h) = &shadow {
                untrack(s, h);
            }
            return Err(e);
        }
    };
    let Some(shadow) = shadow else {
        return Err(std::io::ErrorKind::Interrupted.into());
    };
    // Requests are tiny: never held back for an ACK.
    c.set_nodelay(true)?;
    Ok((c, shadow, took))
}

/// One request and its answer by `deadline`: the round trip, the answer.
fn ask(
    s: &Shared,
    c: &TcpStream,
    dec: &mut ProbeDecoder,
    seq: u32,
    prefix: &[u8],
    deadline: Instant,
) -> std::io::Result<(Duration, rperf3_proto::probe::Answer, i64)> {
    let req = Request::new(seq, wall_ns(), REQUEST_LEN, REQUEST_LEN);
    let mut bytes = prefix.to_vec();
    bytes.extend(Frame::Request(req).encode());
    let t = Instant::now();
    // With the cookie in one write: one segment, no extra round trip.
    write_all(c, &bytes, deadline)?;
    loop {
        match read_frame(c, dec, deadline)? {
            Frame::Answer(a) if a.request.seq == seq => return Ok((t.elapsed(), a, wall_ns())),
            // Before the first answer on the dedicated connection.
            Frame::Delays(d) if d.is_agreement() => {
                s.server_times_data.store(true, Ordering::SeqCst);
            }
            // Pushed samples on the probe connection wait for the load.
            _ => {}
        }
    }
}

fn run(s: &Arc<Shared>, setup: &ProbeSetup, idle_done: &mpsc::Sender<()>) {
    let mut probe = None;
    if setup.with_server {
        probe = idle(s, setup);
    }
    let _ = idle_done.send(());
    // Until the load runs (or the test ends before it does).
    while lock(&s.load).is_none() && !stopped(s) {
        std::thread::park_timeout(Duration::from_millis(100));
    }
    let mut dec = ProbeDecoder::new();
    if let Some(p) = &probe {
        let _ = p.set_nonblocking(true);
    }
    let mut next_foreign = Instant::now();
    let mut next_self = Instant::now();
    let mut seq = 0u32;
    let (mut out, mut fseq) = (Vec::new(), 0u32);
    let mut flying: Vec<JoinHandle<()>> = Vec::new();
    while !stopped(s) {
        let now = Instant::now();
        if now >= next_self {
            next_self += SELF_PERIOD;
            let senders = lock(&s.load).clone().unwrap_or_default();
            sample_own(s, &senders);
            if let Some(p) = &probe {
                if !pushed(s, p, &mut dec) || !forward(s, p, &mut out, &mut fseq) {
                    s.forwarding.store(false, Ordering::Relaxed);
                    probe = None;
                }
            }
        }
        let gap = match s.rate_milli.load(Ordering::SeqCst) {
            0 => Duration::from_secs(1) / setup.rate.max(1),
            m => Duration::from_secs(1000) / u32::try_from(m).unwrap_or(u32::MAX),
        };
        if setup.with_server && now >= next_foreign {
            next_foreign += gap;
            flying.retain(|t| !t.is_finished());
            if flying.len() < MAX_IN_FLIGHT {
                seq = seq.wrapping_add(1);
                let (s2, setup2) = (s.clone(), setup.clone());
                if let Ok(t) = std::thread::Builder::new()
                    .name("latency-f".into())
                    .spawn(move || foreign(&s2, &setup2, seq))
                {
                    flying.push(t);
                }
            }
            // A late prober does not make up for lost time with a burst.
            if next_foreign < now {
                next_foreign = now + gap;
            }
        }
        let due = if setup.with_server {
            next_self.min(next_foreign)
        } else {
            next_self
        };
        std::thread::park_timeout(due.saturating_duration_since(Instant::now()));
    }
    // The last samples, best effort, before the connection is shut (or kept
    // for the server's last data delays).
    if let Some(p) = probe {
        forward(s, &p, &mut out, &mut fseq);
        if pushed(s, &p, &mut dec) && s.server_times_data.load(Ordering::SeqCst) {
            *lock(&s.parked) = Some((p, dec));
        } else {
            let _ = p.shutdown(std::net::Shutdown::Both);
        }
    }
    shut_all(s);
    for t in flying {
        let _ = t.join();
    }
}

/// The dedicated probe connection and its idle round trips; `None` if it
/// could not be opened (the test goes on with foreign probes).
fn idle(s: &Shared, setup: &ProbeSetup) -> Option<Arc<TcpStream>> {
    let end = Instant::now() + IDLE_BUDGET;
    let (c, shadow, _) = match open(s, setup, IDLE_BUDGET) {
        Ok(c) => c,
        Err(e) => {
            log::warn!("latency: probe connection to {} failed: {e}", setup.server);
            return None;
        }
    };
    let c = Arc::new(c);
    s.forwarding.store(true, Ordering::Relaxed);
    let mut dec = ProbeDecoder::new();
    let cookie = marked_cookie(&setup.cookie, MARKER_PROBE);
    // Round trip 0 carries the cookie: it also times the server routing the
    // connection and starting its answering thread, so it is not counted.
    for i in 0..=IDLE_COUNT {
        if stopped(s) {
            break;
        }
        let prefix: &[u8] = if i == 0 { &cookie } else { &[] };
        match ask(s, &c, &mut dec, i as u32, prefix, end) {
            Ok(_) if i == 0 => {}
            Ok((rtt, _, _)) => note(s, Kind::Idle, nanos(rtt)),
            Err(e) => {
                if !timed_out(&e) {
                    log::warn!("latency: idle probe: {e}");
                }
                break;
            }
        }
    }
    // From now on a stop leaves it to the prober, which sends the last
    // samples on it before shutting it.
    untrack(s, &shadow);
    Some(c)
}

/// One foreign probe: a new connection, one request.
fn foreign(s: &Shared, setup: &ProbeSetup, seq: u32) {
    let deadline = Instant::now() + FOREIGN_LIMIT;
    let (c, shadow, handshake) = match open(s, setup, FOREIGN_LIMIT) {
        Ok(c) => c,
        Err(e) => {
            log::debug!("latency: foreign probe {seq}: {e}");
            return;
        }
    };
    let cookie = marked_cookie(&setup.cookie, MARKER_FOREIGN);
    let mut dec = ProbeDecoder::new();
    let r = ask(s, &c, &mut dec, seq, &cookie, deadline);
    untrack(s, &shadow);
    match r {
        Ok((rtt, a, recv_ns)) if !stopped(s) => {
            note(s, Kind::ForeignConnect, nanos(handshake));
            note(s, Kind::ForeignRequest, nanos(rtt));
            let mut col = lock(&s.collector);
            col.record_one_way(Way::Up, a.request.client_send_ns, a.server_recv_ns);
            col.record_one_way(Way::Down, a.server_send_ns, recv_ns);
        }
        Ok(_) => {}
        Err(e) => log::debug!("latency: foreign probe {seq}: {e}"),
    }
}

/// This side's sending TCP streams' smoothed round trips (TCP_INFO).
fn sample_own(s: &Shared, senders: &[Arc<TcpStream>]) {
    for c in senders {
        if let Some(i) = rperf3_sys::tcp_info::tcp_info(&**c).filter(|i| i.rtt > 0) {
            note(s, Kind::SelfLoaded, u64::from(i.rtt) * 1000);
        }
    }
}

/// Reads what the server pushed on the probe connection; false once the
/// connection is over (closed or out of step).
fn pushed(s: &Shared, c: &TcpStream, dec: &mut ProbeDecoder) -> bool {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    loop {
        match (&*c).read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => dec.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    loop {
        match dec.next_frame() {
            Ok(Some(Frame::Sample(x))) => {
                lock(&s.collector).record(Kind::SelfLoaded, x.rtt_ns);
            }
            // The server's data delays: it received what this client sent.
            Ok(Some(Frame::Delays(d))) => merge_delays(s, &d),
            Ok(Some(_)) => {}
            Ok(None) => return true,
            Err(e) => {
                log::warn!("latency: probe connection: {e}");
                return false;
            }
        }
    }
}

/// Adds the data delays of a frame from the server; none unless the server
/// said it times the data (else this client did not stamp what it sent).
fn merge_delays(s: &Shared, d: &Delays) {
    if d.is_agreement() || !s.server_times_data.load(Ordering::SeqCst) {
        return;
    }
    match oneway_wire::decode(&d.body) {
        Some(o) => {
            let way = if d.up { Way::Up } else { Way::Down };
            lock(&s.collector).merge_data(way, &o);
        }
        None => log::warn!("latency: the server's data delays are not readable"),
    }
}

#[cfg(test)]
#[path = "prober_tests.rs"]
mod tests;

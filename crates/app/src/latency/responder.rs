//! The server's side of `--latency`: it answers the probe connections of one
//! session and pushes the round trips of its own sending TCP streams.
//!
//! Each probe connection gets a thread. The dedicated probe connection ('P')
//! answers requests and, once the session's streams run, pushes a sample of each
//! sending TCP stream's TCP_INFO round trip every [`PUSH_PERIOD`]; a foreign
//! probe ('F') answers one request. Every read has a deadline (a connection that
//! says nothing is closed after [`FIRST_FRAME_LIMIT`]); bytes that are no frame
//! close the connection with a log line. [`ProbeHost::finish`] shuts every
//! connection and joins every thread: no probe connection outlives its session.
//!
//! When the data is timed, the dedicated connection opens with the frame that
//! says so ([`Delays::agreed`]), and [`ProbeHost::last_data`] sends what the
//! receiving streams timed after the last push once they are read to the end,
//! marked last. Every write on the dedicated connection holds one lock, so the
//! session's last frame never lands inside the thread's.

use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rperf3_latency::{oneway_wire, wall_ns, Kind, OneWay, Samples, Way};
use rperf3_proto::probe::{Delays, Frame, ProbeDecoder, Sample, SampleKind};
use rperf3_proto::{MARKER_FOREIGN, MARKER_PROBE};

use crate::latency::frame_io::{read_frame, timed_out, write_all};

/// A probe connection must send its first frame within this.
pub(crate) const FIRST_FRAME_LIMIT: Duration = Duration::from_secs(5);
/// How often the round trips of the server's sending streams are pushed.
const PUSH_PERIOD: Duration = Duration::from_millis(100);
/// Longest an answer may take to write.
const WRITE_LIMIT: Duration = Duration::from_secs(5);
/// Longest the last delays may take to write: the session waits for it.
const LAST_WRITE_LIMIT: Duration = Duration::from_secs(1);
/// Foreign probes answered at once, at most (more are closed unanswered).
const MAX_FOREIGN: usize = 32;

#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    /// Every probe connection open now.
    conns: Mutex<Vec<Arc<TcpStream>>>,
    /// The session's sending TCP streams, once they run.
    senders: Mutex<Vec<Arc<TcpStream>>>,
    /// What the server measured itself (for its metrics).
    samples: Mutex<Samples>,
    /// The session's receiving UDP streams' data delays, when the data is timed.
    data: Mutex<Vec<Arc<Mutex<OneWay>>>>,
    /// The client offered `"owd"` and the server took it.
    times_data: AtomicBool,
    /// The dedicated probe connection, once open (the last delays go on it).
    dedicated: Mutex<Option<Arc<TcpStream>>>,
    /// Held by every write on the dedicated connection; true once the last
    /// delays went (nothing about the data follows them).
    writing: Mutex<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The probe side of one session.
#[derive(Debug, Default)]
pub(crate) struct ProbeHost {
    shared: Arc<Shared>,
    probe: Option<JoinHandle<()>>,
    foreign: Vec<JoinHandle<()>>,
}

impl ProbeHost {
    /// Nothing open yet; `times_data`: the client offered `"owd"`, and the
    /// dedicated connection will say it was taken.
    pub(crate) fn new(times_data: bool) -> Self {
        let h = Self::default();
        h.shared.times_data.store(times_data, Ordering::SeqCst);
        h
    }

    /// A connection the host routed here by its `marker`. Unknown markers and
    /// connections beyond the limits are closed, with a log line.
    pub(crate) fn on_conn(&mut self, conn: TcpStream, marker: u8, test: u64) {
        let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        self.foreign.retain(|t| !t.is_finished());
        let busy = match marker {
            MARKER_PROBE => self.probe.is_some(),
            MARKER_FOREIGN => self.foreign.len() >= MAX_FOREIGN,
            m => {
                log::info!(
                    "test {test}: closed a connection from {peer} with unknown marker {:?}",
                    char::from(m)
                );
                return;
            }
        };
        if busy || self.shared.stop.load(Ordering::SeqCst) {
            log::info!(
                "test {test}: closed a probe connection from {peer} ({})",
                if busy { "too many" } else { "test over" }
            );
            return;
        }
        let _ = conn.set_nodelay(true);
        let conn = Arc::new(conn);
        lock(&self.shared.conns).push(conn.clone());
        let s = self.shared.clone();
        let dedicated = marker == MARKER_PROBE;
        if dedicated {
            *lock(&self.shared.dedicated) = Some(conn.clone());
        }
        let spawned = std::thread::Builder::new()
            .name(format!("probe-{test}"))
            .spawn(move || {
                if let Err(e) = serve(&s, &conn, dedicated) {
                    log::info!("test {test}: probe connection from {peer}: {e}");
                }
                let _ = conn.shutdown(Shutdown::Both);
                lock(&s.conns).retain(|c| !Arc::ptr_eq(c, &conn));
            });
        match spawned {
            Ok(t) if dedicated => self.probe = Some(t),
            Ok(t) => self.foreign.push(t),
            Err(e) => log::warn!("test {test}: no thread for a probe connection: {e}"),
        }
    }

    /// The session's streams run: these send (their round trips are pushed).
    pub(crate) fn set_senders(&self, senders: Vec<Arc<TcpStream>>) {
        *lock(&self.shared.senders) = senders;
    }

    /// The session's receiving streams time their data into these: what they
    /// hold is pushed to the client with the round trips.
    pub(crate) fn set_data_delays(&self, sinks: Vec<Arc<Mutex<OneWay>>>) {
        *lock(&self.shared.data) = sinks;
    }

    /// The receiving streams are read to the end: what they timed since the
    /// last push goes to the client, marked last (before EXCHANGE_RESULTS, which
    /// the client waits on). Without a dedicated connection it is only counted.
    pub(crate) fn last_data(&self) {
        if !self.shared.times_data.load(Ordering::SeqCst) {
            return;
        }
        let s = &self.shared;
        let mut done = lock(&s.writing);
        if *done {
            return;
        }
        *done = true;
        let all = take_data(s);
        let Some(c) = lock(&s.dedicated).clone() else {
            return;
        };
        let f = Frame::Delays(Delays {
            seq: 0,
            up: true,
            last: true,
            body: oneway_wire::encode(&all),
        });
        if let Err(e) = write_all(&c, &f.encode(), Instant::now() + LAST_WRITE_LIMIT) {
            log::info!("latency: the last data delays were not sent: {e}");
        }
    }

    /// Ends every probe connection; returns what the server measured.
    pub(crate) fn finish(&mut self) -> Samples {
        self.shared.stop.store(true, Ordering::SeqCst);
        lock(&self.shared.senders).clear();
        for c in lock(&self.shared.conns).iter() {
            let _ = c.shutdown(Shutdown::Both);
        }
        for t in self.probe.take().into_iter().chain(self.foreign.drain(..)) {
            let _ = t.join();
        }
        std::mem::take(&mut *lock(&self.shared.samples))
    }
}

impl Drop for ProbeHost {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Answers one probe connection until it ends, the session ends, or (foreign)
/// after its one request.
fn serve(s: &Shared, c: &TcpStream, dedicated: bool) -> std::io::Result<()> {
    let mut dec = ProbeDecoder::new();
    let first = Instant::now() + FIRST_FRAME_LIMIT;
    let mut spoke = false;
    let mut next_push = Instant::now() + PUSH_PERIOD;
    let mut seq = 0u32;
    if dedicated && s.times_data.load(Ordering::SeqCst) {
        // First on the connection: the client's idle round trips read it.
        let _w = lock(&s.writing);
        write_all(
            c,
            &Frame::Delays(Delays::agreed()).encode(),
            Instant::now() + WRITE_LIMIT,
        )?;
    }
    while !s.stop.load(Ordering::SeqCst) {
        let deadline = if spoke {
            next_push
        } else {
            first.min(next_push)
        };
        match read_frame(c, &mut dec, deadline) {
            Ok(Frame::Request(r)) => {
                let recv = wall_ns();
                spoke = true;
                let _w = dedicated.then(|| lock(&s.writing));
                let answer = Frame::Answer(r.answer(recv, wall_ns())).encode();
                write_all(c, &answer, Instant::now() + WRITE_LIMIT)?;
                if !dedicated {
                    return Ok(());
                }
            }
            // What the client measured, for the server's metrics.
            Ok(Frame::Sample(x)) if dedicated => {
                spoke = true;
                lock(&s.samples).record(kind_of(x.kind), x.rtt_ns);
            }
            Ok(f) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("unexpected frame from the client: {f:?}"),
                ))
            }
            Err(e) if timed_out(&e) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if !spoke && now >= first {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no probe frame in time",
            ));
        }
        if dedicated && now >= next_push {
            next_push = now + PUSH_PERIOD;
            push_own(s, c, &mut seq)?;
            push_data(s, c, &mut seq)?;
        }
    }
    Ok(())
}

fn kind_of(k: SampleKind) -> Kind {
    match k {
        SampleKind::SelfLoaded => Kind::SelfLoaded,
        SampleKind::Idle => Kind::Idle,
        SampleKind::ForeignConnect => Kind::ForeignConnect,
        SampleKind::ForeignRequest => Kind::ForeignRequest,
    }
}

/// Pushes one sample per sending TCP stream.
fn push_own(s: &Shared, c: &TcpStream, seq: &mut u32) -> std::io::Result<()> {
    let senders = lock(&s.senders).clone();
    let mut out = Vec::new();
    for t in &senders {
        let Some(i) = rperf3_sys::tcp_info::tcp_info(&**t).filter(|i| i.rtt > 0) else {
            continue;
        };
        let rtt_ns = u64::from(i.rtt) * 1000;
        lock(&s.samples).record(Kind::SelfLoaded, rtt_ns);
        *seq = seq.wrapping_add(1);
        out.extend(
            Frame::Sample(Sample {
                seq: *seq,
                kind: SampleKind::SelfLoaded,
                rtt_ns,
                server_ns: wall_ns(),
            })
            .encode(),
        );
    }
    if out.is_empty() {
        return Ok(());
    }
    let _w = lock(&s.writing);
    write_all(c, &out, Instant::now() + WRITE_LIMIT)
}

/// Pushes the data delays the receiving streams gathered since the last push
/// (one frame; nothing when no datagram arrived). The client sent that data.
fn push_data(s: &Shared, c: &TcpStream, seq: &mut u32) -> std::io::Result<()> {
    let done = lock(&s.writing);
    if *done {
        return Ok(());
    }
    let all = take_data(s);
    if all.is_empty() {
        return Ok(());
    }
    *seq = seq.wrapping_add(1);
    let f = Frame::Delays(Delays {
        seq: *seq,
        up: true,
        last: false,
        body: oneway_wire::encode(&all),
    });
    let r = write_all(c, &f.encode(), Instant::now() + WRITE_LIMIT);
    drop(done);
    r
}

/// Everything the receiving streams timed since the last take, also counted
/// in the server's own figures (its metrics).
fn take_data(s: &Shared) -> OneWay {
    let mut all = OneWay::new();
    for m in lock(&s.data).iter() {
        all.merge(&std::mem::take(&mut *lock(m)));
    }
    if !all.is_empty() {
        lock(&s.samples).merge_data(Way::Up, &all);
    }
    all
}

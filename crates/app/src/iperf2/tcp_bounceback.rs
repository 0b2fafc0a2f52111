//! iperf 2's `--bounceback`: the client writes requests (each one its own
//! header, stamped with its send time) in bursts of `count` every `period`
//! (back to back with period 0) and times each reply; the server stamps each
//! request with its receive and send times, holds it if asked, and writes it
//! back at the reply size. Round trips use the monotonic clock and their
//! figures come from the latency core; the client's rows are 2.2.1's `BB
//! cnt=avg/min/max/stdev ... RPS` rows and its histogram line.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_latency::Histogram;
use rperf3_proto2::{stamp_reply, BbFlags, BouncebackHeader, Decoded, Layout, Timeval};
use rperf3_report::iperf2::model::{Bb2, Event2, Hist2, HistBins2, Row2, RowKind2, Tag2, TcpSend2};
use rperf3_report::iperf2::Report2;
use rperf3_sys::tcp_info::tcp_info;

use super::config::Bounceback2;
use super::flow_stats::FlowStats;
use super::interval::{addrs_of, key, Dir, FlowSpec, Intervals};
use super::tcp_io::drain_until_eof;
use super::tcp_setup;
use super::tcp_shared::Shared;
use crate::Interrupt;

/// The largest request or reply a server answers.
const MAX_REQUEST: u32 = 1 << 20;
/// How long a client waits for one reply, and a server for the rest of a
/// request it has begun, before giving up on the peer.
const REPLY_LIMIT: Duration = Duration::from_secs(10);
/// How long a server waits for a client's next request.
const IDLE_LIMIT: Duration = Duration::from_secs(60);
/// How often a client running requests back to back looks for an interrupt.
const INTR_EVERY: Duration = Duration::from_millis(10);
/// Bin width of the histogram line (2.2.1's 100 µs).
const BIN_NS: u64 = 100_000;

/// The connection-line note: `(bb w/quickack req/reply/hold=100/100/0)`.
pub(crate) fn note(quickack: bool, request: u32, reply: u32, hold_us: u32) -> String {
    format!(
        "(bb{} req/reply/hold={request}/{reply}/{hold_us})",
        if quickack { " w/quickack" } else { "" }
    )
}

fn wall() -> Timeval {
    Timeval::from_since_epoch(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

/// Round trips and bytes of one span (an interval or the whole test).
#[derive(Default)]
struct Span {
    rtt: Histogram,
    tx: u64,
    rx: u64,
}

impl Span {
    /// Adds `other`'s round trips and bytes.
    fn merge(&mut self, other: &Self) {
        self.rtt.merge(&other.rtt);
        self.tx += other.tx;
        self.rx += other.rx;
    }
}

/// The client's interval clock and the interval's round trips.
struct Run<'a> {
    s: &'a TcpStream,
    start: Instant,
    every: Option<Duration>,
    next: Option<Instant>,
    last: Instant,
    iv: Span,
    /// The test's spans before `iv`: a request is recorded once, in `iv`,
    /// and each interval is added here when it ends.
    done: Span,
    retrans: u64,
    addrs: Option<(SocketAddr, SocketAddr)>,
}

impl Run<'_> {
    /// Reports the interval that ended at its tick, if `now` is past it.
    fn tick(&mut self, now: Instant, report: &Arc<dyn Report2>) {
        let Some(t) = self.next.filter(|t| now >= *t) else {
            return;
        };
        let (retrans, tcp) = tcp_now(self.s);
        let span = (self.last - self.start, t - self.start);
        let row = bb_row(&self.iv, span, retrans.saturating_sub(self.retrans));
        self.retrans = retrans;
        report.event(Event2::Interval(with_tcp(row, tcp, self.addrs)));
        self.done.merge(&std::mem::take(&mut self.iv));
        self.last = t;
        self.next = self.every.map(|e| t + e);
    }
}

/// A bounceback client's run on a connected socket, to the end of `time`
/// or an interrupt. Errors are iperf 2-style messages.
pub(crate) fn client(
    s: &TcpStream,
    bb: Bounceback2,
    time: Duration,
    every: Option<Duration>,
    report: &Arc<dyn Report2>,
    intr: &mut Interrupt,
) -> Result<(), String> {
    let _ = s.set_nodelay(true);
    s.set_read_timeout(Some(REPLY_LIMIT))
        .map_err(|e| e.to_string())?;
    let addrs = addrs_of(s);
    let mut req = BouncebackHeader {
        request_size: bb.request.max(rperf3_proto2::BOUNCEBACK_MIN_REQUEST),
        burst_id: 0,
        bb_flags: BbFlags(if bb.quickack { BbFlags::QUICKACK } else { 0 }),
        tos: 0x5A5A,
        run_time: 0,
        client_send: Timeval::default(),
        server_recv: Timeval {
            sec: u32::MAX,
            usec: u32::MAX,
        },
        server_send: Timeval {
            sec: u32::MAX,
            usec: u32::MAX,
        },
        hold_us: bb.hold_us,
        reply_size: Some(bb.reply.max(rperf3_proto2::BOUNCEBACK_MIN_REQUEST)),
    }
    .encode(Layout::V2_2_1);
    let size = bb.request.max(rperf3_proto2::BOUNCEBACK_MIN_REQUEST) as usize;
    let reply = bb.reply.max(rperf3_proto2::BOUNCEBACK_MIN_REQUEST) as usize;
    // The rest of a request is iperf 2's digit pattern.
    req.extend((req.len()..size).map(|i| b'0' + (i % 10) as u8));
    let mut back = vec![0u8; reply];
    let start = Instant::now();
    let end = start + time;
    let mut run = Run {
        s,
        start,
        every,
        next: every.map(|e| start + e),
        last: start,
        iv: Span::default(),
        done: Span::default(),
        retrans: tcp_now(s).0,
        addrs,
    };
    let retrans0 = run.retrans;
    let period = Duration::from_secs_f64(bb.period.max(0.0));
    let mut burst_start = start;
    let mut burst_id = 0u32;
    let mut result = Ok(());
    // The interrupt pipe is read at most once per INTR_EVERY: a read per
    // request was a third system call beside its write and read.
    let mut intr_at = start;
    let mut now = start;
    'test: while now < end {
        if now >= intr_at {
            if intr.triggered() {
                break;
            }
            intr_at = now + INTR_EVERY;
        }
        burst_id = burst_id.wrapping_add(1);
        req[8..12].copy_from_slice(&burst_id.to_be_bytes());
        let n = if bb.period > 0.0 { bb.count.max(1) } else { 1 };
        for _ in 0..n {
            if now >= end {
                break 'test;
            }
            run.tick(now, report);
            let t = wall();
            req[20..24].copy_from_slice(&t.sec.to_be_bytes());
            req[24..28].copy_from_slice(&t.usec.to_be_bytes());
            let sent = Instant::now();
            let r = (&*s)
                .write_all(&req)
                .and_then(|()| (&*s).read_exact(&mut back));
            if let Err(e) = r {
                result = Err(failure(&e));
                break 'test;
            }
            now = Instant::now();
            let rtt = now - sent;
            run.iv.rtt.record_duration(rtt);
            run.iv.tx += size as u64;
            run.iv.rx += reply as u64;
        }
        if bb.period > 0.0 {
            burst_start += period;
            let wake = burst_start.min(end);
            while Instant::now() < wake && !intr.triggered() {
                run.tick(Instant::now(), report);
                let left = wake.saturating_duration_since(Instant::now());
                let left = run.next.map_or(left, |t| {
                    left.min(t.saturating_duration_since(Instant::now()))
                });
                tcp_setup::wait(&[intr.fd()], Some(left));
            }
            now = Instant::now();
        }
    }
    // An interval that ends with the test is still reported.
    run.tick(Instant::now(), report);
    let fin = Instant::now();
    let mut total = std::mem::take(&mut run.done);
    total.merge(&run.iv);
    // An interval cut short by the end is in the final row only, as 2.2.1.
    let _ = s.shutdown(std::net::Shutdown::Write);
    drain_until_eof(s, Instant::now() + Duration::from_secs(2));
    let span = (Duration::ZERO, fin - start);
    let mut row = bb_row(&total, span, tcp_now(s).0.saturating_sub(retrans0));
    row.addrs = addrs;
    report.event(Event2::Final(row));
    report.event(Event2::Histogram(Hist2 {
        tag: Tag2::Id(1),
        start: 0.0,
        end: span.1.as_secs_f64(),
        name: "BB8(f)".into(),
        bins: total.rtt.binned(BIN_NS, HistBins2::default().bins),
        max_at: None,
    }));
    result
}

fn failure(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "bounceback: the server closed the connection".into(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => format!(
            "bounceback: no reply from the server in {} s",
            REPLY_LIMIT.as_secs()
        ),
        _ => format!("bounceback: {}", super::client_header::os_text(e)),
    }
}

fn tcp_now(s: &TcpStream) -> (u64, TcpSend2) {
    let Some(i) = tcp_info(s) else {
        return (0, TcpSend2::default());
    };
    let mss = u64::from(rperf3_sys::net::tcp_mss(s).max(1));
    (
        u64::from(i.total_retrans),
        TcpSend2 {
            cwnd_bytes: i.snd_cwnd_bytes,
            cwnd_pkts: (i.snd_cwnd_bytes / mss) as u32,
            rtt_us: i.rtt,
            rttvar_us: i.rttvar,
            ..TcpSend2::default()
        },
    )
}

fn bb_row(sp: &Span, (from, to): (Duration, Duration), retries: u64) -> Row2 {
    Row2 {
        tag: Tag2::Id(1),
        addrs: None,
        start: from.as_secs_f64(),
        end: to.as_secs_f64(),
        bytes: sp.tx + sp.rx,
        kind: RowKind2::Bounceback(Bb2 {
            count: sp.rtt.count(),
            mean_ns: sp.rtt.mean_ns(),
            min_ns: sp.rtt.min_ns(),
            max_ns: sp.rtt.max_ns(),
            stdev_ns: sp.rtt.stdev_ns(),
            retries,
            tcp: None,
            tx_bytes: sp.tx,
            rx_bytes: sp.rx,
        }),
        at: std::time::SystemTime::now(),
    }
}

fn with_tcp(mut r: Row2, tcp: TcpSend2, addrs: Option<(SocketAddr, SocketAddr)>) -> Row2 {
    if let RowKind2::Bounceback(b) = &mut r.kind {
        b.tcp = Some(tcp);
    }
    r.addrs = addrs;
    r
}

/// Serves a bounceback connection whose first bytes (`first`, at least the
/// flags word) are read: answers every request until the client closes.
/// Intervals count from `accepted`, before the client's clock starts, so a
/// client's burst on its interval boundary falls in one interval here too.
pub(crate) fn serve(s: TcpStream, first: Vec<u8>, accepted: Instant, sh: &Arc<Shared>) {
    let s = Arc::new(s);
    let mut buf = first;
    let _ = s.set_read_timeout(Some(REPLY_LIMIT));
    let h = loop {
        match BouncebackHeader::decode(&buf, MAX_REQUEST) {
            Ok(Decoded::Done { value, .. }) => break value,
            Ok(Decoded::NeedMore { need }) => {
                if fill(&s, &mut buf, need).is_err() {
                    return;
                }
            }
            Err(e) => {
                sh.report.event(Event2::Message(format!(
                    "WARNING: bounceback request refused: {e}"
                )));
                return;
            }
        }
    };
    let size = h.request_size as usize;
    if fill(&s, &mut buf, size).is_err() {
        return;
    }
    let quickack = h.bb_flags.has(BbFlags::QUICKACK);
    let reply = h.reply_len() as usize;
    let id = sh.next_id();
    let dev = sh
        .cfg
        .common
        .bind
        .as_ref()
        .and_then(|b| b.device.as_deref());
    let n = note(quickack, h.request_size, h.reply_len(), h.hold_us);
    if let Ok(line) = tcp_setup::connection(Tag2::Id(id), &s, &[n.as_str()], dev) {
        sh.report.event(Event2::Connected(line));
    }
    let _ = s.set_nodelay(true);
    // Once, as 2.2.1 does: a reply carries its request's ACK anyway, and a
    // call per request costs a system call (and, set before a reply, sends
    // a lone ACK).
    if quickack {
        let _ = rperf3_sys::sockopt::set_quickack(&*s);
    }
    let track = sh.track(std::slice::from_ref(&s));
    let iv = Intervals::start(sh.report.clone(), accepted, sh.cfg.common.interval, None);
    sh.watch(&iv.open_flows());
    let st = Arc::new(FlowStats::new(size as u32));
    st.read(buf.len());
    let k = key(id, Dir::Recv);
    iv.add(
        k,
        FlowSpec::of(Tag2::Id(id), Dir::Recv, &st, &s, addrs_of(&s)),
    );
    // One buffer for every request and reply: requests are read into its
    // first `size` bytes, and a reply longer than the request is padded with
    // the zeros kept past them (2.2.1's server sends zeros there).
    buf.truncate(size);
    buf.resize(size.max(reply), 0);
    let hold = Duration::from_micros(u64::from(h.hold_us));
    // A client that goes quiet for longer than any sensible period is gone.
    let _ = s.set_read_timeout(Some(IDLE_LIMIT));
    loop {
        let recv = wall();
        if !hold.is_zero() {
            std::thread::sleep(hold);
        }
        stamp_reply(&mut buf, recv, wall());
        if (&*s).write_all(&buf[..reply]).is_err() {
            break;
        }
        st.read(reply);
        match read_request(&s, &mut buf[..size], &st) {
            Ok(true) => {}
            _ => break,
        }
    }
    iv.ender().done(k);
    iv.finish();
    drop(track);
}

/// Reads until `buf` holds `need` bytes.
fn fill(mut s: &TcpStream, buf: &mut Vec<u8>, need: usize) -> io::Result<()> {
    let have = buf.len();
    if have >= need {
        return Ok(());
    }
    buf.resize(need, 0);
    let r = s.read_exact(&mut buf[have..]);
    if r.is_err() {
        buf.truncate(have);
    }
    r
}

/// Reads the next whole request into `buf` (its length); `Ok(false)` at
/// the client's close.
fn read_request(mut s: &TcpStream, buf: &mut [u8], st: &FlowStats) -> io::Result<bool> {
    let mut have = 0;
    while have < buf.len() {
        match s.read(&mut buf[have..]) {
            Ok(0) => return Ok(false),
            Ok(n) => {
                st.read(n);
                have += n;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

//! The iperf 2 TCP client: connects `-P` streams, writes each one's test header
//! (2.2.1's layout; none with `-C`), waits for the header ack with `-X`, and
//! runs the directions the mode asks for, with a listener for the server's
//! connection back under `-d`/`-r`.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_proto2::{HeaderAck, Layout, Mode, TestEnd, TestRequest, Transport, VERSION_2_2_1};
use rperf3_report::iperf2::model::{Event2, Tag2};
use rperf3_report::iperf2::Report2;
use rperf3_sys::net;

use super::config::{Client2, Common2, Config2, End2, Input2, Mode2, Rate2, Role2};
use super::connect_back::{accept_back, BACK_GRACE, NO_BACK};
use super::interval::{addrs_of, key, Dir, FlowSpec, Intervals};
use super::tcp_io::{pacer_for, pattern, FlowStats};
use super::tcp_setup::{self, apply_opts, Wake};
use super::workers::{SendPlan, Source, Workers};
use super::Outcome2;
use crate::Interrupt;

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
}

/// The request the client's headers carry.
pub(crate) fn request(cl: &Client2, c: &Common2, len: u32) -> TestRequest {
    let mode = match cl.mode {
        Mode2::Normal => Mode::Normal,
        Mode2::Reverse => Mode::Reverse,
        Mode2::FullDuplex => Mode::FullDuplex,
        Mode2::Dual => Mode::Dual {
            port: cl.listen_port.unwrap_or(c.port),
        },
        Mode2::Tradeoff => Mode::Tradeoff {
            port: cl.listen_port.unwrap_or(c.port),
        },
    };
    TestRequest {
        transport: Transport::Tcp,
        end: match cl.end {
            End2::Time(d) => TestEnd::Time(d),
            End2::Bytes(n) => TestEnd::Bytes(n),
        },
        mode,
        streams: cl.parallel.max(1),
        transfer_id: None,
        rate: rate_bps(cl.rate, len),
        rate_is_pps: false,
        buf_len: c.len,
        win_band: 0,
        tos: c.tos.unwrap_or(0),
        peer_version: None,
        wants_ack: false,
        peer_detect: cl.peer_detect,
        trip_times: false,
        trip_start: None,
        txstart: None,
        skewed_start: false,
        isochronous: false,
        isoch_settings: None,
        no_udp_fin: false,
        seq64: false,
        small_trip_times: false,
        fq_rate: None,
        write_prefetch: None,
        barrier_us: None,
        quickack: false,
        periodic_burst: false,
        l4s: false,
        cca: None,
        permit_key: c.permit_key.as_ref().map(|k| k.as_bytes().to_vec()),
    }
}

/// `-b` in bits per second; TCP packets per second are writes of `len` bytes.
fn rate_bps(r: Option<Rate2>, len: u32) -> u64 {
    match r {
        None => 0,
        Some(Rate2::Bits(b)) => b,
        Some(Rate2::Packets(n)) => n.saturating_mul(u64::from(len) * 8),
    }
}

/// Reads the header ack before `deadline`: exactly its bytes, so the data of a
/// reverse test that follows stays in the socket.
pub(crate) fn read_ack(mut s: &TcpStream, deadline: Instant) -> Result<HeaderAck, String> {
    let mut buf = Vec::with_capacity(rperf3_proto2::ACK_LEN_TIMES);
    let mut need = 8;
    loop {
        match HeaderAck::decode(&buf) {
            Ok(Some(a)) => return Ok(a),
            Ok(None) if buf.len() >= 8 => {
                need = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
            }
            Ok(None) => {}
            Err(e) => return Err(format!("ERROR: peer detect: {e}")),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("ERROR: peer detect: no header ack from the server in time".into());
        }
        s.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        let mut chunk = vec![0u8; need - buf.len()];
        match s.read(&mut chunk) {
            Ok(0) => return Err("ERROR: peer detect: server closed before its header ack".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(format!("ERROR: peer detect: {e}")),
        }
    }
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
        })
    }

    fn legacy(&self) -> bool {
        matches!(self.cl.mode, Mode2::Dual | Mode2::Tradeoff)
    }

    /// The window a fresh socket with our options has (the settings block is
    /// shown before connecting, as iperf 2 does, even when the connect fails).
    fn probe_window(&self) -> u64 {
        let a = self.addrs[0];
        let Ok(s) =
            socket2::Socket::new(socket2::Domain::for_address(a), socket2::Type::STREAM, None)
        else {
            return 0;
        };
        let _ = apply_opts(std::os::fd::AsFd::as_fd(&s), a.is_ipv6(), self.c);
        net::buffer_sizes(&s).0
    }

    fn connect(&self) -> io::Result<(TcpStream, Duration)> {
        let bind = self.c.bind.as_ref();
        let prep = |fd: std::os::fd::BorrowedFd<'_>, v6: bool| apply_opts(fd, v6, self.c);
        let t = Instant::now();
        let s = net::connect_tcp_prepared(
            &self.addrs,
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

    fn run(self, intr: &mut Interrupt) -> Result<i32, String> {
        let listener = self.listen()?;
        let mut block = tcp_setup::settings(
            rperf3_report::iperf2::model::Side2::Client,
            self.c,
            self.c.port,
            self.len,
            self.probe_window(),
        );
        block.host = Some(self.cl.host.clone());
        block.flows = self.cl.parallel.max(1);
        self.report.event(Event2::Settings(block));
        let req = request(self.cl, self.c, self.len);
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
            let (s, ct) = match self.connect() {
                Ok(x) => x,
                Err(e) => {
                    // iperf 2 reports a failed connect and exits 0.
                    self.report.event(Event2::Message(format!(
                        "[{id:>3}] tcp connect to {} port {} failed ({}) on {}",
                        self.addrs[0].ip(),
                        self.c.port,
                        os_text(&e),
                        rperf3_sys::time::strftime_now("%Y-%m-%d %H:%M:%S (%Z)")
                    )));
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
            streams.push((id, Arc::new(s), ct));
        }
        let notes: &[&str] = match self.cl.mode {
            Mode2::Reverse => &["(reverse)"],
            Mode2::FullDuplex => &["(full-duplex)"],
            _ => &[],
        };
        let dev = self.c.bind.as_ref().and_then(|b| b.device.as_deref());
        for (id, s, ct) in &streams {
            if let Ok(mut line) = tcp_setup::connection(Tag2::Id(*id), s, notes, dev) {
                line.connect_time = Some(*ct);
                self.report.event(Event2::Connected(line));
            }
        }
        self.drive(streams, sent_header, listener.as_ref(), intr)
    }

    fn listen(&self) -> Result<Option<TcpListener>, String> {
        if !self.legacy() {
            return Ok(None);
        }
        let port = self.cl.listen_port.unwrap_or(self.c.port);
        let bind = self.c.bind.as_ref().map(|b| b.host.as_str());
        let l = net::listen_tcp(None, None, port, self.c.family)
            .or_else(|_| net::listen_tcp(bind, None, port, self.c.family))
            .map_err(|e| format!("ERROR: listen on port {port} for the connection back: {e}"))?;
        let mut c = self.c.clone();
        c.window = self.c.window;
        let block = tcp_setup::listener_settings(&l, &c, port, self.len);
        self.report.event(Event2::Settings(block));
        Ok(Some(l))
    }

    fn source(&self) -> Result<Source, String> {
        Ok(match &self.cl.input {
            Input2::Pattern => Source::Pattern(Arc::new(pattern(self.len))),
            Input2::File(f) => Source::Reader(
                Box::new(std::fs::File::open(f).map_err(|e| format!("ERROR: {f}: {e}"))?),
                self.len,
            ),
            Input2::Stdin => Source::Reader(Box::new(io::stdin()), self.len),
        })
    }

    fn drive(
        &self,
        streams: Vec<(u32, Arc<TcpStream>, Duration)>,
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
        let sum = p > 1 || self.cl.mode == Mode2::Dual;
        let iv = Intervals::start(self.report.clone(), start, self.c.interval, sum);
        let wake = Wake::new().map_err(|e| e.to_string())?;
        let mut w = Workers::default();
        let sends = !matches!(self.cl.mode, Mode2::Reverse);
        let recvs = matches!(self.cl.mode, Mode2::Reverse | Mode2::FullDuplex);
        let drain = time.unwrap_or(Duration::ZERO).max(Duration::from_secs(2));
        for (id, s, _) in &streams {
            let addrs = addrs_of(s);
            if sends {
                let st = Arc::new(FlowStats::new(self.len));
                st.io.add(sent_header);
                iv.add(
                    key(*id, Dir::Send),
                    FlowSpec::of(Tag2::Id(*id), Dir::Send, &st, s, addrs),
                );
                let plan = SendPlan {
                    source: self.source()?,
                    pacer: pacer_for(
                        rate_bps(self.cl.rate, self.len),
                        start,
                        time.map(|t| start + t),
                    ),
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
                let st = Arc::new(FlowStats::new(self.len));
                let tag = Tag2::ReverseId(*id);
                iv.add(
                    key(*id, Dir::Recv),
                    FlowSpec::of(tag, Dir::Recv, &st, s, addrs),
                );
                let waker = wake.waker().map_err(|e| e.to_string())?;
                w.recv(s, self.len, &st, (iv.ender(), key(*id, Dir::Recv)), waker)
                    .map_err(|e| e.to_string())?;
            }
        }
        let server_ip = streams
            .first()
            .and_then(|s| s.1.peer_addr().ok())
            .map(|a| net::unmap(a).ip());
        let mut back = Back {
            pending: if self.cl.mode == Mode2::Dual { p } else { 0 },
            next_id: p + 1,
            due: start + BACK_GRACE,
        };
        let mut stopped = false;
        let mut aborted = false;
        loop {
            if intr.triggered() && !aborted {
                w.abort();
                aborted = true;
            }
            let now = Instant::now();
            if let (Some(t), false) = (time, stopped) {
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
                    self.accept_one(l, ip, &mut back, &iv, &wake, &mut w, intr)?;
                    continue;
                }
            }
            if w.finished() {
                break;
            }
            let limit = time
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

    /// `-d`: waits (a slice at a time) for a connection back and starts its receiver.
    #[allow(clippy::too_many_arguments)]
    fn accept_one(
        &self,
        l: &TcpListener,
        ip: std::net::IpAddr,
        back: &mut Back,
        iv: &Intervals,
        wake: &Wake,
        w: &mut Workers,
        intr: &mut Interrupt,
    ) -> Result<(), String> {
        let slice = (Instant::now() + Duration::from_millis(200)).min(back.due);
        let got =
            accept_back(l, ip, slice, &|| false, Some(intr.fd())).map_err(|e| e.to_string())?;
        match got {
            Some(s) => {
                let s = Arc::new(s);
                let id = back.next_id;
                back.next_id += 1;
                back.pending -= 1;
                if let Ok(line) = tcp_setup::connection(Tag2::Id(id), &s, &[], None) {
                    self.report.event(Event2::Connected(line));
                }
                let st = Arc::new(FlowStats::new(self.len));
                iv.add(
                    key(id, Dir::Recv),
                    FlowSpec::of(Tag2::Id(id), Dir::Recv, &st, &s, addrs_of(&s)),
                );
                let waker = wake.waker().map_err(|e| e.to_string())?;
                w.recv(&s, self.len, &st, (iv.ender(), key(id, Dir::Recv)), waker)
                    .map_err(|e| e.to_string())?;
            }
            None if Instant::now() >= back.due => {
                back.pending = 0;
                self.report.event(Event2::Message(NO_BACK.into()));
            }
            None => {}
        }
        Ok(())
    }

    /// `-r`: after the forward test, receives the server's connections back.
    fn tradeoff_back(
        &self,
        l: &TcpListener,
        ip: std::net::IpAddr,
        p: u32,
        intr: &mut Interrupt,
    ) -> Result<(), String> {
        let due = Instant::now() + BACK_GRACE;
        let wake = Wake::new().map_err(|e| e.to_string())?;
        let mut w = Workers::default();
        let mut iv = None;
        for id in p + 1..=2 * p {
            let s = match accept_back(l, ip, due, &|| false, Some(intr.fd())) {
                Ok(Some(s)) => Arc::new(s),
                _ => {
                    self.report.event(Event2::Message(NO_BACK.into()));
                    break;
                }
            };
            if let Ok(line) = tcp_setup::connection(Tag2::Id(id), &s, &[], None) {
                self.report.event(Event2::Connected(line));
            }
            let set = iv.get_or_insert_with(|| {
                Intervals::start(self.report.clone(), Instant::now(), self.c.interval, p > 1)
            });
            let st = Arc::new(FlowStats::new(self.len));
            set.add(
                key(id, Dir::Recv),
                FlowSpec::of(Tag2::Id(id), Dir::Recv, &st, &s, addrs_of(&s)),
            );
            let waker = wake.waker().map_err(|e| e.to_string())?;
            w.recv(&s, self.len, &st, (set.ender(), key(id, Dir::Recv)), waker)
                .map_err(|e| e.to_string())?;
        }
        while !w.finished() {
            if intr.triggered() {
                w.abort();
            }
            tcp_setup::wait(&[intr.fd(), wake.fd()], Some(Duration::from_millis(500)));
            wake.clear();
        }
        w.join();
        if let Some(set) = iv {
            set.finish();
        }
        Ok(())
    }
}

/// Connections back a `-d` client still expects.
struct Back {
    pending: u32,
    next_id: u32,
    due: Instant,
}

/// An OS error's text without Rust's " (os error N)" suffix, as iperf 2 prints it.
pub(crate) fn os_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_proto2::{classify_tcp, Decoded, RequestLimits, TcpStart, Timeval};
    use std::io::Write;

    fn client(mode: Mode2, end: End2) -> Client2 {
        Client2 {
            host: "127.0.0.1".into(),
            end,
            parallel: 2,
            rate: Some(Rate2::Bits(50_000_000)),
            mode,
            listen_port: Some(6001),
            compat: false,
            peer_detect: false,
            no_udp_fin: false,
            input: Input2::Pattern,
            sync_transfer_id: false,
            txstart: None,
        }
    }

    /// What our client writes is what a server (ours, by the same decoder as
    /// the spec's captures) reads back: modes, amount, rate, -P, -L.
    #[test]
    fn the_header_reads_back_as_the_request() {
        let c = Common2::default();
        let now = Timeval { sec: 1, usec: 0 };
        for (mode, want) in [
            (Mode2::Normal, Mode::Normal),
            (Mode2::Reverse, Mode::Reverse),
            (Mode2::FullDuplex, Mode::FullDuplex),
            (Mode2::Dual, Mode::Dual { port: 6001 }),
            (Mode2::Tradeoff, Mode::Tradeoff { port: 6001 }),
        ] {
            let cl = client(mode, End2::Bytes(1 << 20));
            let h = request(&cl, &c, 131072)
                .tcp_header(VERSION_2_2_1, 5001)
                .encode(Layout::V2_2_1)
                .unwrap();
            // 2.2.1's plain header is 64 bytes; flags as captured for -R and -d.
            assert_eq!(h.len(), 64);
            let Ok(Decoded::Done {
                value: TcpStart::Test(r),
                len: 64,
            }) = classify_tcp(&h, now, &RequestLimits::default())
            else {
                panic!("{mode:?}");
            };
            assert_eq!(r.mode, want);
            assert_eq!(r.end, TestEnd::Bytes(1 << 20));
            assert_eq!(r.rate, 50_000_000);
            assert_eq!(r.streams, 2);
            assert_eq!(
                r.wants_ack,
                matches!(mode, Mode2::Normal | Mode2::Dual | Mode2::Tradeoff)
            );
        }
        let h = request(
            &client(Mode2::Reverse, End2::Time(Duration::from_secs(1))),
            &c,
            8,
        )
        .tcp_header(VERSION_2_2_1, 5001)
        .encode(Layout::V2_2_1)
        .unwrap();
        assert_eq!(&h[..4], &[0x44, 0x01, 0x00, 0x80]);
        assert_eq!(&h[20..24], &[0xff, 0xff, 0xff, 0x9c]);
    }

    #[test]
    fn pps_on_tcp_is_writes_of_len_bytes() {
        assert_eq!(rate_bps(Some(Rate2::Packets(100)), 1000), 800_000);
        assert_eq!(rate_bps(None, 1000), 0);
    }

    #[test]
    fn the_ack_wait_has_an_absolute_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut srv, _) = l.accept().unwrap();
        // A trickler: one byte of the ack, then nothing.
        srv.write_all(&[0]).unwrap();
        let t = Instant::now();
        let e = read_ack(&c, t + Duration::from_millis(300)).unwrap_err();
        assert_eq!(
            e,
            "ERROR: peer detect: no header ack from the server in time"
        );
        assert!(t.elapsed() < Duration::from_secs(2));
        // A whole ack, in two pieces, with reverse data behind it left unread.
        let ack = HeaderAck {
            version: rperf3_proto2::VERSION_2_1_8,
            times: None,
        }
        .encode();
        let (c, mut srv) = {
            let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            (c, l.accept().unwrap().0)
        };
        srv.write_all(&ack[..5]).unwrap();
        srv.write_all(&ack[5..]).unwrap();
        srv.write_all(b"data").unwrap();
        let a = read_ack(&c, Instant::now() + Duration::from_secs(5)).unwrap();
        assert_eq!(a.version, rperf3_proto2::VERSION_2_1_8);
        let mut rest = [0u8; 4];
        (&c).read_exact(&mut rest).unwrap();
        assert_eq!(&rest, b"data");
    }
}

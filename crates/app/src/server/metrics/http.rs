//! The `--metrics` endpoint: `GET /metrics` over HTTP/1.x, on its own thread.
//!
//! Deliberately small: one request per connection (`Connection: close`), no
//! keep-alive, no chunking, no bodies read. A scraper that is slow or hostile
//! costs only this thread's time: every socket is non-blocking, each connection
//! has an absolute deadline from its accept, the request size is capped, and
//! at most [`MAX_CONNS`] are open at once (a new one pushes the oldest out,
//! so a flood of idle connections cannot lock a real scraper out). Tests never
//! wait for this thread; see [`super`] for what a scrape reads.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Metrics;

/// Connections served at once.
pub(crate) const MAX_CONNS: usize = 16;
/// A connection's whole life, request and response: longer ones are closed.
pub(crate) const CONN_DEADLINE: Duration = Duration::from_secs(5);
/// A request head larger than this is refused.
const MAX_REQUEST: usize = 8 * 1024;
/// The thread notices a stop request at least this often.
const STOP_CHECK: Duration = Duration::from_millis(200);
/// The exposition's media type (prometheus-client writes OpenMetrics text).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The running endpoint; dropping it stops the thread.
#[derive(Debug)]
pub(crate) struct Endpoint {
    #[cfg(test)]
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Listens on `addr` now (so a bad address fails at startup) and serves
    /// `metrics` from a new thread.
    pub(crate) fn start(addr: SocketAddr, metrics: Arc<Metrics>) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        #[cfg(test)]
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve(&listener, &metrics, &flag))?;
        Ok(Self {
            #[cfg(test)]
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    #[cfg(test)]
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One scraper's connection.
struct Conn {
    sock: TcpStream,
    deadline: Instant,
    request: Vec<u8>,
    /// The response and how much of it is written, once the request is in.
    response: Option<(Vec<u8>, usize)>,
}

/// What became of a connection after it was ready.
enum Next {
    Keep,
    Close,
}

fn serve(listener: &TcpListener, metrics: &Arc<Metrics>, stop: &AtomicBool) {
    let mut conns: Vec<Conn> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        conns.retain(|c| c.deadline > now);
        let wake = conns
            .iter()
            .map(|c| c.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(STOP_CHECK)
            .min(STOP_CHECK);
        let mut fds = vec![(listener.as_fd(), false)];
        fds.extend(conns.iter().map(|c| (c.sock.as_fd(), c.response.is_some())));
        let Ok(ready) = rperf3_sys::poll::wait_ready(&fds, wake) else {
            std::thread::sleep(STOP_CHECK);
            continue;
        };
        let mut i = 0;
        conns.retain_mut(|c| {
            i += 1;
            !ready[i] || matches!(step(c, metrics), Next::Keep)
        });
        if ready[0] {
            accept(listener, &mut conns);
        }
    }
}

fn accept(listener: &TcpListener, conns: &mut Vec<Conn>) {
    for _ in 0..MAX_CONNS {
        let Ok((sock, _)) = listener.accept() else {
            return;
        };
        if sock.set_nonblocking(true).is_err() {
            continue;
        }
        if conns.len() >= MAX_CONNS {
            conns.remove(0);
        }
        conns.push(Conn {
            sock,
            deadline: Instant::now() + CONN_DEADLINE,
            request: Vec::new(),
            response: None,
        });
    }
}

/// Reads what arrived, or writes what the socket takes.
fn step(c: &mut Conn, metrics: &Arc<Metrics>) -> Next {
    if let Some((out, done)) = &mut c.response {
        return match (&c.sock).write(&out[*done..]) {
            Ok(n) if *done + n >= out.len() => {
                let _ = c.sock.shutdown(Shutdown::Write);
                Next::Close
            }
            Ok(n) => {
                *done += n;
                Next::Keep
            }
            Err(e) if retry(&e) => Next::Keep,
            Err(_) => Next::Close,
        };
    }
    let mut buf = [0u8; 2048];
    match (&c.sock).read(&mut buf) {
        Ok(0) => return Next::Close,
        Ok(n) => c.request.extend_from_slice(&buf[..n]),
        Err(e) if retry(&e) => return Next::Keep,
        Err(_) => return Next::Close,
    }
    if !c.request.windows(4).any(|w| w == b"\r\n\r\n") {
        return if c.request.len() > MAX_REQUEST {
            Next::Close
        } else {
            Next::Keep
        };
    }
    let out = respond(&c.request, metrics);
    c.response = Some((out, 0));
    // Most responses fit the socket buffer: written now, without another poll.
    step(c, metrics)
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// The whole response to a request head.
fn respond(head: &[u8], metrics: &Arc<Metrics>) -> Vec<u8> {
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|b| *b == b' ');
    let (method, target) = (words.next(), words.next());
    let path = target.map(|t| t.split(|b| *b == b'?').next().unwrap_or_default());
    let (status, ctype, body) = if method == Some(b"GET") && path == Some(b"/metrics") {
        ("200 OK", CONTENT_TYPE, metrics.encode())
    } else {
        (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: try GET /metrics\n".to_string(),
        )
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

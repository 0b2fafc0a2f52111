//! `--rpm-http`: the responsiveness endpoints over HTTP/2 and TLS 1.3, beside
//! the iperf3 port, on a runtime of their own.
//!
//! Each connection has absolute deadlines ([`Limits`]): its TLS handshake, its
//! first request, a spell without any open stream, a stream that moves nothing,
//! and its whole life. A client address's connections are one visit, one test
//! slot of the host's ([`Gate`]); a visitor the host refuses is answered 429
//! with `Retry-After`.

mod conn;
mod respond;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{oneshot, watch};
use tokio_rustls::TlsAcceptor;

use crate::tls::{self, CertSource};
use crate::visitors::{Join, Visitors};

/// How the host admits visitors (the server's test slots).
pub trait Gate: Send + Sync + 'static {
    /// A new visitor from `ip`; `answer` gets its test number or `None` (busy).
    fn arrive(&self, ip: IpAddr, answer: Box<dyn FnOnce(Option<u64>) + Send>);
    /// Test `id`'s visit ended after moving these bytes (server's view).
    fn left(&self, id: u64, received: u64, sent: u64);
}

impl Gate for rperf3_app::TestGate {
    fn arrive(&self, ip: IpAddr, answer: Box<dyn FnOnce(Option<u64>) + Send>) {
        Self::arrive(self, ip, answer);
    }

    fn left(&self, id: u64, received: u64, sent: u64) {
        Self::left(self, id, received, sent);
    }
}

/// Every deadline a connection lives by. Each is absolute: bytes trickling in
/// do not move it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// From accept to a finished TLS handshake.
    pub handshake: Duration,
    /// From accept to the first request's headers.
    pub first_request: Duration,
    /// With no stream open, until the next request's headers.
    pub idle: Duration,
    /// A download the client stops reading, or an upload that stops coming.
    pub stall: Duration,
    /// A connection's whole life, however busy (the longest test).
    pub life: Duration,
    /// Connections open at once; more are closed at accept.
    pub max_conns: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            handshake: Duration::from_secs(10),
            first_request: Duration::from_secs(10),
            // Clients leave each foreign probe's connection open (goresponsiveness
            // makes up to 100 a second): closed soon after its last answer.
            idle: Duration::from_secs(2),
            stall: Duration::from_secs(10),
            life: Duration::from_secs(300),
            max_conns: 2048,
        }
    }
}

/// What `--rpm-http` was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The address to serve on.
    pub addr: SocketAddr,
    /// The certificate.
    pub cert: CertSource,
    /// The deadlines.
    pub limits: Limits,
}

/// How often finished visits are looked for.
const EXPIRE_EVERY: Duration = Duration::from_millis(250);
/// Runtime threads: TLS and HTTP/2 framing of a few loaded connections.
const WORKERS: usize = 2;

/// Where the server's notes go (a hostile or broken client, a full server):
/// one line each, without a newline.
pub type Notes = Arc<dyn Fn(String) + Send + Sync>;

/// What the connections share.
struct Ctx {
    notes: Notes,
    acceptor: TlsAcceptor,
    limits: Limits,
    gate: Arc<dyn Gate>,
    visitors: Mutex<Visitors<oneshot::Sender<Option<u64>>>>,
    conns: AtomicUsize,
    local: SocketAddr,
}

impl Ctx {
    fn note(&self, line: String) {
        (self.notes)(line);
    }

    fn visitors(&self) -> MutexGuard<'_, Visitors<oneshot::Sender<Option<u64>>>> {
        self.visitors.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Bytes a connection moved, the server's view.
#[derive(Default)]
struct Moved {
    received: AtomicU64,
    sent: AtomicU64,
}

/// The running server: it serves until dropped.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its certificate's SHA-256.
    pub fingerprint: String,
    stop: watch::Sender<bool>,
    ctx: Arc<Ctx>,
    rt: Option<Runtime>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
        let ended = self.ctx.visitors().end_all();
        for e in ended {
            self.ctx.gate.left(e.id, e.received, e.sent);
        }
    }
}

/// Binds `opts.addr` and serves there, admitting visitors through `gate`;
/// what goes wrong with a client is said through `notes`.
pub fn start(opts: &Options, gate: Arc<dyn Gate>, notes: Notes) -> io::Result<Running> {
    let t = tls::server(&opts.cert)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .thread_name("rpm-http")
        .enable_all()
        .build()?;
    let std_listener = std::net::TcpListener::bind(opts.addr)?;
    std_listener.set_nonblocking(true)?;
    let local = std_listener.local_addr()?;
    let listener = {
        let _in = rt.enter();
        tokio::net::TcpListener::from_std(std_listener)?
    };
    let ctx = Arc::new(Ctx {
        notes,
        acceptor: TlsAcceptor::from(t.config),
        limits: opts.limits,
        gate,
        visitors: Mutex::new(Visitors::new()),
        conns: AtomicUsize::new(0),
        local,
    });
    let (stop, stopped) = watch::channel(false);
    rt.spawn(accept_loop(listener, ctx.clone(), stopped.clone()));
    rt.spawn(expire_loop(ctx.clone(), stopped));
    Ok(Running {
        addr: local,
        fingerprint: t.fingerprint,
        stop,
        ctx,
        rt: Some(rt),
    })
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    ctx: Arc<Ctx>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut warned_full = None::<tokio::time::Instant>;
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stopped.changed() => return,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors and the like: pause rather than spin.
                ctx.note(format!("accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if ctx.conns.load(Ordering::Relaxed) >= ctx.limits.max_conns {
            let now = tokio::time::Instant::now();
            if warned_full.is_none_or(|t| now - t >= Duration::from_secs(1)) {
                warned_full = Some(now);
                ctx.note(format!(
                    "{peer}: closed at once: {} connections are open already",
                    ctx.limits.max_conns
                ));
            }
            continue;
        }
        ctx.conns.fetch_add(1, Ordering::Relaxed);
        let c = ctx.clone();
        tokio::spawn(async move {
            conn::serve(&c, tcp, peer).await;
            c.conns.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

async fn expire_loop(ctx: Arc<Ctx>, mut stopped: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(EXPIRE_EVERY);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopped.changed() => return,
        }
        let ended = ctx.visitors().expire(std::time::Instant::now());
        for e in ended {
            ctx.gate.left(e.id, e.received, e.sent);
        }
    }
}

/// Waits for the host's answer for a connection from `ip`: its visit's test
/// number, or `None` (busy, or no answer within `limit`).
async fn admit(ctx: &Arc<Ctx>, ip: IpAddr, limit: tokio::time::Instant) -> Option<u64> {
    let (tx, rx) = oneshot::channel();
    let join = ctx.visitors().join(ip, tx, std::time::Instant::now());
    match join {
        Join::Now(a) => return a,
        Join::Wait => {}
        Join::Ask => {
            let c = ctx.clone();
            ctx.gate.arrive(
                ip,
                Box::new(move |answer| {
                    let waiters = c.visitors().answered(ip, answer, std::time::Instant::now());
                    for w in waiters {
                        // A connection that gave up waiting still counted as
                        // one of the visit's: it leaves at once.
                        if w.send(answer).is_err() && answer.is_some() {
                            c.visitors().left(ip, 0, 0, std::time::Instant::now());
                        }
                    }
                }),
            );
        }
    }
    tokio::time::timeout_at(limit, rx)
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
}

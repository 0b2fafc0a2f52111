//! One HTTP/2 connection to the server: TCP, TLS and the HTTP/2 preface, with
//! the time each handshake took (a foreign probe's `tcp_f` and `tls_f`), and
//! requests on it timed from sending to the answer's last byte.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request, StatusCode};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::target::Target;
use crate::tls;

/// HTTP/2 stream window for downloads: a path's bandwidth-delay product with
/// a full queue must fit (100 Mbit/s x 300 ms is 3.75 MB).
const STREAM_WINDOW: u32 = 8 << 20;
/// The connection's window.
const CONN_WINDOW: u32 = 32 << 20;
/// Unsent bytes the kernel may hold per connection, and what one stream may
/// queue in HTTP/2: a self probe on an upload's connection waits behind this
/// much of the client's own data, not behind a send buffer of megabytes, so
/// it times the path's queue (the server keeps as little, `server/conn.rs`).
const NOTSENT_LOWAT: usize = 16 * 1024;
const SEND_BUFFER: usize = 64 * 1024;

/// What connecting took.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handshakes {
    /// `connect()` to established.
    pub(crate) tcp: Duration,
    /// The TLS handshake (one round trip in TLS 1.3).
    pub(crate) tls: Duration,
}

/// An open connection: requests go through `send`; `sock` is a second
/// descriptor of its socket, for TCP_INFO.
pub(crate) struct Conn {
    pub(crate) send: SendRequest<Bytes>,
    pub(crate) sock: OwnedFd,
    pub(crate) times: Handshakes,
}

/// How to reach the server.
#[derive(Clone)]
pub(crate) struct Dialer {
    pub(crate) addr: SocketAddr,
    pub(crate) name: rustls::pki_types::ServerName<'static>,
    pub(crate) tls: TlsConnector,
}

impl Dialer {
    /// For `target`'s host (resolved once: every connection goes to the same
    /// address), checking certificates unless `insecure`.
    pub(crate) async fn new(target: &Target, insecure: bool) -> io::Result<Self> {
        let addr = tokio::net::lookup_host((target.host.as_str(), target.port))
            .await?
            .next()
            .ok_or_else(|| io::Error::other(format!("{}: no address", target.host)))?;
        Ok(Self {
            addr,
            name: tls::server_name(&target.host)?,
            tls: TlsConnector::from(tls::client(insecure)?),
        })
    }

    /// A new connection, its HTTP/2 layer driven by a task of its own.
    pub(crate) async fn connect(&self) -> io::Result<Conn> {
        let t0 = Instant::now();
        let tcp = TcpStream::connect(self.addr).await?;
        let t1 = Instant::now();
        let _ = tcp.set_nodelay(true);
        let _ = rperf3_sys::sockopt::set_notsent_lowat(&tcp, NOTSENT_LOWAT);
        let sock = tcp.as_fd().try_clone_to_owned()?;
        let tls = self
            .tls
            .connect(self.name.clone(), tcp)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("TLS: {e}")))?;
        let t2 = Instant::now();
        if tls.get_ref().1.alpn_protocol() != Some(tls::H2) {
            return Err(io::Error::other(
                "the server does not speak HTTP/2 (ALPN h2)",
            ));
        }
        let (send, conn) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONN_WINDOW)
            .max_send_buffer_size(SEND_BUFFER)
            .handshake::<_, Bytes>(tls)
            .await
            .map_err(h2_error)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn {
            send,
            sock,
            times: Handshakes {
                tcp: t1 - t0,
                tls: t2 - t1,
            },
        })
    }
}

/// An HTTP/2 error as an I/O error.
pub(crate) fn h2_error(e: h2::Error) -> io::Error {
    match e.into_io() {
        Some(io) => io,
        None => io::Error::other("HTTP/2 error"),
    }
}

/// GETs `target` on `send`: the body, and the time from sending the request
/// to its last byte. A status other than 200 is an error.
pub(crate) async fn get(
    send: &SendRequest<Bytes>,
    target: &Target,
) -> io::Result<(Bytes, Duration)> {
    let mut send = send.clone().ready().await.map_err(h2_error)?;
    let req = Request::builder()
        .method(Method::GET)
        .uri(target.uri.clone())
        .body(())
        .map_err(io::Error::other)?;
    let t0 = Instant::now();
    let (answer, _) = send.send_request(req, true).map_err(h2_error)?;
    let resp = answer.await.map_err(h2_error)?;
    let status = resp.status();
    let mut body = resp.into_body();
    let mut all = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(h2_error)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    let took = t0.elapsed();
    if status != StatusCode::OK {
        return Err(io::Error::other(status_text(status, &resp_retry(&all))));
    }
    Ok((Bytes::from(all), took))
}

fn resp_retry(body: &[u8]) -> String {
    String::from_utf8_lossy(body).trim().to_string()
}

/// What a refusal says.
fn status_text(status: StatusCode, body: &str) -> String {
    let mut s = format!("the server answered {status}");
    if !body.is_empty() {
        s.push_str(&format!(" ({body})"));
    }
    s
}

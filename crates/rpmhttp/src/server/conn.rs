//! One connection: TLS, the visit's admission, HTTP/2, and its streams, each
//! step on its deadline.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, timeout_at, Instant};
use tokio_rustls::server::TlsStream;

use super::{admit, respond, Ctx, Moved};
use crate::tls::HTTP11;

/// Unsent bytes the kernel may hold per connection: the rest waits in the
/// HTTP/2 queue, where a probe's answer can still go ahead of the load.
const NOTSENT_LOWAT: usize = 16 * 1024;
/// HTTP/2 stream window for uploads: about what the reference's nginx
/// buffers (`client_body_buffer_size 1m`). A client counts an upload's
/// bytes as it writes them, and a wider window lets that count run ahead of
/// the wire (goresponsiveness read 104-111 Mbit/s through a 100 Mbit/s link
/// with 8 MB); at 1 MB a connection still carries 53 Mbit/s over 150 ms, and
/// the method runs several.
const STREAM_WINDOW: u32 = 1 << 20;
/// The connection's window: each connection carries one upload.
const CONN_WINDOW: u32 = 2 << 20;
/// What one stream may queue in HTTP/2 beyond the socket: small, so that a
/// probe's answer waits behind little.
const SEND_BUFFER: usize = 64 * 1024;
/// Streams open at once on a connection.
const MAX_STREAMS: u32 = 128;
/// Request headers larger than this end the stream.
const MAX_HEADERS: u32 = 16 * 1024;

/// Serves `tcp` from `peer` until the client leaves or a deadline passes.
pub(super) async fn serve(ctx: &Arc<Ctx>, tcp: TcpStream, peer: SocketAddr) {
    let start = Instant::now();
    let _ = tcp.set_nodelay(true);
    let _ = rperf3_sys::sockopt::set_notsent_lowat(&tcp, NOTSENT_LOWAT);
    let tls = match timeout_at(start + ctx.limits.handshake, ctx.acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        // A client that left mid-handshake (a probe its client gave up on).
        Ok(Err(e)) if gone(&e) => {
            log::debug!("rpm-http: {peer}: left during the TLS handshake: {e}");
            return;
        }
        Ok(Err(e)) => {
            ctx.note(format!("{peer}: TLS handshake failed: {e}"));
            return;
        }
        Err(_) => {
            ctx.note(format!(
                "{peer}: no TLS handshake within {} s; closed",
                ctx.limits.handshake.as_secs()
            ));
            return;
        }
    };
    if tls.get_ref().1.alpn_protocol() == Some(HTTP11) {
        refuse_http1(tls, start + ctx.limits.handshake).await;
        ctx.note(format!("{peer}: an HTTP/1.1 client refused (HTTP/2 only)"));
        return;
    }
    let ip = peer.ip();
    let admitted = admit(ctx, ip, start + ctx.limits.handshake).await;
    let moved = Arc::new(Moved::default());
    run_h2(ctx, tls, peer, start, admitted, &moved).await;
    if admitted.is_some() {
        ctx.visitors().left(
            ip,
            moved.received.load(Ordering::Relaxed),
            moved.sent.load(Ordering::Relaxed),
            std::time::Instant::now(),
        );
    }
}

fn gone(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    matches!(
        e.kind(),
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
    )
}

/// An HTTP/1.1-only client: told plainly that this server speaks HTTP/2.
async fn refuse_http1(mut tls: TlsStream<TcpStream>, by: Instant) {
    const BODY: &str = "this server speaks HTTP/2 only\n";
    let answer = format!(
        "HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = timeout_at(by, async {
        tls.write_all(answer.as_bytes()).await?;
        tls.shutdown().await
    })
    .await;
}

fn builder() -> h2::server::Builder {
    let mut b = h2::server::Builder::new();
    b.initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONN_WINDOW)
        .max_send_buffer_size(SEND_BUFFER)
        .max_concurrent_streams(MAX_STREAMS)
        .max_header_list_size(MAX_HEADERS);
    b
}

/// Why a connection's stream loop ended.
enum End {
    /// The client closed or went away.
    Client,
    /// A deadline passed.
    Deadline(&'static str),
    /// The HTTP/2 layer failed.
    Error(h2::Error),
}

async fn run_h2(
    ctx: &Arc<Ctx>,
    tls: TlsStream<TcpStream>,
    peer: SocketAddr,
    start: Instant,
    admitted: Option<u64>,
    moved: &Arc<Moved>,
) {
    let l = ctx.limits;
    let life_end = start + l.life;
    let mut conn = match timeout_at(start + l.first_request, builder().handshake(tls)).await {
        Ok(Ok(c)) => c,
        // A client that left before saying anything (a probe its client gave
        // up on once its handshake was done; goresponsiveness does at its end).
        Ok(Err(e)) if e.get_io().is_some_and(gone) => {
            log::debug!("rpm-http: {peer}: left before its HTTP/2 preface: {e}");
            return;
        }
        Ok(Err(e)) => {
            ctx.note(format!("{peer}: not HTTP/2: {e}"));
            return;
        }
        Err(_) => {
            ctx.note(format!(
                "{peer}: no HTTP/2 preface within {} s; closed",
                l.first_request.as_secs()
            ));
            return;
        }
    };
    let mut tasks = JoinSet::new();
    // With no stream open, the next request must come by this instant.
    let mut quiet_until = start + l.first_request;
    let mut refused_once = false;
    let mut asked = false;
    let end = loop {
        let (deadline, why) = if tasks.is_empty() && quiet_until < life_end {
            (quiet_until, "no request")
        } else {
            (life_end, "its life")
        };
        tokio::select! {
            r = conn.accept() => match r {
                None => break End::Client,
                Some(Err(e)) if e.is_io() || e.is_go_away() || e.is_reset() => break End::Client,
                Some(Err(e)) => break End::Error(e),
                Some(Ok((req, send))) => {
                    asked = true;
                    let c = ctx.clone();
                    let m = moved.clone();
                    tasks.spawn(async move {
                        respond::answer(&c, req, send, admitted, &m, peer).await;
                    });
                    if admitted.is_none() && !refused_once {
                        // Busy: this answer is the last; the client may come back.
                        refused_once = true;
                        conn.graceful_shutdown();
                    }
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {
                if tasks.is_empty() {
                    quiet_until = Instant::now() + l.idle;
                }
            }
            _ = sleep_until(deadline) => break End::Deadline(why),
        }
    };
    tasks.abort_all();
    match end {
        End::Client => {}
        // A client may keep an idle connection open; only one that never
        // asked for anything is worth a line.
        End::Deadline("no request") if !asked => ctx.note(format!(
            "{peer}: no request within {} s; closed",
            l.first_request.as_secs()
        )),
        End::Deadline("no request") => {
            log::debug!("rpm-http: {peer}: idle for {} s; closed", l.idle.as_secs());
        }
        End::Deadline(_) => ctx.note(format!(
            "{peer}: open for {} s, the longest a connection may be; closed",
            l.life.as_secs()
        )),
        End::Error(e) => ctx.note(format!("{peer}: HTTP/2 error: {e}")),
    }
}

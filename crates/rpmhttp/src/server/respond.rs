//! The answer to one request: the config, `small`, an endless `large`, the
//! upload sink, or why not (404, 405, 429).

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use http::{Method, Request, Response, StatusCode};
use tokio::time::timeout;

use super::{Ctx, Moved};
use crate::endpoints::{self, Endpoint};
use crate::visitors::REFUSAL_HOLD;

/// What `large` sends per write: capacity is asked for this much at a time.
const CHUNK: usize = 64 * 1024;
/// `large`'s content: no file behind it, nothing to compress (no encoding is
/// offered anyway).
static ZEROS: [u8; CHUNK] = [0; CHUNK];

fn head(status: StatusCode, kind: &str) -> http::response::Builder {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, kind)
        .header(CACHE_CONTROL, "no-store")
}

/// Sends a whole small answer.
fn whole(
    mut send: SendResponse<Bytes>,
    resp: http::response::Builder,
    body: Bytes,
    with_body: bool,
) {
    let resp = resp
        .header(CONTENT_LENGTH, body.len())
        .body(())
        .unwrap_or_default();
    let empty = body.is_empty() || !with_body;
    if let Ok(mut s) = send.send_response(resp, empty) {
        if !empty {
            let _ = s.send_data(body, true);
        }
    }
}

/// Answers `req` on its stream.
pub(super) async fn answer(
    ctx: &Arc<Ctx>,
    req: Request<RecvStream>,
    send: SendResponse<Bytes>,
    admitted: Option<u64>,
    moved: &Arc<Moved>,
    peer: SocketAddr,
) {
    if admitted.is_none() {
        let r = head(StatusCode::TOO_MANY_REQUESTS, "text/plain")
            .header(RETRY_AFTER, REFUSAL_HOLD.as_secs().max(1));
        whole(
            send,
            r,
            Bytes::from_static(b"busy: every test slot is taken\n"),
            true,
        );
        return;
    }
    let ep = endpoints::route(req.uri().path());
    let method = req.method().clone();
    if !endpoints::allows(ep, method.as_str()) {
        let allow = if ep == Endpoint::Upload {
            "POST, PUT"
        } else {
            "GET, HEAD"
        };
        let r = head(StatusCode::METHOD_NOT_ALLOWED, "text/plain").header(ALLOW, allow);
        whole(send, r, Bytes::new(), false);
        return;
    }
    let with_body = method != Method::HEAD;
    match ep {
        Endpoint::Config => {
            let authority = req
                .uri()
                .authority()
                .map_or_else(|| ctx.local.to_string(), ToString::to_string);
            let doc = Bytes::from(endpoints::config_json(&authority));
            whole(
                send,
                head(StatusCode::OK, "application/json"),
                doc,
                with_body,
            );
        }
        Endpoint::Small => {
            let r = head(StatusCode::OK, "application/octet-stream");
            whole(send, r, Bytes::from_static(b"x"), with_body);
        }
        Endpoint::Large => large(ctx, send, with_body, moved, peer).await,
        Endpoint::Upload => sink(ctx, req.into_body(), send, moved, peer).await,
        Endpoint::NotFound => {
            whole(
                send,
                head(StatusCode::NOT_FOUND, "text/plain"),
                Bytes::new(),
                false,
            );
        }
    }
}

/// `large`: zeros for as long as the client reads them. A client that stops
/// reading for the stall limit has its stream reset.
async fn large(
    ctx: &Arc<Ctx>,
    mut send: SendResponse<Bytes>,
    with_body: bool,
    moved: &Arc<Moved>,
    peer: SocketAddr,
) {
    let resp = head(StatusCode::OK, "application/octet-stream")
        .body(())
        .unwrap_or_default();
    let Ok(mut out) = send.send_response(resp, !with_body) else {
        return;
    };
    if !with_body {
        return;
    }
    let all = Bytes::from_static(&ZEROS);
    loop {
        out.reserve_capacity(CHUNK);
        match timeout(ctx.limits.stall, capacity(&mut out)).await {
            Err(_) => {
                ctx.note(format!(
                    "{peer}: read nothing of large for {} s; stream reset",
                    ctx.limits.stall.as_secs()
                ));
                out.send_reset(Reason::CANCEL);
                return;
            }
            // The client reset the stream or closed the connection: its download is over.
            Ok(None) => return,
            Ok(Some(n)) => {
                let n = n.min(CHUNK);
                if out.send_data(all.slice(..n), false).is_err() {
                    return;
                }
                moved.sent.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
}

/// Capacity to send, once there is some; `None` once the stream is gone.
async fn capacity(out: &mut SendStream<Bytes>) -> Option<usize> {
    loop {
        match poll_fn(|cx| out.poll_capacity(cx)).await {
            Some(Ok(0)) => continue,
            Some(Ok(n)) => return Some(n),
            _ => return None,
        }
    }
}

/// The upload sink: reads and discards until the body ends (then 200), the
/// client resets it, or nothing comes for the stall limit.
async fn sink(
    ctx: &Arc<Ctx>,
    mut body: RecvStream,
    mut send: SendResponse<Bytes>,
    moved: &Arc<Moved>,
    peer: SocketAddr,
) {
    loop {
        match timeout(ctx.limits.stall, body.data()).await {
            Err(_) => {
                ctx.note(format!(
                    "{peer}: sent nothing of its upload for {} s; stream reset",
                    ctx.limits.stall.as_secs()
                ));
                send.send_reset(Reason::CANCEL);
                return;
            }
            Ok(None) => break,
            Ok(Some(Err(_))) => return,
            Ok(Some(Ok(b))) => {
                moved.received.fetch_add(b.len() as u64, Ordering::Relaxed);
                let _ = body.flow_control().release_capacity(b.len());
            }
        }
    }
    whole(
        send,
        head(StatusCode::OK, "text/plain"),
        Bytes::new(),
        false,
    );
}

//! The load: each connection one endless download of `large` or one endless
//! upload to the sink, as the method asks. Downloads count the body bytes
//! they read; uploads count what the server's TCP acknowledged (TCP_INFO's
//! `bytes_acked`: what the HTTP/2 layer hands the socket may still wait in
//! its buffer, and an upload has no other receipt).

use std::future::poll_fn;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request};

use super::conn::h2_error;
use super::target::Target;

/// What an upload sends per write.
const CHUNK: usize = 64 * 1024;
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// The stage's load, shared by its tasks and the loop.
#[derive(Default)]
pub(crate) struct Tally {
    /// Body bytes downloaded since the last interval.
    pub(crate) down: AtomicU64,
    /// Upload sockets and what each had acknowledged at the last interval.
    uploads: Mutex<Vec<(OwnedFd, u64)>>,
    /// The first failure of a load connection.
    failure: Mutex<Option<io::Error>>,
    /// The loaded connections, for self probes.
    pub(crate) loaded: Mutex<Vec<SendRequest<Bytes>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tally {
    /// Bytes down and up since the last call.
    pub(crate) fn take(&self) -> (u64, u64) {
        let down = self.down.swap(0, Ordering::Relaxed);
        let mut up = 0;
        for (sock, last) in lock(&self.uploads).iter_mut() {
            if let Some(i) = rperf3_sys::tcp_info::tcp_info(sock) {
                up += i.bytes_acked.saturating_sub(*last);
                *last = i.bytes_acked;
            }
        }
        (down, up)
    }

    /// Why a load connection failed, if one did.
    pub(crate) fn failure(&self) -> Option<io::Error> {
        lock(&self.failure)
            .as_ref()
            .map(|e| io::Error::new(e.kind(), e.to_string()))
    }

    pub(crate) fn fail(&self, e: io::Error) {
        lock(&self.failure).get_or_insert(e);
    }

    pub(crate) fn add_loaded(&self, send: SendRequest<Bytes>) {
        lock(&self.loaded).push(send);
    }

    /// The `n`th loaded connection (round robin), if any.
    pub(crate) fn loaded(&self, n: usize) -> Option<SendRequest<Bytes>> {
        let l = lock(&self.loaded);
        (!l.is_empty()).then(|| l[n % l.len()].clone())
    }

    /// An upload's socket: its acknowledged bytes count from now.
    pub(crate) fn add_upload(&self, sock: OwnedFd) {
        let now = rperf3_sys::tcp_info::tcp_info(&sock).map_or(0, |i| i.bytes_acked);
        lock(&self.uploads).push((sock, now));
    }
}

/// Reads `large` until the stage ends (the task is dropped) or it fails.
pub(crate) async fn download(
    send: SendRequest<Bytes>,
    large: &Target,
    tally: &Tally,
) -> io::Result<()> {
    let mut send = send.ready().await.map_err(h2_error)?;
    let req = Request::builder()
        .method(Method::GET)
        .uri(large.uri.clone())
        .body(())
        .map_err(io::Error::other)?;
    let (answer, _) = send.send_request(req, true).map_err(h2_error)?;
    let resp = answer.await.map_err(h2_error)?;
    if !resp.status().is_success() {
        return Err(io::Error::other(format!(
            "the server answered {} to the download",
            resp.status()
        )));
    }
    let mut body = resp.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(h2_error)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        tally.down.fetch_add(chunk.len() as u64, Ordering::Relaxed);
    }
    Err(io::Error::other("the server ended the download"))
}

/// Posts zeros to the sink until the stage ends or it fails.
pub(crate) async fn upload(send: SendRequest<Bytes>, sink: &Target) -> io::Result<()> {
    let mut send = send.ready().await.map_err(h2_error)?;
    let req = Request::builder()
        .method(Method::POST)
        .uri(sink.uri.clone())
        .header(http::header::CONTENT_TYPE, "application/octet-stream")
        .body(())
        .map_err(io::Error::other)?;
    let (_answer, mut out) = send.send_request(req, false).map_err(h2_error)?;
    let all = Bytes::from_static(&ZEROS);
    loop {
        out.reserve_capacity(CHUNK);
        let n = match poll_fn(|cx| out.poll_capacity(cx)).await {
            Some(Ok(n)) => n,
            Some(Err(e)) => return Err(h2_error(e)),
            None => return Err(io::Error::other("the server ended the upload")),
        };
        if n > 0 {
            out.send_data(all.slice(..n.min(CHUNK)), false)
                .map_err(h2_error)?;
        }
    }
}

//! The load: each connection one endless download of `large` or one endless
//! upload to the sink, as the method asks. Both count at the socket, what
//! crossed the path: downloads what their TCP received (TCP_INFO's
//! `bytes_received`: the body bytes a busy client has not read yet arrived
//! all the same, and counting them when read put a stall's backlog into the
//! next interval, up to 1.9% over what the link carries in a 10 s stage),
//! uploads what the server's TCP acknowledged (`bytes_acked`: what the
//! HTTP/2 layer hands the socket may still wait in its buffer). Both include
//! TLS and HTTP/2 framing, about 0.2% of a 16 KB record.

use std::future::poll_fn;
use std::io;
use std::os::fd::OwnedFd;
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
    /// Download sockets and what each had received at the last interval.
    downloads: Mutex<Vec<(OwnedFd, u64)>>,
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
        let down = take_counts(&self.downloads, |i| i.bytes_received);
        let up = take_counts(&self.uploads, |i| i.bytes_acked);
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
        add_count(&self.uploads, sock, |i| i.bytes_acked);
    }

    /// A download's socket: its received bytes count from now.
    pub(crate) fn add_download(&self, sock: OwnedFd) {
        add_count(&self.downloads, sock, |i| i.bytes_received);
    }
}

type Counter = fn(&rperf3_sys::tcp_info::TcpInfo) -> u64;

fn add_count(socks: &Mutex<Vec<(OwnedFd, u64)>>, sock: OwnedFd, count: Counter) {
    let now = rperf3_sys::tcp_info::tcp_info(&sock).map_or(0, |i| count(&i));
    lock(socks).push((sock, now));
}

/// What the sockets' counters moved since the last call.
fn take_counts(socks: &Mutex<Vec<(OwnedFd, u64)>>, count: Counter) -> u64 {
    let mut moved = 0;
    for (sock, last) in lock(socks).iter_mut() {
        if let Some(i) = rperf3_sys::tcp_info::tcp_info(sock) {
            let now = count(&i);
            moved += now.saturating_sub(*last);
            *last = now.max(*last);
        }
    }
    moved
}

/// Reads `large` until the stage ends (the task is dropped) or it fails.
pub(crate) async fn download(send: SendRequest<Bytes>, large: &Target) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    use super::Tally;

    /// A download counts what its socket received, read or not: a client
    /// that stalls must not carry the backlog into a later interval.
    #[test]
    fn a_download_counts_what_arrived_before_it_is_read() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        let tally = Tally::default();
        server.write_all(&[7; 1000]).unwrap();
        // Bytes before the download is counted are not its.
        let mut got = [0; 1000];
        client.read_exact(&mut got).unwrap();
        tally.add_download(client.as_fd().try_clone_to_owned().unwrap());
        server.write_all(&[7; 50_000]).unwrap();
        server.flush().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut down = 0;
        while down < 50_000 && std::time::Instant::now() < deadline {
            down += tally.take().0;
            std::thread::yield_now();
        }
        // Nothing was read from the socket: the count is the kernel's.
        assert_eq!(down, 50_000, "received bytes counted");
        assert_eq!(tally.take(), (0, 0));
    }
}

//! TCP stream loops for `-F`: a sender sends a file's contents instead of the
//! random block and stops at its end; a receiver stores what arrives in a file.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use crate::control::RunControl;
use crate::counters::StreamCounters;
use crate::pacing::Pacer;
use rperf3_sys::zerocopy::send_file;

/// Sends `file` from its start in blocks of `blksize` with sendfile (no copy
/// through user space), until its end, the budget is used up, or stopped. Each
/// stream keeps its own offset, so parallel streams each send the file.
pub fn send_loop(
    sock: &TcpStream,
    file: &File,
    blksize: usize,
    pacer: Option<Pacer>,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    let start = Instant::now();
    let mut offset: u64 = 0;
    let mut sent: u64 = 0;
    while !ctl.stopped() {
        if let Some(w) = pacer.and_then(|p| p.wait(sent, start.elapsed())) {
            ctl.nap(w);
            continue;
        }
        let want = match ctl.budget() {
            Some(b) => b.claim(blksize),
            None => blksize,
        };
        if want == 0 {
            break;
        }
        let mut done = 0;
        while done < want {
            match send_file(sock, file, &mut offset, want - done) {
                // The end of the file ends this stream.
                Ok(0) => {
                    counters.add(done as u64);
                    finish(sock, ctl);
                    return Ok(());
                }
                Ok(k) => done += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        sent += done as u64;
        counters.add(done as u64);
    }
    finish(sock, ctl);
    Ok(())
}

/// Ends a finished sender's stream: the peer must have the tail and see it.
/// An iperf3 receiver reads whole blocks with a blocking read, so a tail
/// shorter than its block stays in its socket until the stream ends: our FIN
/// completes that read before the test ends.
fn finish(sock: &TcpStream, ctl: &RunControl) {
    wait_acked(sock, ctl);
    // A failure here means the stream is already gone: nothing to complete.
    let _ = sock.shutdown(Shutdown::Write);
    if !ctl.stopped() {
        std::thread::sleep(READ_LINGER);
    }
}

/// Waits (at most [`DRAIN_LIMIT`]) until the peer has acknowledged every byte:
/// a finished sender ends the test, and an iperf3 receiver stops reading at the
/// test's end, so the file's tail must have arrived by then.
fn wait_acked(sock: &TcpStream, ctl: &RunControl) {
    let deadline = Instant::now() + DRAIN_LIMIT;
    while !ctl.stopped() && Instant::now() < deadline {
        match rperf3_sys::tcp_info::tcp_info(sock) {
            Some(i) if i.unacked > 0 || i.notsent_bytes > 0 => {
                std::thread::sleep(Duration::from_millis(1))
            }
            _ => return,
        }
    }
}

/// How long a finished file sender leaves the peer to read and store the
/// acknowledged tail before the test ends (an iperf3 receiver stops reading then).
const READ_LINGER: Duration = Duration::from_millis(200);

/// How long a storing receiver goes on reading once the test is stopped: the
/// peer ends the test when its last block is written, not when it has arrived.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// A pause in arrivals this long after the stop means the file is complete.
const DRAIN_QUIET: Duration = Duration::from_millis(100);

/// Reads, counts and appends what arrives to `file` until the peer closes or
/// the socket is shut down; once stopped, until the stream is quiet for
/// [`DRAIN_QUIET`] (at most [`DRAIN_LIMIT`]), so bytes still in flight are stored.
pub fn recv_loop(
    mut sock: &TcpStream,
    file: &File,
    blksize: usize,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    let mut buf = vec![0u8; blksize.max(1)];
    let mut out = file;
    // A receive timeout lets the loop see the stop flag while data is quiet.
    sock.set_read_timeout(Some(DRAIN_QUIET))?;
    let mut drain_end: Option<Instant> = None;
    loop {
        if ctl.stopped() {
            let end = *drain_end.get_or_insert_with(|| Instant::now() + DRAIN_LIMIT);
            if Instant::now() >= end {
                return Ok(());
            }
        }
        match sock.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                out.write_all(&buf[..n])?;
                counters.add(n as u64);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if ctl.stopped() {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::Arc;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("rperf3-file-{}-{name}", std::process::id()))
    }

    #[test]
    fn the_file_arrives_intact_and_its_end_stops_the_sender() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let data: Vec<u8> = (0..300_001u32).map(|i| (i * 7 % 251) as u8).collect();
        let (src, dst) = (temp("src"), temp("dst"));
        std::fs::write(&src, &data).unwrap();
        let out = File::create(&dst).unwrap();
        let rc = Arc::new(StreamCounters::default());
        let r2 = rc.clone();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = recv_loop(&rx, &out, 1000, &RunControl::new(None), &r2);
            done_tx.send(r.map_err(|e| e.kind())).unwrap();
        });
        let sc = StreamCounters::default();
        // No budget: only the end of the file stops the sender.
        send_loop(
            &tx,
            &File::open(&src).unwrap(),
            65536,
            None,
            &RunControl::new(None),
            &sc,
        )
        .unwrap();
        // The sender's own FIN ends the receiver (an iperf3 receiver's blocking
        // read of a whole block returns the tail only then).
        let ended = done_rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(ended, Ok(Ok(())), "the receiver did not see the file's end");
        assert_eq!(sc.snapshot().bytes, data.len() as u64);
        assert_eq!(rc.snapshot().bytes, data.len() as u64);
        assert_eq!(std::fs::read(&dst).unwrap(), data);
        let _ = (std::fs::remove_file(src), std::fs::remove_file(dst));
    }
}

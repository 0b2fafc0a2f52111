//! The load-generating connections of one stage, at either end: a thread per
//! connection that writes as fast as the connection takes it, or reads and counts,
//! until the stage ends.
//!
//! Goodput is counted where the data is known to have arrived: a receiver counts
//! what it read; a sender counts what the peer acknowledged (TCP_INFO
//! `bytes_acked`), not what it wrote, since its first writes only fill the socket
//! buffer and would read as a burst of goodput the path never carried.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::tcp::{recv_loop, send_loop, RecvMode};
use rperf3_engine::worker::Worker;
use rperf3_sys::tcp_info::tcp_info;

/// Bytes per write and per read.
pub const BLOCK: usize = 128 * 1024;

/// One stage's load connections at this end.
pub struct LoadSet {
    ctl: Arc<RunControl>,
    payload: Arc<[u8]>,
    workers: Vec<Worker>,
    /// Every connection (to shut down at the end), with whether this end sends.
    socks: Vec<(TcpStream, bool)>,
    received: Arc<StreamCounters>,
    received_taken: u64,
    /// `bytes_acked` of each sending connection when last taken.
    acked_taken: Vec<u64>,
}

impl Default for LoadSet {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadSet {
    /// No connection yet.
    pub fn new() -> Self {
        Self {
            ctl: Arc::new(RunControl::new(None)),
            payload: rperf3_engine::payload::make(BLOCK, false).into(),
            workers: Vec::new(),
            socks: Vec::new(),
            received: Arc::new(StreamCounters::default()),
            received_taken: 0,
            acked_taken: Vec::new(),
        }
    }

    /// Starts writing on `sock` until the stage ends.
    pub fn add_sender(&mut self, sock: TcpStream) -> io::Result<()> {
        // Counted from here, before the first write: what the peer acknowledged
        // before (the marker, the SYN) is not load.
        let base = tcp_info(&sock).map_or(0, |i| i.bytes_acked);
        let mine = sock.try_clone()?;
        let payload = self.payload.clone();
        let counters = Arc::new(StreamCounters::default());
        let name = format!("rpm-send-{}", self.socks.len());
        let w = Worker::spawn(name, self.ctl.clone(), true, move |ctl| {
            send_loop(&mine, &payload, None, None, ctl, &counters)
        })?;
        self.acked_taken.push(base);
        self.socks.push((sock, true));
        self.workers.push(w);
        Ok(())
    }

    /// Starts reading and counting on `sock` until the stage ends.
    pub fn add_receiver(&mut self, sock: TcpStream) -> io::Result<()> {
        let mine = sock.try_clone()?;
        let counters = self.received.clone();
        let name = format!("rpm-recv-{}", self.socks.len());
        let w = Worker::spawn(name, self.ctl.clone(), false, move |ctl| {
            recv_loop(&mine, BLOCK, RecvMode::Copy, ctl, &*counters)
        })?;
        self.socks.push((sock, false));
        self.workers.push(w);
        Ok(())
    }

    /// Connections open.
    pub fn len(&self) -> usize {
        self.socks.len()
    }

    /// No connection open.
    pub fn is_empty(&self) -> bool {
        self.socks.is_empty()
    }

    /// The connections this end sends on (their TCP_INFO round trips are self
    /// probes behind the queued data).
    pub fn senders(&self) -> impl Iterator<Item = &TcpStream> {
        self.socks.iter().filter(|(_, s)| *s).map(|(t, _)| t)
    }

    /// Bytes read on the receiving connections since the last call.
    pub fn take_received(&mut self) -> u64 {
        let now = self.received.snapshot().bytes;
        let d = now - self.received_taken;
        self.received_taken = now;
        d
    }

    /// Bytes the peer acknowledged on the sending connections since the last call.
    pub fn take_acked(&mut self) -> u64 {
        let mut total = 0;
        let senders = self.socks.iter().filter(|(_, s)| *s).map(|(t, _)| t);
        for (sock, taken) in senders.zip(self.acked_taken.iter_mut()) {
            if let Some(i) = tcp_info(sock) {
                total += i.bytes_acked.saturating_sub(*taken);
                *taken = i.bytes_acked.max(*taken);
            }
        }
        total
    }

    /// The first error a connection hit (the method aborts on one), if any.
    pub fn failure(&self) -> Option<io::Error> {
        self.ctl.take_error().map(|f| f.error)
    }

    /// Stops every connection and waits for its thread.
    pub fn stop(&mut self) {
        self.ctl.stop();
        // A thread blocked in a write to a full path or a read of a silent one
        // returns once its socket is shut.
        for (s, _) in &self.socks {
            let _ = s.shutdown(Shutdown::Both);
        }
        for w in self.workers.drain(..) {
            w.join();
        }
        self.socks.clear();
    }
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn both_ends_count_what_the_kernel_carried() {
        let mut client = LoadSet::new();
        let mut server = LoadSet::new();
        let (mut sent_views, mut recv_views) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let (c, s) = pair();
            let base = tcp_info(&s).unwrap().bytes_acked;
            sent_views.push((s.try_clone().unwrap(), base));
            recv_views.push(c.try_clone().unwrap());
            client.add_receiver(c).unwrap();
            server.add_sender(s).unwrap();
        }
        assert_eq!((client.len(), server.senders().count()), (3, 3));
        // The kernels' counts only grow: one read before and one after ours
        // bound it exactly (from before the first write: the kernel counts the
        // SYN as acknowledged, on the accepting side only once data flows).
        let acked_now = || -> u64 {
            let k = sent_views
                .iter()
                .map(|(s, base)| tcp_info(s).unwrap().bytes_acked - base);
            k.sum()
        };
        let received_now = || -> u64 {
            let k = recv_views
                .iter()
                .map(|s| tcp_info(s).unwrap().bytes_received);
            k.sum()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut read, mut acked, mut rounds) = (0u64, 0u64, 0);
        while read < 50 << 20 || rounds < 5 {
            assert!(Instant::now() < deadline, "only {read} bytes in 10 s");
            std::thread::sleep(Duration::from_millis(20));
            let before = acked_now();
            acked += server.take_acked();
            let after = acked_now();
            assert!(
                (before..=after).contains(&acked),
                "{before} {acked} {after}"
            );
            read += client.take_received();
            assert!(read <= received_now(), "{read}");
            rounds += 1;
        }
        server.stop();
        client.stop();
        assert!(client.failure().is_none());
        assert!(server.failure().is_none());
    }

    #[test]
    fn stopping_ends_threads_blocked_on_a_silent_or_full_peer() {
        let mut set = LoadSet::new();
        // Peers that never read and never write: the sender fills the buffers and
        // blocks, the receiver waits for bytes that never come.
        let (a, _keep_a) = pair();
        let (b, _keep_b) = pair();
        set.add_sender(a).unwrap();
        set.add_receiver(b).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        set.stop();
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(set.is_empty());
    }
}

//! Data streams of a test: their sockets, counters and receiver statistics.
//! How each one's worker moves bytes is decided in [`crate::measurement::choice`].

use std::io;
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rperf3_engine::counters::{CounterSnapshot, StreamCounters};
use rperf3_engine::tcp::RecvMode;
use rperf3_engine::worker::Worker;
use rperf3_latency::OneWay;
use rperf3_proto::UdpRecvStats;
use rperf3_report::input::StreamInfo;
use rperf3_sys::net::unmap;
use rperf3_sys::tcp_info::{tcp_info, TcpInfo};

use crate::measurement::choice::{
    cork_sender, paces_itself, read_mark, size_sender, Choice, Kind, SendSpec, TcpCrowd, WorkerPlan,
};

/// The protocol stream id of the `index`-th stream (0-based): 1, 3, 4, 5, ...
/// iperf3 skips 2; both sides must number alike to match results.
pub(crate) fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        index as u32 + 2
    }
}

/// A data socket.
#[derive(Debug, Clone)]
pub(crate) enum DataSock {
    /// A TCP stream.
    Tcp(Arc<TcpStream>),
    /// An SCTP association (one-to-one style, so std's stream type carries it).
    Sctp(Arc<TcpStream>),
    /// A connected UDP socket.
    Udp(Arc<UdpSocket>),
}

/// One stream of a running test.
#[derive(Debug)]
pub(crate) struct LiveStream {
    /// Identity and role, as reported.
    pub info: StreamInfo,
    /// The socket.
    pub sock: DataSock,
    /// Counters the worker bumps.
    pub counters: Arc<StreamCounters>,
    /// UDP receiver statistics (receiving UDP streams only).
    pub udp_stats: Option<Arc<Mutex<UdpRecvStats>>>,
    /// A TCP receiver's SO_RCVLOWAT mark, 0 for none: its final sample drains
    /// the tail below the mark first.
    recv_mark: AtomicUsize,
    /// The ends agreed to time the data (UDP): a sender stamps the wall clock,
    /// a receiver puts each datagram's one-way delay here.
    pub owd: Option<Arc<Mutex<OneWay>>>,
}

impl LiveStream {
    /// Wraps a connected TCP data socket.
    pub(crate) fn tcp(sock: TcpStream, index: usize, sender: bool) -> io::Result<Self> {
        let info = stream_info(&sock, sock.local_addr()?, sock.peer_addr()?, index, sender);
        Ok(Self::new(info, DataSock::Tcp(Arc::new(sock))))
    }

    /// Wraps a connected SCTP data socket (one-to-one style).
    pub(crate) fn sctp(sock: TcpStream, index: usize, sender: bool) -> io::Result<Self> {
        let info = stream_info(&sock, sock.local_addr()?, sock.peer_addr()?, index, sender);
        Ok(Self::new(info, DataSock::Sctp(Arc::new(sock))))
    }

    /// Wraps a connected UDP data socket.
    pub(crate) fn udp(sock: UdpSocket, index: usize, sender: bool) -> io::Result<Self> {
        let info = stream_info(&sock, sock.local_addr()?, sock.peer_addr()?, index, sender);
        Ok(Self::new(info, DataSock::Udp(Arc::new(sock))))
    }

    fn new(info: StreamInfo, sock: DataSock) -> Self {
        // Only UDP receivers keep loss/jitter statistics.
        let udp_stats = (matches!(sock, DataSock::Udp(_)) && !info.sender).then(Arc::default);
        Self {
            info,
            sock,
            counters: Arc::default(),
            udp_stats,
            recv_mark: AtomicUsize::new(0),
            owd: None,
        }
    }

    /// The ends agreed to time the data: a UDP or TCP stream starts doing so
    /// (SCTP's data is not timed).
    pub(crate) fn time_data(&mut self) {
        if matches!(self.sock, DataSock::Udp(_) | DataSock::Tcp(_)) {
            self.owd = Some(Arc::default());
        }
    }

    /// A receiving stream's data delays since the last call.
    pub(crate) fn take_data_delays(&self) -> Option<OneWay> {
        let m = self.owd.as_ref().filter(|_| !self.info.sender)?;
        Some(std::mem::take(
            &mut *m.lock().unwrap_or_else(|p| p.into_inner()),
        ))
    }

    /// Whether this is a UDP stream.
    pub(crate) fn is_udp(&self) -> bool {
        matches!(self.sock, DataSock::Udp(_))
    }

    /// TCP_INFO of a local TCP sender (the only streams iperf3 reports it for).
    pub(crate) fn tcp_info(&self) -> Option<TcpInfo> {
        match &self.sock {
            DataSock::Tcp(s) if self.info.sender => tcp_info(&**s),
            DataSock::Tcp(_) | DataSock::Sctp(_) | DataSock::Udp(_) => None,
        }
    }

    /// Runs `f` on the live UDP receiver statistics and the counters read under
    /// the same lock (omit reset).
    pub(crate) fn with_udp_stats(&self, f: impl FnOnce(&mut UdpRecvStats, CounterSnapshot)) {
        if let Some(m) = &self.udp_stats {
            let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut g, self.counters.snapshot());
        }
    }

    /// A UDP receiver's counters and statistics, read together under its lock.
    pub(crate) fn udp_snapshot(&self) -> Option<(CounterSnapshot, UdpRecvStats)> {
        let m = self.udp_stats.as_ref()?;
        let g = m.lock().unwrap_or_else(|p| p.into_inner());
        Some((self.counters.snapshot(), g.clone()))
    }

    /// (SO_SNDBUF, SO_RCVBUF) of the data socket.
    pub(crate) fn buffer_sizes(&self) -> (u64, u64) {
        match &self.sock {
            DataSock::Tcp(s) | DataSock::Sctp(s) => rperf3_sys::net::buffer_sizes(&**s),
            DataSock::Udp(s) => rperf3_sys::net::buffer_sizes(&**s),
        }
    }

    /// The TCP socket, if this is a TCP stream.
    pub(crate) fn tcp_socket(&self) -> Option<&TcpStream> {
        match &self.sock {
            DataSock::Tcp(s) => Some(s),
            DataSock::Sctp(_) | DataSock::Udp(_) => None,
        }
    }

    /// Decides this stream's worker, once, and prepares the socket for it
    /// (a lone TCP receiver's mark).
    pub(crate) fn plan_worker(&self, send: &SendSpec, crowd: TcpCrowd) -> WorkerPlan {
        let kind = match &self.sock {
            DataSock::Tcp(_) => Kind::Tcp,
            DataSock::Sctp(_) => Kind::Sctp,
            DataSock::Udp(_) => Kind::Udp,
        };
        let choice = Choice {
            kind,
            sender: self.info.sender,
            send,
            crowd,
        };
        let plan = choice.decide(|| {
            self.tcp_socket()
                .and_then(rperf3_sys::net::tcp_congestion)
                .is_some_and(|cc| paces_itself(&cc))
        });
        if let (true, Some(sock)) = (self.info.sender, self.tcp_socket()) {
            size_sender(sock, crowd.senders, send.window_given);
        }
        let plan = match plan {
            // A timed TCP stream stamps each block in user space, and reads
            // every byte itself to find the stamps by offset.
            WorkerPlan::TcpSend { .. } if self.owd.is_some() => {
                WorkerPlan::TcpSend { sendfile: false }
            }
            WorkerPlan::Recv(RecvMode::OnMark) if self.owd.is_some() => {
                WorkerPlan::Recv(RecvMode::Copy)
            }
            p => p,
        };
        if let (WorkerPlan::TcpSend { sendfile: true }, None, Some(sock)) =
            (plan, send.pacer, self.tcp_socket())
        {
            cork_sender(sock, crowd.senders);
        }
        let WorkerPlan::Recv(mode) = plan else {
            return plan;
        };
        if !mode.on_mark() {
            return plan;
        }
        let mark = read_mark(send.blksize);
        let marked = self
            .tcp_socket()
            .is_some_and(|s| rperf3_sys::sockopt::set_recv_lowat(s, mark).is_ok());
        if !marked {
            return WorkerPlan::Recv(match mode {
                RecvMode::DiscardOnMark => RecvMode::Discard,
                _ => RecvMode::Copy,
            });
        }
        self.recv_mark.store(mark, Ordering::Relaxed);
        plan
    }

    /// This TCP receiver's mark, which is also its read size, if it reads on
    /// one.
    pub(crate) fn mark(&self) -> Option<usize> {
        Some(self.recv_mark.load(Ordering::Relaxed)).filter(|&m| m > 0)
    }

    /// Whether this TCP receiver reads on a mark.
    pub(crate) fn reads_on_a_mark(&self) -> bool {
        self.mark().is_some()
    }

    /// At the stop: lowers a receiver's mark to a byte, which wakes it if
    /// it waits for the mark with bytes there.
    pub(crate) fn lower_mark(&self) {
        if let (DataSock::Tcp(s), true) = (&self.sock, self.reads_on_a_mark()) {
            let _ = rperf3_sys::sockopt::set_recv_lowat(s, 1);
        }
    }

    /// Before the final sample: reads the tail a receiver's mark kept back.
    pub(crate) fn drain_below_mark(&self) {
        let mark = self.recv_mark.load(Ordering::Relaxed);
        if let (DataSock::Tcp(s), 1..) = (&self.sock, mark) {
            rperf3_engine::tcp::drain_ready(s, mark, &self.counters);
        }
    }

    /// Unblocks the worker and ends the connection.
    pub(crate) fn shutdown(&self) {
        match &self.sock {
            DataSock::Tcp(s) | DataSock::Sctp(s) => {
                let _ = s.shutdown(Shutdown::Both);
            }
            // Wakes a receiver blocked in recv().
            DataSock::Udp(s) => {
                let _ = rperf3_sys::net::shutdown_udp(s);
            }
        }
    }
}

fn stream_info(
    fd: &impl AsRawFd,
    local: SocketAddr,
    remote: SocketAddr,
    index: usize,
    sender: bool,
) -> StreamInfo {
    StreamInfo {
        socket: fd.as_raw_fd(),
        id: stream_id(index),
        sender,
        local: unmap(local),
        remote: unmap(remote),
    }
}

/// Shuts every stream down and waits for the workers.
pub(crate) fn stop_all(streams: &[LiveStream], workers: Vec<Worker>) {
    for s in streams {
        s.shutdown();
    }
    for w in workers {
        w.join();
    }
}

impl TcpCrowd {
    /// The TCP streams among `streams` (SCTP streams are not TCP here).
    pub(crate) fn of(streams: &[LiveStream]) -> Self {
        let tcp = |sender: bool| {
            streams
                .iter()
                .filter(|s| s.info.sender == sender && matches!(s.sock, DataSock::Tcp(_)))
                .count()
        };
        Self {
            senders: tcp(true),
            receivers: tcp(false),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_skip_two() {
        let ids: Vec<u32> = (0..5).map(super::stream_id).collect();
        assert_eq!(ids, vec![1, 3, 4, 5, 6]);
    }
}

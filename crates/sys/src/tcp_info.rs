//! Linux `TCP_INFO`: retransmits, congestion window, RTT, for iperf3's Retr/Cwnd columns.

use std::os::fd::AsRawFd;

/// The fields of the kernel's `struct tcp_info` that reports use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Total retransmitted segments over the connection's life.
    pub total_retrans: u32,
    /// Congestion window in bytes (segments × send MSS).
    pub snd_cwnd_bytes: u64,
    /// Peer's advertised window in bytes (0 if the kernel is too old to say).
    pub snd_wnd: u32,
    /// Smoothed RTT, microseconds.
    pub rtt: u32,
    /// RTT variance, microseconds.
    pub rttvar: u32,
    /// Path MTU.
    pub pmtu: u32,
    /// Reordering events seen (-1 if the kernel is too old to say).
    pub reord_seen: i64,
    /// Segments sent and not yet acknowledged.
    pub unacked: u32,
    /// Bytes queued and not yet sent (0 on kernels too old to say).
    pub notsent_bytes: u32,
    /// Bytes the peer has acknowledged over the connection's life (Linux 4.1+,
    /// else 0): what a sender knows has arrived. The kernel counts the SYN's
    /// sequence number as one byte, so differences are what to use.
    pub bytes_acked: u64,
    /// Bytes received over the connection's life (Linux 4.1+, else 0).
    pub bytes_received: u64,
}

/// The kernel layout up to `tcpi_snd_wnd` (Linux 5.12+); older kernels return a
/// shorter prefix and the length tells which fields are valid.
#[repr(C)]
#[derive(Default)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
}

/// Reads `TCP_INFO` from a TCP socket. `None` if the call fails (not TCP, closed).
pub fn tcp_info(sock: &impl AsRawFd) -> Option<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    let mut len = size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: `raw` is a repr(C) plain-old-data struct of `len` bytes that outlives the
    // call; the kernel writes at most `len` bytes and updates `len`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let have = |end_offset: usize| (len as usize) >= end_offset;
    let off_snd_wnd = std::mem::offset_of!(RawTcpInfo, snd_wnd) + 4;
    let off_reord = std::mem::offset_of!(RawTcpInfo, reord_seen) + 4;
    let off_bytes = std::mem::offset_of!(RawTcpInfo, bytes_received) + 8;
    Some(TcpInfo {
        total_retrans: raw.total_retrans,
        snd_cwnd_bytes: u64::from(raw.snd_cwnd) * u64::from(raw.snd_mss),
        snd_wnd: if have(off_snd_wnd) { raw.snd_wnd } else { 0 },
        rtt: raw.rtt,
        rttvar: raw.rttvar,
        pmtu: raw.pmtu,
        unacked: raw.unacked,
        notsent_bytes: raw.notsent_bytes,
        reord_seen: if have(off_reord) {
            i64::from(raw.reord_seen)
        } else {
            -1
        },
        bytes_acked: if have(off_bytes) { raw.bytes_acked } else { 0 },
        bytes_received: if have(off_bytes) {
            raw.bytes_received
        } else {
            0
        },
    })
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn reads_tcp_info_of_a_loopback_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let info = super::tcp_info(&c).expect("tcp_info");
        assert!(info.snd_cwnd_bytes > 0);
        assert!(info.pmtu > 0);
    }

    #[test]
    fn byte_counts_are_the_kernels() {
        use std::io::{Read, Write};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&[7u8; 100_000]).unwrap();
        let mut buf = vec![0u8; 100_000];
        s.read_exact(&mut buf).unwrap();
        // What was read has been acknowledged once the receiver's ACKs are in:
        // wait for them (loopback, a few microseconds) rather than sleep blindly.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while super::tcp_info(&c).unwrap().bytes_acked < 100_001 {
            assert!(std::time::Instant::now() < deadline, "never acknowledged");
            std::thread::yield_now();
        }
        // The data and, as the kernel counts it, the SYN.
        assert_eq!(super::tcp_info(&c).unwrap().bytes_acked, 100_001);
        assert_eq!(super::tcp_info(&s).unwrap().bytes_received, 100_000);
    }

    #[test]
    fn not_a_tcp_socket_gives_none() {
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(super::tcp_info(&u).is_none());
    }
}

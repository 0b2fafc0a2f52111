//! The socket options iperf 2 puts on TCP sockets (`-w`, `-M`, `-N`, `-S`,
//! `-Z`), the facts its settings blocks and connection lines show, and the
//! wake-up pipe a driver waits on.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant, SystemTime};

use rperf3_report::iperf2::model::{
    Connection2, Mss2, Proto2, Settings2, Side2, Tag2, TcpConnInfo2,
};
use rperf3_sys::{net, sockopt, tcp_info::tcp_info};

use super::config::Common2;

/// Options set before connect (client) or on the listener (server), so the SYN
/// carries the MSS and the window scale follows `-w`.
pub(crate) fn apply_opts(fd: BorrowedFd<'_>, v6: bool, c: &Common2) -> io::Result<()> {
    if let Some(w) = c.window {
        net::set_buffer_sizes(&fd, w as usize)?;
    }
    if let Some(m) = c.mss {
        sockopt::set_mss(&fd, m as i32)?;
    }
    if c.nodelay {
        sockopt::set_nodelay(&fd)?;
    }
    if let Some(t) = c.tos {
        sockopt::set_tos(&fd, v6, t)?;
    }
    if let Some(cc) = c.congestion.as_deref() {
        sockopt::set_congestion(&fd, cc)?;
    }
    Ok(())
}

/// The host's default congestion control (what a listener's accepted sockets get).
pub(crate) fn default_congestion() -> Option<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A settings block with what every block shows.
pub(crate) fn settings(side: Side2, c: &Common2, port: u16, len: u32, window: u64) -> Settings2 {
    Settings2 {
        side,
        proto: Proto2::Tcp,
        host: None,
        port,
        pid: std::process::id(),
        flows: 1,
        len,
        ipg_us: None,
        window,
        window_requested: c.window.is_some(),
        requested_window: c.window.map(u64::from),
        congestion: c.congestion.clone().or_else(default_congestion),
        congestion_asked: c.congestion.clone(),
        tos: c.tos.unwrap_or(0),
        tos_by_dscp: c.tos_by_dscp,
        connect_only: false,
        nodelay: c.nodelay,
        mss: None,
        multicast: None,
        ttl: None,
        mode_note: None,
        trip_times: false,
        bounceback: None,
        histograms: c.histograms,
        hist_bins: c.hist_bins,
        jitter_bin_us: None,
        isoch: None,
    }
}

/// The listener's block: its receive buffer is the window iperf 2 shows.
pub(crate) fn listener_settings(l: &TcpListener, c: &Common2, port: u16, len: u32) -> Settings2 {
    let (_, rcv) = net::buffer_sizes(l);
    let mut s = settings(Side2::Server, c, port, len, rcv);
    if c.print_mss {
        s.mss = Some(Mss2 {
            bytes: net::tcp_mss(l),
            requested: false,
        });
    }
    s
}

/// A connector's block: its send buffer is the window iperf 2 shows.
pub(crate) fn connector_settings(
    sock: &TcpStream,
    c: &Common2,
    host: &str,
    port: u16,
    len: u32,
    flows: u32,
) -> Settings2 {
    let (snd, _) = net::buffer_sizes(sock);
    let mut s = settings(Side2::Client, c, port, len, snd);
    s.host = Some(host.to_string());
    s.flows = flows;
    s.congestion = net::tcp_congestion(sock).or(s.congestion);
    s.mss = client_mss(c, net::tcp_mss(sock));
    s
}

/// A connecting side's MSS line: with `-M`, what was asked (2.2.1 prints
/// it); with `-m` alone, `mss`.
pub(crate) fn client_mss(c: &Common2, mss: u32) -> Option<Mss2> {
    match (c.mss, c.print_mss) {
        (Some(m), _) => Some(Mss2 {
            bytes: m,
            requested: true,
        }),
        (None, true) => Some(Mss2 {
            bytes: mss,
            requested: false,
        }),
        (None, false) => None,
    }
}

/// icwnd (KiB, as iperf 2 prints it), MSS and initial RTT of a fresh connection.
pub(crate) fn conn_info(sock: &TcpStream) -> Option<TcpConnInfo2> {
    let i = tcp_info(sock)?;
    Some(TcpConnInfo2 {
        icwnd: (i.snd_cwnd_bytes / 1024) as u32,
        mss: net::tcp_mss(sock),
        irtt_us: i.rtt,
    })
}

/// The device a socket is bound to or routed through, for `-e`'s `%dev`.
pub(crate) fn device_of(local: &SocketAddr, bound: Option<&str>) -> Option<String> {
    if let Some(d) = bound {
        return Some(d.to_string());
    }
    local.ip().is_loopback().then(|| "lo".to_string())
}

/// A connection line for `sock`.
pub(crate) fn connection(
    tag: Tag2,
    sock: &TcpStream,
    notes: &[&str],
    device: Option<&str>,
) -> io::Result<Connection2> {
    let local = net::unmap(sock.local_addr()?);
    Ok(Connection2 {
        tag,
        local,
        device: device_of(&local, device),
        peer: net::unmap(sock.peer_addr()?),
        notes: notes.iter().map(|s| s.to_string()).collect(),
        peer_version: None,
        tcp: conn_info(sock),
        connect_time: None,
        connect_only: false,
        at: SystemTime::now(),
    })
}

/// A pipe workers write a byte to when they end, so a driver waiting for the
/// end of the test, the clock or a signal wakes at once for any of them.
#[derive(Debug)]
pub(crate) struct Wake {
    rx: UnixStream,
    tx: UnixStream,
}

impl Wake {
    /// A new pipe.
    pub(crate) fn new() -> io::Result<Self> {
        let (rx, tx) = UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        Ok(Self { rx, tx })
    }

    /// A writer for a worker.
    pub(crate) fn waker(&self) -> io::Result<UnixStream> {
        self.tx.try_clone()
    }

    /// The fd to poll.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }

    /// Empties the pipe.
    pub(crate) fn clear(&self) {
        use std::io::Read;
        let mut b = [0u8; 64];
        while matches!((&self.rx).read(&mut b), Ok(1..)) {}
    }
}

/// Wakes a driver (a full pipe has woken it already).
pub(crate) fn wake(w: &UnixStream) {
    use std::io::Write;
    let _ = (&*w).write(&[1]);
}

/// Waits until `fds` has a ready fd or `limit` passes (at most a minute, so a
/// caller re-checks its state now and then).
pub(crate) fn wait(fds: &[BorrowedFd<'_>], limit: Option<Duration>) {
    let t = limit.unwrap_or(Duration::from_secs(60));
    let _ = rperf3_sys::poll::wait_readable(fds, t.min(Duration::from_secs(60)));
}

/// Waits until `until`, or until an interrupt.
pub(crate) fn wait_until(until: Instant, intr: &mut crate::Interrupt) {
    while !intr.triggered() {
        let rest = until.saturating_duration_since(Instant::now());
        if rest.is_zero() {
            break;
        }
        wait(&[intr.fd()], Some(rest));
    }
}

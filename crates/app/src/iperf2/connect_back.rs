//! iperf 2's legacy dual tests (`-d` at once, `-r` after): the server opens a
//! connection back to the client's `-L` port and sends on it without a header;
//! the client listens for it. Both steps have absolute deadlines: a server
//! that never connects back, or a client that is not listening, ends only
//! that direction, with a message.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rperf3_sys::net;

use super::config::Common2;
use super::tcp_setup::apply_opts;

/// How long a client waits for the connection back beyond the moment it is
/// due (at once for `-d`, when the forward test ends for `-r`); iperf 2 allows
/// a few seconds too.
pub(crate) const BACK_GRACE: Duration = Duration::from_secs(5);

/// How long a server tries to connect back.
pub(crate) const CONNECT_LIMIT: Duration = Duration::from_secs(5);

/// The message a client prints when the server never connected back.
pub(crate) const NO_BACK: &str = "WARNING: expected reverse connect did not occur";

/// Accepts the server's connection back on `l`: the first one from `from`
/// (connections from any other host are closed) before `deadline`, or `None`.
/// `cancel` is polled with the listener, so a signal ends the wait at once.
pub(crate) fn accept_back(
    l: &TcpListener,
    from: IpAddr,
    deadline: Instant,
    cancel: &dyn Fn() -> bool,
    cancel_fd: Option<std::os::fd::BorrowedFd<'_>>,
) -> io::Result<Option<TcpStream>> {
    l.set_nonblocking(true)?;
    loop {
        if cancel() {
            return Ok(None);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let mut fds = vec![l.as_fd()];
        fds.extend(cancel_fd);
        rperf3_sys::poll::wait_readable(&fds, left)?;
        match l.accept() {
            Ok((s, peer)) if same_host(net::unmap(peer).ip(), from) => {
                s.set_nonblocking(false)?;
                return Ok(Some(s));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

pub(crate) fn same_host(a: IpAddr, b: IpAddr) -> bool {
    let canon = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    };
    canon(a) == canon(b)
}

/// How often a refused connection back is tried again: the client sends its
/// header before its listener is up, so the first try can come too early.
const RETRY_EVERY: Duration = Duration::from_millis(20);

/// Connects back to the client at `peer`'s address on `port`, with the
/// server's socket options, giving up after [`CONNECT_LIMIT`] in all (a
/// refused try is repeated until then).
pub(crate) fn connect_back(peer: SocketAddr, port: u16, c: &Common2) -> io::Result<TcpStream> {
    let to = SocketAddr::new(net::unmap(peer).ip(), port);
    let prep = |fd: std::os::fd::BorrowedFd<'_>, v6: bool| apply_opts(fd, v6, c);
    let deadline = Instant::now() + CONNECT_LIMIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let got = net::connect_tcp_prepared(
            &[to],
            None,
            0,
            None,
            Some(left.max(Duration::from_millis(1))),
            net::Transport::Tcp,
            &prep,
        )
        .map_err(|e| match e {
            net::Prepared::Options(e) | net::Prepared::Connect(e) => e,
        });
        match got {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && left > RETRY_EVERY => {
                std::thread::sleep(RETRY_EVERY);
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_server_host_is_taken_and_the_wait_has_an_end() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        // A connection from another host address (127.0.0.2) is refused.
        let other =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        other
            .bind(&SocketAddr::from(([127, 0, 0, 2], 0)).into())
            .unwrap();
        other.connect(&a.into()).unwrap();
        let t = Instant::now();
        let got = accept_back(
            &l,
            "127.0.0.1".parse().unwrap(),
            t + Duration::from_millis(300),
            &|| false,
            None,
        )
        .unwrap();
        assert!(got.is_none());
        assert!(t.elapsed() >= Duration::from_millis(300));
        assert!(t.elapsed() < Duration::from_secs(3));
        let _c = TcpStream::connect(a).unwrap();
        let got = accept_back(
            &l,
            "127.0.0.1".parse().unwrap(),
            Instant::now() + Duration::from_secs(5),
            &|| false,
            None,
        )
        .unwrap();
        assert!(got.is_some());
    }

    #[test]
    fn a_listener_that_comes_up_late_is_reached() {
        // A port nobody listens on yet; the client's listener opens 200 ms on.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
            l.accept().map(|_| ())
        });
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let t = Instant::now();
        let s = connect_back(peer, port, &Common2::default());
        assert!(s.is_ok(), "{s:?}");
        assert!(
            t.elapsed() >= Duration::from_millis(150),
            "{:?}",
            t.elapsed()
        );
        late.join().unwrap().unwrap();
    }

    #[test]
    fn nobody_listening_ends_at_the_limit() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let t = Instant::now();
        let e = connect_back(peer, port, &Common2::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert!(
            t.elapsed() >= CONNECT_LIMIT - RETRY_EVERY * 2,
            "{:?}",
            t.elapsed()
        );
        assert!(t.elapsed() < CONNECT_LIMIT + Duration::from_secs(1));
    }

    #[test]
    fn a_mapped_address_is_the_same_host() {
        assert!(same_host(
            "::ffff:127.0.0.1".parse().unwrap(),
            "127.0.0.1".parse().unwrap()
        ));
        assert!(!same_host(
            "127.0.0.2".parse().unwrap(),
            "127.0.0.1".parse().unwrap()
        ));
    }
}

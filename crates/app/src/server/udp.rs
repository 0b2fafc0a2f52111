//! UDP stream setup for every test on the port: one listening socket, hellos
//! routed to the session they belong to.
//!
//! A UDP stream starts with a 4-byte hello that carries no cookie. The socket
//! that receives it is connected to the sender and becomes the stream; a fresh
//! listening socket is bound on the same port for the next hello (see the
//! protocol notes in `udp_setup`). With several tests on one port, a hello is
//! told apart by its source address: only one session per client address may
//! set up UDP streams at a time (others wait their turn), and a datagram that
//! is not exactly 4 bytes (a late data datagram of an earlier test) is dropped.

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};

use rperf3_sys::net::unmap;

/// A session's turn to receive hellos.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Grant {
    id: u64,
    ip: IpAddr,
    left: usize,
}

/// The port's UDP listener and whose hellos it takes.
#[derive(Debug)]
pub(super) struct UdpRouter {
    addr: SocketAddr,
    device: Option<String>,
    listener: Option<UdpSocket>,
    active: Vec<Grant>,
    waiting: VecDeque<Grant>,
}

impl UdpRouter {
    /// A router for the server's address and port (`-B`, `%dev`).
    pub(super) fn new(addr: SocketAddr, device: Option<String>) -> Self {
        Self {
            addr,
            device,
            listener: None,
            active: Vec::new(),
            waiting: VecDeque::new(),
        }
    }

    /// Session `id` needs `streams` streams from `ip`. Returns the sessions
    /// that may start now (`id` itself unless another session of `ip` is
    /// setting up). Fails if the port cannot be bound.
    pub(super) fn request(&mut self, id: u64, ip: IpAddr, streams: usize) -> io::Result<Vec<u64>> {
        self.waiting.push_back(Grant {
            id,
            ip: unmap_ip(ip),
            left: streams,
        });
        self.grant()
    }

    /// Session `id` is done with UDP setup (or gone). Returns the sessions that
    /// may start now.
    pub(super) fn release(&mut self, id: u64) -> io::Result<Vec<u64>> {
        self.active.retain(|g| g.id != id);
        self.waiting.retain(|g| g.id != id);
        self.grant()
    }

    fn grant(&mut self) -> io::Result<Vec<u64>> {
        let mut started = Vec::new();
        let mut i = 0;
        while i < self.waiting.len() {
            let g = self.waiting[i];
            if self.active.iter().any(|a| a.ip == g.ip) {
                i += 1;
                continue;
            }
            self.waiting.remove(i);
            self.active.push(g);
            started.push(g.id);
        }
        if self.active.is_empty() {
            self.listener = None;
        } else if self.listener.is_none() {
            self.listener = Some(self.bind()?);
        }
        Ok(started)
    }

    fn bind(&self) -> io::Result<UdpSocket> {
        let s = rperf3_sys::net::udp_bind(self.addr, true, self.device.as_deref())?;
        s.set_nonblocking(true)?;
        Ok(s)
    }

    /// The listener to poll, while some session sets up UDP streams.
    pub(super) fn socket(&self) -> Option<&UdpSocket> {
        self.listener.as_ref()
    }

    /// The listener is readable: takes one datagram. A hello for a session
    /// comes back as (session, stream socket connected to the client); anything
    /// else is dropped.
    pub(super) fn on_readable(&mut self) -> io::Result<Option<(u64, UdpSocket)>> {
        let Some(l) = self.listener.as_ref() else {
            return Ok(None);
        };
        let (len, from) = match rperf3_sys::net::recv_len_from(l) {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        // Every iperf3 version's hello is 4 bytes; data datagrams are at least 16.
        if len != 4 {
            return Ok(None);
        }
        let Some(slot) = self.route(unmap(from).ip()) else {
            return Ok(None);
        };
        let stream = self.listener.take().expect("checked above");
        // A fresh listener is bound before the session replies, so the client's
        // next hello finds one.
        self.listener = Some(self.bind()?);
        stream.set_nonblocking(false)?;
        stream.connect(from)?;
        let g = &mut self.active[slot];
        let id = g.id;
        g.left = g.left.saturating_sub(1);
        Ok(Some((id, stream)))
    }

    /// Which active grant a hello from `ip` is for: that address's, or the only
    /// one there is (a client behind a NAT that maps its UDP differently).
    fn route(&self, ip: IpAddr) -> Option<usize> {
        let open = |g: &Grant| g.left > 0;
        self.active
            .iter()
            .position(|g| g.ip == ip && open(g))
            .or_else(|| {
                let mut it = self.active.iter().enumerate().filter(|(_, g)| open(g));
                match (it.next(), it.next()) {
                    (Some((i, _)), None) => Some(i),
                    _ => None,
                }
            })
    }
}

fn unmap_ip(ip: IpAddr) -> IpAddr {
    unmap(SocketAddr::new(ip, 0)).ip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn router() -> (UdpRouter, SocketAddr) {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        (UdpRouter::new(addr, None), addr)
    }

    fn hello_from(bind: &str, to: SocketAddr, payload: &[u8]) -> UdpSocket {
        let s = UdpSocket::bind(bind).unwrap();
        s.connect(to).unwrap();
        s.send(payload).unwrap();
        s
    }

    fn next(r: &mut UdpRouter) -> Option<(u64, UdpSocket)> {
        let l = r.socket()?.try_clone().unwrap();
        for _ in 0..100 {
            if rperf3_sys::poll::readable(&l, Duration::from_millis(20)).unwrap() {
                if let Some(x) = r.on_readable().unwrap() {
                    return Some(x);
                }
                return None;
            }
        }
        None
    }

    #[test]
    fn one_setup_per_client_address_at_a_time() {
        let (mut r, _) = router();
        let a = IpAddr::from([127, 0, 0, 1]);
        let b = IpAddr::from([127, 0, 0, 2]);
        assert_eq!(r.request(1, a, 2).unwrap(), [1]);
        assert_eq!(r.request(2, a, 1).unwrap(), Vec::<u64>::new());
        assert_eq!(r.request(3, b, 1).unwrap(), [3]);
        assert_eq!(r.release(1).unwrap(), [2]);
        r.release(2).unwrap();
        r.release(3).unwrap();
        assert!(r.socket().is_none(), "no listener while nobody sets up");
    }

    #[test]
    fn hellos_go_to_their_session_and_strays_are_dropped() {
        let (mut r, addr) = router();
        assert_eq!(r.request(7, IpAddr::from([127, 0, 0, 1]), 2).unwrap(), [7]);
        // A late data datagram of some earlier test: dropped.
        let _stray = hello_from("127.0.0.1:0", addr, &[0u8; 64]);
        assert!(next(&mut r).is_none());
        let c1 = hello_from("127.0.0.1:0", addr, b"9876");
        let (id, s1) = next(&mut r).unwrap();
        assert_eq!(id, 7);
        assert_eq!(s1.peer_addr().unwrap(), c1.local_addr().unwrap());
        assert_eq!(s1.local_addr().unwrap().port(), addr.port());
        let c2 = hello_from("127.0.0.1:0", addr, b"9876");
        let (_, s2) = next(&mut r).unwrap();
        assert_eq!(s2.peer_addr().unwrap(), c2.local_addr().unwrap());
        // Data on a stream reaches its own socket, not the listener.
        c1.send(&[1u8; 100]).unwrap();
        let mut b = [0u8; 200];
        s1.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(s1.recv(&mut b).unwrap(), 100);
        // Both streams were routed: a third hello has nowhere to go.
        let _c3 = hello_from("127.0.0.1:0", addr, b"9876");
        assert!(next(&mut r).is_none());
    }

    #[test]
    fn two_tests_from_two_addresses_set_up_side_by_side() {
        let (mut r, addr) = router();
        r.request(1, IpAddr::from([127, 0, 0, 1]), 1).unwrap();
        r.request(2, IpAddr::from([127, 0, 0, 2]), 1).unwrap();
        let _b = hello_from("127.0.0.2:0", addr, b"9876");
        assert_eq!(next(&mut r).unwrap().0, 2);
        let _a = hello_from("127.0.0.1:0", addr, b"9876");
        assert_eq!(next(&mut r).unwrap().0, 1);
    }
}

//! The prober against a server whose accept queue is full.

use super::*;

/// A listener whose accept queue is full: the kernel drops further SYNs, as
/// a full FIFO in front of a bottleneck does.
fn black_hole() -> (socket2::Socket, Vec<TcpStream>, SocketAddr) {
    use socket2::{Domain, Socket, Type};
    let l = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    l.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    l.listen(0).unwrap();
    let addr = l.local_addr().unwrap().as_socket().unwrap();
    let mut fill = Vec::new();
    for _ in 0..2 {
        if let Ok(c) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            fill.push(c);
        }
    }
    (l, fill, addr)
}

#[test]
fn a_stop_ends_probes_stuck_in_their_handshake_at_once() {
    let (_l, _fill, server) = black_hole();
    // The idle budget counts from the start.
    let t = Instant::now();
    let mut p = Prober::start(ProbeSetup {
        server,
        bind: None,
        cookie: [b'a'; COOKIE_LEN],
        rate: 50,
        with_server: true,
    })
    .unwrap();
    // The probe connection cannot open either: idle ends at its budget.
    p.wait_idle(t + Duration::from_secs(5));
    let idle = t.elapsed();
    // A connect's timeout is a poll in whole milliseconds: it may end a
    // fraction of one early.
    let least = IDLE_BUDGET - Duration::from_millis(5);
    assert!(idle >= least && idle < IDLE_BUDGET * 2, "{idle:?}");
    p.load_started(Vec::new());
    // Foreign probes pile up to the in-flight limit, each in connect().
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(lock(&p.shared.open).len(), MAX_IN_FLIGHT);
    let t = Instant::now();
    p.stop();
    let took = t.elapsed();
    assert!(took < Duration::from_millis(300), "stop took {took:?}");
    assert_eq!(p.total().figures().foreign.count, 0);
    assert!(lock(&p.shared.open).is_empty());
}

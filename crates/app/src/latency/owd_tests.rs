//! The data's one-way delays between a client's prober and a server's probe
//! host on loopback: the server says it times the data before anything else,
//! its last delays reach the client whole after the stop, and a server that
//! does not take the offer (one older than it) neither says so nor holds the
//! client up at the end.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rperf3_latency::{wall_ns, OneWay};
use rperf3_proto::COOKIE_LEN;

use super::prober::{ProbeSetup, Prober};
use super::responder::ProbeHost;

/// A server's listener routing marked connections to `host`, as the host's
/// listener does: the cookie is read, its 37th byte picks the handler.
fn serve(host: Arc<Mutex<ProbeHost>>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let mut cookie = [0u8; COOKIE_LEN];
            if c.read_exact(&mut cookie).is_ok() {
                let marker = cookie[COOKIE_LEN - 1];
                host.lock().unwrap().on_conn(c, marker, 1);
            }
        }
    });
    addr
}

fn prober(server: SocketAddr) -> Prober {
    let mut p = Prober::start(ProbeSetup {
        server,
        bind: None,
        cookie: [b'c'; COOKIE_LEN],
        rate: 1,
        with_server: true,
    })
    .unwrap();
    p.wait_idle(Instant::now() + Duration::from_secs(3));
    p
}

/// `n` delays of 2 ms into `sink`, as a receiving stream records them.
fn record(sink: &Mutex<OneWay>, n: usize) {
    let mut o = sink.lock().unwrap();
    for _ in 0..n {
        let now = wall_ns();
        o.record(now - 2_000_000, now);
    }
}

#[test]
fn the_servers_last_data_delays_reach_the_client_after_the_stop_issue18() {
    let host = Arc::new(Mutex::new(ProbeHost::new(true)));
    let mut p = prober(serve(host.clone()));
    assert!(
        p.server_times_data(),
        "no agreement before the idle answers"
    );
    let sink = Arc::new(Mutex::new(OneWay::new()));
    host.lock().unwrap().set_data_delays(vec![sink.clone()]);
    p.load_started(Vec::new());
    // Some go in the periodic pushes, the rest only after the stop.
    record(&sink, 300);
    std::thread::sleep(Duration::from_millis(250));
    record(&sink, 200);
    p.stop();
    record(&sink, 100);
    host.lock().unwrap().last_data();
    let t = Instant::now();
    assert!(p.await_last_data(t + Duration::from_secs(2)));
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    let f = p.total().figures();
    assert_eq!(f.data_up.count, 600, "{f:?}");
    assert_eq!((f.data_up.min_ms, f.data_up.max_ms), (2.0, 2.0));
    // The server counted each once too (its metrics).
    assert_eq!(host.lock().unwrap().finish().data_up.summary().count, 600);
}

#[test]
fn a_server_that_ignores_the_offer_says_nothing_and_costs_no_wait_issue18() {
    // A server that answers probes but does not take `"owd"`.
    let host = Arc::new(Mutex::new(ProbeHost::new(false)));
    let mut p = prober(serve(host.clone()));
    assert!(!p.server_times_data());
    p.load_started(Vec::new());
    std::thread::sleep(Duration::from_millis(150));
    p.stop();
    host.lock().unwrap().last_data();
    let t = Instant::now();
    // Nothing to wait for: the connection was not kept.
    assert!(p.await_last_data(t + Duration::from_secs(2)));
    assert!(t.elapsed() < Duration::from_millis(50), "{:?}", t.elapsed());
    assert_eq!(p.total().figures().data_up.count, 0);
}

#[test]
fn last_delays_that_never_come_cost_the_client_its_deadline_only_issue18() {
    let host = Arc::new(Mutex::new(ProbeHost::new(true)));
    let mut p = prober(serve(host.clone()));
    assert!(p.server_times_data());
    p.stop();
    // The server never sends its last frame (no last_data): the wait ends at
    // the deadline and says the figures are short.
    let t = Instant::now();
    assert!(!p.await_last_data(t + Duration::from_millis(200)));
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_millis(700),
        "{waited:?}"
    );
    // Asked again, there is nothing left to wait for.
    assert!(!p.await_last_data(Instant::now() + Duration::from_secs(2)));
}

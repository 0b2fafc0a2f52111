//! The whole loop over loopback: the planner, the client's load connections and a
//! server that routes them by marker to a [`LoadHost`], with made-up probes.

use super::*;
use crate::config::RpmConfig;
use crate::rpm::{run, Ending};
use rperf3_latency::{Kind, Params, Stage};
use std::io::Read;
use std::net::TcpListener;
use std::sync::Mutex;
use std::thread::JoinHandle;

const COOKIE: [u8; COOKIE_LEN] = *b"rpmtestcookie0123456789abcdefghijkl\0\0";

/// Probes that report a fixed round trip, and remember what they were told.
#[derive(Default)]
struct FixedProbes {
    rates: Vec<f64>,
    senders_seen: usize,
}

impl Probes for FixedProbes {
    fn idle(&mut self) -> Histogram {
        let mut h = Histogram::new();
        h.record(50_000);
        h
    }

    fn set_rate(&mut self, pairs_per_sec: f64) {
        self.rates.push(pairs_per_sec);
    }

    fn load_started(&mut self, senders: Vec<TcpStream>) {
        self.senders_seen = self.senders_seen.max(senders.len());
    }

    fn take(&mut self) -> Samples {
        let mut s = Samples::default();
        for _ in 0..5 {
            s.record(Kind::ForeignConnect, 1_000_000);
            s.record(Kind::ForeignRequest, 1_000_000);
            s.record(Kind::SelfLoaded, 2_000_000);
        }
        s
    }
}

/// A server that reads each connection's cookie and hands load connections of
/// the test to its host; anything else is closed.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    host: Arc<Mutex<LoadHost>>,
    markers: Arc<Mutex<Vec<u8>>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start() -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let host = Arc::new(Mutex::new(LoadHost::new()));
        let markers = Arc::new(Mutex::new(Vec::new()));
        let (st, h, m) = (stop.clone(), host.clone(), markers.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                let Ok((mut c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let mut cookie = [0u8; COOKIE_LEN];
                if c.read_exact(&mut cookie).is_err() || cookie[..36] != COOKIE[..36] {
                    continue;
                }
                c.set_read_timeout(None).unwrap();
                m.lock().unwrap().push(cookie[36]);
                // Anything but a load marker is handed back, and closed here.
                let _ = h.lock().unwrap().on_conn(c, cookie[36]);
            }
            h.lock().unwrap().finish();
        });
        Self {
            addr,
            stop,
            host,
            markers,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn markers_name_the_direction_and_others_are_handed_back() {
    assert!(LoadHost::is_load(b'D') && LoadHost::is_load(b'U'));
    assert!(!LoadHost::is_load(b'P') && !LoadHost::is_load(0));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let mut host = LoadHost::new();
    assert!(host.on_conn(s, b'P').is_err());
    assert!(host.is_empty());
}

#[test]
fn three_stages_over_loopback_end_within_their_budgets() {
    let server = Server::start();
    let probes = FixedProbes::default();
    let mut link = SocketLink::new(server.addr, COOKIE, probes);
    let mut ticks = SleepTicks::new(Arc::new(AtomicBool::new(false)));
    let cfg = RpmConfig {
        downlink: true,
        uplink: true,
        bidirectional: true,
        stage_budget: Duration::from_secs(3),
    };
    let params = Params {
        mnp: 4,
        ..Params::default()
    };
    let t0 = Instant::now();
    let (r, ending) = run(&mut link, &mut ticks, &cfg, params);
    let took = t0.elapsed();
    assert!(matches!(ending, Ending::Complete), "{ending:?}");
    // Three stages of three 1 s intervals each, plus connection set-up.
    assert!(took >= Duration::from_secs(9), "{took:?}");
    assert!(took < Duration::from_millis(3 * 3500), "{took:?}");
    let stages: Vec<Stage> = r.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, Stage::ALL);
    for s in &r.stages {
        assert_eq!(s.intervals, 3, "{:?}", s.stage);
        assert!(
            s.throughput_bps > 1e6,
            "{:?}: {}",
            s.stage,
            s.throughput_bps
        );
        // Foreign 1 ms (60 000 RPM) and self 2 ms (30 000 RPM): their mean.
        assert!((s.figures.responsiveness.rpm - 45_000.0).abs() < 100.0);
        assert_eq!(s.figures.idle.count, 1);
    }
    // INP, then one more at intervals 1 and 2; the third ends the stage.
    let conns: Vec<u32> = r.stages.iter().map(|s| s.connections).collect();
    assert_eq!(conns, [3, 3, 6]);
    let both = &r.stages[2];
    assert!(both.downlink_bps > 1e6 && both.uplink_bps > 1e6, "{both:?}");
    assert_eq!(link.probes.senders_seen, 3);
    assert!(!link.probes.rates.is_empty());
    // The server saw every connection, by its marker.
    let m = server.markers.lock().unwrap().clone();
    let count = |b: u8| m.iter().filter(|&&x| x == b).count();
    assert_eq!((count(b'D'), count(b'U')), (6, 6), "{m:?}");
    assert!(server.host.lock().unwrap().take_received() > 0);
}

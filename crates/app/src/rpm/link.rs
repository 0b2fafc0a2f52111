//! The responsiveness test over real sockets: the client's [`Link`] that opens
//! marked load connections to the server and counts their goodput, and the
//! server's [`LoadHost`] that serves them for the rest of the test.
//!
//! A load connection opens like a data stream, with the test's cookie whose 37th
//! byte is a marker instead of NUL: [`MARKER_DOWN`] (the server sends) or
//! [`MARKER_UP`] (the client sends). A stock iperf3 server compares cookies up to
//! the NUL, so it never takes one for a stream of its test. Round trips come from
//! a [`Probes`] source (the `--latency` prober once wired), so this file owns only
//! the load.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_latency::{Histogram, IntervalData, Load, Samples};

use super::load::LoadSet;
use super::{Link, Ticks};

/// The cookie's 37th byte on a load connection the server sends on.
pub const MARKER_DOWN: u8 = b'D';
/// The cookie's 37th byte on a load connection the client sends on.
pub const MARKER_UP: u8 = b'U';
/// Cookie length on the wire (iperf3's 36 characters and a NUL).
const COOKIE_LEN: usize = 37;
/// Longest a load connection may take to connect.
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

/// Where round trips come from.
pub trait Probes {
    /// Round trips timed now, before a stage's load.
    fn idle(&mut self) -> Histogram;
    /// Probe pairs per second from now on.
    fn set_rate(&mut self, pairs_per_sec: f64);
    /// The connections this end sends load on now (for self probes from their
    /// TCP_INFO round trips); empty when the stage's load has ended.
    fn load_started(&mut self, senders: Vec<TcpStream>);
    /// The probes completed since the last call.
    fn take(&mut self) -> Samples;
}

/// The client's side of a stage's load over TCP.
pub struct SocketLink<P: Probes> {
    server: SocketAddr,
    cookie: [u8; COOKIE_LEN],
    load: LoadSet,
    probes: P,
}

impl<P: Probes> SocketLink<P> {
    /// Load connections to `server` for the test of `cookie`, probes from `probes`.
    pub fn new(server: SocketAddr, cookie: [u8; COOKIE_LEN], probes: P) -> Self {
        Self {
            server,
            cookie,
            load: LoadSet::new(),
            probes,
        }
    }

    fn connect(&self, marker: u8) -> io::Result<TcpStream> {
        connect_marked(self.server, self.cookie, marker)
    }
}

/// A load connection to `server` for the test of `cookie`, marked `marker`
/// (also `--bounceback-load`'s).
pub(crate) fn connect_marked(
    server: SocketAddr,
    cookie: [u8; COOKIE_LEN],
    marker: u8,
) -> io::Result<TcpStream> {
    let mut s = TcpStream::connect_timeout(&server, CONNECT_LIMIT)?;
    let mut c = cookie;
    c[COOKIE_LEN - 1] = marker;
    s.set_write_timeout(Some(CONNECT_LIMIT))?;
    s.write_all(&c)?;
    s.set_write_timeout(None)?;
    Ok(s)
}

impl<P: Probes> Link for SocketLink<P> {
    fn idle(&mut self) -> io::Result<Histogram> {
        Ok(self.probes.idle())
    }

    fn open(&mut self, load: Load, count: u32) -> io::Result<()> {
        for _ in 0..count {
            match load {
                Load::Down => self.load.add_receiver(self.connect(MARKER_DOWN)?)?,
                Load::Up => self.load.add_sender(self.connect(MARKER_UP)?)?,
            }
        }
        let senders = self
            .load
            .senders()
            .filter_map(|s| s.try_clone().ok())
            .collect();
        self.probes.load_started(senders);
        Ok(())
    }

    fn probe_rate(&mut self, pairs_per_sec: f64) {
        self.probes.set_rate(pairs_per_sec);
    }

    fn take_interval(&mut self) -> io::Result<IntervalData> {
        if let Some(e) = self.load.failure() {
            return Err(e);
        }
        Ok(IntervalData {
            down_bytes: self.load.take_received(),
            up_bytes: self.load.take_acked(),
            samples: self.probes.take(),
        })
    }

    fn end_stage(&mut self) {
        // A new set for the next stage: the old one stops and joins as it drops.
        drop(std::mem::take(&mut self.load));
        self.probes.load_started(Vec::new());
    }
}

/// The server's side: the load connections of one test, until it ends.
#[derive(Default)]
pub struct LoadHost {
    load: LoadSet,
}

impl LoadHost {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `marker` names a load connection.
    pub fn is_load(marker: u8) -> bool {
        matches!(marker, MARKER_DOWN | MARKER_UP)
    }

    /// A connection routed here by its marker (its cookie already read): sends
    /// on it (downlink) or reads and counts (uplink) until [`LoadHost::finish`].
    /// Another marker is not a load connection: it is handed back.
    pub fn on_conn(&mut self, conn: TcpStream, marker: u8) -> Result<(), TcpStream> {
        let r = match marker {
            MARKER_DOWN => self.load.add_sender(conn),
            MARKER_UP => self.load.add_receiver(conn),
            _ => return Err(conn),
        };
        if let Err(e) = r {
            log::warn!("rpm: a load connection could not start: {e}");
        }
        Ok(())
    }

    /// The connections this end sends load on (for the self probes the server
    /// pushes to the client).
    pub(crate) fn senders(&self) -> Vec<Arc<TcpStream>> {
        self.load
            .senders()
            .filter_map(|s| s.try_clone().ok())
            .map(Arc::new)
            .collect()
    }

    /// Load connections open.
    pub fn len(&self) -> usize {
        self.load.len()
    }

    /// No load connection open.
    pub fn is_empty(&self) -> bool {
        self.load.is_empty()
    }

    /// Bytes received on the uplink connections since the last call.
    pub fn take_received(&mut self) -> u64 {
        self.load.take_received()
    }

    /// The test is over: every load connection is shut and its thread joined.
    pub fn finish(&mut self) {
        self.load.stop();
    }
}

/// Real time for the loop: sleeps in short steps so that `stop` ends a wait
/// within [`STEP`].
pub struct SleepTicks {
    stop: Arc<AtomicBool>,
}

/// Longest a wait goes without looking at the stop flag.
pub const STEP: Duration = Duration::from_millis(20);

impl SleepTicks {
    /// Waits that end early once `stop` is set.
    pub fn new(stop: Arc<AtomicBool>) -> Self {
        Self { stop }
    }
}

impl Ticks for SleepTicks {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wait_until(&mut self, t: Instant) -> bool {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now >= t {
                return true;
            }
            std::thread::sleep((t - now).min(STEP));
        }
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;

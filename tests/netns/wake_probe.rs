//! How late the host wakes a sleeping thread, measured beside a run: a
//! thread asks for 1 ms naps and records how far past 1 ms each one ends.
//! A figure that includes a reader's wake-up (a TCP write's trip time ends
//! when the receiver reads it) is only as close to the network's as the
//! host is prompt; when the naps run late, the run says so as evidence.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const NAP: Duration = Duration::from_millis(1);

/// Naps ending later than this (90th percentile) are a disturbed host. Seen
/// beside the TCP trip-time rig on a 2-core VM: 70-95 us in quiet runs, all
/// of which passed; in a busy stretch (other queue tests failing beside it)
/// 0.25-1.9 ms, with trips 0.5-3.6 ms over the queue, and one run at 0.22 ms
/// that passed.
pub(crate) const LATE: Duration = Duration::from_micros(150);

/// A running probe; [`WakeProbe::stop`] returns its overshoots.
pub(crate) struct WakeProbe {
    stop: Arc<AtomicBool>,
    late: Arc<Mutex<Vec<Duration>>>,
    thread: Option<JoinHandle<()>>,
}

impl WakeProbe {
    pub(crate) fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let late = Arc::new(Mutex::new(Vec::new()));
        let (s, l) = (stop.clone(), late.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let t = Instant::now();
                std::thread::sleep(NAP);
                let over = t.elapsed().saturating_sub(NAP);
                l.lock().unwrap().push(over);
            }
        });
        Self {
            stop,
            late,
            thread: Some(thread),
        }
    }

    /// Stops the probe: the 90th percentile of how late its naps ended.
    pub(crate) fn stop(mut self) -> Duration {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("wake probe panicked");
        }
        let mut v = self.late.lock().unwrap().clone();
        v.sort();
        v.get(v.len() * 9 / 10).copied().unwrap_or_default()
    }
}

impl Drop for WakeProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

//! The threads of one iperf 2 TCP test (one per direction of each stream), as
//! the client and the server both run them, and the handle that stops them.
//!
//! A worker moves bytes until its end (the peer's EOF, the `-n` budget, a stop),
//! tells the interval thread its flow ended, closes its direction the way iperf
//! 2 does (FIN, then drain to the peer's FIN), and wakes the driver.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rperf3_engine::budget::{Budget, BudgetUnit};
use rperf3_engine::control::RunControl;

use super::flow_stats::FlowStats;
use super::interval::Ender;
use super::tcp_io;
use super::tcp_isoch::{send_frames, FramePlan};
use super::tcp_setup::wake;
use rperf3_engine::tcp::Pacing;
use rperf3_sys::zerocopy::PayloadFile;

/// What a sender sends.
pub(crate) enum Source {
    /// The pattern, `-l` bytes a write; with `sendfile`, sent from a file
    /// that holds it (see `measurement::choice::sendfile_suits`).
    Pattern {
        /// One block.
        block: Arc<Vec<u8>>,
        /// Sent with sendfile.
        sendfile: bool,
    },
    /// A reader (`-F` file, `-I` stdin), `len` bytes a write.
    Reader(Box<dyn Read + Send>, u32),
    /// `--isochronous`: frames at the frame rate.
    Frames(FramePlan),
}

/// How a sender ends.
pub(crate) struct SendPlan {
    /// What to send.
    pub(crate) source: Source,
    /// `-b`, and when a paced sender stops (`-t`).
    pub(crate) pacer: Option<Pacing>,
    /// `-n` bytes (per stream, as iperf 2).
    pub(crate) bytes: Option<u64>,
    /// Read and discard after the FIN until the peer's (nothing else reads
    /// this socket); how long at most.
    pub(crate) drain: Option<Duration>,
}

/// The workers of a test.
#[derive(Default)]
pub(crate) struct Workers {
    threads: Vec<JoinHandle<()>>,
    ctls: Vec<Arc<RunControl>>,
    /// Which of `ctls` are senders'.
    senders: Vec<bool>,
    socks: Vec<Arc<TcpStream>>,
    errors: Arc<Mutex<Vec<String>>>,
    /// Workers that have not yet woken the driver for their end: counted down
    /// before the wake-up, so a woken driver never sees a worker still
    /// "running" that has in fact ended (and then sleeps on).
    running: Arc<AtomicUsize>,
}

impl Workers {
    /// Starts a sender on `sock`.
    pub(crate) fn send(
        &mut self,
        sock: &Arc<TcpStream>,
        plan: SendPlan,
        stats: &Arc<FlowStats>,
        (ender, key): (Ender, u64),
        waker: UnixStream,
    ) -> io::Result<()> {
        let ctl = Arc::new(RunControl::new(
            plan.bytes.map(|n| Budget::new(BudgetUnit::Bytes, n)),
        ));
        let (s, st, c, errs) = (
            sock.clone(),
            stats.clone(),
            ctl.clone(),
            self.errors.clone(),
        );
        let running = self.started();
        let t = std::thread::Builder::new()
            .name("iperf2-send".into())
            .spawn(move || {
                let r = match plan.source {
                    Source::Pattern { block, sendfile } => {
                        let file = sendfile.then(|| PayloadFile::new(&block).ok()).flatten();
                        tcp_io::send_loop(&s, &block, file.as_ref(), plan.pacer, &c, &st)
                    }
                    Source::Frames(f) => {
                        let r = send_frames(&s, f, &c, &st);
                        if r.is_err() {
                            st.errors.fetch_add(1, Ordering::Relaxed);
                        }
                        r
                    }
                    Source::Reader(mut src, len) => {
                        let r = tcp_io::send_reader(&s, &mut *src, len, plan.pacer, &c, &st);
                        if r.is_err() {
                            st.errors.fetch_add(1, Ordering::Relaxed);
                        }
                        r
                    }
                };
                ender.done(key);
                if let (Err(e), false) = (r, c.stopped()) {
                    note(
                        &errs,
                        format!("tcp write failed: {}", super::client_header::os_text(&e)),
                    );
                }
                tcp_io::finish_sending(&s, plan.drain.is_some(), plan.drain.unwrap_or_default());
                running.fetch_sub(1, Ordering::AcqRel);
                wake(&waker);
            });
        let t = self.spawned(t)?;
        self.push(t, ctl, sock, true);
        Ok(())
    }

    /// Starts a receiver reading `len`-byte blocks from `sock` as `how`
    /// says; with `fin` (nothing else writes on it), the peer's FIN is
    /// answered with ours at once, so a peer draining to our FIN is not kept
    /// waiting.
    pub(crate) fn recv(
        &mut self,
        sock: &Arc<TcpStream>,
        (len, fin, how): (u32, bool, tcp_io::ReadHow),
        stats: &Arc<FlowStats>,
        (ender, key): (Ender, u64),
        waker: UnixStream,
    ) -> io::Result<()> {
        let ctl = Arc::new(RunControl::new(None));
        let (s, st, c, errs) = (
            sock.clone(),
            stats.clone(),
            ctl.clone(),
            self.errors.clone(),
        );
        let running = self.started();
        let t = std::thread::Builder::new()
            .name("iperf2-recv".into())
            .spawn(move || {
                let r = tcp_io::recv_loop(&s, (len, how), &c, &st);
                ender.done(key);
                if fin && r.is_ok() {
                    let _ = s.shutdown(Shutdown::Write);
                }
                if let (Err(e), false) = (r, c.stopped()) {
                    note(
                        &errs,
                        format!("tcp recv failed: {}", super::client_header::os_text(&e)),
                    );
                }
                running.fetch_sub(1, Ordering::AcqRel);
                wake(&waker);
            });
        let t = self.spawned(t)?;
        self.push(t, ctl, sock, false);
        Ok(())
    }

    fn started(&self) -> Arc<AtomicUsize> {
        self.running.fetch_add(1, Ordering::AcqRel);
        self.running.clone()
    }

    /// A spawn that failed never counts down.
    fn spawned(&self, t: io::Result<JoinHandle<()>>) -> io::Result<JoinHandle<()>> {
        if t.is_err() {
            self.running.fetch_sub(1, Ordering::AcqRel);
        }
        t
    }

    fn push(&mut self, t: JoinHandle<()>, ctl: Arc<RunControl>, sock: &Arc<TcpStream>, send: bool) {
        self.threads.push(t);
        self.ctls.push(ctl);
        self.senders.push(send);
        self.socks.push(sock.clone());
    }

    /// Tells senders to stop after their current write (the end of `-t`);
    /// receivers go on to the peer's FIN.
    pub(crate) fn stop(&self) {
        for (c, _) in self.ctls.iter().zip(&self.senders).filter(|(_, s)| **s) {
            c.stop();
        }
    }

    /// Ends everything now: stops the loops and shuts the sockets down, so a
    /// worker blocked in a read or a write returns at once.
    pub(crate) fn abort(&self) {
        for c in &self.ctls {
            c.stop();
        }
        for s in &self.socks {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Whether every worker has ended (and woken the driver for it).
    pub(crate) fn finished(&self) -> bool {
        self.running.load(Ordering::Acquire) == 0
    }

    /// Waits for every worker; returns the errors they met.
    pub(crate) fn join(&mut self) -> Vec<String> {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.ctls.clear();
        self.senders.clear();
        self.socks.clear();
        std::mem::take(&mut *self.errors.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.abort();
            self.join();
        }
    }
}

fn note(errs: &Mutex<Vec<String>>, e: String) {
    errs.lock().unwrap_or_else(|p| p.into_inner()).push(e);
}

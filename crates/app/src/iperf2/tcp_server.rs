//! The iperf 2 TCP server's host loop: one listener, each accepted connection
//! its own test thread (as iperf 2), the `-P N`, `-1`, `-t` and `-c host`
//! limits, and SIGINT, which ends every running test with its final rows out.
//!
//! The listener never reads a header itself (iperf 2's does, and a silent
//! client stalls it): a session thread does, under an absolute deadline, so
//! the next client is accepted at once whatever the previous one sends.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rperf3_report::iperf2::model::Event2;
use rperf3_report::iperf2::Report2;
use rperf3_sys::net;

use super::config::{Config2, Role2, Server2};
use super::tcp_session;
use super::tcp_setup::{self, apply_opts, Wake};
use super::tcp_shared::Shared;
use super::Outcome2;
use crate::Interrupt;

/// Runs the server described by `cfg` (its role must be a server).
pub(crate) fn run(cfg: &Config2, report: Arc<dyn Report2>, mut intr: Interrupt) -> Outcome2 {
    let Role2::Server(sv) = &cfg.role else {
        return Outcome2 { status: 1 };
    };
    match host(cfg, sv, report.clone(), &mut intr) {
        Ok(()) => Outcome2 { status: 0 },
        Err(e) => {
            report.event(Event2::Message(e));
            Outcome2 { status: 1 }
        }
    }
}

fn listen(cfg: &Config2) -> Result<(TcpListener, u16), String> {
    let c = &cfg.common;
    let port = c.bind.as_ref().and_then(|b| b.port).unwrap_or(c.port);
    let host = c.bind.as_ref().map(|b| b.host.as_str());
    let dev = c.bind.as_ref().and_then(|b| b.device.as_deref());
    let l = net::listen_tcp(host, dev, port, c.family).map_err(|e| {
        format!(
            "ERROR: listener bind failed: {}",
            super::client_header::os_text(&e)
        )
    })?;
    let v6 = l.local_addr().map(|a| a.is_ipv6()).unwrap_or(false);
    // Accepted sockets inherit the buffer sizes, MSS and congestion control.
    apply_opts(l.as_fd(), v6, c).map_err(|e| format!("ERROR: socket option: {e}"))?;
    let port = l.local_addr().map(|a| a.port()).unwrap_or(port);
    Ok((l, port))
}

/// The addresses `-c host` admits.
fn admitted(sv: &Server2, cfg: &Config2) -> Result<Option<Vec<IpAddr>>, String> {
    let Some(h) = sv.only_from.as_deref() else {
        return Ok(None);
    };
    let ips = net::resolve(h, 0, cfg.common.family)
        .map_err(|e| format!("ERROR: failed to find host {h}: {e}"))?;
    Ok(Some(ips.into_iter().map(|a| net::unmap(a).ip()).collect()))
}

fn host(
    cfg: &Config2,
    sv: &Server2,
    report: Arc<dyn Report2>,
    intr: &mut Interrupt,
) -> Result<(), String> {
    let (l, port) = listen(cfg)?;
    let len = cfg.common.len_or_default(false);
    report.event(Event2::Settings(tcp_setup::listener_settings(
        &l,
        &cfg.common,
        port,
        len,
    )));
    let only = admitted(sv, cfg)?;
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    let wake = Wake::new().map_err(|e| e.to_string())?;
    let waker = wake.waker().map_err(|e| e.to_string())?;
    let sh = Arc::new(Shared::new(cfg.clone(), report.clone(), port, waker));
    let until = cfg.common.time.map(|t| Instant::now() + t);
    let mut sessions: Vec<JoinHandle<()>> = Vec::new();
    let mut accepted = 0u32;
    loop {
        sessions.retain(|h| !h.is_finished());
        if intr.triggered() {
            if sh.running() {
                report.event(Event2::Message(super::WAITING.into()));
            }
            sh.stop_all();
            break;
        }
        let now = Instant::now();
        if until.is_some_and(|u| now >= u) {
            break;
        }
        if sv.max_clients.is_some_and(|n| accepted >= n) {
            break;
        }
        let busy = sv.single_client && sh.sessions() > 0;
        let limit = until.map(|u| u.saturating_duration_since(now));
        let mut fds = vec![intr.fd(), wake.fd()];
        if !busy {
            fds.push(l.as_fd());
        }
        tcp_setup::wait(&fds, limit);
        wake.clear();
        if busy {
            continue;
        }
        match l.accept() {
            Ok((s, peer)) => {
                let peer = net::unmap(peer);
                if let Some(ips) = &only {
                    if !ips.contains(&peer.ip()) {
                        report.event(Event2::Message(format!(
                            "WARNING: connection from {} port {} refused: only {} is served",
                            peer.ip(),
                            peer.port(),
                            sv.only_from.as_deref().unwrap_or("")
                        )));
                        continue;
                    }
                }
                sh.make_room();
                accepted += 1;
                match spawn_session(s, peer, &sh) {
                    Ok(h) => sessions.push(h),
                    Err(e) => report.event(Event2::Message(format!("WARNING: {e}"))),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if net::out_of_resources(&e) => {
                report.event(Event2::Message(format!("WARNING: accept failed: {e}")));
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(format!("ERROR: accept failed: {e}")),
        }
    }
    drop(l);
    // Running tests finish (or, after SIGINT, end now) with their final rows.
    while !sessions.is_empty() {
        if intr.triggered() {
            sh.stop_all();
        }
        sessions.retain(|h| !h.is_finished());
        if sessions.is_empty() {
            break;
        }
        tcp_setup::wait(&[intr.fd(), wake.fd()], Some(Duration::from_millis(500)));
        wake.clear();
    }
    Ok(())
}

fn spawn_session(s: TcpStream, peer: SocketAddr, sh: &Arc<Shared>) -> io::Result<JoinHandle<()>> {
    s.set_nonblocking(false)?;
    // Taken here, before the next accept looks at the count; given back when
    // the thread ends, or at once when it cannot start.
    let seat = Shared::seat(sh);
    let pending = sh.header_wait(&s, peer);
    let sh2 = sh.clone();
    std::thread::Builder::new()
        .name("iperf2-session".into())
        .spawn(move || {
            let _seat = seat;
            tcp_session::serve(s, peer, &sh2, pending);
        })
}

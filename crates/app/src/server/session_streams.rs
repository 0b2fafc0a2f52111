//! A session's data streams as they arrive: TCP and SCTP connections and
//! UDP sockets the host routes to it, each taken while streams are set up
//! and refused outside that state.

use std::net::{TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::time::Instant;

use rperf3_proto::*;

use super::Session;
use crate::measurement::driver::Test;
use crate::measurement::streams::LiveStream;
use crate::server::refuse::access_denied;

impl Session {
    /// A TCP connection (or SCTP association, `sctp`) with this test's cookie:
    /// a data stream while streams are set up, else refused (as iperf3
    /// refuses a connection outside that state).
    pub(super) fn on_tcp(&mut self, conn: TcpStream, sctp: bool) -> Result<(), IperfError> {
        let wanted = if sctp { Protocol::Sctp } else { Protocol::Tcp };
        let (Some((i, sender)), Some(plan)) = (self.d.next_stream(), self.d.plan()) else {
            access_denied(conn);
            return Ok(());
        };
        if plan.params.protocol != wanted {
            access_denied(conn);
            return Ok(());
        }
        let params = &plan.params;
        if params.window > 0 {
            let _ = rperf3_sys::net::set_buffer_sizes(&conn, params.window as usize);
        }
        let s = if sctp {
            // iperf3's server sets nothing else on SCTP streams.
            LiveStream::sctp(conn, i, sender)
        } else {
            let v6 = conn.local_addr().is_ok_and(|l| l.is_ipv6());
            let applied = crate::measurement::sockopts::apply_tcp(conn.as_fd(), v6, params, true)?;
            crate::measurement::sockopts::apply_snd_timeout(&conn, self.common.snd_timeout_ms);
            if applied.congestion_missing {
                self.d
                    .rep
                    .warning("TCP congestion control algorithm not supported");
            }
            LiveStream::tcp(conn, i, sender)
        }
        .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
        log::debug!(
            "test {}: {} stream {} from {}",
            self.id,
            wanted.name(),
            s.info.id,
            s.info.remote
        );
        self.add_stream(s)
    }

    /// A UDP stream the host took from the listener: reply "6789" on it.
    pub(super) fn on_udp(&mut self, sock: UdpSocket) -> Result<(), IperfError> {
        let (Some((i, sender)), Some(plan)) = (self.d.next_stream(), self.d.plan()) else {
            return Ok(());
        };
        let p = &plan.params;
        let window = (p.window > 0).then_some(p.window as u32);
        crate::measurement::udp_setup::size_buffers(&sock, p.len.max(1) as usize, window)
            .map_err(|e| IperfError::from_io(IE_STREAM_ACCEPT, &e))?;
        let v6 = sock.local_addr().is_ok_and(|l| l.is_ipv6());
        crate::measurement::sockopts::apply_tos(&sock, v6, p)?;
        crate::measurement::sockopts::apply_pacing(&sock, p);
        if p.dont_fragment && self.peer.is_ipv4() {
            let _ = rperf3_sys::sockopt::set_dont_fragment(&sock);
        }
        sock.send(&UDP_CONNECT_REPLY)
            .map_err(|e| IperfError::from_io(IE_STREAM_WRITE, &e))?;
        let s = LiveStream::udp(sock, i, sender)
            .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
        log::debug!(
            "test {}: UDP stream {} from {}",
            self.id,
            s.info.id,
            s.info.remote
        );
        self.add_stream(s)
    }

    /// Keeps a set-up stream; once every stream is there: TEST_START +
    /// TEST_RUNNING, then the workers.
    pub(super) fn add_stream(&mut self, s: LiveStream) -> Result<(), IperfError> {
        if !self.d.add_stream(s) {
            return Ok(());
        }
        self.release_udp();
        // `-F`: the server sends the file in reverse tests, else stores what arrives.
        if let (Some(f), Some(plan)) = (self.common.file.as_deref(), self.d.plan_mut()) {
            plan.send.file = Some(crate::measurement::diskfile::DiskFile::open(
                f,
                plan.params.reverse,
            )?);
        }
        self.d.machine.all_streams_connected(Instant::now());
        // Before counting starts, as the client starts counting on TEST_START.
        self.d.flush()?;
        self.d.start_test();
        if let (true, Test::Running(run)) = (self.owd, &mut self.d.test) {
            run.time_data();
        }
        if let Some(run) = self.d.test.run() {
            self.metrics.test_started(self.id, &run.streams);
            if let Some(p) = &self.probes {
                p.set_senders(run.tcp_senders());
                p.set_data_delays(run.data_delay_sinks());
            }
        }
        self.d.run_workers()
    }
}

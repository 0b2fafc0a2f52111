//! Each stream's worker as `choice.rs` decided it: the shared payload and the
//! thread that runs the loop (TCP, SCTP, UDP, the `-F` file, bounceback);
//! streams that share an I/O worker instead are `pool.rs`'s.

use std::io;
use std::sync::{Arc, OnceLock};

use rperf3_engine::control::RunControl;
use rperf3_engine::tcp::RecvMode;
use rperf3_engine::udp::UdpSendSpec;
use rperf3_engine::worker::Worker;
use rperf3_sys::zerocopy::PayloadFile;

use crate::measurement::bounceback;
use crate::measurement::choice::{SendSpec, WorkerPlan};
use crate::measurement::streams::{DataSock, LiveStream};
use crate::measurement::{tcp_stamps, udp_wire};

/// The block the sending streams of one test write (random or repeating), made
/// once for all of them: streams only read it, so with `-P 128` there is one
/// block, not 128. Each TCP stream still gets its own file copy for sendfile:
/// one shared memfd cost a quarter of the throughput at `-P 8`, as every
/// stream took and dropped references to the same pages from both cores.
#[derive(Debug, Default)]
pub(crate) struct SharedPayload {
    bytes: OnceLock<Arc<[u8]>>,
}

impl SharedPayload {
    pub(crate) fn bytes(&self, send: &SendSpec) -> Arc<[u8]> {
        let make = || rperf3_engine::payload::make(send.blksize, send.repeating).into();
        self.bytes.get_or_init(make).clone()
    }
}

/// Starts `s`'s worker as `plan` says.
pub(crate) fn spawn(
    s: &LiveStream,
    plan: WorkerPlan,
    ctl: &Arc<RunControl>,
    send: &SendSpec,
    payload: &SharedPayload,
) -> io::Result<Worker> {
    let counters = s.counters.clone();
    let blksize = send.blksize;
    let name = format!("stream-{}", s.info.id);
    let ctl = ctl.clone();
    let sender = s.info.sender;
    let pacer = send.pacer;
    match (&s.sock, plan) {
        (DataSock::Tcp(t) | DataSock::Sctp(t), WorkerPlan::FileSend | WorkerPlan::FileRecv) => {
            let (t, file) = (t.clone(), send.file.as_ref().map(|d| d.file.clone()));
            let file = file.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
            Worker::spawn(name, ctl, sender, move |c| {
                if sender {
                    rperf3_engine::file::send_loop(&t, &file, blksize, pacer, c, &counters)
                } else {
                    rperf3_engine::file::recv_loop(&t, &file, blksize, c, &counters)
                }
            })
        }
        (
            DataSock::Tcp(t) | DataSock::Sctp(t),
            WorkerPlan::TcpSend { .. } | WorkerPlan::SctpSend,
        ) => {
            let (t, buf) = (t.clone(), payload.bytes(send));
            let file = matches!(plan, WorkerPlan::TcpSend { sendfile: true })
                .then(|| PayloadFile::new(&buf).ok())
                .flatten();
            let stamped = s.owd.is_some() && matches!(plan, WorkerPlan::TcpSend { .. });
            let pacing = send.tcp_pacing();
            Worker::spawn(name, ctl, true, move |c| {
                if stamped {
                    tcp_stamps::send_loop_stamped(&t, &buf, pacing, c, &counters)
                } else {
                    rperf3_engine::tcp::send_loop(&t, &buf, file.as_ref(), pacing, c, &counters)
                }
            })
        }
        (DataSock::Tcp(t) | DataSock::Sctp(t), WorkerPlan::Recv(mode)) => {
            let t = t.clone();
            // --skip-rx-copy reads no byte: its data is not timed.
            let owd = s.owd.clone().filter(|_| mode == RecvMode::Copy);
            // A receiver on a mark reads the mark's size at a time.
            let read = s.mark().unwrap_or(blksize);
            Worker::spawn(name, ctl, false, move |c| match &owd {
                Some(o) => tcp_stamps::recv_loop_stamped(&t, blksize, c, &counters, o),
                None => rperf3_engine::tcp::recv_loop(&t, read, mode, c, &*counters),
            })
        }
        (DataSock::Udp(u), WorkerPlan::UdpSend) => {
            let (u, payload) = (u.clone(), payload.bytes(send));
            let spec = UdpSendSpec {
                len: blksize,
                pacer,
                burst: send.burst,
                counters_64bit: send.counters_64bit,
                end: send.pace_end,
            };
            let wall = s.owd.is_some();
            Worker::spawn(name, ctl, true, move |c| {
                udp_wire::send_loop(&u, &payload, spec, (c, &counters), wall)
            })
        }
        (DataSock::Udp(u), WorkerPlan::UdpRecv) => {
            let (u, stats) = (u.clone(), s.udp_stats.clone().unwrap_or_default());
            let c64 = send.counters_64bit;
            let owd = s.owd.clone();
            Worker::spawn(name, ctl, false, move |c| {
                udp_wire::recv_loop(&u, blksize, c64, c, &counters, &stats, owd.as_deref())
            })
        }
        (DataSock::Tcp(t), WorkerPlan::BouncebackClient | WorkerPlan::BouncebackServer) => {
            let t = t.clone();
            let bb = send
                .bounceback
                .clone()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no bounceback spec"))?;
            let client = plan == WorkerPlan::BouncebackClient;
            Worker::spawn(name, ctl, client, move |c| {
                if client {
                    bounceback::client_loop(&t, &bb, c, &counters)
                } else {
                    bounceback::server_loop(&t, &bb, c, &counters)
                }
            })
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no {plan:?} worker for this socket"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(blksize: usize) -> SendSpec {
        SendSpec {
            blksize,
            pacer: None,
            repeating: true,
            burst: 1,
            counters_64bit: false,
            skip_rx_copy: false,
            file: None,
            zerocopy: false,
            bounceback: None,
            pace_end: None,
            window_given: false,
        }
    }

    #[test]
    fn the_streams_of_a_test_share_one_payload_block() {
        let send = spec(32_768);
        let p = SharedPayload::default();
        let (a, b) = (p.bytes(&send), p.bytes(&send));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&a[..12], b"012345678901");
        assert_eq!(a.len(), 32_768);
        // Another test gets its own.
        let q = SharedPayload::default();
        assert!(!Arc::ptr_eq(&a, &q.bytes(&send)));
    }
}

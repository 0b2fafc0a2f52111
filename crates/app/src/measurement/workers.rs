//! How each stream's worker moves bytes, decided once per stream when the test
//! starts: which loop (TCP, SCTP, UDP, or the `-F` file), and for TCP whether
//! a sender uses sendfile and how a receiver reads.

use std::io;
use std::sync::{Arc, OnceLock};

use rperf3_engine::control::RunControl;
use rperf3_engine::pacing::Pacer;
use rperf3_engine::tcp::RecvMode;
use rperf3_engine::udp::UdpSendSpec;
use rperf3_engine::worker::Worker;
use rperf3_sys::zerocopy::PayloadFile;

use crate::measurement::bounceback::{self, BbSpec};
use crate::measurement::diskfile::DiskFile;
use crate::measurement::streams::{DataSock, LiveStream};

/// The smallest TCP block sent with sendfile.
const MIN_ZEROCOPY_BLOCK: usize = 16 * 1024;

/// What the workers of one test need.
#[derive(Debug, Clone)]
pub(crate) struct SendSpec {
    /// Block size (`-l`): what a sender writes and a receiver reads at once.
    pub(crate) blksize: usize,
    /// `-b` pacing.
    pub(crate) pacer: Option<Pacer>,
    /// `--repeating-payload`.
    pub(crate) repeating: bool,
    /// Blocks (TCP) or datagrams (UDP) per burst (`-b rate/N`).
    pub(crate) burst: u32,
    /// UDP: 64-bit sequence numbers.
    pub(crate) counters_64bit: bool,
    /// TCP receivers: discard data in the kernel (MSG_TRUNC), no copy.
    pub(crate) skip_rx_copy: bool,
    /// `-F`: senders send this file, receivers store what arrives in it.
    pub(crate) file: Option<DiskFile>,
    /// `-Z`: TCP senders always send with sendfile, as asked.
    pub(crate) zerocopy: bool,
    /// `--bounceback`: TCP streams carry transactions instead of bulk data.
    pub(crate) bounceback: Option<BbSpec>,
}

/// How many TCP streams one side of a test sends and receives on: how a
/// stream's worker sends or reads depends on its neighbours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TcpCrowd {
    /// Sending TCP streams.
    pub(crate) senders: usize,
    /// Receiving TCP streams.
    pub(crate) receivers: usize,
}

impl TcpCrowd {
    /// The TCP streams among `streams` (SCTP streams are not TCP here).
    pub(crate) fn of(streams: &[LiveStream]) -> Self {
        let tcp = |sender: bool| {
            streams
                .iter()
                .filter(|s| s.info.sender == sender && matches!(s.sock, DataSock::Tcp(_)))
                .count()
        };
        Self {
            senders: tcp(true),
            receivers: tcp(false),
        }
    }
}

/// One stream's worker, as decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkerPlan {
    /// `-F` on a sending TCP or SCTP stream: the file's blocks.
    FileSend,
    /// `-F` on a receiving TCP or SCTP stream: store what arrives.
    FileRecv,
    /// Blocks of the shared payload, with sendfile (page references) or writes.
    TcpSend {
        /// sendfile rather than writes.
        sendfile: bool,
    },
    /// TCP reads (SCTP: plain copies).
    Recv(RecvMode),
    /// Writes of the shared payload on an SCTP stream (no sendfile).
    SctpSend,
    /// Paced UDP datagrams.
    UdpSend,
    /// UDP datagrams with loss and jitter statistics.
    UdpRecv,
    /// `--bounceback`, client: requests out, replies timed.
    BouncebackClient,
    /// `--bounceback`, server: requests answered.
    BouncebackServer,
}

/// What decides a stream's worker: its socket and role, the test's options
/// and its neighbours. `kernel_paces` says whether the socket's congestion
/// control paces in the kernel (BBR); it is asked only when that matters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Choice<'a> {
    /// The socket's kind.
    pub(crate) kind: Kind,
    /// The stream sends.
    pub(crate) sender: bool,
    /// The test's options.
    pub(crate) send: &'a SendSpec,
    /// Its TCP neighbours on this side.
    pub(crate) crowd: TcpCrowd,
}

/// A data socket's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// TCP.
    Tcp,
    /// An SCTP association.
    Sctp,
    /// Connected UDP.
    Udp,
}

impl Choice<'_> {
    /// The worker for this stream.
    ///
    /// - `-F` applies to the streams that carry the file's direction.
    /// - A TCP sender uses sendfile for blocks of at least
    ///   [`MIN_ZEROCOPY_BLOCK`] (small sendfile calls leave as small
    ///   segments, where small writes coalesce as iperf3's do, `-l 100 -b
    ///   R/N`), always with `-Z`, and otherwise not when the congestion control
    ///   paces in the kernel and this side sends on several streams: the copy
    ///   sendfile saves is then not what limits, its senders fill their queues
    ///   at once and sleep, and the data goes out from ACK processing and
    ///   pacing timers instead, which costs more (`-P 2` 0.66x iperf3 3.21's
    ///   rate with sendfile, 1.22x with writes; one stream 1.25x with
    ///   sendfile, 1.0x with writes; see the design notes).
    /// - A TCP receiver discards with `--skip-rx-copy`; alone on its side it
    ///   reads on a mark of one block (the sending core, which on loopback
    ///   also runs the receive path, then wakes it once a block instead of once
    ///   a segment: one stream 1.64x, `-R` 1.58x the rate of plain reads); with
    ///   several receivers the mark cost 15% at `-P 2`, so they copy.
    /// - `--bounceback` turns every TCP stream into a transaction loop (the
    ///   client's streams are its senders), whatever else is set.
    pub(crate) fn decide(&self, kernel_paces: impl FnOnce() -> bool) -> WorkerPlan {
        if self.kind == Kind::Tcp && self.send.bounceback.is_some() {
            return if self.sender {
                WorkerPlan::BouncebackClient
            } else {
                WorkerPlan::BouncebackServer
            };
        }
        let file = self.send.file.as_ref();
        if self.kind != Kind::Udp && file.is_some_and(|f| f.sending == self.sender) {
            return if self.sender {
                WorkerPlan::FileSend
            } else {
                WorkerPlan::FileRecv
            };
        }
        match (self.kind, self.sender) {
            (Kind::Udp, true) => WorkerPlan::UdpSend,
            (Kind::Udp, false) => WorkerPlan::UdpRecv,
            (Kind::Sctp, true) => WorkerPlan::SctpSend,
            (Kind::Sctp, false) => WorkerPlan::Recv(RecvMode::Copy),
            (Kind::Tcp, true) => WorkerPlan::TcpSend {
                sendfile: self.send.blksize >= MIN_ZEROCOPY_BLOCK
                    && (self.send.zerocopy || self.crowd.senders <= 1 || !kernel_paces()),
            },
            (Kind::Tcp, false) if self.send.skip_rx_copy => WorkerPlan::Recv(RecvMode::Discard),
            (Kind::Tcp, false) if self.crowd.receivers == 1 => WorkerPlan::Recv(RecvMode::OnMark),
            (Kind::Tcp, false) => WorkerPlan::Recv(RecvMode::Copy),
        }
    }
}

/// Congestion controls that pace their own sending (BBR and its versions).
pub(crate) fn paces_itself(congestion: &str) -> bool {
    congestion.starts_with("bbr")
}

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
    let (pacer, burst) = (send.pacer, send.burst);
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
            Worker::spawn(name, ctl, true, move |c| {
                if stamped {
                    rperf3_engine::tcp_owd::send_loop_stamped(&t, &buf, pacer, burst, c, &counters)
                } else {
                    rperf3_engine::tcp::send_loop(
                        &t,
                        &buf,
                        file.as_ref(),
                        pacer,
                        burst,
                        c,
                        &counters,
                    )
                }
            })
        }
        (DataSock::Tcp(t) | DataSock::Sctp(t), WorkerPlan::Recv(mode)) => {
            let t = t.clone();
            // --skip-rx-copy reads no byte: its data is not timed.
            let owd = s.owd.clone().filter(|_| mode == RecvMode::Copy);
            Worker::spawn(name, ctl, false, move |c| match &owd {
                Some(o) => rperf3_engine::tcp_owd::recv_loop_stamped(&t, blksize, c, &counters, o),
                None => rperf3_engine::tcp::recv_loop(&t, blksize, mode, c, &counters),
            })
        }
        (DataSock::Udp(u), WorkerPlan::UdpSend) => {
            let (u, payload) = (u.clone(), payload.bytes(send));
            let spec = UdpSendSpec {
                len: blksize,
                pacer,
                burst,
                counters_64bit: send.counters_64bit,
            };
            let wall = s.owd.is_some();
            Worker::spawn(name, ctl, true, move |c| {
                if wall {
                    rperf3_engine::udp_owd::send_loop_wall(&u, &payload, spec, c, &counters)
                } else {
                    rperf3_engine::udp::send_loop(&u, &payload, spec, c, &counters)
                }
            })
        }
        (DataSock::Udp(u), WorkerPlan::UdpRecv) => {
            let (u, stats) = (u.clone(), s.udp_stats.clone().unwrap_or_default());
            let c64 = send.counters_64bit;
            let owd = s.owd.clone();
            Worker::spawn(name, ctl, false, move |c| match &owd {
                Some(o) => {
                    rperf3_engine::udp_owd::recv_loop_owd(&u, blksize, c64, c, &counters, &stats, o)
                }
                None => rperf3_engine::udp::recv_loop(&u, blksize, c64, c, &counters, &stats),
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
        }
    }

    fn crowd(senders: usize, receivers: usize) -> TcpCrowd {
        TcpCrowd { senders, receivers }
    }

    fn plan(kind: Kind, sender: bool, send: &SendSpec, c: TcpCrowd, paces: bool) -> WorkerPlan {
        let choice = Choice {
            kind,
            sender,
            send,
            crowd: c,
        };
        choice.decide(|| paces)
    }

    #[test]
    fn tcp_senders_choose_sendfile_by_block_neighbours_and_pacing() {
        let big = spec(128 * 1024);
        let sendfile = WorkerPlan::TcpSend { sendfile: true };
        let writes = WorkerPlan::TcpSend { sendfile: false };
        // One sender: sendfile, whatever the congestion control.
        assert_eq!(plan(Kind::Tcp, true, &big, crowd(1, 0), true), sendfile);
        // Several under a pacing congestion control: writes; under cubic: sendfile.
        assert_eq!(plan(Kind::Tcp, true, &big, crowd(2, 0), true), writes);
        assert_eq!(plan(Kind::Tcp, true, &big, crowd(8, 0), false), sendfile);
        // -Z always sends with sendfile.
        let z = SendSpec {
            zerocopy: true,
            ..spec(128 * 1024)
        };
        assert_eq!(plan(Kind::Tcp, true, &z, crowd(2, 0), true), sendfile);
        // Small blocks are written, so they coalesce.
        let small = spec(MIN_ZEROCOPY_BLOCK - 1);
        assert_eq!(plan(Kind::Tcp, true, &small, crowd(1, 0), false), writes);
        // SCTP never uses sendfile.
        assert_eq!(
            plan(Kind::Sctp, true, &big, crowd(0, 0), false),
            WorkerPlan::SctpSend
        );
    }

    #[test]
    fn the_congestion_control_is_asked_only_when_it_decides() {
        let big = spec(128 * 1024);
        let choice = Choice {
            kind: Kind::Tcp,
            sender: true,
            send: &big,
            crowd: crowd(1, 0),
        };
        choice.decide(|| panic!("one sender does not depend on pacing"));
    }

    #[test]
    fn tcp_receivers_read_on_a_mark_only_alone() {
        let s = spec(128 * 1024);
        let recv = |c| plan(Kind::Tcp, false, &s, c, false);
        assert_eq!(recv(crowd(0, 1)), WorkerPlan::Recv(RecvMode::OnMark));
        assert_eq!(recv(crowd(0, 2)), WorkerPlan::Recv(RecvMode::Copy));
        let skip = SendSpec {
            skip_rx_copy: true,
            ..spec(128 * 1024)
        };
        assert_eq!(
            plan(Kind::Tcp, false, &skip, crowd(0, 1), false),
            WorkerPlan::Recv(RecvMode::Discard)
        );
        // SCTP reads plainly: no mark, no MSG_TRUNC.
        assert_eq!(
            plan(Kind::Sctp, false, &skip, crowd(0, 0), false),
            WorkerPlan::Recv(RecvMode::Copy)
        );
    }

    #[test]
    fn udp_streams_and_the_file_direction() {
        let s = spec(1448);
        assert_eq!(
            plan(Kind::Udp, true, &s, crowd(0, 0), false),
            WorkerPlan::UdpSend
        );
        assert_eq!(
            plan(Kind::Udp, false, &s, crowd(0, 0), false),
            WorkerPlan::UdpRecv
        );
        let dir = std::env::temp_dir().join(format!("rperf3-workers-{}", std::process::id()));
        let path = dir.to_string_lossy().into_owned();
        let sending = DiskFile::open(&path, false).unwrap();
        let with_file = SendSpec {
            file: Some(DiskFile {
                sending: true,
                ..sending
            }),
            ..spec(1448)
        };
        // -F sends on the sending streams; with --bidir the others stay TCP.
        assert_eq!(
            plan(Kind::Tcp, true, &with_file, crowd(1, 1), false),
            WorkerPlan::FileSend
        );
        assert_eq!(
            plan(Kind::Tcp, false, &with_file, crowd(1, 1), false),
            WorkerPlan::Recv(RecvMode::OnMark)
        );
        let storing = SendSpec {
            file: Some(DiskFile::open(&path, false).unwrap()),
            ..spec(1448)
        };
        assert_eq!(
            plan(Kind::Sctp, false, &storing, crowd(0, 0), false),
            WorkerPlan::FileRecv
        );
        let _ = std::fs::remove_file(&path);
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

    #[test]
    fn bounceback_turns_tcp_streams_into_transaction_loops() {
        let offer = rperf3_proto::bounceback::BouncebackOffer {
            version: 1,
            request: 100,
            reply: 100,
            hold_us: 0,
            period_us: 0,
            load: None,
        };
        let bb = SendSpec {
            bounceback: Some(BbSpec::of(&offer)),
            // Options of bulk transfer do not change it.
            skip_rx_copy: true,
            zerocopy: true,
            ..spec(128 * 1024)
        };
        assert_eq!(
            plan(Kind::Tcp, true, &bb, crowd(4, 0), true),
            WorkerPlan::BouncebackClient
        );
        assert_eq!(
            plan(Kind::Tcp, false, &bb, crowd(0, 1), false),
            WorkerPlan::BouncebackServer
        );
        // Not TCP: the usual worker (the command line refuses -u with it).
        assert_eq!(
            plan(Kind::Udp, true, &bb, crowd(0, 0), false),
            WorkerPlan::UdpSend
        );
        let choice = Choice {
            kind: Kind::Tcp,
            sender: true,
            send: &bb,
            crowd: crowd(2, 0),
        };
        choice.decide(|| panic!("a transaction loop does not depend on pacing"));
    }
}

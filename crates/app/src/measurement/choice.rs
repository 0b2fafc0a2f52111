//! Which loop each stream's worker runs, decided once per stream when the test
//! starts from its socket, role, the test's options and its neighbours: TCP,
//! SCTP, UDP, the `-F` file or bounceback, and for TCP whether a sender uses
//! sendfile and how a receiver reads.

use std::time::Instant;

use rperf3_engine::pacing::Pacer;
use rperf3_engine::tcp::Pacing;
use rperf3_engine::tcp::RecvMode;

use crate::measurement::bounceback::BbSpec;
use crate::measurement::diskfile::DiskFile;

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
    /// Paced senders send nothing due at or after this (the test's end).
    pub(crate) pace_end: Option<Instant>,
    /// `-w` set the streams' buffers.
    pub(crate) window_given: bool,
}

impl SendSpec {
    /// iperf3's pacing for a TCP sender starting now, if `-b` is set.
    pub(crate) fn tcp_pacing(&self) -> Option<Pacing> {
        self.pacer
            .map(|p| Pacing::before_each(p, Instant::now(), self.burst).ending(self.pace_end))
    }
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
    ///   paces in the kernel and this side sends on a few streams: the copy
    ///   sendfile saves is then not what limits, its senders fill their queues
    ///   at once and sleep, and the data goes out from ACK processing and
    ///   pacing timers instead, which costs more (`-P 2` 0.66x iperf3 3.21's
    ///   rate with sendfile, 1.22x with writes; one stream 1.25x with
    ///   sendfile, 1.0x with writes; see the design notes); from
    ///   [`SENDFILE_CROWD`] senders the copy is what limits again.
    /// - A TCP receiver discards with `--skip-rx-copy` (MSG_TRUNC). One of at
    ///   most [`MARKED_RECEIVERS`] on its side reads (or discards) on a mark,
    ///   [`read_mark`]: the sending core, which on loopback also runs the
    ///   receive path, then wakes it once a mark instead of once a segment.
    ///   With more receivers their reads leave the cache (`-P 4` 0.94x, `-P 8`
    ///   0.70x the rate of plain reads), so they copy what is there.
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
                sendfile: self.send.zerocopy && self.send.blksize >= MIN_ZEROCOPY_BLOCK
                    || sendfile_suits(self.send.blksize, self.crowd.senders, kernel_paces),
            },
            (Kind::Tcp, false)
                if self.send.skip_rx_copy && self.crowd.receivers <= MARKED_RECEIVERS =>
            {
                WorkerPlan::Recv(RecvMode::DiscardOnMark)
            }
            (Kind::Tcp, false) if self.send.skip_rx_copy => WorkerPlan::Recv(RecvMode::Discard),
            (Kind::Tcp, false) if self.crowd.receivers <= MARKED_RECEIVERS => {
                WorkerPlan::Recv(RecvMode::OnMark)
            }
            (Kind::Tcp, false) => WorkerPlan::Recv(RecvMode::Copy),
        }
    }
}

/// Whether a TCP sender of `blksize` blocks, one of `senders` on its side,
/// sends with sendfile unasked (see [`Choice::decide`]); both personalities'
/// bulk senders follow it. `kernel_paces` is asked only when it decides.
pub(crate) fn sendfile_suits(
    blksize: usize,
    senders: usize,
    kernel_paces: impl FnOnce() -> bool,
) -> bool {
    blksize >= MIN_ZEROCOPY_BLOCK && (senders <= 1 || senders >= SENDFILE_CROWD || !kernel_paces())
}

/// From this many TCP senders on a side, sendfile again under a pacing
/// congestion control: with short-path send buffers (BBR, loopback, against
/// writes) `-P 8` 1.14x, `-P 32` 1.22x, `-P 64` 1.17x, `-P 128` 1.06x,
/// `-P 128 --bidir` 1.23x the rate; `-P 4` 0.88x and `-P 2` 0.74x, so fewer
/// write.
const SENDFILE_CROWD: usize = 8;

/// The most TCP receivers on a side that read on a mark: `-P 2` 1.17x the
/// rate of plain reads.
const MARKED_RECEIVERS: usize = 2;

/// The least a lone TCP receiver's mark (SO_RCVLOWAT) and read size.
const LEAST_READ_MARK: usize = 512 << 10;

/// A lone TCP receiver's mark and read size for `blksize` blocks: at least
/// [`LEAST_READ_MARK`]. The sending core, which on loopback also runs the
/// receive path, wakes the reader once a mark; a 512 KiB read copied into a
/// buffer that stays in a core's cache (1 MiB L2 here) measured 2.1x the
/// rate of the 128 KiB mark with one stream; 256 KiB gave 0.80x of it, 1 MiB
/// no more, 2 MiB 0.4x (the buffer left the cache; design notes, "Marks"). The
/// read size is not in iperf3's output; `-l` still sets the blocks sent.
pub(crate) fn read_mark(blksize: usize) -> usize {
    blksize.max(LEAST_READ_MARK)
}

/// What one side's TCP senders keep in their send buffers together on a
/// short path, at most.
const SHORT_PATH_SEND_BUFFERS: usize = 8 << 20;

/// The least and the most send buffer a stream is given there (SO_SNDBUF;
/// the kernel doubles it). The least was 64 KiB: 128 KiB carried `-P 128
/// --bidir` 1.19-1.22x and `-P 128` 1.00-1.02x as fast (two runs of five
/// rounds); its streams hold two full segments in flight, not one, and
/// 512 KiB, where the buffers leave the cache, made 0.74x.
const MIN_SEND_BUFFER: usize = 128 << 10;
const MAX_SEND_BUFFER: usize = 512 << 10;

/// The rate (bits/s) the buffers together must carry over the path's round
/// trip: more than a 100 Gbit/s NIC, so no path is held below what it can
/// carry.
const SHORT_PATH_CARRIES: u64 = 128_000_000_000;

/// The send buffer (SO_SNDBUF) for each of `senders` TCP senders on a side
/// whose stream saw `handshake_rtt_us` when it connected, unless `-w` chose
/// one (`window_given`) or the kernel's own sizing is kept: one or two
/// senders, or a path too long for the buffers to carry
/// [`SHORT_PATH_CARRIES`] over its round trip (at most about 520 us for up
/// to 64 senders: the same host, a container beside it, the same rack).
///
/// The kernel grows each sender's buffer to 4 MiB, and a buffer holds bytes
/// written long before they leave: on loopback the receiver then copies them
/// out of memory rather than the cache, and with many streams that is where
/// the time goes. 8 MiB shared among the senders, 64 KiB to 512 KiB each,
/// measured `-P 4` 1.27x, `-P 8` 1.17x the rate of 8 MiB shared without a
/// ceiling, which made `-P 8` 1.16x, `-P 32` 1.30x and `-P 128` 1.55x iperf3
/// 3.21's (design notes, "Many streams"); the least is now 128 KiB (more
/// than 64 senders hold more than 8 MiB together).
pub(crate) fn short_path_send_buffer(
    senders: usize,
    handshake_rtt_us: u32,
    window_given: bool,
) -> Option<usize> {
    if window_given || senders < 3 || handshake_rtt_us == 0 {
        return None;
    }
    let each = (SHORT_PATH_SEND_BUFFERS / senders).clamp(MIN_SEND_BUFFER, MAX_SEND_BUFFER);
    let bits = (each.saturating_mul(senders) as u64).saturating_mul(8);
    let carries = bits.saturating_mul(1_000_000) / u64::from(handshake_rtt_us);
    (carries >= SHORT_PATH_CARRIES).then_some(each)
}

/// Gives a TCP sender, one of `senders` on its side, its short-path send
/// buffer if [`short_path_send_buffer`] says so; both personalities' bulk
/// senders follow it. Best effort: the kernel's sizing is left otherwise.
pub(crate) fn size_sender(sock: &std::net::TcpStream, senders: usize, window_given: bool) {
    let rtt = rperf3_sys::tcp_info::tcp_info(sock).map_or(0, |i| i.rtt);
    if let Some(size) = short_path_send_buffer(senders, rtt, window_given) {
        let _ = rperf3_sys::net::set_send_buffer(sock, size);
    }
}

/// From this many TCP senders on a side, a sendfile sender corks under a
/// pacing congestion control too (see [`cork_suits`]).
const CORK_CROWD: usize = 24;

/// Whether a TCP sender that sends with sendfile at full rate (no `-b`), one
/// of `senders` on its side, corks its socket (TCP_CORK): a block of 128 KiB
/// is two 65483-byte loopback segments and 106 bytes, which then wait for
/// the next block instead of leaving as a third segment (whole segments only,
/// a fifth fewer, and fewer ACKs). Not when the kernel paces the socket (BBR,
/// `--fq-rate`) for fewer than [`CORK_CROWD`] senders: a corked tail reads as
/// a sender with nothing to send, and the pacing rate falls (one stream
/// 0.57x, `-P 8` 0.49x, `-P 20` 0.89x the rate uncorked; `-P 24` 1.11x,
/// `-P 32` 1.14x, `-P 64` 1.32x, `-P 128` 1.29x, `-P 128 --bidir` 1.25x;
/// cubic one stream 1.20x, `-P 8` 1.05x; design notes, "Corked senders").
/// `kernel_paces` is asked only when it decides.
pub(crate) fn cork_suits(senders: usize, kernel_paces: impl FnOnce() -> bool) -> bool {
    senders >= CORK_CROWD || !kernel_paces()
}

/// Corks a full-rate sendfile sender's socket if [`cork_suits`] says so;
/// best effort. The engine's send loops uncork it when they end, so the
/// last bytes never wait.
pub(crate) fn cork_sender(sock: &std::net::TcpStream, senders: usize) {
    let paces = || {
        rperf3_sys::sockopt::pacing_capped(sock)
            || rperf3_sys::net::tcp_congestion(sock).is_some_and(|c| paces_itself(&c))
    };
    if cork_suits(senders, paces) {
        let _ = rperf3_sys::sockopt::set_cork(sock, true);
    }
}

/// Congestion controls that pace their own sending (BBR and its versions).
pub(crate) fn paces_itself(congestion: &str) -> bool {
    congestion.starts_with("bbr")
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
        assert_eq!(plan(Kind::Tcp, true, &big, crowd(7, 0), true), writes);
        assert_eq!(plan(Kind::Tcp, true, &big, crowd(2, 0), false), sendfile);
        // A crowd under a pacing one: sendfile again.
        assert_eq!(plan(Kind::Tcp, true, &big, crowd(8, 0), true), sendfile);
        assert_eq!(plan(Kind::Tcp, true, &big, crowd(128, 0), true), sendfile);
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
    fn full_rate_sendfile_senders_cork_unless_few_and_paced_by_the_kernel() {
        assert!(cork_suits(1, || false));
        assert!(cork_suits(8, || false));
        assert!(!cork_suits(1, || true));
        assert!(!cork_suits(CORK_CROWD - 1, || true));
        assert!(cork_suits(CORK_CROWD, || panic!(
            "a crowd corks whatever paces it"
        )));
        assert!(cork_suits(128, || true));
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
    fn tcp_receivers_read_on_a_mark_only_one_or_two_on_a_side() {
        let s = spec(128 * 1024);
        let recv = |c| plan(Kind::Tcp, false, &s, c, false);
        assert_eq!(recv(crowd(0, 1)), WorkerPlan::Recv(RecvMode::OnMark));
        assert_eq!(recv(crowd(3, 2)), WorkerPlan::Recv(RecvMode::OnMark));
        assert_eq!(recv(crowd(0, 3)), WorkerPlan::Recv(RecvMode::Copy));
        let skip = SendSpec {
            skip_rx_copy: true,
            ..spec(128 * 1024)
        };
        let discard = |c| plan(Kind::Tcp, false, &skip, c, false);
        assert_eq!(
            discard(crowd(0, 1)),
            WorkerPlan::Recv(RecvMode::DiscardOnMark)
        );
        assert_eq!(
            discard(crowd(0, 2)),
            WorkerPlan::Recv(RecvMode::DiscardOnMark)
        );
        assert_eq!(discard(crowd(0, 3)), WorkerPlan::Recv(RecvMode::Discard));
        // SCTP reads plainly: no mark, no MSG_TRUNC.
        assert_eq!(
            plan(Kind::Sctp, false, &skip, crowd(0, 0), false),
            WorkerPlan::Recv(RecvMode::Copy)
        );
    }

    #[test]
    fn a_read_mark_is_at_least_512_kib_and_at_least_a_block() {
        assert_eq!(read_mark(1), 512 << 10);
        assert_eq!(read_mark(128 << 10), 512 << 10);
        assert_eq!(read_mark(1 << 20), 1 << 20);
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

    #[test]
    fn short_paths_share_eight_mib_of_send_buffers_among_three_senders_or_more() {
        // Loopback's 10 us: 8 MiB over the senders, 128 KiB to 512 KiB each.
        assert_eq!(short_path_send_buffer(3, 10, false), Some(512 << 10));
        assert_eq!(short_path_send_buffer(8, 10, false), Some(512 << 10));
        assert_eq!(short_path_send_buffer(32, 10, false), Some(256 << 10));
        assert_eq!(short_path_send_buffer(64, 10, false), Some(128 << 10));
        assert_eq!(short_path_send_buffer(128, 10, false), Some(128 << 10));
        assert_eq!(short_path_send_buffer(1000, 10, false), Some(128 << 10));
        // One or two senders: the kernel's 4 MiB each.
        assert_eq!(short_path_send_buffer(2, 10, false), None);
        assert_eq!(short_path_send_buffer(1, 10, false), None);
        // What they hold together must carry 128 Gbit/s over the round trip:
        // 2 MiB for four senders up to 131 us, 16 MiB for 128 up to 1048 us.
        assert_eq!(short_path_send_buffer(4, 131, false), Some(512 << 10));
        assert_eq!(short_path_send_buffer(4, 132, false), None);
        assert_eq!(short_path_send_buffer(128, 1048, false), Some(128 << 10));
        assert_eq!(short_path_send_buffer(128, 1049, false), None);
        assert_eq!(short_path_send_buffer(128, 20_000, false), None);
        // No round trip known, or -w chose.
        assert_eq!(short_path_send_buffer(128, 0, false), None);
        assert_eq!(short_path_send_buffer(128, 10, true), None);
    }
}

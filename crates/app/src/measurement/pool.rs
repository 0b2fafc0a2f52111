//! Which TCP streams share I/O workers instead of a thread each, and the
//! workers that drive them (`rperf3_engine::mux`).
//!
//! Unasked, a direction of at least [`SHARE_FROM`] streams shares a worker
//! per core, fewer streams a thread each: on loopback, 2 cores, with the
//! short-path send buffers (`choice::short_path_send_buffer`), workers
//! measured 1.6x iperf3 3.21's rate at `-P 128` where threads made 0.93x,
//! 1.37x against 1.25x at `-P 64`, and threads led at `-P 32` (1.45x against
//! 1.28-1.37x) and `-P 8` (1.53x against 1.04x): a thread woken by its own
//! stream reads bytes the writer just put in the core's cache, and that wins
//! until the threads are too many to schedule (design notes, "Many
//! streams"). `RPERF3_IO_WORKERS=N` in the environment puts every stream
//! that can share into `N` workers per direction; `0`, a thread per stream.

use std::io;
use std::sync::Arc;

use rperf3_engine::control::RunControl;
use rperf3_engine::mux::{self, MuxStream, Way};
use rperf3_engine::tcp::RecvMode;
use rperf3_engine::worker::Worker;
use rperf3_sys::zerocopy::PayloadFile;

use crate::measurement::choice::{SendSpec, WorkerPlan};
use crate::measurement::streams::{DataSock, LiveStream};

/// How the streams of one direction are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pooling {
    /// A thread per stream.
    Threads,
    /// This many I/O workers share the streams that can.
    Workers(usize),
}

/// Streams of one direction from which they share workers unasked.
pub(crate) const SHARE_FROM: usize = 64;

/// The choice for a direction with `n` streams that can share on a host of
/// `cores`, given the environment's `over` (`RPERF3_IO_WORKERS`).
pub(crate) fn pooling(n: usize, cores: usize, over: Option<usize>) -> Pooling {
    match over {
        Some(0) => Pooling::Threads,
        Some(k) if n > 0 => Pooling::Workers(k.min(n)),
        None if n >= SHARE_FROM => Pooling::Workers(cores.clamp(1, n)),
        _ => Pooling::Threads,
    }
}

/// The cores this process may run on (its affinity, `-A` included).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `RPERF3_IO_WORKERS`, when set to a number.
pub(crate) fn override_from_env() -> Option<usize> {
    std::env::var("RPERF3_IO_WORKERS").ok()?.trim().parse().ok()
}

/// Whether a stream with this plan can share a worker: bulk TCP (no `-F`,
/// no stamps to write or find, no bounceback, no mark).
pub(crate) fn can_share(s: &LiveStream, plan: WorkerPlan) -> bool {
    matches!(s.sock, DataSock::Tcp(_))
        && s.owd.is_none()
        && matches!(
            plan,
            WorkerPlan::TcpSend { .. } | WorkerPlan::Recv(RecvMode::Copy | RecvMode::Discard)
        )
}

/// Starts `k` I/O workers for `members` (indexes into `streams`, all one
/// direction), dealing the streams out in turn; returns each worker with the
/// streams it drives. Receiving workers pause to gather bytes when few
/// streams woke them if `gather` (`mux::GATHER_PAUSE`).
pub(crate) fn spawn(
    streams: &[LiveStream],
    members: &[(usize, WorkerPlan)],
    k: usize,
    gather: bool,
    ctl: &Arc<RunControl>,
    send: &SendSpec,
    payload: Arc<[u8]>,
) -> io::Result<Vec<(Worker, Vec<usize>)>> {
    let k = k.clamp(1, members.len().max(1));
    let mut groups: Vec<(Vec<MuxStream>, Vec<usize>)> =
        (0..k).map(|_| Default::default()).collect();
    // One payload file per worker for sendfile: a worker's streams share its
    // pages on one core (one file shared across cores cost a quarter of -P 8).
    let wants_file = members
        .iter()
        .any(|(_, p)| *p == WorkerPlan::TcpSend { sendfile: true });
    let files: Vec<Option<Arc<PayloadFile>>> = (0..k)
        .map(|_| {
            wants_file
                .then(|| PayloadFile::new(&payload).ok().map(Arc::new))
                .flatten()
        })
        .collect();
    for (n, &(i, plan)) in members.iter().enumerate() {
        let s = &streams[i];
        let DataSock::Tcp(sock) = &s.sock else {
            continue;
        };
        let way = match plan {
            WorkerPlan::Recv(mode) => Way::Recv(mode),
            WorkerPlan::TcpSend { sendfile } => Way::Send {
                file: files[n % k].clone().filter(|_| sendfile),
                pacing: send.tcp_pacing(),
            },
            _ => continue,
        };
        let g = &mut groups[n % k];
        g.0.push(MuxStream {
            sock: sock.clone(),
            counters: s.counters.clone(),
            way,
        });
        g.1.push(i);
    }
    let mut out = Vec::with_capacity(k);
    for (w, (group, members)) in groups.into_iter().enumerate() {
        if group.is_empty() {
            continue;
        }
        let sending = matches!(group[0].way, Way::Send { .. });
        let payload = payload.clone();
        let name = format!("io-{}-{w}", if sending { "send" } else { "recv" });
        let worker = Worker::spawn(name, ctl.clone(), sending, move |c| {
            if gather {
                mux::run_gathering(group, &payload, c)
            } else {
                mux::run(group, &payload, c)
            }
        })?;
        out.push((worker, members));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_per_core_from_64_streams_unless_the_environment_says() {
        assert_eq!(pooling(1, 2, None), Pooling::Threads);
        assert_eq!(pooling(63, 2, None), Pooling::Threads);
        assert_eq!(pooling(64, 2, None), Pooling::Workers(2));
        assert_eq!(pooling(128, 16, None), Pooling::Workers(16));
        assert_eq!(pooling(128, 0, None), Pooling::Workers(1));
        assert_eq!(pooling(128, 2, Some(0)), Pooling::Threads);
        assert_eq!(pooling(8, 2, Some(2)), Pooling::Workers(2));
        assert_eq!(pooling(1, 2, Some(2)), Pooling::Workers(1));
        assert_eq!(pooling(0, 2, Some(3)), Pooling::Threads);
    }
}

//! Which TCP streams share I/O workers instead of a thread each, and the
//! workers that drive them (`rperf3_engine::mux`).
//!
//! A thread per stream is the default at every stream count: on loopback, 2
//! cores, it measured faster than a worker per core at `-P 8` (1.6x), `-P 32`
//! (1.17x) and `-P 128 --bidir` (1.6x), and alike at `-P 128` (0.96x; see the
//! design notes: a thread that reads right after the sender wrote finds the
//! bytes in its core's cache; a worker serving many streams reads what was
//! written long before). Shared workers hold about half the memory at
//! `-P 128` and two threads instead of 128, so a host of many tests may want
//! them: `RPERF3_IO_WORKERS=N` in the environment puts every stream that can
//! share into `N` workers per direction; unset or `0`, a thread per stream.

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

/// The choice for a direction with `n` streams that can share, given the
/// environment's `over` (`RPERF3_IO_WORKERS`).
pub(crate) fn pooling(n: usize, over: Option<usize>) -> Pooling {
    match over {
        Some(k @ 1..) if n > 0 => Pooling::Workers(k.min(n)),
        _ => Pooling::Threads,
    }
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
/// streams it drives.
pub(crate) fn spawn(
    streams: &[LiveStream],
    members: &[(usize, WorkerPlan)],
    k: usize,
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
            mux::run(group, &payload, c)
        })?;
        out.push((worker, members));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_per_stream_unless_the_environment_asks_for_workers() {
        assert_eq!(pooling(1, None), Pooling::Threads);
        assert_eq!(pooling(128, None), Pooling::Threads);
        assert_eq!(pooling(128, Some(0)), Pooling::Threads);
        assert_eq!(pooling(128, Some(2)), Pooling::Workers(2));
        assert_eq!(pooling(1, Some(2)), Pooling::Workers(1));
        assert_eq!(pooling(0, Some(3)), Pooling::Threads);
    }
}

//! The one-way delay of a TCP stream's data, from each block's write to its
//! read, between rperf3 ends that agreed on it (see
//! [`rperf3_proto::tcp_stamp`]). The sender stamps a private copy of the block
//! before each write, so it cannot use sendfile; the receiver reads every byte
//! itself (no MSG_TRUNC, no receive mark whose tail another thread drains), as
//! the stamps are found by counting bytes. A delay includes the time the block
//! waited in the sender's socket buffer: write to read, as iperf 2 reports it.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Instant;

use rperf3_latency::{wall_ns, OneWay};
use rperf3_proto::tcp_stamp::{write_stamp, BlockStamps};

use crate::control::RunControl;
use crate::counters::StreamCounters;
use crate::pacing::Pacer;
use crate::tcp::{send_blocks, Blocks, Pacing};

/// A block stamped with the wall clock just before each write.
struct Stamped(Vec<u8>);

impl Blocks for Stamped {
    fn block_len(&self) -> usize {
        self.0.len()
    }
    fn next_block(&mut self, want: usize) -> io::Result<&[u8]> {
        write_stamp(&mut self.0, wall_ns());
        Ok(&self.0[..want.min(self.0.len())])
    }
}

/// [`crate::tcp::send_loop`] without sendfile, each block stamped.
pub fn send_loop_stamped(
    sock: &TcpStream,
    buf: &[u8],
    pacer: Option<Pacer>,
    burst: u32,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    let mut blocks = Stamped(buf.to_vec());
    let pacing = pacer.map(|p| Pacing::before_each(p, Instant::now(), burst));
    send_blocks(sock, &mut blocks, None, pacing, ctl, counters)
}

/// Reads and counts, as [`crate::tcp::recv_loop`] in its copying mode, and puts
/// each stamped block's delay (read time minus stamp) into `owd`. Blocks too
/// short for a stamp are counted but not timed.
pub fn recv_loop_stamped(
    mut sock: &TcpStream,
    blksize: usize,
    ctl: &RunControl,
    counters: &StreamCounters,
    owd: &Mutex<OneWay>,
) -> io::Result<()> {
    let mut buf = vec![0u8; blksize.max(1)];
    let mut stamps = BlockStamps::new(blksize);
    while !ctl.stopped() {
        match sock.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                if let Some(s) = stamps.as_mut() {
                    let now = wall_ns();
                    let mut o = owd.lock().unwrap_or_else(|p| p.into_inner());
                    s.feed(&buf[..n], |sent| o.record(sent, now));
                }
                counters.add(n as u64);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, BudgetUnit};
    use std::net::TcpListener;
    use std::sync::Arc;

    #[test]
    fn every_block_written_is_timed_when_read_issue18() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let owd = Arc::new(Mutex::new(OneWay::new()));
        let (o2, k2) = (owd.clone(), Arc::new(StreamCounters::default()));
        let k3 = k2.clone();
        let ctl = Arc::new(RunControl::new(None));
        let c2 = ctl.clone();
        let before = wall_ns();
        let h = std::thread::spawn(move || recv_loop_stamped(&rx, 1000, &c2, &k3, &o2));
        // 100 blocks of 1000 bytes, then close: the receiver reads them all.
        let tx_ctl = RunControl::new(Some(Budget::new(BudgetUnit::Blocks, 100)));
        send_loop_stamped(
            &tx,
            &[0x55; 1000],
            None,
            1,
            &tx_ctl,
            &StreamCounters::default(),
        )
        .unwrap();
        drop(tx);
        h.join().unwrap().unwrap();
        let took = wall_ns() - before;
        assert_eq!(k2.snapshot().bytes, 100_000);
        let o = owd.lock().unwrap();
        let s = o.summary();
        assert_eq!((s.count, o.negative()), (100, 0));
        assert!(s.max_ms * 1e6 <= took as f64, "{s:?}");
        drop(ctl);
    }
}

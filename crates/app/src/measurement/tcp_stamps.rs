//! The one-way delay of a TCP stream's data, from each block's write to its
//! read, between rperf3 ends that agreed on it (see
//! [`rperf3_proto::tcp_stamp`]), on the engine's loops. The sender stamps a
//! private copy of the block before each write, so it cannot use sendfile;
//! the receiver reads every byte itself (no MSG_TRUNC, no receive mark whose
//! tail another thread drains), as the stamps are found by counting bytes. A
//! delay includes the time the block waited in the sender's socket buffer:
//! write to read, as iperf 2 reports it.

use std::cell::RefCell;
use std::io;
use std::net::TcpStream;
use std::sync::Mutex;

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::tcp::{recv_loop, send_blocks, Blocks, Pacing, RecvMode, RecvTally};
use rperf3_latency::{wall_ns, OneWay};
use rperf3_proto::tcp_stamp::{write_stamp, BlockStamps};

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

/// The engine's TCP sender without sendfile, each block stamped.
pub(crate) fn send_loop_stamped(
    sock: &TcpStream,
    buf: &[u8],
    pacing: Option<Pacing>,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    let mut blocks = Stamped(buf.to_vec());
    send_blocks(sock, &mut blocks, None, pacing, ctl, counters)
}

/// A receiver's reads: counted, and each stamped block's delay (read time
/// minus stamp) put into `owd`. Blocks too short for a stamp are counted but
/// not timed.
struct StampedReads<'a> {
    counters: &'a StreamCounters,
    stamps: RefCell<Option<BlockStamps>>,
    owd: &'a Mutex<OneWay>,
}

impl RecvTally for StampedReads<'_> {
    fn read(&self, data: &[u8]) {
        if let Some(s) = self.stamps.borrow_mut().as_mut() {
            let now = wall_ns();
            let mut o = self.owd.lock().unwrap_or_else(|p| p.into_inner());
            s.feed(data, |sent| o.record(sent, now));
        }
        self.counters.add(data.len() as u64);
    }
}

/// The engine's TCP receiver in its copying mode, timing each stamped block.
pub(crate) fn recv_loop_stamped(
    sock: &TcpStream,
    blksize: usize,
    ctl: &RunControl,
    counters: &StreamCounters,
    owd: &Mutex<OneWay>,
) -> io::Result<()> {
    let reads = StampedReads {
        counters,
        stamps: RefCell::new(BlockStamps::new(blksize)),
        owd,
    };
    recv_loop(sock, blksize, RecvMode::Copy, ctl, &reads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_engine::budget::{Budget, BudgetUnit};
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

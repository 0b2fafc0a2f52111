//! Output that never holds a measurement: a bounded queue per destination,
//! emptied by a writer thread of its own.
//!
//! The threads of a test hand whole units (a text line, a `-J` document, a
//! `--json-stream` event) to the queue and go on at once. When nobody reads the
//! destination (a paused pager, a supervisor's full pipe) the queue fills up to
//! its bound; what does not fit is dropped whole and counted, so a line is
//! never cut and a JSON document is written whole or not at all. Where the
//! units went missing the writer puts one notice with the count, once the
//! output has drained up to that point.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The bound of one destination's queue, in bytes. Big enough to ride out a
/// reader that pauses for a minute or more under the busiest text output (a
/// `-P 128 --bidir` test prints about 20 kB a second) and to hold several
/// `-J` documents of ordinary tests; small enough that a server whose output
/// is never read keeps a fixed, modest amount of memory.
pub const QUEUE_BYTES: usize = 1 << 20;

/// The one wording of the notice that takes the place of dropped output.
pub fn dropped_notice(lines: u64) -> String {
    let (s, were) = if lines == 1 {
        ("", "was")
    } else {
        ("s", "were")
    };
    format!("warning: {lines} line{s} of output {were} dropped while the output was blocked\n")
}

enum Entry {
    Unit(Vec<u8>),
    /// Lines dropped at this place in the output.
    Gap(u64),
}

struct State {
    entries: VecDeque<Entry>,
    /// Queued bytes plus the unit being written.
    bytes: usize,
    /// The writer holds an entry it took from the queue.
    busy: bool,
}

struct Inner {
    state: Mutex<State>,
    /// Something was queued.
    queued: Condvar,
    /// The queue is empty and the writer idle.
    drained: Condvar,
    capacity: usize,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One destination's queue; clones share it. Created with its writer thread.
#[derive(Clone)]
pub struct OutputQueue {
    inner: Arc<Inner>,
}

impl OutputQueue {
    /// A queue of `capacity` bytes whose thread writes to `dest`. A unit larger
    /// than the bound is taken when the queue is empty, so a big `-J` document
    /// still reaches a destination that is read.
    pub fn spawn(name: &str, dest: Box<dyn Write + Send>, capacity: usize) -> io::Result<Self> {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                entries: VecDeque::new(),
                bytes: 0,
                busy: false,
            }),
            queued: Condvar::new(),
            drained: Condvar::new(),
            capacity,
        });
        let shared = inner.clone();
        std::thread::Builder::new()
            .name(format!("output {name}"))
            .spawn(move || write_loop(&shared, dest))?;
        Ok(Self { inner })
    }

    /// Queues `unit` whole, or drops it whole and counts its lines. Never
    /// blocks on the destination. Returns whether it was queued.
    pub fn push(&self, unit: Vec<u8>) -> bool {
        if unit.is_empty() {
            return true;
        }
        let mut s = self.inner.lock();
        let fits = s.bytes == 0 || s.bytes + unit.len() <= self.inner.capacity;
        if fits {
            s.bytes += unit.len();
            s.entries.push_back(Entry::Unit(unit));
        } else {
            let lines = unit.iter().filter(|&&b| b == b'\n').count().max(1) as u64;
            match s.entries.back_mut() {
                Some(Entry::Gap(n)) => *n += lines,
                _ => s.entries.push_back(Entry::Gap(lines)),
            }
        }
        drop(s);
        self.inner.queued.notify_one();
        fits
    }

    /// A writer for one reporter: it queues complete lines only (a tail
    /// without its newline waits for the rest, or for the writer's drop).
    pub fn writer(&self) -> QueueWriter {
        QueueWriter {
            queue: self.clone(),
            partial: Vec::new(),
        }
    }

    /// Waits until everything queued is written (or failed to be), checking
    /// `give_up` between waits. Returns false if it gave up first.
    pub fn drain(&self, give_up: &dyn Fn() -> bool) -> bool {
        let mut s = self.inner.lock();
        while s.busy || !s.entries.is_empty() {
            if give_up() {
                return false;
            }
            s = self
                .inner
                .drained
                .wait_timeout(s, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

/// The writer thread: one entry at a time, each with one `write_all`. After a
/// write error (a closed pipe) it keeps taking entries without writing them,
/// so producers never notice.
fn write_loop(inner: &Inner, mut dest: Box<dyn Write + Send>) {
    let mut failed = false;
    loop {
        let entry = {
            let mut s = inner.lock();
            loop {
                if let Some(e) = s.entries.pop_front() {
                    s.busy = true;
                    break e;
                }
                s = inner.queued.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        };
        let len = match &entry {
            Entry::Unit(b) => b.len(),
            Entry::Gap(_) => 0,
        };
        if !failed {
            let res = match &entry {
                Entry::Unit(b) => dest.write_all(b),
                Entry::Gap(n) => dest.write_all(dropped_notice(*n).as_bytes()),
            };
            let idle = inner.lock().entries.is_empty();
            failed = res
                .and_then(|()| if idle { dest.flush() } else { Ok(()) })
                .is_err();
        }
        let mut s = inner.lock();
        s.bytes -= len;
        s.busy = false;
        if s.entries.is_empty() {
            inner.drained.notify_all();
        }
    }
}

/// A [`Write`] that queues complete lines; what one `write` call brings up to
/// its last newline is one unit (a whole `-J` document is one call).
pub struct QueueWriter {
    queue: OutputQueue,
    partial: Vec<u8>,
}

impl Write for QueueWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match buf.iter().rposition(|&b| b == b'\n') {
            None => self.partial.extend_from_slice(buf),
            Some(i) => {
                let mut unit = std::mem::take(&mut self.partial);
                unit.extend_from_slice(&buf[..=i]);
                self.queue.push(unit);
                self.partial.extend_from_slice(&buf[i + 1..]);
            }
        }
        Ok(buf.len())
    }

    /// Nothing to do: the writer thread flushes whenever the queue empties.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for QueueWriter {
    fn drop(&mut self) {
        if !self.partial.is_empty() {
            self.queue.push(std::mem::take(&mut self.partial));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A destination that blocks until the test lets each write through, and
    /// records what it wrote.
    struct Gate {
        open: mpsc::Receiver<()>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gate {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.open.recv().map_err(|_| io::ErrorKind::BrokenPipe)?;
            self.written.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn gated(capacity: usize) -> (OutputQueue, mpsc::Sender<()>, Arc<Mutex<Vec<u8>>>) {
        let (tx, rx) = mpsc::channel();
        let written = Arc::new(Mutex::new(Vec::new()));
        let gate = Gate {
            open: rx,
            written: written.clone(),
        };
        let q = OutputQueue::spawn("test", Box::new(gate), capacity).unwrap();
        (q, tx, written)
    }

    fn wait_busy(q: &OutputQueue) {
        while !q.inner.lock().busy {
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_blocked_destination_drops_whole_units_and_reports_them_in_place() {
        let (q, gate, written) = gated(20);
        // The first unit is taken by the writer, which then blocks on it.
        assert!(q.push(b"first 0123456789\n".to_vec()));
        wait_busy(&q);
        // 17 bytes in flight: a 3-byte unit still fits, 4 bytes do not.
        assert!(q.push(b"ab\n".to_vec()));
        assert!(!q.push(b"two\nlines\n".to_vec()));
        assert!(!q.push(b"x\n".to_vec()));
        for _ in 0..3 {
            gate.send(()).unwrap();
        }
        assert!(q.drain(&|| false));
        // Room again: units are queued, and a later gap gets its own notice.
        let mut w = q.writer();
        w.write_all(b"after\n").unwrap();
        drop(w);
        gate.send(()).unwrap();
        assert!(q.drain(&|| false));
        assert_eq!(
            String::from_utf8(written.lock().unwrap().clone()).unwrap(),
            format!("first 0123456789\nab\n{}after\n", dropped_notice(3))
        );
    }

    #[test]
    fn a_unit_larger_than_the_bound_passes_an_empty_queue_only() {
        let (q, gate, written) = gated(8);
        let doc = b"{\n  \"a\": 1\n}\n".to_vec();
        assert!(q.push(doc.clone()));
        wait_busy(&q);
        assert!(!q.push(doc.clone()));
        gate.send(()).unwrap();
        gate.send(()).unwrap();
        assert!(q.drain(&|| false));
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            format!("{}{}", String::from_utf8(doc).unwrap(), dropped_notice(3))
        );
    }

    #[test]
    fn the_writer_queues_complete_lines_only() {
        let (q, gate, written) = gated(1000);
        let mut w = q.writer();
        w.write_all(b"[  5] half ").unwrap();
        assert!(q.inner.lock().entries.is_empty());
        w.write_all(b"and the rest\nnext\ntail").unwrap();
        drop(w);
        gate.send(()).unwrap();
        gate.send(()).unwrap();
        assert!(q.drain(&|| false));
        assert_eq!(
            &written.lock().unwrap()[..],
            b"[  5] half and the rest\nnext\ntail"
        );
    }

    #[test]
    fn the_notice_counts_in_words_that_agree() {
        assert_eq!(
            dropped_notice(1),
            "warning: 1 line of output was dropped while the output was blocked\n"
        );
        assert_eq!(
            dropped_notice(3629),
            "warning: 3629 lines of output were dropped while the output was blocked\n"
        );
    }

    #[test]
    fn a_closed_destination_is_not_an_error_and_drain_ends() {
        let (q, gate, _) = gated(100);
        drop(gate);
        for _ in 0..10 {
            q.push(b"line\n".to_vec());
        }
        assert!(q.drain(&|| false));
    }

    #[test]
    fn drain_gives_up_when_asked() {
        let (q, _gate, _) = gated(100);
        q.push(b"stuck\n".to_vec());
        assert!(!q.drain(&|| true));
    }
}

//! Where a TCP receiver reads to: each read's buffer is placed so that byte
//! `p` of the stream lands at an address equal to `p` modulo a page, as the
//! receive buffer's addresses in the system calls show (strace, raw
//! arguments). Reads on a mark, threads per stream and I/O workers alike.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::{require_tool, rperf3, scratch_file, Proc, Server};

/// One receive call: when it began, its thread, descriptor, buffer address,
/// length asked, result.
struct Recv {
    at: f64,
    thread: String,
    fd: u64,
    addr: u64,
    asked: u64,
    got: u64,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// `1732934400.123456 recvfrom(0x9, 0x7f.., 0x80000, 0x40, 0, 0) = 0x80000`
/// (strace -ttt -e raw).
fn parse(line: &str, thread: &str) -> Option<Recv> {
    let (when, call) = line.split_once(' ')?;
    let rest = call.strip_prefix("recvfrom(")?;
    let (args, ret) = rest.split_once(") = ")?;
    let a: Vec<&str> = args.split(',').collect();
    Some(Recv {
        at: when.parse().ok()?,
        thread: thread.to_string(),
        fd: hex(a.first()?)?,
        addr: hex(a.get(1)?)?,
        asked: hex(a.get(2)?)?,
        got: hex(ret.split_whitespace().next()?)?,
    })
}

/// The data reads of an rperf3 client run with `args` (`-R`: the client
/// receives), each stream's in order: those asking for a block or more.
fn data_reads(srv: &Server, args: &[&str]) -> HashMap<u64, Vec<Recv>> {
    // A file per thread (-ff): calls of threads at once are not split.
    let log = scratch_file("strace");
    let mut a: Vec<String> = [
        "-ff",
        "-ttt",
        "-qq",
        "-e",
        "trace=recvfrom",
        "-e",
        "raw=recvfrom",
        "-o",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(log.to_str().unwrap().into());
    a.push(rperf3().to_str().unwrap().into());
    let mut run = vec!["-t", "1", "-R"];
    run.extend_from_slice(args);
    a.extend(srv.args(&run));
    Proc::spawn("strace", &a)
        .finish(Duration::from_secs(30))
        .assert_ok();
    let dir = log.parent().unwrap();
    let prefix = format!("{}.", log.file_name().unwrap().to_str().unwrap());
    let mut by_fd: HashMap<u64, Vec<Recv>> = HashMap::new();
    for f in std::fs::read_dir(dir).unwrap().flatten() {
        if !f
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix))
        {
            continue;
        }
        // A stream is read by one thread (its own, or its I/O worker).
        let text = std::fs::read_to_string(f.path()).unwrap();
        let _ = std::fs::remove_file(f.path());
        let thread = f.file_name().to_string_lossy().into_owned();
        for r in text.lines().filter_map(|l| parse(l, &thread)) {
            if r.asked >= 128 << 10 {
                by_fd.entry(r.fd).or_default().push(r);
            }
        }
    }
    for rs in by_fd.values_mut() {
        rs.sort_by(|a, b| a.at.total_cmp(&b.at));
    }
    by_fd
}

/// Checks every read of every stream: its buffer's address modulo a page is
/// the stream offset of its first byte modulo a page. Returns (reads, reads
/// at an offset that is not a page multiple).
fn check(case: &str, streams: usize, by_fd: &HashMap<u64, Vec<Recv>>) -> (usize, usize) {
    assert_eq!(by_fd.len(), streams, "{case}: data streams read");
    let (mut reads, mut unaligned) = (0, 0);
    for (fd, rs) in by_fd {
        // The stream's worker reads first; the end's drain of what a mark
        // left behind reads from another thread, perhaps while the worker
        // still does, so the worker's reads are checked up to the drain's.
        let worker = &rs[0].thread;
        let mut at = 0u64;
        for r in rs.iter().take_while(|r| &r.thread == worker) {
            if r.got > r.asked {
                continue; // an error code, not a length
            }
            assert_eq!(
                r.addr % 4096,
                at % 4096,
                "{case}: fd {fd}: a read at stream offset {at} into {:#x}",
                r.addr
            );
            reads += 1;
            unaligned += usize::from(!at.is_multiple_of(4096));
            at += r.got;
        }
    }
    (reads, unaligned)
}

/// One stream reads on a mark, four on threads, 64 on I/O workers: each read
/// lands each byte at its stream offset modulo a page. (A page-aligned
/// sendfile sender, rperf3's, then leaves the kernel's copy between equal
/// offsets; a buffer 1-15 bytes ahead of the source made it 5x slower.)
#[test]
fn each_read_lands_its_bytes_at_their_stream_offset_modulo_a_page() {
    if !require_tool("strace") {
        return;
    }
    let srv = Server::start(&[]);
    let mut unaligned_total = 0;
    for (case, streams, args) in [
        ("-P 1", 1, vec![]),
        ("-P 4", 4, vec!["-P", "4"]),
        ("-P 64 -b 20M", 64, vec!["-P", "64", "-b", "20M"]),
    ] {
        let (reads, unaligned) = check(case, streams, &data_reads(&srv, &args));
        assert!(reads >= streams * 2, "{case}: {reads} reads");
        unaligned_total += unaligned;
    }
    // Reads that start mid-page are where a fixed buffer would be wrong.
    assert!(
        unaligned_total > 10,
        "{unaligned_total} reads started mid-page"
    );
}

//! A UDP server's read length (`-l`) against longer datagrams, ours and
//! 2.2.1's, with 2.2.1's client sending its default 1470 bytes: each
//! datagram the flow's socket reads past `-l 100` is flagged in the third
//! `Read/Timeo/NA` figure (all but the first, which the listener reads
//! whole), and none at the default `-l`. 2.2.1 counts only the 100 bytes it
//! read of each; rperf3 counts every byte that arrived.

use std::path::Path;

use crate::common::iperf2::{iperf2_221, ours, total, Server2};

/// The `Read/Timeo/NA` figures of a server's whole-flow `-e` row.
fn reads(text: &str) -> Option<(u64, u64, u64)> {
    let whole = total(text, "1")?;
    let line = text
        .lines()
        .rfind(|l| l.starts_with("[  1] 0.00-") && l.contains(&format!("-{:.2} sec", whole.end)))?;
    let f: Vec<u64> = line.split_whitespace().find_map(|w| {
        let v: Result<Vec<u64>, _> = w.split('/').map(str::parse).collect();
        v.ok().filter(|v| v.len() == 3)
    })?;
    Some((f[0], f[1], f[2]))
}

fn truncated_reads(server: &Path) {
    for (len, truncates) in [("100", true), ("1470", false)] {
        let srv = Server2::start(server, &["-u", "-e", "-l", len]);
        let c = srv.client(
            &iperf2_221().unwrap_or_else(ours),
            &["-u", "-t", "0.5", "-b", "1M"],
        );
        assert_eq!(c.code(), Some(0), "{c}");
        let s = srv.stop_when(|o| o.lines().filter(|l| l.contains(" sec ")).count() >= 1);
        let ctx = format!("-l {len}\n--- client:\n{c}\n--- server:\n{s}");
        let whole = total(&s.stdout, "1").unwrap_or_else(|| panic!("no total\n{ctx}"));
        let datagrams = whole
            .total
            .unwrap_or_else(|| panic!("no Lost/Total\n{ctx}"));
        let (_, _, trunc) = reads(&s.stdout).unwrap_or_else(|| panic!("no reads\n{ctx}"));
        if truncates {
            // The FIN is read past -l too; the listener's first datagram(s)
            // are not.
            assert!(
                (datagrams.saturating_sub(3)..datagrams).contains(&trunc),
                "{trunc} truncated of {datagrams}\n{ctx}"
            );
        } else {
            assert_eq!(trunc, 0, "{ctx}");
        }
        if server == ours() {
            // Every byte that arrived: the client's datagrams whole.
            let sent = total(&c.stdout, "1").unwrap_or_else(|| panic!("no client total\n{ctx}"));
            assert_eq!(whole.bytes, sent.bytes, "{ctx}");
        }
    }
}

#[test]
fn iperf2_udp_truncated_reads_are_flagged_by_ours() {
    truncated_reads(&ours());
}

#[test]
fn iperf2_udp_truncated_reads_are_flagged_by_221() {
    if let Some(p) = iperf2_221() {
        truncated_reads(&p);
    }
}

//! The iperf 2 side of the namespace tests: rperf3 under the name `iperf`, the
//! stock 2.2.1 and 2.1.8 peers, and the records of iperf 2's CSV reports
//! (`-y C`), which carry exact byte and datagram counts.

use std::path::PathBuf;

/// rperf3 under the name `iperf`: a link beside the binary, made once per run.
pub(crate) fn ours() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rperf3"));
    let dir = bin.parent().expect("binary dir").join("iperf2-personality");
    let link = dir.join("iperf");
    if std::fs::read_link(&link).ok().as_deref() != Some(bin.as_path()) {
        std::fs::create_dir_all(&dir).expect("link dir");
        let tmp = dir.join(format!("iperf.netns.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&bin, &tmp).expect("link rperf3 as iperf");
        std::fs::rename(&tmp, &link).expect("move the link into place");
    }
    link
}

/// iperf 2.2.1 (`IPERF2_221`, else `../shared/peers/iperf-2.2.1`); missing is
/// a failure under CI, else a skip.
pub(crate) fn stock_221() -> Option<PathBuf> {
    let p = std::env::var_os("IPERF2_221").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/peers/iperf-2.2.1"),
        PathBuf::from,
    );
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the iperf 2.2.1 peer is required in CI: {} is not a file",
        p.display()
    );
    eprintln!("SKIP: {} not found", p.display());
    None
}

/// Debian's iperf 2.1.8 (`iperf` on PATH); missing is a failure under CI,
/// else a skip.
pub(crate) fn stock_218() -> Option<PathBuf> {
    let p = PathBuf::from("iperf");
    if super::cmd::run(&["iperf", "-v"], std::time::Duration::from_secs(5)).is_ok() {
        return Some(p);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the iperf 2.1.8 peer (`iperf` on PATH) is required in CI"
    );
    eprintln!("SKIP: `iperf` (2.1.8) not found");
    None
}

/// One CSV record of an iperf 2 report.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// Transfer id (-1 for a sum).
    pub(crate) id: i64,
    /// Interval start, seconds.
    pub(crate) start: f64,
    /// Interval end, seconds.
    pub(crate) end: f64,
    /// Bytes.
    pub(crate) bytes: u64,
    /// UDP: jitter, lost, total, loss %, out of order.
    pub(crate) udp: Vec<String>,
}

impl Record {
    /// UDP: (lost, total) datagrams.
    pub(crate) fn lost_total(&self) -> (u64, u64) {
        let n = |i: usize| {
            self.udp
                .get(i)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no UDP field {i} in {self:?}"))
        };
        (n(1), n(2))
    }
}

/// Every record of a CSV report.
pub(crate) fn records(text: &str) -> Vec<Record> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split(',').collect();
            if f.len() < 9 || !f[0].starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let (s, e) = f[6].split_once('-')?;
            Some(Record {
                id: f[5].parse().ok()?,
                start: s.parse().ok()?,
                end: e.parse().ok()?,
                bytes: f[7].parse().ok()?,
                udp: f[9..].iter().map(|s| s.to_string()).collect(),
            })
        })
        .collect()
}

/// The record spanning the whole test of stream `id`.
pub(crate) fn total(text: &str, id: i64) -> Option<Record> {
    records(text)
        .into_iter()
        .filter(|r| r.id == id && r.start == 0.0)
        .max_by(|a, b| a.end.total_cmp(&b.end))
}

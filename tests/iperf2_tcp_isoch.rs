//! iperf 2's TCP `--isochronous` and the TCP client's `--histograms` write
//! timer between rperf3 (as `iperf`) and the stock 2.1.8 and 2.2.1, each
//! role: the frame line, `(isoch)` on both connection lines, the frame
//! columns, and what the receiver (the other program) counts: one read per
//! frame, and the bytes of the frames the sender counted at the mean size. The write timer: its settings lines, the
//! `write-times` column and a `W8-PDF` line per row whose count is the
//! row's data writes.

use std::path::Path;

use crate::common::iperf2::{
    assert_isoch_notes, ours, parse_row, run_pair as run, total, Pairing2, Server2, ISOCH,
};

/// `N=b0:b1:...` of a `Reads=Dist` row: N.
fn reads(line: &str) -> Option<u64> {
    let last = line.split_whitespace().next_back()?;
    let (n, bins) = last.split_once('=')?;
    (bins.split(':').count() == 8).then(|| n.parse().ok())?
}

fn isochronous(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        p,
        &["-e", "-i", "1"],
        &["-e", "-i", "1", "-t", "1", ISOCH],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    assert_isoch_notes(&c, &s, &ctx);
    assert!(
        c.lines()
            .any(|l| l.ends_with("     isoch:tx/miss/slip  NetPwr")),
        "isoch columns\n{ctx}"
    );
    // The client's whole-test row: tx/miss/slip before NetPwr. 1 s at 60
    // frames a second is 60 slots (61 with the slot at 1.000 s); iperf 2
    // counts the first frame twice. A loaded machine may miss a slot.
    let own = c
        .lines()
        .rfind(|l| parse_row(l).is_some_and(|r| r.tag == "1" && r.start == 0.0))
        .unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let f: Vec<u64> = own
        .split_whitespace()
        .rev()
        .nth(1)
        .unwrap_or_default()
        .split('/')
        .filter_map(|x| x.parse().ok())
        .collect();
    assert_eq!(f.len(), 3, "{own}\n{ctx}");
    let frames = f[0] - 1;
    assert!((59..=61).contains(&(frames + f[1])), "slots {f:?}\n{ctx}");
    // The receiver reads each frame once (2.2.1 and 2.1.8 may add one read
    // of a header's remainder; on a loaded machine a late frame can meet the
    // next in one read, or come in two).
    let got = s
        .lines()
        .filter(|l| parse_row(l).is_some_and(|r| r.tag == "1" && r.start == 0.0))
        .filter_map(reads)
        .max()
        .unwrap_or_else(|| panic!("no server reads\n{ctx}"));
    assert!(
        got.abs_diff(frames) <= 1 + frames / 10,
        "{got} reads for {frames} frames\n{ctx}"
    );
    // ... and what it received is those frames at the asked-for size, 20
    // Mbit/s over 60 frames a second: 41,667 bytes each (no spread). A
    // loaded sender that misses slots sends fewer frames, not smaller ones.
    let srv = total(&s, "1").unwrap_or_else(|| panic!("no server total\n{ctx}"));
    let per_frame = srv.bytes / frames as f64;
    assert!(
        (per_frame / (20e6 / 60.0 / 8.0) - 1.0).abs() < 0.01,
        "{per_frame} bytes a frame\n{ctx}"
    );
}

both_ways2!(iperf2_tcp_isoch, |peer: &Path, p| isochronous(peer, p));

/// `--isochronous -R`: the client's header carries ISOCH, the start block
/// and the frame settings (as 2.2.1's), so the server sends the frames: its
/// rows show tx/miss/slip, one frame per slot, and the client reads each
/// frame once, 20 Mbit/s / 60 a frame; `(isoch) (reverse)` on the lines.
fn isochronous_reverse(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        p,
        &["-e", "-i", "1"],
        &["-e", "-i", "1", "-t", "1", ISOCH, "-R"],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    for out in [&c, &s] {
        assert!(
            out.lines().any(|l| l.contains(" (isoch) (reverse)")),
            "notes\n{ctx}"
        );
    }
    assert!(
        s.lines()
            .any(|l| l.ends_with("     isoch:tx/miss/slip  NetPwr")),
        "the server's isoch columns\n{ctx}"
    );
    let own = s
        .lines()
        .rfind(|l| parse_row(l).is_some_and(|r| r.tag == "1" && r.start == 0.0))
        .unwrap_or_else(|| panic!("no server total\n{ctx}"));
    let f: Vec<u64> = own
        .split_whitespace()
        .rev()
        .nth(1)
        .unwrap_or_default()
        .split('/')
        .filter_map(|x| x.parse().ok())
        .collect();
    assert_eq!(f.len(), 3, "{own}\n{ctx}");
    let frames = f[0] - 1;
    assert!((59..=61).contains(&(frames + f[1])), "slots {f:?}\n{ctx}");
    let got = c
        .lines()
        .filter(|l| parse_row(l).is_some_and(|r| r.tag == "*1" && r.start == 0.0))
        .filter_map(reads)
        .max()
        .unwrap_or_else(|| panic!("no client reads\n{ctx}"));
    assert!(
        got.abs_diff(frames) <= 1 + frames / 10,
        "{got} reads for {frames} frames\n{ctx}"
    );
    let cli = total(&c, "*1").unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let per_frame = cli.bytes / frames as f64;
    assert!(
        (per_frame / (20e6 / 60.0 / 8.0) - 1.0).abs() < 0.02,
        "{per_frame} bytes a frame\n{ctx}"
    );
}

both_ways2!(iperf2_tcp_isoch_reverse, |peer: &Path, p| {
    isochronous_reverse(peer, p)
});

/// The write timer of our client against a stock server: its lines, and
/// each histogram line's count is its row's writes less the header's.
fn write_times(peer: &Path) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        Pairing2::OursToPeer,
        &["-e", "-i", "1"],
        &["-e", "-i", "1", "-t", "1", "-b", "50m", "--histograms"],
    );
    let ctx = format!("--- client:\n{c}\n--- server:\n{s}");
    for l in [
        "Write buffer size: 131072 Byte (write timer enabled)",
        "Enabled write histograms bin-width=0.100 ms, bins=100000",
    ] {
        assert!(c.lines().any(|x| x == l), "{l}\n{ctx}");
    }
    assert!(
        c.lines()
            .any(|l| l.ends_with("   NetPwr  write-times avg/min/max/stdev (cnt)")),
        "columns\n{ctx}"
    );
    let lines: Vec<&str> = c.lines().collect();
    // By position: the last interval row and the total can read the same
    // (`-t 1 -i 1`), so a row is not found again by its text.
    let rows: Vec<(usize, &str)> = lines
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, l)| parse_row(l).is_some())
        .collect();
    assert!(rows.len() >= 2, "rows\n{ctx}");
    for (k, &(at, row)) in rows.iter().enumerate() {
        let pdf = lines
            .get(at + 1)
            .unwrap_or_else(|| panic!("no line after {row}\n{ctx}"));
        let name = if k + 1 == rows.len() { "W8(f)" } else { "W8" };
        assert!(
            pdf.contains(&format!(" sec {name}-PDF: bin(w=100us):cnt(")),
            "{pdf}\n{ctx}"
        );
        let cnt: u64 = pdf
            .split_once("cnt(")
            .and_then(|x| x.1.split_once(')'))
            .and_then(|x| x.0.parse().ok())
            .unwrap_or_else(|| panic!("{pdf}"));
        // `49/0 ... (48)`: the header's write is not timed.
        let writes: u64 = row
            .split_whitespace()
            .nth(8)
            .and_then(|w| w.split_once('/'))
            .and_then(|w| w.0.parse().ok())
            .unwrap_or_else(|| panic!("{row}"));
        let col = format!("ms ({cnt})");
        let first = if k == 0 || k + 1 == rows.len() { 1 } else { 0 };
        assert_eq!(cnt + first, writes, "{row}\n{pdf}\n{ctx}");
        assert!(row.ends_with(&col), "{row}\n{ctx}");
    }
    // The peer received the paced 50 Mbit/s.
    let srv = total(&s, "1").unwrap_or_else(|| panic!("no server total\n{ctx}"));
    let bps = srv.bytes * 8.0 / srv.end;
    assert!((bps / 50e6 - 1.0).abs() < 0.04, "{bps} bit/s\n{ctx}");
}

#[test]
fn iperf2_tcp_write_times_ours_to_221() {
    if let Some(peer) = crate::common::iperf2::iperf2_221() {
        write_times(&peer);
    }
}

#[test]
fn iperf2_tcp_write_times_ours_to_218() {
    if let Some(peer) = crate::common::iperf2::iperf2_218() {
        write_times(&peer);
    }
}

/// Ours to ours with `--histograms=1m,50` on both ends and `--trip-times`:
/// the client's bins line and `w=1ms` bins, the server's bins line and its
/// `F8` lines in the same bins (2.2.1 honours the sizes on both roles).
#[test]
fn iperf2_histogram_sizes_both_roles_issue18() {
    let srv = Server2::start(&ours(), &["-e", "-i", "1", "--histograms=1m,50"]);
    let args = [
        "-e",
        "-t",
        "1",
        "-b",
        "20m",
        "--trip-times",
        "--histograms=1m,50",
    ];
    let c = srv.client(&ours(), &args);
    let s = srv.stop();
    let ctx = format!("--- client:\n{}\n--- server:\n{}", c.stdout, s.stdout);
    assert!(c.status.success(), "{ctx}");
    assert!(
        c.stdout
            .lines()
            .any(|l| l == "Enabled write histograms bin-width=1.000 ms, bins=50"),
        "{ctx}"
    );
    assert!(
        s.stdout.lines().any(|l| l
            == "Enabled receive histograms bin-width=1.000 ms, bins=50 \
                (clients should use --trip-times)"),
        "{ctx}"
    );
    assert!(
        c.stdout.contains(" sec W8(f)-PDF: bin(w=1ms):cnt("),
        "{ctx}"
    );
    assert!(
        s.stdout.contains(" sec F8(f)-PDF: bin(w=1ms):cnt("),
        "{ctx}"
    );
}

//! A UDP server's histogram lines counted against its own rows, with the
//! stock 2.1.8 and 2.2.1 as clients: `--histograms` (`T8`, one-way delays of
//! `--trip-times` datagrams) and `--jitter-histograms` (`J8`, differences of
//! consecutive transit times). As 2.2.1 counts them, an interval's lines lag
//! its row by one datagram, so the first interval's `T8` has one datagram
//! fewer than the row received, its `J8` two fewer (a difference needs a
//! pair), and the totals have every data datagram (the row's Total also
//! numbers the FIN). And `--bounceback-txdelay` against both servers.

use std::path::Path;

use crate::common::iperf2::{iperf2_218, iperf2_221, parse_row, run_pair as run, Pairing2};

/// `cnt(N)` of a histogram line.
fn cnt(l: &str) -> u64 {
    l.split("cnt(")
        .nth(1)
        .and_then(|x| x.split(')').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(u64::MAX)
}

fn udp_hist_counts(peer: &Path) {
    let (c, s) = run(
        peer,
        Pairing2::PeerToOurs,
        &[
            "-u",
            "-e",
            "-i",
            "0.5",
            "--histograms",
            "--jitter-histograms",
        ],
        &[
            "-u",
            "-e",
            "--trip-times",
            "-t",
            "1",
            "-i",
            "0.5",
            "-b",
            "2m",
        ],
    );
    let ctx = format!("--- client:\n{c}\n--- server:\n{s}");
    assert!(
        s.lines()
            .any(|l| l == "Enabled jitter histograms (bin-width=100 us)"),
        "settings line\n{ctx}"
    );
    let lines: Vec<&str> = s.lines().collect();
    let (mut first, mut total) = (None, None);
    for (i, l) in lines.iter().enumerate() {
        let Some(r) = parse_row(l) else { continue };
        let (Some(tot), Some(lost)) = (r.total, r.lost) else {
            continue;
        };
        let (t8, j8) = (lines.get(i + 1).copied(), lines.get(i + 2).copied());
        let (t8, j8) = (t8.unwrap_or_default(), j8.unwrap_or_default());
        let got = tot - lost;
        if r.start == 0.0 && r.end > 0.75 {
            assert!(
                t8.contains(" T8(f)-PDF: ") && j8.contains(" J8(f)-PDF: "),
                "{l}\n{ctx}"
            );
            total = Some((got, cnt(t8), cnt(j8)));
        } else if r.start == 0.0 {
            assert!(
                t8.contains(" T8-PDF: ") && j8.contains(" J8-PDF: "),
                "{l}\n{ctx}"
            );
            first = Some((got, cnt(t8), cnt(j8)));
        }
    }
    let (got, t8, j8) = first.unwrap_or_else(|| panic!("no first interval\n{ctx}"));
    assert_eq!(
        (t8, j8),
        (got - 1, got - 2),
        "first interval of {got}\n{ctx}"
    );
    let (got, t8, j8) = total.unwrap_or_else(|| panic!("no total\n{ctx}"));
    assert_eq!((t8, j8), (got - 1, got - 2), "total of {got}\n{ctx}");
}

/// A `-R --histograms --trip-times` client's lines: the settings say so, and
/// every row of the direction it receives (`[ *1]`) is followed by its
/// delays' line, tagged `[  1]`, whose bins add up to its count, a count
/// within one datagram of what the row received (2.2.1 counts the lag
/// and a lost first datagram each its own way). `client` runs against a
/// stock 2.2.1 server; 2.2.1's own client passes the same checks.
fn reverse_client_hists(client: &Path, server: &Path) {
    let srv = crate::common::iperf2::Server2::start(server, &["-u", "-e"]);
    let out = srv.client(
        client,
        &[
            "-u",
            "-e",
            "-R",
            "--histograms",
            "--trip-times",
            "-t",
            "1.5",
            "-i",
            "0.5",
            "-b",
            "10M",
        ],
    );
    let served = srv.stop();
    let c = out.stdout.clone();
    let ctx = format!(
        "--- client:\n{c}\n{}\n--- server:\n{}",
        out.stderr, served.stdout
    );
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    assert!(
        c.lines()
            .any(|l| l == "Enabled write histograms bin-width=0.100 ms, bins=100000"),
        "settings line\n{ctx}"
    );
    let lines: Vec<&str> = c.lines().collect();
    let mut rows = 0;
    for (i, l) in lines.iter().enumerate() {
        let Some(r) = parse_row(l).filter(|r| r.tag == "*1") else {
            continue;
        };
        let (Some(tot), Some(lost)) = (r.total, r.lost) else {
            continue;
        };
        let h = lines.get(i + 1).copied().unwrap_or_default();
        let name = if r.start == 0.0 && r.end > 1.0 {
            "T8(f)"
        } else {
            "T8"
        };
        let want = format!(
            "[  1] {:.2}-{:.2} sec {name}-PDF: bin(w=100us):cnt(",
            r.start, r.end
        );
        assert!(h.starts_with(&want), "{l}\n{h}\n{ctx}");
        let n = cnt(h);
        let got = tot - lost;
        assert!(
            n > 0 && n.abs_diff(got) <= 1,
            "{n} delays for {got} received\n{l}\n{h}\n{ctx}"
        );
        let bins: u64 = h
            .split_once(")=")
            .and_then(|x| x.1.split_whitespace().next())
            .map(|b| {
                b.split(',')
                    .filter_map(|kv| kv.split_once(':')?.1.parse::<u64>().ok())
                    .sum()
            })
            .unwrap_or(0);
        assert_eq!(bins, n, "bins of {h}\n{ctx}");
        rows += 1;
    }
    // Three half-second intervals and the total.
    assert_eq!(rows, 4, "rows with delay lines\n{ctx}");
}

#[test]
fn iperf2_udp_reverse_client_histograms_ours_and_221_against_221() {
    let Some(peer) = iperf2_221() else { return };
    reverse_client_hists(&crate::common::iperf2::ours(), &peer);
    reverse_client_hists(&peer, &peer);
}

#[test]
fn iperf2_udp_histogram_counts_221_to_ours() {
    if let Some(peer) = iperf2_221() {
        udp_hist_counts(&peer);
    }
}

#[test]
fn iperf2_udp_histogram_counts_218_to_ours() {
    if let Some(peer) = iperf2_218() {
        udp_hist_counts(&peer);
    }
}

/// `--bounceback-txdelay 0.5`: the client connects, says when its requests
/// start (`in 1 seconds`, rounded up as 2.2.1 does) and runs its second from
/// then; the server, counting from the connection, sees the wait.
fn bb_txdelay(peer: &Path) {
    let (c, s) = run(
        peer,
        Pairing2::OursToPeer,
        &["-i", "1"],
        &["--bounceback", "--bounceback-txdelay", "0.5", "-t", "1"],
    );
    let ctx = format!("--- client:\n{c}\n--- server:\n{s}");
    assert!(
        c.lines()
            .any(|l| l.starts_with("[  1] Client traffic to start in 1 seconds at ")),
        "start line\n{ctx}"
    );
    let last = |t: &str| {
        t.lines()
            .filter_map(parse_row)
            .filter(|r| r.start == 0.0)
            .map(|r| r.end)
            .fold(0.0, f64::max)
    };
    let wait = last(&s) - last(&c);
    assert!(
        (0.35..=0.9).contains(&wait),
        "server saw a wait of {wait} s\n{ctx}"
    );
}

#[test]
fn iperf2_bounceback_txdelay_ours_to_221() {
    if let Some(peer) = iperf2_221() {
        bb_txdelay(&peer);
    }
}

/// A bounceback reply longer than its request: the request's bytes, then
/// zeros, as 2.2.1's server pads it (a capture of the wire). The request is
/// one a 2.2.1 client sends (`--bounceback-request 80 --bounceback-reply
/// 150`); both servers' replies are read raw and compared past the stamps.
fn bb_reply_padding(server: &Path) -> Vec<u8> {
    use std::io::{Read, Write};
    let srv = crate::common::iperf2::Server2::start(server, &["-i", "1"]);
    let mut req = vec![0u8; 80];
    let words: [u32; 16] = [
        0x0080_0000,
        80,
        1,
        0x8800_5a5a,
        0,
        0x6b07_b23c,
        0x000a_78fa,
        u32::MAX,
        u32::MAX,
        u32::MAX,
        u32::MAX,
        0,
        0x5a5a_5a5a,
        0x5a5a_5a5a,
        0x5a5a_5a5a,
        150,
    ];
    for (i, w) in words.iter().enumerate() {
        req[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
    }
    for (i, b) in req.iter_mut().enumerate().skip(64) {
        *b = b'0' + (i % 10) as u8;
    }
    let mut s = std::net::TcpStream::connect(("127.0.0.1", srv.port)).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    s.write_all(&req).expect("request");
    let mut reply = vec![0u8; 150];
    s.read_exact(&mut reply).expect("the 150-byte reply");
    drop(s);
    drop(srv);
    assert_eq!(&reply[64..80], &req[64..80], "the request's own bytes");
    reply[64..].to_vec()
}

#[test]
fn iperf2_bounceback_reply_is_padded_with_zeros_as_221() {
    let ours = bb_reply_padding(&crate::common::iperf2::ours());
    assert!(ours[16..].iter().all(|&b| b == 0), "{ours:?}");
    if let Some(peer) = iperf2_221() {
        assert_eq!(bb_reply_padding(&peer), ours);
    }
}

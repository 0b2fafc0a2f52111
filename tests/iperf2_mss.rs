//! `-M` and `-m` on an iperf 2 client: the settings block says the MSS as
//! 2.2.1's does and where it does ("MSS req size 1000 bytes (per
//! TCP_MAXSEG)" for `-M`, "MSS size N bytes" for `-m` alone; right after the
//! connecting line, or with `-e` after the write size), compared line by
//! line with 2.2.1's own block (the window line aside: 2.2.1's with `-e -M`
//! reads a buffer it has resized).

use crate::common::iperf2::{iperf2_221, ours, Server2};

/// The settings block's lines, pid and window lines left out.
fn block(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Client connecting"))
        .take_while(|l| !l.starts_with("---"))
        .filter(|l| !l.starts_with("TCP window size"))
        .map(|l| match l.split_once(" with pid ") {
            Some((a, _)) => a.to_string(),
            None => l.to_string(),
        })
        .collect()
}

#[test]
fn iperf2_client_mss_lines_are_221s() {
    let Some(stock) = iperf2_221() else { return };
    let srv = Server2::start(&ours(), &[]);
    for args in [&["-M", "1000"][..], &["-m"], &["-M", "1000", "-m", "-e"]] {
        let mut a = vec!["-t", "0.2"];
        a.extend_from_slice(args);
        let theirs = srv.client(&stock, &a);
        let mine = srv.client(&ours(), &a);
        let ctx = format!("{args:?}\n--- 2.2.1:\n{theirs}\n--- ours:\n{mine}");
        assert_eq!(mine.code(), Some(0), "{ctx}");
        let want = block(&theirs.stdout);
        assert!(want.iter().any(|l| l.starts_with("MSS ")), "{ctx}");
        assert_eq!(block(&mine.stdout), want, "{ctx}");
    }
}

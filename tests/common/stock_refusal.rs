//! A client option that needs an rperf3 server, tried against a stock
//! iperf3 server: the client must stop before any data stream with one
//! clear error, in text and in `-J`.

use super::Server;
use std::path::Path;
use std::time::Duration;

/// Runs `args` twice against a fresh stock server at `peer` (text, then
/// `-J`) and checks each run ends with exit 1 and `message`, and that the
/// stock server saw two control connections close before any data stream.
pub(crate) fn refused_by_stock(peer: &Path, args: &[&str], message: &str) {
    // --forceflush: a stock server writing to a pipe holds its stdout lines.
    let srv = Server::start_program(peer, &["--forceflush"]);
    let out = srv.client(args);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(out.stderr.contains(&format!("error - {message}")), "{out}");
    // A stock server reopens its listener after a client's error; a second
    // client before that is refused.
    assert!(
        srv.wait_banners(2, Duration::from_secs(5)),
        "{}",
        srv.stdout()
    );
    let mut json_args = args.to_vec();
    json_args.push("-J");
    let out = srv.client(&json_args);
    assert_eq!(out.code(), Some(1), "{out}");
    assert_eq!(out.json()["error"], message);
    let closed = "the client has unexpectedly closed the connection";
    assert!(
        srv.proc()
            .wait_stderr_until(Duration::from_secs(5), |e| e.matches(closed).count() >= 2),
        "{}",
        srv.stderr()
    );
    srv.wait_stdout_until(Duration::from_secs(5), |s| {
        s.matches("Accepted connection").count() >= 2
    });
    let s = srv.stdout();
    assert_eq!(s.matches("Accepted connection").count(), 2, "{s}");
    assert!(!s.contains("connected to"), "{s}");
}

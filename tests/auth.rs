//! Authentication between rperf3 and iperf3 3.12 and 3.21 in both roles: the
//! right password passes, a wrong password, an unknown user and a wrong key fail
//! with the error each client version prints, and the server then serves the
//! next client. Also `-1`, editing the users file while serving, and clock skew
//! (the client under `faketime`).

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::auth::*;
use common::{Output, Server};

/// What `client` prints when `server` refuses its credentials.
fn refusal_text(client: Peer, server: Peer) -> String {
    match server {
        // 3.21 closes without a word.
        Peer::Iperf321 => format!(
            "{}: error - control socket has closed unexpectedly",
            client.name()
        ),
        _ => format!("{}: {AUTH_FAILED}", client.name()),
    }
}

/// Waits until a server that refused `failures` clients listens again.
/// rperf3 prints its banner when it is ready; iperf3's stdout is a buffered pipe
/// here, so for iperf3 the signs are its error line on stderr (printed after it
/// closed its listener) and then the listening socket.
fn wait_ready(srv: &Server, s: Peer, failures: usize) {
    if s == Peer::Ours {
        assert!(srv.wait_banners(failures + 2, WAIT), "{}", srv.stdout());
        return;
    }
    assert!(
        srv.proc()
            .wait_stderr_until(WAIT, |e| e.matches("iperf3: error - ").count() >= failures),
        "{}",
        srv.stderr()
    );
    let deadline = std::time::Instant::now() + WAIT;
    while !common::is_listening(srv.port) {
        assert!(std::time::Instant::now() < deadline, "not listening again");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The whole matrix row: good, three bad, good again, on one server.
fn matrix(c: Peer, s: Peer) {
    let users = users_file(&format!("# test users\n{MARIO}\n"));
    let Some(srv) = start_server(s, &users, &[]) else {
        return;
    };
    if c.program().is_none() {
        return;
    }
    // rperf3's client needs the old padding only for servers of 3.16 or older.
    let pad: &[&str] = if c == Peer::Ours && s == Peer::Iperf312 {
        &["--use-pkcs1-padding"]
    } else {
        &[]
    };
    let ok = client(c, &srv, "mario", "rossi", "server-pub.pem", pad, None);
    assert_eq!(ok.code(), Some(0), "right password:\n{ok}");
    assert!(ok.stdout.contains("receiver"), "{ok}");
    let mut failures = 0;
    for (user, password, key) in [
        ("mario", "verde", "server-pub.pem"),
        ("luigi", "rossi", "server-pub.pem"),
        ("mario", "rossi", "other-pub.pem"),
    ] {
        let bad = client(c, &srv, user, password, key, pad, None);
        assert_eq!(bad.code(), Some(1), "{user}/{password}/{key}:\n{bad}");
        // A busy 3.21 server sometimes fails on its own closed socket first
        // and says so (its own client then prints the same line).
        let raced = s == Peer::Iperf321
            && bad.stderr.contains(&format!(
                "{}: error - unable to read from stream socket: Bad file descriptor",
                c.name()
            ));
        assert!(
            raced || bad.stderr.contains(&refusal_text(c, s)),
            "{user}/{password}/{key}: wanted {:?}:\n{bad}",
            refusal_text(c, s)
        );
        // A raced refusal is the server's own error, with no hint to add.
        if c == Peer::Ours && !raced {
            // rperf3's client says what to look at; with the old padding
            // already given (3.12), there is nothing to add to the refusal.
            match s {
                Peer::Iperf312 => assert_eq!(
                    bad.stderr.trim_end(),
                    refusal_text(c, s),
                    "no hint with --use-pkcs1-padding given:\n{bad}"
                ),
                Peer::Iperf321 | Peer::Ours => {
                    let hint = if s == Peer::Iperf321 {
                        "closed the connection after reading the credentials"
                    } else {
                        "if it is iperf3 3.16 or older, add --use-pkcs1-padding"
                    };
                    assert!(bad.stderr.contains(hint), "{hint}:\n{bad}");
                }
            }
        }
        failures += 1;
        wait_ready(&srv, s, failures);
    }
    let again = client(c, &srv, "mario", "rossi", "server-pub.pem", pad, None);
    assert_eq!(again.code(), Some(0), "after the failures:\n{again}");
    let out = srv.stop();
    let log = format!("{}{}", out.stdout, out.stderr);
    assert!(
        !log.contains("verde"),
        "a password in the server's log:\n{log}"
    );
    if s == Peer::Ours {
        // One clear line per refusal, naming the reason, never the password.
        for reason in [
            "authentication failed for user 'mario': wrong password",
            "authentication failed for user 'luigi': unknown user",
            "authentication failed: the token could not be decrypted or read",
        ] {
            assert_eq!(out.stderr.matches(reason).count(), 1, "{reason}:\n{log}");
        }
        assert_eq!(out.stderr.matches(AUTH_FAILED).count(), 3, "{log}");
    }
}

#[test]
fn issue_8_matrix_rperf3_client_rperf3_server() {
    matrix(Peer::Ours, Peer::Ours);
}

#[test]
fn issue_8_matrix_iperf3_312_client_rperf3_server() {
    matrix(Peer::Iperf312, Peer::Ours);
}

#[test]
fn issue_8_matrix_iperf3_321_client_rperf3_server() {
    matrix(Peer::Iperf321, Peer::Ours);
}

#[test]
fn issue_8_matrix_rperf3_client_iperf3_312_server() {
    matrix(Peer::Ours, Peer::Iperf312);
}

#[test]
fn issue_8_matrix_rperf3_client_iperf3_321_server() {
    matrix(Peer::Ours, Peer::Iperf321);
}

#[test]
fn issue_8_old_servers_need_the_old_padding() {
    let users = users_file(&format!("{MARIO}\n"));
    let Some(srv) = start_server(Peer::Iperf312, &users, &[]) else {
        return;
    };
    // OAEP (the default, as 3.21's client) is refused by a 3.12 server.
    let out = mario(Peer::Ours, &srv, "rossi");
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr.contains(&format!("rperf3: {AUTH_FAILED}")),
        "{out}"
    );
}

#[test]
fn issue_8_failed_authentication_does_not_use_up_a_one_off_server() {
    let users = users_file(&format!("{MARIO}\n"));
    let srv = start_server(Peer::Ours, &users, &["-1"]).unwrap();
    let bad = mario(Peer::Ours, &srv, "verde");
    assert_eq!(bad.code(), Some(1), "{bad}");
    let ok = mario(Peer::Ours, &srv, "rossi");
    assert_eq!(ok.code(), Some(0), "{ok}");
    let out = srv.wait_exit(WAIT);
    assert_eq!(
        out.code(),
        Some(0),
        "the -1 server ends after its one real test:\n{out}"
    );
}

#[test]
fn issue_8_users_file_is_read_for_each_test() {
    let users = users_file("");
    let srv = start_server(Peer::Ours, &users, &[]).unwrap();
    let before = mario(Peer::Ours, &srv, "rossi");
    assert!(before.stderr.contains(AUTH_FAILED), "{before}");
    std::fs::File::create(&users)
        .unwrap()
        .write_all(format!("{MARIO}\n").as_bytes())
        .unwrap();
    assert!(srv.wait_banners(2, WAIT));
    let after = mario(Peer::Ours, &srv, "rossi");
    assert_eq!(after.code(), Some(0), "{after}");
}

/// The client's clock `offset` away from the server's, threshold 10 s.
fn skewed(c: Peer, offset: &str) -> Option<Output> {
    if !common::require_tool("faketime") {
        return None;
    }
    let users = users_file(&format!("{MARIO}\n"));
    let srv = start_server(Peer::Ours, &users, &["--time-skew-threshold", "10"])?;
    c.program()?;
    Some(client(
        c,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        Some(offset),
    ))
}

#[test]
fn issue_8_clock_skew_past_the_threshold_is_refused() {
    for c in [Peer::Ours, Peer::Iperf312, Peer::Iperf321] {
        for offset in ["+30s", "-30s"] {
            let Some(out) = skewed(c, offset) else {
                continue;
            };
            assert_eq!(out.code(), Some(1), "{c:?} {offset}:\n{out}");
            assert!(out.stderr.contains(AUTH_FAILED), "{c:?} {offset}:\n{out}");
        }
    }
}

#[test]
fn issue_8_clock_skew_within_the_threshold_is_accepted() {
    for c in [Peer::Ours, Peer::Iperf312, Peer::Iperf321] {
        for offset in ["+5s", "-5s"] {
            let Some(out) = skewed(c, offset) else {
                continue;
            };
            assert_eq!(out.code(), Some(0), "{c:?} {offset}:\n{out}");
        }
    }
}

#[test]
fn issue_8_skew_refusal_is_logged_with_the_offset() {
    if !common::require_tool("faketime") {
        return;
    }
    let users = users_file(&format!("{MARIO}\n"));
    let srv = start_server(Peer::Ours, &users, &["--time-skew-threshold", "3"]).unwrap();
    let out = client(
        Peer::Ours,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        Some("+60s"),
    );
    assert_eq!(out.code(), Some(1), "{out}");
    // The log line can follow the refusal the client read: wait for it (a
    // busy host's server was killed before writing it).
    srv.proc()
        .wait_stderr_until(Duration::from_secs(5), |e| e.contains(" s off"));
    let log = srv.stop();
    // 60 s, give or take the second boundaries of the two clocks.
    assert!(
        ["is 59 s off", "is 60 s off", "is 61 s off"]
            .iter()
            .any(|s| log.stderr.contains(s)),
        "{log}"
    );
}

/// Credentials come before the server's limits: a client without the right
/// password learns only 142, not the limits (here error 37: `-n` tests have no
/// duration, which a server with a maximum duration refuses).
#[test]
fn issue_8_credentials_are_checked_before_the_limits() {
    let users = users_file(&format!("{MARIO}\n"));
    let srv = start_server(Peer::Ours, &users, &["--server-max-duration", "5"]).unwrap();
    let run = |password| {
        client(
            Peer::Ours,
            &srv,
            "mario",
            password,
            "server-pub.pem",
            &[],
            None,
        )
    };
    let bad = run("verde");
    assert_eq!(bad.code(), Some(1), "{bad}");
    assert!(bad.stderr.contains(AUTH_FAILED), "{bad}");
    assert!(srv.wait_banners(2, WAIT));
    let good = run("rossi");
    assert_eq!(good.code(), Some(1), "{good}");
    assert!(!good.stderr.contains(AUTH_FAILED), "{good}");
    assert!(good.stderr.contains("maximum"), "error 37:\n{good}");
}

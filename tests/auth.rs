//! Authentication between rperf3 and iperf3 3.12 and 3.21 in both roles: the
//! right password passes, a wrong password, an unknown user and a wrong key fail
//! with the error each client version prints, and the server then serves the
//! next client. Also clock skew (the client under `faketime`), bad keys and
//! users files, and tokens of random bytes from a raw client.
//!
//! The keys are fixtures made with `openssl genrsa 2048` / `openssl rsa -pubout`
//! (`tests/fixtures/auth/`); the users file is written per test.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::raw::{self, SERVER_ERROR};
use common::{Output, Proc, Server};

const WAIT: Duration = Duration::from_secs(20);
/// sha256("{mario}rossi"), as iperf3's documentation shows.
const MARIO: &str = "mario,bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b";
/// iperf3's text for error 142, printed by every client version that gets it.
const AUTH_FAILED: &str = "error - test authorization failed";

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/auth")
        .join(name)
        .display()
        .to_string()
}

fn users_file(text: &str) -> String {
    let p = common::scratch_file("users.csv");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Peer {
    Ours,
    Iperf312,
    Iperf321,
}

impl Peer {
    /// The program, or `None` (after a note, or a failure under CI) if absent.
    fn program(self) -> Option<PathBuf> {
        match self {
            Self::Ours => Some(common::rperf3()),
            Self::Iperf312 => common::require_tool("iperf3").then(|| PathBuf::from("iperf3")),
            Self::Iperf321 => common::iperf3_321(),
        }
    }

    /// The prefix of its messages.
    fn name(self) -> &'static str {
        match self {
            Self::Ours => "rperf3",
            _ => "iperf3",
        }
    }
}

fn start_server(peer: Peer, users: &str, extra: &[&str]) -> Option<Server> {
    let program = peer.program()?;
    let key = fixture("server-key.pem");
    let mut args = vec![
        "--rsa-private-key-path",
        &key,
        "--authorized-users-path",
        users,
    ];
    args.extend_from_slice(extra);
    Some(Server::start_program(&program, &args))
}

/// A client with `IPERF3_PASSWORD` set, optionally under `faketime OFFSET`.
fn client(
    peer: Peer,
    srv: &Server,
    user: &str,
    password: &str,
    key: &str,
    extra: &[&str],
    faketime: Option<&str>,
) -> Output {
    let program = peer.program().expect("checked when the server started");
    let mut args: Vec<String> = vec![format!("IPERF3_PASSWORD={password}")];
    if let Some(offset) = faketime {
        args.extend(["faketime".into(), "-f".into(), offset.into()]);
    }
    args.push(program.display().to_string());
    args.extend(srv.args(&["-n", "256K", "--username", user]));
    args.extend(["--rsa-public-key-path".into(), fixture(key)]);
    args.extend(extra.iter().map(|s| s.to_string()));
    Proc::spawn("env", &args).finish(WAIT)
}

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
        assert!(
            bad.stderr.contains(&refusal_text(c, s)),
            "{user}/{password}/{key}: wanted {:?}:\n{bad}",
            refusal_text(c, s)
        );
        if c == Peer::Ours {
            // rperf3's client says what to look at.
            let hint = match s {
                Peer::Iperf321 => "closed the connection after reading the credentials",
                Peer::Iperf312 => "",
                Peer::Ours => "if it is iperf3 3.16 or older, add --use-pkcs1-padding",
            };
            assert!(bad.stderr.contains(hint), "{hint}:\n{bad}");
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
    let out = client(
        Peer::Ours,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        None,
    );
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
    let bad = client(
        Peer::Ours,
        &srv,
        "mario",
        "verde",
        "server-pub.pem",
        &[],
        None,
    );
    assert_eq!(bad.code(), Some(1), "{bad}");
    let ok = client(
        Peer::Ours,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        None,
    );
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
    let before = client(
        Peer::Ours,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        None,
    );
    assert!(before.stderr.contains(AUTH_FAILED), "{before}");
    std::fs::File::create(&users)
        .unwrap()
        .write_all(format!("{MARIO}\n").as_bytes())
        .unwrap();
    assert!(srv.wait_banners(2, WAIT));
    let after = client(
        Peer::Ours,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        None,
    );
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
    let log = srv.stop();
    // 60 s, give or take the second boundaries of the two clocks.
    assert!(
        ["is 59 s off", "is 60 s off", "is 61 s off"]
            .iter()
            .any(|s| log.stderr.contains(s)),
        "{log}"
    );
}

/// Tokens that are not what they claim: refused with 142, no panic, and the
/// server goes on.
#[test]
fn issue_8_raw_client_tokens_of_random_bytes() {
    let users = users_file(&format!("{MARIO}\n"));
    let srv = start_server(Peer::Ours, &users, &[]).unwrap();
    let mut random = [0u8; 256];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut random))
        .unwrap();
    let b64 = |bytes: &[u8]| {
        // Standard alphabet with padding, as iperf3's clients send.
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut s = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |acc, b| acc << 8 | u32::from(*b))
                << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
            s.extend(std::iter::repeat_n('=', 3 - chunk.len()));
        }
        s
    };
    let tokens: Vec<Option<String>> = vec![
        Some(b64(&random)),
        Some(b64(&random[..17])),
        Some(String::from_utf8_lossy(&random).into_owned()),
        Some("%%%".into()),
        Some(String::new()),
        None,
    ];
    for (i, token) in tokens.iter().enumerate() {
        let mut s = raw::handshake(&srv);
        let mut params = raw::tcp_params(1);
        if let Some(t) = token {
            params["authtoken"] = t.clone().into();
        }
        raw::send_json(&mut s, &params);
        let reply = raw::read_to_close(&mut s);
        assert_eq!(
            reply,
            [SERVER_ERROR, 0, 0, 0, 142, 0, 0, 0, 0],
            "token {i}: SERVER_ERROR 142 with errno 0"
        );
        assert!(srv.wait_banners(i + 2, raw::READY), "token {i}");
    }
    let ok = client(
        Peer::Ours,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        None,
    );
    assert_eq!(ok.code(), Some(0), "{ok}");
    let log = srv.stop();
    assert!(!log.stderr.contains(&b64(&random)), "the token was logged");
    assert_eq!(
        log.stderr.matches("the client sent no token").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.stderr
            .matches("the token could not be decrypted or read")
            .count(),
        5,
        "{log}"
    );
}

fn rperf3(env: &[&str], args: &[&str]) -> Output {
    let mut all: Vec<String> = env.iter().map(|s| s.to_string()).collect();
    all.push(common::rperf3().display().to_string());
    all.extend(args.iter().map(|s| s.to_string()));
    Proc::spawn("env", &all).finish(WAIT)
}

const CLIENT_AUTH_ERR: &str =
    "rperf3: parameter error - you must specify a username, password, and path to a valid RSA public key\n";
const SERVER_AUTH_ERR: &str =
    "rperf3: parameter error - you must specify a path to a valid RSA private key and a user credential file\n";

#[test]
fn issue_8_bad_client_inputs() {
    let pubkey = fixture("server-pub.pem");
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["IPERF3_PASSWORD=rossi"],
            "/nonexistent/pub.pem",
            "rperf3: unable to read the RSA public key /nonexistent/pub.pem: No such file or directory\n",
        ),
        (
            &["IPERF3_PASSWORD=rossi"],
            &fixture("server-key.pem"),
            "is not an RSA public key in PEM (SubjectPublicKeyInfo or PKCS#1)\n",
        ),
        (
            &["IPERF3_PASSWORD="],
            &pubkey,
            "rperf3: the password must not be empty or contain white space",
        ),
        (
            &["IPERF3_PASSWORD=two words"],
            &pubkey,
            "rperf3: the password must not be empty or contain white space",
        ),
        // stdin is not a terminal: no prompt, as iperf3.
        (
            &["-u", "IPERF3_PASSWORD"],
            &pubkey,
            "rperf3: no password: set IPERF3_PASSWORD or run on a terminal\n",
        ),
    ];
    for (env, key, detail) in cases {
        let out = rperf3(
            env,
            &[
                "-c",
                "127.0.0.1",
                "-p",
                "9",
                "--username",
                "mario",
                "--rsa-public-key-path",
                key,
            ],
        );
        assert_eq!(out.code(), Some(1), "{out}");
        assert!(out.stderr.contains(detail), "{detail}:\n{out}");
        assert!(out.stderr.contains(CLIENT_AUTH_ERR), "{out}");
        assert!(!out.stdout.contains("Connecting"), "{out}");
    }
}

#[test]
fn issue_8_bad_server_inputs() {
    let users = users_file(&format!("{MARIO}\n"));
    let key = fixture("server-key.pem");
    let run = |k: &str, u: &str| {
        rperf3(
            &[],
            &[
                "-s",
                "-p",
                "9",
                "--rsa-private-key-path",
                k,
                "--authorized-users-path",
                u,
            ],
        )
    };
    let missing = run("/nonexistent/key.pem", &users);
    assert_eq!(missing.code(), Some(1), "{missing}");
    assert!(missing.stderr.contains(
        "rperf3: unable to read the RSA private key /nonexistent/key.pem: No such file or directory\n"
    ));
    assert!(missing.stderr.contains(SERVER_AUTH_ERR), "{missing}");
    let malformed = run(&users, &users);
    assert!(
        malformed
            .stderr
            .contains("is not an RSA private key in PEM"),
        "{malformed}"
    );
    assert!(malformed.stderr.contains(SERVER_AUTH_ERR), "{malformed}");
    let no_users = run(&key, "/nonexistent/users.csv");
    assert!(
        no_users
            .stderr
            .contains("rperf3: parameter error - cannot access authorized users file\n"),
        "{no_users}"
    );
    assert!(
        no_users.stderr.contains("No such file or directory"),
        "{no_users}"
    );
}

#[test]
fn issue_8_users_file_with_broken_lines() {
    let users = users_file(&format!(
        "# comment\n\nno comma\nluigi,\n{MARIO}\r\n,,,\npeach,{}\n",
        "0".repeat(64)
    ));
    let srv = start_server(Peer::Ours, &users, &[]).unwrap();
    let ok = client(
        Peer::Ours,
        &srv,
        "mario",
        "rossi",
        "server-pub.pem",
        &[],
        None,
    );
    assert_eq!(ok.code(), Some(0), "{ok}");
    let log = srv.stop();
    for n in [3, 4, 6] {
        assert!(
            log.stderr.contains(&format!(
                "line {n} is not \"user,sha256 hash\"; it is ignored"
            )),
            "line {n}:\n{log}"
        );
    }
    assert_eq!(log.stderr.matches("it is ignored").count(), 3, "{log}");
}

/// Without `IPERF3_PASSWORD`, on a terminal (a pty from `script`), the client
/// asks for the password with echo off, then authenticates.
#[test]
fn issue_8_password_prompt_on_a_terminal() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    if !common::require_tool("script") {
        return;
    }
    let users = users_file(&format!("{MARIO}\n"));
    let srv = start_server(Peer::Ours, &users, &[]).unwrap();
    let cmd = format!(
        "{} -c 127.0.0.1 -p {} -n 256K --username mario --rsa-public-key-path {}",
        common::rperf3().display(),
        srv.port,
        fixture("server-pub.pem")
    );
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env_remove("IPERF3_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + WAIT;
    let mut seen = Vec::new();
    let mut typed = false;
    let status = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(bytes) => seen.extend_from_slice(&bytes),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break child.wait().unwrap(),
            Err(_) => {
                let _ = child.kill();
                panic!("timed out:\n{}", String::from_utf8_lossy(&seen));
            }
        }
        // Typed only once echo is off (the prompt comes after), as a person would.
        if !typed && String::from_utf8_lossy(&seen).contains("Password: ") {
            stdin.write_all(b"rossi\n").unwrap();
            typed = true;
        }
    };
    let text = String::from_utf8_lossy(&seen);
    assert!(status.success(), "{text}");
    assert!(text.contains("receiver"), "{text}");
    assert!(!text.contains("rossi"), "the password was echoed:\n{text}");
}

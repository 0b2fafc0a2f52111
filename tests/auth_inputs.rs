//! Authentication with bad input: tokens of random bytes from a raw client,
//! missing or malformed keys and users files, empty passwords, and the
//! password prompt on a terminal. Clear errors, no panic, and the server goes on.

use crate::common;

use std::io::Write;

use common::auth::*;
use common::raw::{self, SERVER_ERROR};
use common::{Output, Proc};

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
    let ok = mario(Peer::Ours, &srv, "rossi");
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
    let ok = mario(Peer::Ours, &srv, "rossi");
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

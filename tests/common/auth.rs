//! Authentication tests' shared parts: key fixtures, users files, and servers
//! and clients of rperf3, iperf3 3.12 and 3.21 with credentials.
//!
//! The keys are fixtures made with `openssl genrsa 2048` / `openssl rsa -pubout`
//! (`tests/fixtures/auth/`); the users file is written per test.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Output, Proc, Server};

/// Longest wait for one client run or server event.
pub(crate) const WAIT: Duration = Duration::from_secs(20);
/// sha256("{mario}rossi"), as iperf3's documentation shows.
pub(crate) const MARIO: &str =
    "mario,bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b";
/// iperf3's text for error 142, printed by every client version that gets it.
pub(crate) const AUTH_FAILED: &str = "error - test authorization failed";

/// A key fixture's path.
pub(crate) fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/auth")
        .join(name)
        .display()
        .to_string()
}

/// A users file with this text, in the scratch directory.
pub(crate) fn users_file(text: &str) -> String {
    let p = super::scratch_file("users.csv");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Which program plays a role.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Peer {
    Ours,
    Iperf312,
    Iperf321,
}

impl Peer {
    /// The program, or `None` (after a note, or a failure under CI) if absent.
    pub(crate) fn program(self) -> Option<PathBuf> {
        match self {
            Self::Ours => Some(super::rperf3()),
            Self::Iperf312 => super::require_tool("iperf3").then(|| PathBuf::from("iperf3")),
            Self::Iperf321 => super::iperf3_321(),
        }
    }

    /// The prefix of its messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Ours => "rperf3",
            _ => "iperf3",
        }
    }
}

/// A server of `peer` with the fixture key and `users`; `None` if the peer is absent.
pub(crate) fn start_server(peer: Peer, users: &str, extra: &[&str]) -> Option<Server> {
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

/// User mario with `password` and the server's public key, nothing else.
pub(crate) fn mario(peer: Peer, srv: &Server, password: &str) -> Output {
    client(peer, srv, "mario", password, "server-pub.pem", &[], None)
}

/// A client with `IPERF3_PASSWORD` set, optionally under `faketime OFFSET`.
pub(crate) fn client(
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

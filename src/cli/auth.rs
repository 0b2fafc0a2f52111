//! Authentication settings that need the outside world: keys, the users file,
//! the password.
//!
//! iperf3 reads these while it parses the command line, so their problems are
//! parameter errors (22, 23, 35) with the usage hint. rperf3 does the same right
//! after parsing, and first prints one line saying what exactly was wrong (iperf3
//! prints OpenSSL's error code there). The password comes from `IPERF3_PASSWORD`
//! or, when stdin is a terminal, from a `Password: ` prompt with echo off, as in
//! iperf3.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use rperf3_app::config::{Config, Role};
use rperf3_app::{ClientAuth, ServerAuth};

use super::error::{param_text, ParamError};
use super::CliError;

/// What the test needs to authenticate, loaded.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The client's credentials and the server's key.
    pub(crate) client: Option<ClientAuth>,
    /// The server's key and users file.
    pub(crate) server: Option<Arc<ServerAuth>>,
    /// Warnings for stderr (lines of the users file that are not entries).
    pub(crate) warnings: Vec<String>,
}

fn fail(prog: &str, detail: &str, e: &ParamError) -> CliError {
    CliError {
        message: format!("{prog}: {detail}\n{}", param_text(prog, e)),
        status: 1,
        code: e.code(),
    }
}

/// Reads the keys, the password and (server) checks the users file.
pub(crate) fn load(prog: &str, cfg: &Config) -> Result<Loaded, CliError> {
    let mut out = Loaded::default();
    match &cfg.role {
        Role::Client(cc) => {
            if let Some(a) = &cc.auth {
                let e = ParamError::SetClientAuth;
                let password = password().map_err(|d| fail(prog, &d, &e))?;
                out.client = Some(ClientAuth::new(a, password).map_err(|d| fail(prog, &d, &e))?);
            }
        }
        Role::Server(sc) => {
            if let Some(a) = &sc.auth {
                // Re-read for every test, also by a daemon working in `/`.
                let mut a = a.clone();
                if let Ok(abs) = std::path::absolute(&a.users_path) {
                    a.users_path = abs;
                }
                let s =
                    ServerAuth::new(&a).map_err(|d| fail(prog, &d, &ParamError::SetServerAuth))?;
                s.read_users()
                    .map_err(|d| fail(prog, &d, &ParamError::ServerAuthUsers))?;
                for line in s.broken_lines() {
                    out.warnings.push(format!(
                        "warning: {} line {line} is not \"user,sha256 hash\"; it is ignored",
                        a.users_path.display()
                    ));
                }
                out.server = Some(Arc::new(s));
            }
        }
    }
    Ok(out)
}

/// `IPERF3_PASSWORD`, else a prompt on the terminal.
fn password() -> Result<String, String> {
    if let Some(p) = std::env::var_os("IPERF3_PASSWORD") {
        return p
            .into_string()
            .map_err(|_| "IPERF3_PASSWORD is not valid UTF-8".to_string());
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err("no password: set IPERF3_PASSWORD or run on a terminal".into());
    }
    let mut line = String::new();
    // The prompt comes only once echo is off: a user (or a script) who types
    // on seeing it must neither be echoed nor flushed away by the switch.
    let read = rperf3_sys::term::without_echo(|| {
        print!("Password: ");
        let _ = std::io::stdout().flush();
        stdin.lock().read_line(&mut line)
    })
    .map_err(|e| format!("cannot turn the terminal's echo off: {e}"))?;
    // The user's Enter was not echoed.
    println!();
    read.map_err(|e| format!("cannot read the password: {e}"))?;
    let end = line.find(['\r', '\n']).unwrap_or(line.len());
    line.truncate(end);
    Ok(line)
}

//! The terminal: a password prompt without echo.

use std::io::{self, IsTerminal};

use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg};

/// Runs `read` with the echo of standard input (a terminal) turned off, and
/// turns it back on after, whatever `read` returns.
pub fn without_echo<T>(read: impl FnOnce() -> T) -> io::Result<T> {
    let stdin = io::stdin();
    if !stdin.is_terminal() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "not a terminal"));
    }
    let old = tcgetattr(&stdin).map_err(io::Error::from)?;
    let mut quiet = old.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    tcsetattr(&stdin, SetArg::TCSAFLUSH, &quiet).map_err(io::Error::from)?;
    let out = read();
    let _ = tcsetattr(&stdin, SetArg::TCSAFLUSH, &old);
    Ok(out)
}

//! iperf3's authentication rules, without keys, files or clocks.
//!
//! An iperf3 client proves a user name and password to the server with a token:
//! a short text naming the user, the password and the client's Unix time, RSA
//! encrypted to the server's key and sent base64-encoded as the parameters'
//! `authtoken`. The server decrypts it, checks the time against its own within a
//! threshold, and looks the user up in a file of `user,sha256("{user}password")`
//! lines. The RSA step and reading the file belong to the caller; this module holds
//! the text formats and the decision, so both are tested byte for byte here.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a decrypted token says.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub user: String,
    /// The password, in clear.
    pub password: String,
    /// The client's Unix time in seconds when it made the token.
    pub time: i64,
}

impl std::fmt::Debug for Credentials {
    // Never print a password, even in a debug dump.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("time", &self.time)
            .finish_non_exhaustive()
    }
}

/// The token's clear text, as iperf3 writes it: `user: U\npwd:  P\nts:   T`
/// (two spaces after `pwd:`, three after `ts:`, no newline at the end).
pub fn token_text(user: &str, password: &str, unix_secs: i64) -> String {
    format!("user: {user}\npwd:  {password}\nts:   {unix_secs}")
}

/// Reads a decrypted token as iperf3's server does, with
/// `sscanf("user: %s\npwd:  %s\nts:   %ld")`: white space in the pattern matches
/// any run of white space (or none), `%s` takes a word, the number may be signed.
/// Bytes after the number are ignored. `None` if the text does not match.
pub fn parse_token_text(text: &[u8]) -> Option<Credentials> {
    // sscanf stops at a NUL: a decrypted token is a C string to iperf3.
    let text = text.split(|b| *b == 0).next().unwrap_or_default();
    let mut s = Scanner { rest: text };
    s.literal(b"user:")?;
    let user = s.word()?;
    s.literal(b"pwd:")?;
    let password = s.word()?;
    s.literal(b"ts:")?;
    let time = s.number()?;
    Some(Credentials {
        user: String::from_utf8_lossy(user).into_owned(),
        password: String::from_utf8_lossy(password).into_owned(),
        time,
    })
}

/// A tiny `sscanf` for the token's pattern.
struct Scanner<'a> {
    rest: &'a [u8],
}

impl<'a> Scanner<'a> {
    fn skip_space(&mut self) {
        let n = self
            .rest
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        self.rest = &self.rest[n..];
    }

    /// Leading white space (the pattern's), then exactly `lit`.
    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        self.skip_space();
        self.rest = self.rest.strip_prefix(lit)?;
        Some(())
    }

    /// `%s`: skips white space, then one or more non-space bytes.
    fn word(&mut self) -> Option<&'a [u8]> {
        self.skip_space();
        let n = self
            .rest
            .iter()
            .take_while(|b| !b.is_ascii_whitespace())
            .count();
        if n == 0 {
            return None;
        }
        let (w, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(w)
    }

    /// `%ld`: skips white space, an optional sign, then digits (saturating on
    /// overflow, as strtol does).
    fn number(&mut self) -> Option<i64> {
        self.skip_space();
        let (neg, rest) = match self.rest.first() {
            Some(b'-') => (true, &self.rest[1..]),
            Some(b'+') => (false, &self.rest[1..]),
            _ => (false, self.rest),
        };
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        let mut v: i64 = 0;
        for d in &rest[..n] {
            v = v
                .saturating_mul(10)
                .saturating_add(i64::from(d - b'0') * if neg { -1 } else { 1 });
        }
        self.rest = &rest[n..];
        Some(v)
    }
}

/// The users file's hash of a password: lower-case hex SHA-256 of
/// `"{" + user + "}" + password`.
pub fn password_hash(user: &str, password: &str) -> String {
    let digest = Sha256::digest(format!("{{{user}}}{password}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// One usable line of a users file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    /// The user name.
    pub user: String,
    /// The hash as written in the file (compared exactly).
    pub hash: String,
    /// The line's number in the file (1-based), for messages.
    pub line: usize,
}

/// The users file, read as iperf3 reads it: each line ends at its first CR or
/// LF; empty lines, lines starting with `#` and lines without a comma are
/// skipped; the fields are the first two comma-separated tokens (empty tokens
/// are skipped, as strtok does). Returns the entries and the numbers of the lines
/// skipped for want of a comma or a hash, so the server can point at them.
pub fn parse_users(text: &str) -> (Vec<UserEntry>, Vec<usize>) {
    let mut entries = Vec::new();
    let mut broken = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.split('\r').next().unwrap_or_default();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split(',').filter(|f| !f.is_empty());
        match (line.contains(','), fields.next(), fields.next()) {
            (true, Some(user), Some(hash)) => entries.push(UserEntry {
                user: user.to_string(),
                hash: hash.to_string(),
                line: i + 1,
            }),
            _ => broken.push(i + 1),
        }
    }
    (entries, broken)
}

/// Why a token was refused. None of them carries the password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// The token was not base64, did not decrypt with either padding, or its
    /// text did not match the pattern.
    BadToken,
    /// The client's time is further from ours than the threshold (seconds,
    /// positive when the client is ahead).
    Skew(i64),
    /// No line of the users file names this user.
    UnknownUser,
    /// The user is listed with another hash.
    WrongPassword,
    /// The parameters carried no token at all.
    NoToken,
}

impl std::fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BadToken => f.write_str("the token could not be decrypted or read"),
            Self::Skew(d) => write!(f, "the client's clock is {d} s off"),
            Self::UnknownUser => f.write_str("unknown user"),
            Self::WrongPassword => f.write_str("wrong password"),
            Self::NoToken => f.write_str("the client sent no token"),
        }
    }
}

/// The server's decision on decrypted credentials: the time first (as iperf3),
/// then the user and the password hash. Every entry is compared in constant time
/// (the hash is secret-derived), so timing tells nothing about which part was
/// wrong or how much of it matched.
pub fn check(
    creds: &Credentials,
    users: &[UserEntry],
    server_unix_secs: i64,
    skew_threshold_secs: u32,
) -> Result<(), AuthFailure> {
    let skew = creds.time.saturating_sub(server_unix_secs);
    if skew.unsigned_abs() > u64::from(skew_threshold_secs) {
        return Err(AuthFailure::Skew(skew));
    }
    let hash = password_hash(&creds.user, &creds.password);
    let mut user_found = 0u8;
    let mut matched = 0u8;
    for e in users {
        let same_user = e.user.as_bytes().ct_eq(creds.user.as_bytes());
        let same_hash = e.hash.as_bytes().ct_eq(hash.as_bytes());
        user_found |= same_user.unwrap_u8();
        matched |= (same_user & same_hash).unwrap_u8();
    }
    match (matched, user_found) {
        (1, _) => Ok(()),
        (_, 1) => Err(AuthFailure::WrongPassword),
        _ => Err(AuthFailure::UnknownUser),
    }
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;

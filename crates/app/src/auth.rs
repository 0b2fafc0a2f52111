//! iperf3's RSA authentication: keys, the token's encryption, the server's check.
//!
//! The text formats and the decision are pure (`rperf3_proto::auth`); this module
//! adds what needs keys and files. iperf3 changed the token's padding in 3.17
//! (PKCS#1 v1.5 before, OAEP with SHA-1 after) and the two sides do not negotiate
//! it, so an rperf3 server tries OAEP, then PKCS#1 v1.5, on every token: clients
//! of every version get in without a flag. Keys are PEM as `openssl` writes them:
//! private keys PKCS#8 (`BEGIN PRIVATE KEY`, OpenSSL 3) or PKCS#1 (`BEGIN RSA
//! PRIVATE KEY`), public keys SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`) or PKCS#1.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use rperf3_proto::auth::{self as rules, AuthFailure};
use rperf3_proto::{IperfError, IE_SET_CLIENT_AUTH};
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::traits::PublicKeyParts;
use rsa::{PrivateKey, PublicKey};
use sha1::Sha1;

use crate::config::{ClientAuthConfig, ServerAuthConfig};

/// How the token's RSA block is padded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    /// RSA-OAEP, SHA-1 and MGF1-SHA-1, empty label: iperf3 3.17 and newer.
    Oaep,
    /// RSAES-PKCS1-v1_5: iperf3 3.16 and older.
    Pkcs1,
}

impl Padding {
    /// The name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Oaep => "OAEP",
            Self::Pkcs1 => "PKCS#1 v1.5",
        }
    }
}

fn read_pem(path: &Path, what: &str) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| {
        let e = rperf3_proto::strerror(e.raw_os_error().unwrap_or(0));
        format!("unable to read the RSA {what} key {}: {e}", path.display())
    })?;
    String::from_utf8(bytes).map_err(|_| not_a_key(path, what))
}

fn not_a_key(path: &Path, what: &str) -> String {
    let form = if what == "public" {
        "SubjectPublicKeyInfo or PKCS#1"
    } else {
        "unencrypted PKCS#8 or PKCS#1"
    };
    format!(
        "{} is not an RSA {what} key in PEM ({form})",
        path.display()
    )
}

/// A PEM public key (`BEGIN PUBLIC KEY` or `BEGIN RSA PUBLIC KEY`). The error is
/// a sentence naming the file and the problem.
pub(crate) fn read_public_key(path: &Path) -> Result<PublicKey, String> {
    let pem = read_pem(path, "public")?;
    PublicKey::from_public_key_pem(pem.trim())
        .or_else(|_| PublicKey::from_pkcs1_pem(pem.trim()))
        .map_err(|_| not_a_key(path, "public"))
}

/// A PEM private key (`BEGIN PRIVATE KEY` or `BEGIN RSA PRIVATE KEY`, without a
/// passphrase). The error is a sentence naming the file and the problem.
pub(crate) fn read_private_key(path: &Path) -> Result<PrivateKey, String> {
    let pem = read_pem(path, "private")?;
    if pem.contains("ENCRYPTED") {
        return Err(format!(
            "{} is encrypted with a passphrase; iperf3 servers need a key without one \
             (openssl pkey -in KEY -out PLAIN)",
            path.display()
        ));
    }
    PrivateKey::from_pkcs8_pem(pem.trim())
        .or_else(|_| PrivateKey::from_pkcs1_pem(pem.trim()))
        .map_err(|_| not_a_key(path, "private"))
}

/// What a client needs to make tokens.
#[derive(Clone)]
pub struct ClientAuth {
    user: String,
    password: String,
    key: PublicKey,
    padding: Padding,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("user", &self.user)
            .field("padding", &self.padding)
            .finish_non_exhaustive()
    }
}

impl ClientAuth {
    /// Reads the key and checks that the user name and password can travel in
    /// iperf3's token: neither may be empty or contain white space (the server
    /// reads them as scanf words), and the token must fit the key.
    pub fn new(cfg: &ClientAuthConfig, password: String) -> Result<Self, String> {
        let word = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace);
        if !word(&cfg.username) {
            return Err("the user name must not be empty or contain white space".into());
        }
        if !word(&password) {
            return Err("the password must not be empty or contain white space \
                        (iperf3 servers could never accept it)"
                .into());
        }
        let auth = Self {
            user: cfg.username.clone(),
            password,
            key: read_public_key(&cfg.public_key_path)?,
            padding: if cfg.pkcs1 {
                Padding::Pkcs1
            } else {
                Padding::Oaep
            },
        };
        // The longest time stamp iperf3 writes, so later tokens fit as well.
        auth.encrypt(i64::MIN).map_err(|()| {
            format!(
                "the user name and password are too long for a {}-bit key",
                auth.key.size() * 8
            )
        })?;
        Ok(auth)
    }

    fn encrypt(&self, unix_secs: i64) -> Result<Vec<u8>, ()> {
        let text = rules::token_text(&self.user, &self.password, unix_secs);
        match self.padding {
            Padding::Oaep => self.key.oaep_encrypt::<Sha1>(text.as_bytes()),
            Padding::Pkcs1 => self.key.pkcs1v15_encrypt(text.as_bytes()),
        }
        .map_err(|_| ())
    }

    /// The padding the tokens use.
    pub fn padding(&self) -> Padding {
        self.padding
    }

    /// The parameters' `authtoken` for a client whose clock reads `unix_secs`.
    pub fn token(&self, unix_secs: i64) -> Result<String, IperfError> {
        let block = self
            .encrypt(unix_secs)
            .map_err(|()| IperfError::new(IE_SET_CLIENT_AUTH))?;
        Ok(BASE64.encode(block))
    }
}

/// What the server needs to check tokens.
#[derive(Clone)]
pub struct ServerAuth {
    key: PrivateKey,
    users_path: PathBuf,
    skew_threshold: u32,
}

impl std::fmt::Debug for ServerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAuth")
            .field("users_path", &self.users_path)
            .field("skew_threshold", &self.skew_threshold)
            .finish_non_exhaustive()
    }
}

/// A token the server accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The user it names.
    pub user: String,
    /// The padding the client used.
    pub padding: Padding,
}

/// Why the server refused a client; the log line's text. Never holds the
/// password or the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The user the token names, if it could be read.
    pub user: Option<String>,
    /// What was wrong.
    pub reason: Reason,
}

/// What was wrong with a client's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The token, the time or the user and password.
    Auth(AuthFailure),
    /// The users file could not be read (the sentence says why).
    UsersFile(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.user {
            Some(u) => write!(f, "authentication failed for user '{u}': ")?,
            None => f.write_str("authentication failed: ")?,
        }
        match &self.reason {
            Reason::Auth(a) => a.fmt(f),
            Reason::UsersFile(e) => f.write_str(e),
        }
    }
}

impl ServerAuth {
    /// Reads the private key (the users file is read for each test).
    pub fn new(cfg: &ServerAuthConfig) -> Result<Self, String> {
        Ok(Self {
            key: read_private_key(&cfg.private_key_path)?,
            users_path: cfg.users_path.clone(),
            skew_threshold: cfg.skew_threshold,
        })
    }

    /// The users file: a sentence (with the path) if it cannot be read.
    pub fn read_users(&self) -> Result<Vec<rules::UserEntry>, String> {
        let text = std::fs::read(&self.users_path).map_err(|e| {
            let e = rperf3_proto::strerror(e.raw_os_error().unwrap_or(0));
            format!(
                "cannot access authorized users file {}: {e}",
                self.users_path.display()
            )
        })?;
        Ok(rules::parse_users(&String::from_utf8_lossy(&text)).0)
    }

    /// The numbers of the users file's lines that are neither entries,
    /// comments nor empty, for a warning at startup.
    pub fn broken_lines(&self) -> Vec<usize> {
        std::fs::read(&self.users_path)
            .map(|t| rules::parse_users(&String::from_utf8_lossy(&t)).1)
            .unwrap_or_default()
    }

    /// Decrypts the token with either padding (OAEP first: a PKCS#1 v1.5 block
    /// practically never passes OAEP's check, the reverse happens by chance).
    fn decrypt(&self, token: &str) -> Option<(Vec<u8>, Padding)> {
        let block = BASE64.decode(token.trim_end()).ok()?;
        if let Ok(t) = self.key.oaep_decrypt::<Sha1>(&block) {
            return Some((t, Padding::Oaep));
        }
        self.key
            .pkcs1v15_decrypt(&block)
            .ok()
            .map(|t| (t, Padding::Pkcs1))
    }

    /// Checks a client's `authtoken` against the users file as it is now and
    /// the server's clock (`unix_secs`).
    pub fn check(&self, token: Option<&str>, unix_secs: i64) -> Result<Accepted, Refused> {
        let refuse = |user: Option<String>, reason| Refused { user, reason };
        let Some(token) = token else {
            return Err(refuse(None, Reason::Auth(AuthFailure::NoToken)));
        };
        let Some((text, padding)) = self.decrypt(token) else {
            return Err(refuse(None, Reason::Auth(AuthFailure::BadToken)));
        };
        let Some(creds) = rules::parse_token_text(&text) else {
            return Err(refuse(None, Reason::Auth(AuthFailure::BadToken)));
        };
        let users = self
            .read_users()
            .map_err(|e| refuse(Some(creds.user.clone()), Reason::UsersFile(e)))?;
        rules::check(&creds, &users, unix_secs, self.skew_threshold)
            .map_err(|a| refuse(Some(creds.user.clone()), Reason::Auth(a)))?;
        Ok(Accepted {
            user: creds.user,
            padding,
        })
    }
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;

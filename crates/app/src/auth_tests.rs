use super::*;

use std::io::Write as _;

/// Fixtures made with `openssl genrsa 2048` and `openssl rsa -pubout`; the
/// tokens were captured from real iperf3 clients encrypting to `server-pub.pem`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/auth")
        .join(name)
}

const TOKEN_3_12_TIME: i64 = 1_795_446_204;
const TOKEN_3_21_TIME: i64 = 1_795_446_827;

fn users_file(text: &str) -> tempfile_path::Scratch {
    tempfile_path::Scratch::new(text)
}

/// A file of its own in the temp dir, removed on drop (no crate for one file).
mod tempfile_path {
    use std::path::PathBuf;

    pub(super) struct Scratch(pub(super) PathBuf);

    impl Scratch {
        pub(super) fn new(text: &str) -> Self {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "rperf3-auth-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::write(&p, text).unwrap();
            Self(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn server(users: &Path, key: &str) -> ServerAuth {
    ServerAuth::new(&ServerAuthConfig {
        private_key_path: fixture(key),
        users_path: users.to_path_buf(),
        skew_threshold: 10,
    })
    .unwrap()
}

fn client(user: &str, password: &str, pkcs1: bool) -> Result<ClientAuth, String> {
    ClientAuth::new(
        &ClientAuthConfig {
            username: user.into(),
            public_key_path: fixture("server-pub.pem"),
            pkcs1,
        },
        password.into(),
    )
}

fn mario() -> String {
    format!("mario,{}\n", rules::password_hash("mario", "rossi"))
}

#[test]
fn real_iperf3_tokens_of_both_paddings_are_accepted() {
    let users = users_file(&mario());
    for key in ["server-key.pem", "server-key-pkcs1.pem"] {
        let s = server(&users.0, key);
        for (file, time, padding) in [
            (
                "token-3.12-mario-rossi-1795446204.txt",
                TOKEN_3_12_TIME,
                Padding::Pkcs1,
            ),
            (
                "token-3.21-mario-rossi-1795446827.txt",
                TOKEN_3_21_TIME,
                Padding::Oaep,
            ),
        ] {
            let token = std::fs::read_to_string(fixture(file)).unwrap();
            let got = s.check(Some(&token), time + 3);
            assert_eq!(
                got,
                Ok(Accepted {
                    user: "mario".into(),
                    padding
                }),
                "{file} with {key}"
            );
            // The same token an hour later: refused for the clock.
            let late = s.check(Some(&token), time + 3600).unwrap_err();
            assert_eq!(late.reason, Reason::Auth(AuthFailure::Skew(-3600)));
            assert_eq!(late.user.as_deref(), Some("mario"));
        }
    }
}

#[test]
fn our_tokens_decrypt_with_openssl_paddings_both_ways() {
    let users = users_file(&mario());
    let s = server(&users.0, "server-key.pem");
    for (pkcs1, padding) in [(false, Padding::Oaep), (true, Padding::Pkcs1)] {
        let c = client("mario", "rossi", pkcs1).unwrap();
        let token = c.token(1000).unwrap();
        // 2048-bit block, base64 without line breaks, as iperf3 sends it.
        assert_eq!(token.len(), 344);
        assert!(!token.contains('\n'));
        assert_eq!(s.check(Some(&token), 1000).map(|a| a.padding), Ok(padding));
        // Each token is freshly randomised.
        assert_ne!(token, c.token(1000).unwrap());
    }
}

#[test]
fn refusals_say_why_without_the_secret() {
    let users = users_file(&format!("{}# luigi is gone\nbroken line\n", mario()));
    let s = server(&users.0, "server-key.pem");
    let wrong = client("mario", "verde", false).unwrap().token(50).unwrap();
    let r = s.check(Some(&wrong), 50).unwrap_err();
    assert_eq!(r.reason, Reason::Auth(AuthFailure::WrongPassword));
    let line = r.to_string();
    assert_eq!(
        line,
        "authentication failed for user 'mario': wrong password"
    );
    assert!(!line.contains("verde"));

    let unknown = client("luigi", "rossi", true).unwrap().token(50).unwrap();
    assert_eq!(
        s.check(Some(&unknown), 50).unwrap_err().reason,
        Reason::Auth(AuthFailure::UnknownUser)
    );
    assert_eq!(s.broken_lines(), [3]);
}

#[test]
fn garbage_tokens_are_refused_not_panics() {
    let users = users_file(&mario());
    let s = server(&users.0, "server-key.pem");
    let random: Vec<u8> = (0..256u32).map(|i| (i * 7919 % 251) as u8).collect();
    for token in [
        String::new(),
        "not base64 !!!".into(),
        BASE64.encode(&random),
        BASE64.encode([0u8; 256]),
        BASE64.encode([0xFFu8; 256]),
        BASE64.encode(&random[..100]),
        BASE64.encode(vec![7u8; 4096]),
    ] {
        let r = s.check(Some(&token), 0).unwrap_err();
        assert_eq!(r.reason, Reason::Auth(AuthFailure::BadToken), "{token}");
        assert_eq!(r.user, None);
    }
    assert_eq!(
        s.check(None, 0).unwrap_err().reason,
        Reason::Auth(AuthFailure::NoToken)
    );
    // A token for another key.
    let other = ClientAuth::new(
        &ClientAuthConfig {
            username: "mario".into(),
            public_key_path: fixture("other-pub.pem"),
            pkcs1: false,
        },
        "rossi".into(),
    )
    .unwrap();
    assert_eq!(
        s.check(Some(&other.token(0).unwrap()), 0)
            .unwrap_err()
            .reason,
        Reason::Auth(AuthFailure::BadToken)
    );
}

#[test]
fn the_users_file_is_read_per_check() {
    let users = users_file("");
    let s = server(&users.0, "server-key.pem");
    let token = client("mario", "rossi", false).unwrap().token(7).unwrap();
    assert_eq!(
        s.check(Some(&token), 7).unwrap_err().reason,
        Reason::Auth(AuthFailure::UnknownUser)
    );
    std::fs::File::create(&users.0)
        .unwrap()
        .write_all(mario().as_bytes())
        .unwrap();
    assert!(s.check(Some(&token), 7).is_ok());
    std::fs::remove_file(&users.0).unwrap();
    let r = s.check(Some(&token), 7).unwrap_err();
    assert!(
        matches!(&r.reason, Reason::UsersFile(e) if e.starts_with("cannot access authorized users file") && e.ends_with("No such file or directory")),
        "{r}"
    );
}

#[test]
fn keys_in_every_openssl_form_and_clear_errors_for_bad_ones() {
    for f in ["server-pub.pem", "server-pub-pkcs1.pem"] {
        read_public_key(&fixture(f)).unwrap();
    }
    for f in ["server-key.pem", "server-key-pkcs1.pem"] {
        read_private_key(&fixture(f)).unwrap();
    }
    let missing = read_public_key(Path::new("/nonexistent/k.pem")).unwrap_err();
    assert_eq!(
        missing,
        "unable to read the RSA public key /nonexistent/k.pem: No such file or directory"
    );
    // A private key where the public one belongs, and the reverse.
    let e = read_public_key(&fixture("server-key.pem")).unwrap_err();
    assert!(e.ends_with("is not an RSA public key in PEM (SubjectPublicKeyInfo or PKCS#1)"));
    let e = read_private_key(&fixture("server-pub.pem")).unwrap_err();
    assert!(e.ends_with("is not an RSA private key in PEM (unencrypted PKCS#8 or PKCS#1)"));
    let junk = users_file("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    assert!(read_private_key(&junk.0).is_err());
    let bin = users_file("\u{0}\u{1}\u{2}");
    assert!(read_public_key(&bin.0).is_err());
    let enc = users_file("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n");
    assert!(read_private_key(&enc.0).unwrap_err().contains("passphrase"));
}

#[test]
fn credentials_iperf3_could_not_carry_are_refused_up_front() {
    assert!(client("mario", "", false).unwrap_err().contains("password"));
    assert!(client("mario", "two words", false).is_err());
    assert!(client("", "rossi", false)
        .unwrap_err()
        .contains("user name"));
    let long = "x".repeat(300);
    assert!(client("mario", &long, false)
        .unwrap_err()
        .contains("too long for a 2048-bit key"));
    // The Debug form has no password.
    let c = client("mario", "rossi", false).unwrap();
    assert!(!format!("{c:?}").contains("rossi"));
}

use super::*;
use proptest::prelude::*;

const MARIO_HASH: &str = "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b";

fn creds(user: &str, password: &str, time: i64) -> Credentials {
    Credentials {
        user: user.into(),
        password: password.into(),
        time,
    }
}

fn users(text: &str) -> Vec<UserEntry> {
    parse_users(text).0
}

#[test]
fn token_text_is_iperf3s_byte_for_byte() {
    // Decrypted from a real 3.12 client's token.
    assert_eq!(
        token_text("mario", "rossi", 1_795_236_750),
        "user: mario\npwd:  rossi\nts:   1795236750"
    );
}

#[test]
fn token_text_reads_back() {
    let t = token_text("mario", "rossi", 1_795_236_750);
    assert_eq!(
        parse_token_text(t.as_bytes()),
        Some(creds("mario", "rossi", 1_795_236_750))
    );
}

#[test]
fn token_parsing_is_scanf_like() {
    // White space in the pattern matches any run of it, or none.
    assert_eq!(
        parse_token_text(b"user:a pwd:b ts:-5 trailing"),
        Some(creds("a", "b", -5))
    );
    assert_eq!(
        parse_token_text(b"  user:\ta\r\n\npwd:   b\nts: +7"),
        Some(creds("a", "b", 7))
    );
    // A NUL ends the text, as for iperf3's C string.
    assert_eq!(
        parse_token_text(b"user: a\npwd:  b\nts:   1\0garbage"),
        Some(creds("a", "b", 1))
    );
    assert_eq!(parse_token_text(b"user: a\npwd:  b\nts:   x1"), None);
    assert_eq!(parse_token_text(b"user: a\npwd:  \nts:   1"), None);
    assert_eq!(parse_token_text(b"user: a\npwd:  b"), None);
    assert_eq!(parse_token_text(b"usr: a\npwd:  b\nts:   1"), None);
    assert_eq!(parse_token_text(b""), None);
    assert_eq!(parse_token_text(b"user: a\0\npwd:  b\nts:   1"), None);
    // Overflow saturates rather than wrapping into the skew window.
    let big = parse_token_text(b"user: a pwd: b ts: 99999999999999999999999").unwrap();
    assert_eq!(big.time, i64::MAX);
}

#[test]
fn password_hash_is_the_spec_example() {
    assert_eq!(password_hash("mario", "rossi"), MARIO_HASH);
    // The braces are part of the salted text.
    assert_ne!(
        password_hash("mario", "rossi"),
        password_hash("mari", "orossi")
    );
}

#[test]
fn users_file_lines() {
    let text = "# comment\n\
                mario,HASH1\r\n\
                \n\
                no comma here\n\
                ,luigi,HASH2,extra\n\
                peach,\n\
                \r\n\
                toad,HASH3";
    let (entries, broken) = parse_users(text);
    let got: Vec<(&str, &str, usize)> = entries
        .iter()
        .map(|e| (e.user.as_str(), e.hash.as_str(), e.line))
        .collect();
    assert_eq!(
        got,
        [
            ("mario", "HASH1", 2),
            ("luigi", "HASH2", 5),
            ("toad", "HASH3", 8)
        ]
    );
    assert_eq!(broken, [4, 6]);
    // A CR ends the line even mid-way.
    assert_eq!(users("a,h\rjunk,more")[0].hash, "h");
}

#[test]
fn check_accepts_the_right_password_within_the_threshold() {
    let u = users(&format!("mario,{MARIO_HASH}\n"));
    let now = 1_000_000;
    for t in [now - 10, now, now + 10] {
        assert_eq!(check(&creds("mario", "rossi", t), &u, now, 10), Ok(()));
    }
    assert_eq!(
        check(&creds("mario", "rossi", now + 11), &u, now, 10),
        Err(AuthFailure::Skew(11))
    );
    assert_eq!(
        check(&creds("mario", "rossi", now - 11), &u, now, 10),
        Err(AuthFailure::Skew(-11))
    );
    assert_eq!(
        check(&creds("mario", "rossi", i64::MIN), &u, now, u32::MAX),
        Err(AuthFailure::Skew(i64::MIN))
    );
}

#[test]
fn check_tells_unknown_users_from_wrong_passwords() {
    let u = users(&format!(
        "mario,{MARIO_HASH}\nluigi,{}\n",
        password_hash("luigi", "verde")
    ));
    assert_eq!(check(&creds("luigi", "verde", 5), &u, 5, 10), Ok(()));
    assert_eq!(
        check(&creds("mario", "verde", 5), &u, 5, 10),
        Err(AuthFailure::WrongPassword)
    );
    assert_eq!(
        check(&creds("bowser", "rossi", 5), &u, 5, 10),
        Err(AuthFailure::UnknownUser)
    );
    // The comparison is exact: an upper-case hash does not match.
    let upper = users(&format!("mario,{}\n", MARIO_HASH.to_uppercase()));
    assert_eq!(
        check(&creds("mario", "rossi", 5), &upper, 5, 10),
        Err(AuthFailure::WrongPassword)
    );
    // An empty password is a password like any other.
    let empty = users(&format!("wario,{}\n", password_hash("wario", "")));
    assert_eq!(check(&creds("wario", "", 5), &empty, 5, 10), Ok(()));
    assert_eq!(
        check(&creds("wario", "x", 5), &empty, 5, 10),
        Err(AuthFailure::WrongPassword)
    );
}

#[test]
fn failures_never_print_the_password() {
    let c = creds("mario", "s3cret", 1);
    assert!(!format!("{c:?}").contains("s3cret"));
}

proptest! {
    #[test]
    fn any_token_bytes_parse_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_token_text(&bytes);
    }

    #[test]
    fn any_users_text_parses_without_panic(text in ".{0,300}") {
        let _ = parse_users(&text);
    }

    #[test]
    fn tokens_round_trip(user in "[!-~]{1,40}", pwd in "[!-~]{1,40}", t in any::<i64>()) {
        let parsed = parse_token_text(token_text(&user, &pwd, t).as_bytes()).unwrap();
        prop_assert_eq!(parsed, creds(&user, &pwd, t));
    }
}

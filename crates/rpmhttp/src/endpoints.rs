//! The responsiveness endpoints, sans IO: which resource a request names, the
//! config document a server gives, and the URLs a client reads from one.
//!
//! Clients read different spellings of the config's keys: Apple's server
//! description names them `small_download_url`, `large_download_url` and
//! `upload_url`; goresponsiveness reads `small_https_download_url`,
//! `large_https_download_url` and `https_upload_url` and refuses a config
//! without them. The server writes both; the client takes either.

use serde_json::{json, Value};

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The config document.
    Config,
    /// The 1-byte object probes fetch.
    Small,
    /// The endless object download load reads.
    Large,
    /// The sink upload load posts to.
    Upload,
    /// Nothing here.
    NotFound,
}

/// Where each resource lives under a server's base URL.
const PATHS: [(&str, Endpoint); 4] = [
    ("config", Endpoint::Config),
    ("small", Endpoint::Small),
    ("large", Endpoint::Large),
    ("upload", Endpoint::Upload),
];

/// The resource `path` names: `/NAME` or `/api/v1/NAME` (Apple's layout), a
/// query ignored (clients add one to defeat caches).
pub fn route(path: &str) -> Endpoint {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let name = path
        .strip_prefix("/api/v1/")
        .or_else(|| path.strip_prefix('/'))
        .unwrap_or_default();
    // The reference deployment's name for the sink.
    let name = if name == "slurp" { "upload" } else { name };
    PATHS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(Endpoint::NotFound, |(_, e)| *e)
}

/// Whether `method` is one `endpoint` answers: downloads are fetched, the sink
/// is posted (or put) to.
pub fn allows(endpoint: Endpoint, method: &str) -> bool {
    match endpoint {
        Endpoint::Upload => matches!(method, "POST" | "PUT"),
        Endpoint::NotFound => true,
        _ => matches!(method, "GET" | "HEAD"),
    }
}

/// The config document of a server reached as `authority` (`host:port` as the
/// client named it, so the URLs work from where the client stands).
pub fn config_json(authority: &str) -> String {
    let base = format!("https://{authority}/api/v1");
    let (small, large, upload) = (
        format!("{base}/small"),
        format!("{base}/large"),
        format!("{base}/upload"),
    );
    json!({
        "version": 1,
        "test_endpoint": authority.rsplit_once(':').map_or(authority, |(h, _)| h)
            .trim_start_matches('[').trim_end_matches(']'),
        "urls": {
            "small_download_url": small,
            "large_download_url": large,
            "upload_url": upload,
            "small_https_download_url": small,
            "large_https_download_url": large,
            "https_upload_url": upload,
        }
    })
    .to_string()
}

/// The URLs a config names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Urls {
    /// The 1-byte object.
    pub small: String,
    /// The large object.
    pub large: String,
    /// The upload sink.
    pub upload: String,
}

/// Reads a config document: each URL under either spelling of its key.
pub fn parse_config(body: &[u8]) -> Result<Urls, String> {
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the config is not a JSON document ({e})"))?;
    let urls = doc.get("urls").ok_or("the config has no \"urls\" object")?;
    let pick = |keys: [&str; 2]| -> Result<String, String> {
        keys.iter()
            .find_map(|k| urls.get(*k).and_then(Value::as_str))
            .map(str::to_string)
            .ok_or_else(|| format!("the config names no {} (nor {})", keys[0], keys[1]))
    };
    Ok(Urls {
        small: pick(["small_download_url", "small_https_download_url"])?,
        large: pick(["large_download_url", "large_https_download_url"])?,
        upload: pick(["upload_url", "https_upload_url"])?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_and_queries_route() {
        assert_eq!(route("/config"), Endpoint::Config);
        assert_eq!(route("/api/v1/config"), Endpoint::Config);
        assert_eq!(route("/api/v1/small?nocache=1"), Endpoint::Small);
        assert_eq!(route("/large"), Endpoint::Large);
        assert_eq!(route("/api/v1/slurp"), Endpoint::Upload);
        assert_eq!(route("/upload"), Endpoint::Upload);
        assert_eq!(route("/api/v2/small"), Endpoint::NotFound);
        assert_eq!(route("/"), Endpoint::NotFound);
        assert_eq!(route("/smallish"), Endpoint::NotFound);
    }

    #[test]
    fn downloads_are_fetched_and_the_sink_posted_to() {
        assert!(allows(Endpoint::Large, "GET") && allows(Endpoint::Small, "HEAD"));
        assert!(!allows(Endpoint::Large, "POST"));
        assert!(allows(Endpoint::Upload, "POST") && allows(Endpoint::Upload, "PUT"));
        assert!(!allows(Endpoint::Upload, "GET"));
    }

    #[test]
    fn the_config_names_this_server_under_both_spellings() {
        let doc: Value = serde_json::from_str(&config_json("10.0.0.2:4443")).unwrap();
        let u = &doc["urls"];
        for k in ["small_download_url", "small_https_download_url"] {
            assert_eq!(u[k], "https://10.0.0.2:4443/api/v1/small");
        }
        for k in ["large_download_url", "large_https_download_url"] {
            assert_eq!(u[k], "https://10.0.0.2:4443/api/v1/large");
        }
        for k in ["upload_url", "https_upload_url"] {
            assert_eq!(u[k], "https://10.0.0.2:4443/api/v1/upload");
        }
        assert_eq!(doc["test_endpoint"], "10.0.0.2");
        let v6: Value = serde_json::from_str(&config_json("[::1]:4443")).unwrap();
        assert_eq!(v6["test_endpoint"], "::1");
        assert_eq!(v6["urls"]["upload_url"], "https://[::1]:4443/api/v1/upload");
        assert_eq!(
            parse_config(config_json("h:1").as_bytes()).unwrap().large,
            "https://h:1/api/v1/large"
        );
    }

    #[test]
    fn a_config_with_one_spelling_is_read() {
        let apple = br#"{"version":1,"urls":{"small_download_url":"https://a/s",
            "large_download_url":"https://a/l","upload_url":"https://a/u"}}"#;
        let go = br#"{"urls":{"small_https_download_url":"https://g/s",
            "large_https_download_url":"https://g/l","https_upload_url":"https://g/u"}}"#;
        assert_eq!(
            parse_config(apple).unwrap(),
            Urls {
                small: "https://a/s".into(),
                large: "https://a/l".into(),
                upload: "https://a/u".into()
            }
        );
        assert_eq!(parse_config(go).unwrap().upload, "https://g/u");
    }

    #[test]
    fn a_bad_config_says_what_is_missing() {
        assert_eq!(
            parse_config(br#"{"urls":{"small_download_url":"x","upload_url":"y"}}"#).unwrap_err(),
            "the config names no large_download_url (nor large_https_download_url)"
        );
        assert_eq!(
            parse_config(b"{}").unwrap_err(),
            "the config has no \"urls\" object"
        );
        assert!(parse_config(b"<html>")
            .unwrap_err()
            .starts_with("the config is not a JSON"));
    }
}

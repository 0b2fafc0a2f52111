//! Where a URL points, sans IO: an `https` URL's host, port and the request
//! target the HTTP/2 layer needs (absolute, with scheme and authority).

use http::Uri;

/// A server resource the client fetches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The host as written (an IPv6 address without brackets).
    pub host: String,
    /// The port (443 when the URL has none).
    pub port: u16,
    /// The whole URL, for the request.
    pub uri: Uri,
}

/// Reads `url`, which must be `https://host[:port][/path]`.
pub fn parse(url: &str) -> Result<Target, String> {
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("\"{url}\" is not a URL ({e})"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!(
            "\"{url}\" is not an https URL (the RPM protocol runs over TLS)"
        ));
    }
    let Some(host) = uri.host().filter(|h| !h.is_empty()) else {
        return Err(format!("\"{url}\" names no host"));
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(443);
    Ok(Target { host, port, uri })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ports_and_paths() {
        let t = parse("https://rpm.example.net/api/v1/config").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("rpm.example.net", 443));
        assert_eq!(t.uri.path(), "/api/v1/config");
        let t = parse("https://[fd00::2]:4443/config").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("fd00::2", 4443));
        let t = parse("https://10.0.0.2:4443").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("10.0.0.2", 4443));
    }

    #[test]
    fn only_https_urls_with_a_host() {
        assert_eq!(
            parse("http://h/config").unwrap_err(),
            "\"http://h/config\" is not an https URL (the RPM protocol runs over TLS)"
        );
        assert!(parse("h:4443/config").is_err());
        assert!(parse("not a url").unwrap_err().contains("is not a URL"));
    }
}

//! Scraping a server's `--metrics` endpoint: one HTTP/1.0 GET, parsed into
//! series (name and labels as printed) and values.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::{free_port, Server};

/// Every sample of one scrape.
pub(crate) type Scrape = HashMap<String, f64>;

/// The `outcome` labels of `rperf3_tests_total`, as the README lists them.
pub(crate) const OUTCOMES: [&str; 5] = ["ok", "error", "refused", "auth_failed", "interrupted"];

/// A server with `--metrics` on a free port, and that port.
pub(crate) fn server(extra: &[&str]) -> (Server, u16) {
    let mport = free_port();
    let addr = format!("127.0.0.1:{mport}");
    let mut args = vec!["--metrics", &addr];
    args.extend_from_slice(extra);
    (Server::start(&args), mport)
}

/// One HTTP/1.0 GET of `target` on `port`: the status line and the body.
pub(crate) fn http_get(port: u16, target: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {target} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("response");
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// One scrape of `/metrics` on `port`.
pub(crate) fn scrape(port: u16) -> Scrape {
    let (status, body) = http_get(port, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// The value of `series`; a failure if the scrape lacks it.
pub(crate) fn get(m: &Scrape, series: &str) -> f64 {
    *m.get(series)
        .unwrap_or_else(|| panic!("no {series} in {m:#?}"))
}

/// `rperf3_tests_total{outcome="o"}`.
pub(crate) fn outcome(m: &Scrape, o: &str) -> f64 {
    get(m, &format!("rperf3_tests_total{{outcome=\"{o}\"}}"))
}

/// Every outcome counter, in [`OUTCOMES`] order.
pub(crate) fn outcomes(m: &Scrape) -> [f64; 5] {
    OUTCOMES.map(|o| outcome(m, o))
}

/// Scrapes until `pred` holds; fails after 10 s with the last scrape.
pub(crate) fn scrape_until(port: u16, what: &str, pred: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = scrape(port);
        if pred(&m) {
            return m;
        }
        assert!(Instant::now() < deadline, "never {what}: {m:#?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

//! What mesh agents leave behind, read for the tests: the JSON lines of the
//! tests each ran (stdout) and the tests each one's server served (its log
//! lines, "test N from ADDR starts" and "... ended"). The servers' records,
//! not the schedule, judge whether a node was ever in two tests at once.
//!
//! Self-contained (std and serde_json only): both test binaries include it.

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::Value;

/// The JSON lines of one agent's stdout.
pub(crate) fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A line's string field.
pub(crate) fn field<'a>(l: &'a Value, k: &str) -> &'a str {
    l[k].as_str().unwrap_or_else(|| panic!("no {k} in {l}"))
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix seconds of a log line's `2026-11-27T20:09:46.001Z`.
pub(crate) fn log_time(stamp: &str) -> Option<f64> {
    let (date, time) = stamp.strip_suffix('Z')?.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (hms, ms) = time.split_once('.')?;
    let t: Vec<i64> = hms
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (&[y, mo, da], &[h, mi, s]) = (&d[..], &t[..]) else {
        return None;
    };
    let secs = days(y, mo, da) * 86_400 + h * 3600 + mi * 60 + s;
    Some(secs as f64 + ms.parse::<f64>().ok()? / 1000.0)
}

/// One test a server served, from its own log.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// The serving node.
    pub(crate) server: String,
    /// The client's address.
    pub(crate) client: IpAddr,
    pub(crate) start: f64,
    /// Its "ended" line's time, or the log's last time when the agent died first.
    pub(crate) end: f64,
    /// The "ended (...)" outcome, when there was one.
    pub(crate) outcome: Option<String>,
}

/// The tests `server`'s log says it served.
pub(crate) fn served(server: &str, log: &str) -> Vec<Served> {
    let mut open: HashMap<String, Served> = HashMap::new();
    let mut out = Vec::new();
    let mut last = 0.0f64;
    for line in log.lines() {
        let Some((stamp, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(t) = log_time(stamp) else { continue };
        last = last.max(t);
        let Some(rest) = rest.strip_prefix("info: test ") else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let (Some(id), Some("from"), Some(addr), Some(what)) =
            (w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let Ok(sa) = addr.parse::<std::net::SocketAddr>() else {
            continue;
        };
        if what == "starts:" {
            open.insert(
                id.to_string(),
                Served {
                    server: server.to_string(),
                    client: sa.ip(),
                    start: t,
                    end: f64::INFINITY,
                    outcome: None,
                },
            );
        } else if what == "ended" {
            if let Some(mut s) = open.remove(id) {
                s.end = t;
                s.outcome = w.next().map(|o| {
                    o.trim_matches(|c| c == '(' || c == ')' || c == ':')
                        .to_string()
                });
                out.push(s);
            }
        }
    }
    for (_, mut s) in open {
        s.end = last;
        out.push(s);
    }
    out
}

/// Fails if any node was in two served tests at once, as server or client:
/// each test counts for its server and for the node whose address is its
/// client's (`nodes` maps addresses to names; other clients are ignored).
pub(crate) fn assert_nobody_twice_at_once(served: &[Served], nodes: &HashMap<IpAddr, String>) {
    let mut busy: HashMap<&str, Vec<(f64, f64, String)>> = HashMap::new();
    for s in served {
        let what = format!(
            "{} served {} ({:.3}..{:.3})",
            s.server, s.client, s.start, s.end
        );
        busy.entry(&s.server)
            .or_default()
            .push((s.start, s.end, what.clone()));
        if let Some(c) = nodes.get(&s.client) {
            busy.entry(c).or_default().push((s.start, s.end, what));
        }
    }
    for (node, mut v) in busy {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in v.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "{node} was in two tests at once: {} and {}",
                w[0].2,
                w[1].2
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_times_are_unix_seconds() {
        assert_eq!(log_time("1970-01-01T00:00:01.500Z"), Some(1.5));
        let t = log_time("2026-11-27T20:09:46.001Z").unwrap();
        assert!((t - 1_795_810_186.001).abs() < 1e-6, "{t}");
        assert_eq!(log_time("garbage"), None);
    }

    #[test]
    fn served_tests_and_overlaps_are_found() {
        let log = "2026-11-27T20:00:00.000Z info: test 1 from 10.0.0.2:5000 starts: TCP\n\
                   2026-11-27T20:00:01.000Z info: test 1 from 10.0.0.2:5000 ended (ok): done; 1 bytes\n\
                   2026-11-27T20:00:00.500Z info: test 2 from 10.0.0.3:5000 starts: TCP\n";
        let s = served("a", log);
        assert_eq!(s.len(), 2);
        let nodes: HashMap<IpAddr, String> = [("10.0.0.2", "b"), ("10.0.0.3", "c")]
            .iter()
            .map(|(ip, n)| (ip.parse().unwrap(), n.to_string()))
            .collect();
        let r = std::panic::catch_unwind(|| assert_nobody_twice_at_once(&s, &nodes));
        assert!(r.is_err(), "a served b and c at once");
        assert_nobody_twice_at_once(&s[..1], &nodes);
        assert_eq!(s[0].outcome.as_deref(), Some("ok"));
    }
}

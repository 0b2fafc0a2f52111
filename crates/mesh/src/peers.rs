//! Members of the mesh, and the peers file that lists them outside Kubernetes.
//!
//! A peers file has one `NAME ADDRESS` line per agent; `ADDRESS` is an IP
//! address or a host name, with `:PORT` when the agent does not serve on the
//! mesh's port (`[v6]:PORT` for IPv6). `#` starts a comment. A bad line is
//! reported with its number and left out: the rest of the fleet is still tested.

use std::fmt;

/// Longest member name (a DNS name's limit; Kubernetes node names obey it).
pub const MAX_NAME: usize = 253;

/// One agent of the mesh.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Member {
    /// Its name: the `source` / `destination` label of its series.
    pub name: String,
    /// Where its server listens: an IP address or a host name.
    pub host: String,
    /// Its port, when not the mesh's.
    pub port: Option<u16>,
}

impl Member {
    /// `host:port` (brackets around IPv6) for `port` when the member has none.
    pub fn endpoint(&self, port: u16) -> String {
        let p = self.port.unwrap_or(port);
        if self.host.contains(':') {
            format!("[{}]:{p}", self.host)
        } else {
            format!("{}:{p}", self.host)
        }
    }
}

/// Sorts members by name: the order every agent numbers them in.
pub fn sort_members(members: &mut [Member]) {
    members.sort();
}

/// A line of a peers file that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeersError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for PeersError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// Splits `ADDRESS[:PORT]` into host and port.
pub fn split_address(s: &str) -> Result<(String, Option<u16>), String> {
    let port = |p: &str| -> Result<u16, String> {
        match p.parse::<u16>() {
            Ok(0) | Err(_) => Err(format!("bad port {p:?}")),
            Ok(n) => Ok(n),
        }
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest
            .split_once(']')
            .ok_or_else(|| format!("no ']' in {s:?}"))?;
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{host:?} is not an IPv6 address"));
        }
        return match tail {
            "" => Ok((host.to_string(), None)),
            t => match t.strip_prefix(':') {
                Some(p) => Ok((host.to_string(), Some(port(p)?))),
                None => Err(format!("unexpected {t:?} after the address")),
            },
        };
    }
    if s.parse::<std::net::Ipv6Addr>().is_ok() {
        return Ok((s.to_string(), None));
    }
    let (host, p) = match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(port(p)?)),
        None => (s, None),
    };
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    {
        return Err(format!("{host:?} is not an address or a host name"));
    }
    Ok((host.to_string(), p))
}

/// Checks a member name.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!("a name must have 1 to {MAX_NAME} characters"));
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!("{name:?} holds white space or control characters"));
    }
    Ok(())
}

/// The members a peers file lists (sorted by name), and its bad lines.
pub fn parse_peers(text: &str) -> (Vec<Member>, Vec<PeersError>) {
    let mut members: Vec<Member> = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |why: String| PeersError { line: i + 1, why };
        let words: Vec<&str> = line.split_whitespace().collect();
        let [name, addr] = words[..] else {
            errors.push(err(format!(
                "expected \"NAME ADDRESS\", found {} word(s)",
                words.len()
            )));
            continue;
        };
        if let Err(why) = check_name(name) {
            errors.push(err(why));
            continue;
        }
        let (host, port) = match split_address(addr) {
            Ok(hp) => hp,
            Err(why) => {
                errors.push(err(why));
                continue;
            }
        };
        if let Some(m) = members.iter().find(|m| m.name == name) {
            errors.push(err(format!("{name} is listed twice (first as {})", m.host)));
            continue;
        }
        if let Some(m) = members.iter().find(|m| m.host == host && m.port == port) {
            errors.push(err(format!("{addr} is already {}'s address", m.name)));
            continue;
        }
        members.push(Member {
            name: name.to_string(),
            host,
            port,
        });
    }
    sort_members(&mut members);
    (members, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, host: &str, port: Option<u16>) -> Member {
        Member {
            name: name.into(),
            host: host.into(),
            port,
        }
    }

    #[test]
    fn lines_become_sorted_members() {
        let (ms, errs) = parse_peers(
            "# the rack\n\
             n2 10.0.0.2\n\
             \n\
             n1   10.0.0.1:5301   # a comment\n\
             n3 [fd00::3]:5201\n\
             n4 fd00::4\n\
             n5 node-5.example.net\n",
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            ms,
            [
                m("n1", "10.0.0.1", Some(5301)),
                m("n2", "10.0.0.2", None),
                m("n3", "fd00::3", Some(5201)),
                m("n4", "fd00::4", None),
                m("n5", "node-5.example.net", None),
            ]
        );
        assert_eq!(ms[0].endpoint(5201), "10.0.0.1:5301");
        assert_eq!(ms[1].endpoint(5201), "10.0.0.2:5201");
        assert_eq!(ms[3].endpoint(5201), "[fd00::4]:5201");
    }

    #[test]
    fn garbage_lines_are_named_and_left_out() {
        let (ms, errs) = parse_peers(
            "n1 10.0.0.1\n\
             just-a-name\n\
             n2 10.0.0.2 extra\n\
             n3 10.0.0.3:0\n\
             n4 10.0.0.4:99999\n\
             n5 [fd00::5\n\
             n6 [nope]:1\n\
             n7 bad/host\n\
             n1 10.0.0.9\n\
             n8 10.0.0.1\n\
             \u{1}\u{2} 10.0.0.10\n\
             n9 10.0.0.9:80x\n",
        );
        assert_eq!(ms, [m("n1", "10.0.0.1", None)]);
        let lines: Vec<usize> = errs.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        assert_eq!(
            errs[0].to_string(),
            "line 2: expected \"NAME ADDRESS\", found 1 word(s)"
        );
        assert_eq!(errs[2].why, "bad port \"0\"");
        assert_eq!(errs[7].why, "n1 is listed twice (first as 10.0.0.1)");
        assert_eq!(errs[8].why, "10.0.0.1 is already n1's address");
    }

    #[test]
    fn binary_input_does_not_panic() {
        let junk: String = (0u8..=255).map(char::from).cycle().take(5000).collect();
        let (ms, _) = parse_peers(&junk);
        assert!(ms.len() < 5000);
    }
}

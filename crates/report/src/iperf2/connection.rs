//! Connection lines: "[  1] local A port P connected with B port Q" and what
//! `-e` adds (`%dev`, `(peer x)`, `(icwnd/mss/irtt=...)`, `(ct=... ms)`, the
//! date), with `--hide-ips` masking.

use std::net::{IpAddr, SocketAddr};

use super::model::{Connection2, Layout2};
use super::rows::tag;
use super::units::{civil, date_ms};

/// The note of `--tcp-quickack`.
const QACK: &str = "(qack)";

/// The connection line of `c`.
pub(crate) fn line(c: &Connection2, layout: &Layout2) -> String {
    let mut s = tag(c.tag);
    s.push_str("local ");
    s.push_str(&ip(c.local.ip(), layout.hide_ips));
    if let (true, Some(dev)) = (layout.enhanced, &c.device) {
        s.push('%');
        s.push_str(dev);
    }
    s.push_str(&format!(
        " port {} connected with {} port {}",
        c.local.port(),
        ip(c.peer.ip(), layout.hide_ips),
        c.peer.port()
    ));
    // 2.2.1 prints `(qack)` after the peer's version.
    let (qack, notes): (Vec<&String>, Vec<&String>) = c.notes.iter().partition(|n| *n == QACK);
    for n in notes {
        if n.starts_with('(') {
            s.push_str(&format!(" {n}"));
        } else {
            s.push_str(&format!(" ({n})"));
        }
    }
    if layout.enhanced {
        if let Some(v) = &c.peer_version {
            s.push_str(&format!(" (peer {v})"));
        }
    }
    for n in qack {
        s.push_str(&format!(" {n}"));
    }
    // --connect-only shows the handshake's time and date without -e too.
    if c.connect_only && !layout.enhanced {
        if let Some(ct) = c.connect_time.filter(|ct| !ct.is_zero()) {
            s.push_str(&format!(" (ct={:.2} ms)", ct.as_secs_f64() * 1e3));
        }
        let zone = layout.tz_name.as_deref().unwrap_or("UTC");
        let date = date_ms(civil(c.at, layout.utc_offset_secs));
        s.push_str(&format!(
            " on {} ({zone})",
            date.split('.').next().unwrap_or_default()
        ));
    }
    if layout.enhanced {
        if let Some(t) = c.tcp {
            s.push_str(&format!(
                " (icwnd/mss/irtt={}/{}/{})",
                t.icwnd, t.mss, t.irtt_us
            ));
        }
        if let Some(ct) = c.connect_time {
            s.push_str(&format!(" (ct={:.2} ms)", ct.as_secs_f64() * 1e3));
        }
        // 2.2.1's server dates every connection but a -R client's.
        let reverse_served = c.peer_version.is_some()
            && c.notes
                .iter()
                .any(|n| n.trim_matches(['(', ')']) == "reverse");
        if !reverse_served {
            let zone = layout.tz_name.as_deref().unwrap_or("UTC");
            s.push_str(&format!(
                " on {} ({zone})",
                date_ms(civil(c.at, layout.utc_offset_secs))
            ));
        }
    }
    s
}

/// `--connect-only`'s closing line over `ok` handshakes' times (ms) and
/// `errors` failed connects: none for two or fewer, the deviation from 25.
pub fn connect_times_line(
    (min, mean, max, stdev): (f64, f64, f64, f64),
    ok: u64,
    errors: u64,
) -> Option<String> {
    let tot = ok + errors;
    match ok {
        0..=2 => None,
        3..=24 => Some(format!(
            "[ CT] final connect times (min/avg/max) = {min:.3}/{mean:.3}/{max:.3} ms (tot/err) = {tot}/{errors}"
        )),
        _ => Some(format!(
            "[ CT] final connect times (min/avg/max/stdev) = {min:.3}/{mean:.3}/{max:.3}/{stdev:.3} ms (tot/err) = {tot}/{errors}"
        )),
    }
}

/// The `(tos ...)` note of a connection line whose socket carries `tos`: a
/// sender's byte is `tx`, a `-R` client's `rx` (the byte it asked the server
/// to send with), a full-duplex test's both (`rx/tx=A/A`); 2.2.1 prints it
/// after the mode notes, with or without `-e`. `None` for a zero byte.
pub fn tos_note(tos: u8, rx: bool, tx: bool) -> Option<String> {
    if tos == 0 {
        return None;
    }
    let one = format!("0x{tos:x},dscp={},ecn={}", tos >> 2, tos & 3);
    Some(match (rx, tx) {
        (true, true) => format!("(tos rx/tx={one}/{one})"),
        (true, false) => format!("(tos rx={one})"),
        _ => format!("(tos tx={one})"),
    })
}

/// An address as printed; `--hide-ips` keeps only an IPv4 address's last
/// octet (`*.*.*.1`). 2.2.1 prints IPv6 addresses as they are.
pub(crate) fn ip(a: IpAddr, hide: bool) -> String {
    match a {
        IpAddr::V4(v4) if hide => format!("*.*.*.{}", v4.octets()[3]),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) if hide => format!("*.*.*.{}", v4.octets()[3]),
            _ => v6.to_string(),
        },
        other => other.to_string(),
    }
}

/// The address and port of a CSV row, `addr,port`.
pub(crate) fn csv_peer(a: SocketAddr, port: u16, hide: bool) -> String {
    format!("{},{port}", ip(a.ip(), hide))
}

#[cfg(test)]
mod tos_tests {
    use super::tos_note;

    #[test]
    fn connect_times_lines_are_2_2_1s() {
        use super::connect_times_line;
        let f = (0.108, 0.137, 0.174, 0.02);
        assert_eq!(connect_times_line(f, 2, 5), None);
        assert_eq!(
            connect_times_line(f, 4, 0).as_deref(),
            Some("[ CT] final connect times (min/avg/max) = 0.108/0.137/0.174 ms (tot/err) = 4/0")
        );
        assert_eq!(
            connect_times_line((0.012, 0.027, 1.36, 0.065), 774, 1).as_deref(),
            Some("[ CT] final connect times (min/avg/max/stdev) = 0.012/0.027/1.360/0.065 ms (tot/err) = 775/1")
        );
    }

    #[test]
    fn tos_notes_are_2_2_1s() {
        assert_eq!(tos_note(0, false, true), None);
        assert_eq!(
            tos_note(0x20, false, true).as_deref(),
            Some("(tos tx=0x20,dscp=8,ecn=0)")
        );
        assert_eq!(
            tos_note(0xb8, true, false).as_deref(),
            Some("(tos rx=0xb8,dscp=46,ecn=0)")
        );
        assert_eq!(
            tos_note(0x21, true, true).as_deref(),
            Some("(tos rx/tx=0x21,dscp=8,ecn=1/0x21,dscp=8,ecn=1)")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hide_ips_masks_ipv4_only() {
        let v4: IpAddr = "10.77.0.1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(ip(v4, true), "*.*.*.1");
        assert_eq!(ip(v4, false), "10.77.0.1");
        let v6: IpAddr = "::1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(ip(v6, true), "::1");
    }
}

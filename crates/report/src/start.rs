//! Builds the JSON `start` object, whose key order depends on side and protocol.
//!
//! iperf3 fills `start` piecemeal (version at launch, timestamp and cookie when
//! the control connection is up, buffer sizes when sockets exist, `test_start` at
//! TEST_START), so a test that fails midway shows only the keys reached. This
//! module rebuilds the same object, in the same order, from what is known.

use crate::input::{MssInfo, Protocol, Side, StartInfo, StreamInfo, TestInfo};
use crate::text::host;
use serde_json::{json, Map, Value};

/// The proleptic Gregorian (year, month 1-12, day 1-31) of a day count since
/// 1970-01-01 (H. Hinnant's days-to-civil algorithm).
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// RFC 1123 time in GMT ("Sat, 21 Nov 2026 04:53:47 GMT") of a Unix time.
pub fn rfc1123(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let weekday = DAYS[((days + 4) % 7) as usize];
    let (year, month, day) = civil_date(days as i64);
    format!(
        "{weekday}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// One `connected[]` entry.
pub fn connected_json(s: &StreamInfo) -> Value {
    json!({
        "socket": s.socket,
        "local_host": host(s.local.ip()),
        "local_port": s.local.port(),
        "remote_host": host(s.remote.ip()),
        "remote_port": s.remote.port(),
    })
}

/// `test_start`: the parameters in effect.
pub fn test_start_json(t: &TestInfo) -> Value {
    json!({
        "protocol": t.protocol.name(),
        "num_streams": t.num_streams,
        "blksize": t.blksize,
        "omit": t.omit,
        "duration": t.duration,
        "bytes": t.bytes,
        "blocks": t.blocks,
        "reverse": u8::from(t.reverse),
        "tos": t.tos,
        "target_bitrate": t.target_bitrate,
        "bidir": u8::from(t.bidir),
        "fqrate": t.fq_rate,
        "interval": crate::cjson::num(t.interval),
        "gso": u8::from(t.gso),
        "gro": u8::from(t.gro),
    })
}

/// What is known of the test so far.
pub struct StartParts<'a> {
    /// This process's side.
    pub side: Side,
    /// Version line, used until the control connection is up.
    pub version: &'a str,
    /// uname line, used until the control connection is up.
    pub system_info: &'a str,
    /// Streams set up so far.
    pub streams: &'a [StreamInfo],
    /// Set once the control connection is up.
    pub connect: Option<(&'a StartInfo, &'a TestInfo)>,
    /// TEST_START reached.
    pub started: bool,
}

fn buffers(m: &mut Map<String, Value>, si: &StartInfo) {
    m.insert("sock_bufsize".into(), json!(si.sock_bufsize));
    m.insert("sndbuf_actual".into(), json!(si.sndbuf_actual));
    m.insert("rcvbuf_actual".into(), json!(si.rcvbuf_actual));
}

/// The `start` object in iperf3's key order. A server's nonzero
/// `target_bitrate`, which iperf3 writes twice, is written once, at the place
/// of its first copy.
pub fn to_json(p: &StartParts<'_>) -> Value {
    let mut m = Map::new();
    m.insert(
        "connected".into(),
        Value::Array(p.streams.iter().map(connected_json).collect()),
    );
    let (version, system_info) = match p.connect {
        Some((si, _)) if !si.version.is_empty() => (si.version.as_str(), si.system_info.as_str()),
        _ => (p.version, p.system_info),
    };
    m.insert("version".into(), json!(version));
    m.insert("system_info".into(), json!(system_info));
    let Some((si, test)) = p.connect else {
        return Value::Object(m);
    };
    let tcp = test.protocol == Protocol::Tcp;
    let rate = test.target_bitrate;
    let server = p.side == Side::Server;
    if server {
        if tcp {
            buffers(&mut m, si);
        }
        if rate != 0 {
            m.insert("target_bitrate".into(), json!(rate));
        }
    }
    let millis = si.timestamp_millis;
    m.insert(
        "timestamp".into(),
        json!({
            "time": rfc1123(millis / 1000),
            "timesecs": millis / 1000,
            "timemillisecs": millis,
        }),
    );
    if server {
        if let Some(a) = si.accepted_connection {
            m.insert(
                "accepted_connection".into(),
                json!({"host": host(a.ip()), "port": a.port()}),
            );
        }
    } else if let Some((h, port)) = &si.connecting_to {
        m.insert("connecting_to".into(), json!({"host": h, "port": port}));
    }
    m.insert("cookie".into(), json!(si.cookie));
    if tcp {
        match si.tcp_mss {
            Some(MssInfo::Set(v)) => {
                m.insert("tcp_mss".into(), json!(v));
            }
            Some(MssInfo::Default(v)) => {
                m.insert("tcp_mss_default".into(), json!(v));
            }
            None => {}
        }
    }
    if !(server && rate != 0) {
        m.insert("target_bitrate".into(), json!(rate));
    }
    m.insert("fq_rate".into(), json!(test.fq_rate));
    if p.started {
        if !(server && tcp) {
            buffers(&mut m, si);
        }
        m.insert("test_start".into(), test_start_json(test));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1123_matches_fixture_times() {
        assert_eq!(rfc1123(1795236827), "Sat, 21 Nov 2026 04:53:47 GMT");
        assert_eq!(rfc1123(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(rfc1123(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    }

    #[test]
    fn interval_prints_as_int_or_fraction() {
        let mut t = crate::testutil::test_info(Side::Client, Protocol::Tcp);
        assert_eq!(
            crate::cjson::to_compact(&test_start_json(&t)["interval"]),
            "1"
        );
        t.interval = 0.5;
        assert_eq!(
            crate::cjson::to_compact(&test_start_json(&t)["interval"]),
            "0.5"
        );
    }

    #[test]
    fn protocol_names_are_iperf3s() {
        for (p, name) in [
            (Protocol::Tcp, "TCP"),
            (Protocol::Udp, "UDP"),
            (Protocol::Sctp, "SCTP"),
        ] {
            let t = crate::testutil::test_info(Side::Client, p);
            assert_eq!(test_start_json(&t)["protocol"], name);
            assert!(crate::text::starting_test(&t).contains(&format!("protocol: {name},")));
        }
    }
}

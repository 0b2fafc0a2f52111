//! The figures of a 2.2.1 capture's lines, read back as the printer's inputs:
//! numbers with their printed precision, sizes and rates with units, tags,
//! dates, addresses and connection lines.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::model::{Connection2, IsochSettings2, Tag2, TcpConnInfo2};
use super::units::{rate, transfer};

pub(super) fn num(s: &str) -> f64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

pub(super) fn int(s: &str) -> u64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not an integer: {s:?}"))
}

/// Half a unit of the last digit printed: the rounding a printed value hides.
pub(super) fn half_ulp(s: &str) -> f64 {
    match s.split_once('.') {
        Some((_, frac)) => 0.5 * 10f64.powi(-(frac.len() as i32)),
        None => 0.5,
    }
}

pub(super) fn unit_scale(unit: &str) -> f64 {
    let bits = unit.contains("bit");
    let base: f64 = if bits { 1000.0 } else { 1024.0 };
    let p = match unit.chars().next() {
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        _ => 0,
    };
    let s = base.powi(p);
    if bits {
        s / 8.0
    } else {
        s
    }
}

/// A settings-line size such as ` 128 KByte` or `4.00 MByte`, in bytes.
pub(super) fn size_bytes(s: &str) -> u64 {
    let mut it = s.split_whitespace();
    let v = num(it.next().unwrap_or("0"));
    (v * unit_scale(it.next().unwrap_or("Byte"))).round() as u64
}

/// Bytes that print as `xv xu` and, over `dur`, as `rv ru` (the second flag
/// says whether one was found: the capture's duration is rounded).
pub(super) fn pick_bytes(xv: &str, xu: &str, rv: &str, ru: &str, dur: f64) -> (u64, bool) {
    let (x, xs) = (num(xv), unit_scale(xu));
    let (r, rs) = (num(rv), unit_scale(ru));
    // Wide bounds (a printed 10.0 may come from 9.995), then a scan for a
    // count whose rendering matches both columns.
    let lo = ((x - 2.0 * half_ulp(xv)) * xs).max((r - 2.0 * half_ulp(rv)) * rs * dur);
    let hi = ((x + half_ulp(xv)) * xs).min((r + half_ulp(rv)) * rs * dur);
    let (want_x, want_r) = (
        format!("{xv} {xu}"),
        format!("{rv} {}", ru.trim_end_matches("/sec")),
    );
    for k in 0..=400 {
        let b = (lo + (hi - lo) * f64::from(k) / 400.0).round().max(0.0) as u64;
        if transfer(b, None).trim() == want_x && rate(b, dur, None).trim() == want_r {
            return (b, true);
        }
    }
    ((x * xs).round() as u64, false)
}

pub(super) fn tag_of(s: &str) -> Tag2 {
    let inner = s.trim_start_matches('[').trim_end_matches(']').trim();
    if let Some(n) = inner.strip_prefix("SUM-") {
        Tag2::Sum(int(n) as u32)
    } else if let Some(n) = inner.strip_prefix("FD") {
        Tag2::FullDuplex(int(n) as u32)
    } else if inner == "SUM" {
        Tag2::Sum(2)
    } else if let Some(n) = inner.strip_prefix('*') {
        Tag2::ReverseId(int(n) as u32)
    } else {
        Tag2::Id(int(inner) as u32)
    }
}

/// `2026-11-25 16:08:23.556`, UTC, as a time.
pub(super) fn date(d: &str, t: &str) -> SystemTime {
    let ymd: Vec<i64> = d.split('-').map(|x| int(x) as i64).collect();
    let (hms, frac) = t.split_once('.').unwrap_or((t, "0"));
    let hms: Vec<u64> = hms.split(':').map(int).collect();
    let micros = int(&format!("{frac:0<6}")[..6]);
    civil_secs(
        ymd[0],
        ymd[1],
        ymd[2],
        hms[0] * 3600 + hms[1] * 60 + hms[2],
        micros,
    )
}

pub(super) fn civil_secs(y: i64, m: i64, d: i64, secs_of_day: u64, micros: u64) -> SystemTime {
    // Days from 1970-01-01 (inverse of the civil-date algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    UNIX_EPOCH
        + Duration::from_secs(days as u64 * 86_400 + secs_of_day)
        + Duration::from_micros(micros)
}

/// "60.00 frames/sec mean=20.0 Mbit/s, stddev=2.00 Mbit/s, Period/IPG=16.67/0.000 ms".
pub(super) fn isoch_settings(rest: &str) -> IsochSettings2 {
    let w: Vec<&str> = rest.split_whitespace().collect();
    let rate =
        |n: &str, unit: &str| num(n) * unit_scale(unit.trim_end_matches([',', 's', '/'])) * 8.0;
    let ipg = rest.split("Period/IPG=").nth(1).unwrap_or("0/0 ms");
    IsochSettings2 {
        fps: num(w[0]),
        mean_bps: rate(w[2].trim_start_matches("mean="), w[3]),
        stdev_bps: rate(w[4].trim_start_matches("stddev="), w[5]),
        ipg_ms: num(ipg.split('/').nth(1).unwrap_or("0").trim_end_matches(" ms")),
    }
}

pub(super) fn addr(s: &str) -> IpAddr {
    // --hide-ips keeps the last octet; the tests ran on loopback.
    let s = s.replace("*.*.*", "127.0.0");
    s.parse().unwrap_or_else(|_| panic!("not an address: {s}"))
}

pub(super) fn tag_num(t: Tag2) -> u32 {
    match t {
        Tag2::Id(n) | Tag2::ReverseId(n) | Tag2::Sum(n) | Tag2::FullDuplex(n) => n,
    }
}

/// A connection line's figures.
pub(super) fn connection(l: &str) -> Connection2 {
    let close = l.find(']').unwrap_or(0);
    let tag = tag_of(&l[..=close]);
    let w: Vec<&str> = l[close + 1..].split_whitespace().collect();
    let (local, device) = match w[1].split_once('%') {
        Some((a, d)) => (a, Some(d.to_string())),
        None => (w[1], None),
    };
    let local = SocketAddr::new(addr(local), int(w[3]) as u16);
    let peer = SocketAddr::new(addr(w[6]), int(w[8]) as u16);
    let tail = w[9..].join(" ");
    let (groups, at) = match tail
        .split_once(" on ")
        .or_else(|| tail.strip_prefix("on ").map(|d| ("", d)))
    {
        Some((g, d)) => {
            let dw: Vec<&str> = d.split_whitespace().collect();
            (g.to_string(), date(dw[0], dw[1]))
        }
        None => (tail.clone(), UNIX_EPOCH),
    };
    let mut c = Connection2 {
        tag,
        local,
        device,
        peer,
        notes: Vec::new(),
        peer_version: None,
        tcp: None,
        connect_time: None,
        connect_only: false,
        at,
    };
    for g in groups
        .split(") (")
        .map(|g| g.trim_matches(|x| x == '(' || x == ')'))
    {
        if g.is_empty() {
            continue;
        }
        if let Some(v) = g.strip_prefix("peer ") {
            c.peer_version = Some(v.into());
        } else if let Some(v) = g.strip_prefix("icwnd/mss/irtt=") {
            let p: Vec<u32> = v.split('/').map(|x| int(x) as u32).collect();
            c.tcp = Some(TcpConnInfo2 {
                icwnd: p[0],
                mss: p[1],
                irtt_us: p[2],
            });
        } else if let Some(v) = g.strip_prefix("ct=") {
            c.connect_time = Some(Duration::from_secs_f64(
                num(v.trim_end_matches(" ms")) * 1e-3,
            ));
        } else {
            c.notes.push(g.to_string());
        }
    }
    c
}

/// A plain connection line's event for transfer `n` (tests that need one the
/// capture does not have).
pub(super) fn sample_connection(n: u32) -> Connection2 {
    connection(&format!(
        "[{n:>3}] local 127.0.0.1 port 4000{n} connected with 127.0.0.1 port 5001"
    ))
}

//! The second pass: settings that depend on each other (the default length
//! depends on `-u` and `-V`, `-b` is checked against `-l`), iperf 2's
//! refusals and warnings in its order, then the typed [`Config2`].

use std::net::IpAddr;
use std::time::Duration;

use rperf3_app::iperf2::config::{
    Bind2, Bounceback2, Client2, Common2, Config2, End2, Exclude2, Format2, Input2, Mode2, Output2,
    Rate2, Role2, Server2, Transport2, DEFAULT_TIME, TIME_FOREVER,
};
use rperf3_sys::net::Family;

use super::interpret::{State, TestMode, ThreadMode, EXCL_C, EXCL_D, EXCL_M, EXCL_S, EXCL_V};
use super::units::{self, RateArg};

/// Largest IPG iperf 2 accepts for UDP pacing, seconds.
const MAX_IPG_SECS: f64 = 60.0;
/// Smallest `-l` with `--trip-times` (iperf 2's TCP burst header).
const MIN_TRIP_TIMES_LEN: i64 = 92;
/// Smallest UDP `-l` with `--trip-times` and a test in both directions.
const MIN_TRIP_TIMES_UDP_LEN: i64 = 128;
/// A client's `-t 0`.
const FOREVER_WARNING: &str = "WARNING: client will send traffic forever or until an external signal (e.g. SIGINT or SIGTERM) occurs to stop it";
/// Shortest `--permit-key`.
const MIN_PERMIT_KEY: usize = 4;

/// What the second pass decides.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Modal {
    Run(Box<Config2>),
    /// Neither `-s` nor `-c`: print the usage lines (exit 0).
    Usage,
    /// Stop with this status; the reason is in the lines already.
    Exit(i32),
}

/// 2.2.1's longest `--txdelay-time`, seconds.
const MAX_TXDELAY_S: f64 = 3600.0;

fn is_multicast(host: &str) -> bool {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok_and(|a| a.is_multicast())
}

/// Checks `st` as iperf 2 does after parsing and builds the configuration.
pub(crate) fn finish(st: &State, diag: &mut Vec<String>) -> Modal {
    let client = st.mode == ThreadMode::Client;
    let mut st = st.clone();
    if st.trip_times && (st.reverse || st.full_duplex || st.test != TestMode::Normal) {
        st.enhanced = true;
    }
    // A bounceback client prints iperf 2's enhanced layout and turns Nagle off.
    if client && st.bounceback.is_some() && !st.udp {
        st.enhanced = true;
        st.nodelay = true;
    }
    let v6 = st.v6 && !st.v4;
    let common_len = |st: &State| -> i64 {
        match (st.len, st.udp) {
            (Some(l), _) => l,
            (None, false) => 128 * 1024,
            (None, true) if v6 && client => 1450,
            (None, true) => 1470,
        }
    };
    let len = common_len(&st);
    if client && st.amount.is_none() && st.time.is_some_and(|t| t <= 0.0) {
        diag.push(FOREVER_WARNING.into());
    }
    let mut bail = false;
    let compat_unsupported = st.reverse
        || st.full_duplex
        || st.trip_times
        || st.rate_variance
        || st.enhanced
        || st.test != TestMode::Normal;
    if st.compat && compat_unsupported {
        diag.push("ERROR: compatibility mode not supported with the requested with options".into());
        bail = true;
    }
    if let Some(key) = &st.permit_key {
        if st.udp {
            diag.push("ERROR: Option of --permit-key not supported with UDP".into());
            bail = true;
        } else if !key.is_empty() && key.len() < MIN_PERMIT_KEY {
            diag.push(format!(
                "ERROR: value for --permit-key must have at least {MIN_PERMIT_KEY} characters"
            ));
            bail = true;
        }
    }
    if st.udp && st.tcp_quickack {
        diag.push("WARN: setting of option --tcp-quickack is not supported with -u UDP".into());
    }
    if st.v4 && st.v6 {
        diag.push("WARN: both ipv4 and ipv6 set".into());
        st.v4 = false;
        st.v6 = false;
    }
    if client {
        bail |= client_checks(&st, len, diag);
    } else {
        server_warnings(&st, diag);
    }
    if bail {
        return Modal::Exit(1);
    }
    let mut bind = match bind(&st, client, diag) {
        Ok(b) => b,
        Err(status) => return Modal::Exit(status),
    };
    if client {
        if let Some(dev) = split_host_device(&mut st) {
            // `-c host%dev`: the client's socket is bound to the device (on
            // the wildcard address unless -B names one).
            let any = if st.v6 { "::" } else { "0.0.0.0" };
            bind.get_or_insert_with(|| Bind2 {
                host: any.into(),
                port: None,
                device: None,
            })
            .device = Some(dev);
        }
        if st.port_range {
            diag.push(format!(
                "WARNING: port ranges (-p) are not supported by rperf3, using port {}",
                st.port as u16
            ));
        }
        if st.rate_variance {
            diag.push("WARNING: a -b variance is not supported by rperf3, ignored".into());
        }
        if st.jitter_histograms.is_some() {
            // 2.2.1's words (it names the option in the singular).
            diag.push("WARN: option of --jitter-histogram not supported on the client".into());
        }
    } else if st.port_range {
        diag.push(format!(
            "WARNING: port ranges (-p) are not supported by rperf3, using port {}",
            st.port as u16
        ));
    }
    if client {
        let host = st.host.as_deref().unwrap_or("");
        if is_multicast(host) {
            let err = if st.full_duplex || st.reverse || st.test != TestMode::Normal {
                Some("ERROR: options of --full-duplex, --reverse, -d and -r not supported with multicast addresses")
            } else if st.sync_transfer_id {
                Some("ERROR: option of --sync-transfer-id incompatibile with multicast")
            } else {
                None
            };
            if let Some(e) = err {
                diag.push(e.into());
                return Modal::Exit(1);
            }
        }
    }
    let role = match st.mode {
        ThreadMode::Unknown => return Modal::Usage,
        ThreadMode::Client if st.daemon => {
            diag.push("Iperf client cannot be run as a daemon".into());
            return Modal::Exit(0);
        }
        ThreadMode::Client => Role2::Client(client_config(&st)),
        ThreadMode::Listener => Role2::Server(Server2 {
            single_client: st.single_client,
            max_clients: u32::try_from(st.threads).ok().filter(|&n| n > 0),
            single_udp: st.single_udp,
            only_from: st.host.clone(),
            ssm_source: st.ssm.clone(),
            daemon: st.daemon,
        }),
    };
    Modal::Run(Box::new(Config2 {
        common: common(&st, client, bind),
        output: output(&st),
        role,
    }))
}

fn client_checks(st: &State, len: i64, diag: &mut Vec<String>) -> bool {
    let mut bail = false;
    if st.ttl.is_some_and(|t| t > 255) {
        diag.push("ERROR: option of -ttl (-T) must be less than 255".into());
        bail = true;
    }
    if st.permit_key.as_deref() == Some("") {
        diag.push("ERROR: option of --permit-key requires a value on the client".into());
        bail = true;
    }
    if st.txstart.is_some_and(|(s, _)| s < 0) {
        diag.push("ERROR: --txstart-time must be a positive value".into());
        bail = true;
    }
    if let Some(d) = st.txdelay.filter(|d| *d > MAX_TXDELAY_S) {
        diag.push(format!(
            "ERROR: --txdelay-time of {d} seconds is more than the supported delay of {MAX_TXDELAY_S} seconds"
        ));
        bail = true;
    }
    if st.connect_only.is_some() && st.udp {
        diag.push("ERROR: option of --connect-only not supported with -u UDP".into());
        bail = true;
    }
    if st.connect_only.is_some() && st.txdelay.is_some() {
        diag.push(
            "ERROR: Fail because --txdelay-time and --connect-only cannot be applied together"
                .into(),
        );
        bail = true;
    }
    if st.txdelay.is_some() && st.txstart.is_some() && !st.udp {
        diag.push(
            "ERROR: options of --txstart-time and --txdelay-time are mutually exclusive".into(),
        );
        bail = true;
    }
    if st.trip_times && len < MIN_TRIP_TIMES_LEN {
        diag.push(trip_len_error(len, MIN_TRIP_TIMES_LEN));
        bail = true;
    }
    if st.udp {
        if st.peer_detect {
            diag.push("ERROR: option of -X or --peer-detect not supported with -u UDP".into());
            bail = true;
        }
        let delay = match st.rate {
            Some(RateArg::Bits(r)) if r > 0 => len as f64 * 8.0 / r as f64,
            Some(RateArg::Packets(r)) if r > 0 => 1.0 / r as f64,
            Some(_) => {
                // iperf 2 reads a UDP rate of no number, zero or less as no
                // limit at all, so a typo floods the path at full speed.
                diag.push(format!(
                    "Invalid value for -b or --bandwidth '{}'",
                    st.rate_text
                ));
                bail = true;
                0.0
            }
            None => len as f64 * 8.0 / rperf3_app::iperf2::config::DEFAULT_UDP_RATE as f64,
        };
        if !(0.0..=MAX_IPG_SECS).contains(&delay) {
            diag.push(format!(
                "ERROR: IPG delay target of {delay:.1} secs too large (max value is 60 secs)"
            ));
            bail = true;
        }
        let both_ways = st.reverse || st.full_duplex || st.test != TestMode::Normal;
        if st.trip_times && len < MIN_TRIP_TIMES_UDP_LEN && both_ways {
            diag.push(trip_len_error(len, MIN_TRIP_TIMES_UDP_LEN));
            bail = true;
        }
    } else {
        if let Some(RateArg::Bits(r)) = st.rate {
            if r / 8 < len {
                diag.push(format!(
                    "ERROR: option -b and -l of {len} are incompatible, consider setting -l to {} or lower",
                    r / 8
                ));
                bail = true;
            }
        }
        if st.no_udp_fin {
            diag.push("ERROR: option --no-udp-fin requires -u UDP".into());
            bail = true;
        }
        if matches!(st.rate, Some(RateArg::Packets(_))) {
            diag.push("ERROR: units of pps not supported with TCP".into());
            bail = true;
        }
    }
    let modes = [st.full_duplex, st.reverse, st.test != TestMode::Normal];
    if modes.iter().filter(|&&m| m).count() > 1 {
        diag.push(
            "ERROR: options of --full-duplex, --reverse, -d and -r are mutually exclusive".into(),
        );
        bail = true;
    }
    bail
}

/// Takes `%dev` off `-c host%dev`, except from an IPv6 link-local address,
/// where it is the scope and stays (as in iperf 2).
fn split_host_device(st: &mut State) -> Option<String> {
    let host = st.host.as_mut()?;
    let (addr, dev) = host.split_once('%')?;
    let bare = addr.trim_start_matches('[').trim_end_matches(']');
    let link_local = bare
        .parse::<std::net::Ipv6Addr>()
        .is_ok_and(|a| a.segments()[0] & 0xffc0 == 0xfe80);
    if link_local || dev.is_empty() {
        return None;
    }
    let dev = dev.to_string();
    *host = addr.to_string();
    Some(dev)
}

fn trip_len_error(len: i64, min: i64) -> String {
    format!(
        "ERROR: payload (-l) size of {len} too small for --trip-times, must be {min} or greater"
    )
}

fn server_warnings(st: &State, diag: &mut Vec<String>) {
    let warns: [(bool, &str); 10] = [
        (
            st.trip_times,
            "WARN: setting of option --trip-times is not supported on the server",
        ),
        (
            st.rate_variance,
            "WARN: option of variance per -b is not supported on the server",
        ),
        (
            st.txstart.is_some(),
            "WARN: option of --txstart-time is not supported on the server",
        ),
        (
            st.txdelay.is_some(),
            "WARN: option of --txdelay-time is not supported on the server",
        ),
        (
            st.connect_only.is_some(),
            "WARN: option of --connect-only is not supported on the server",
        ),
        (
            st.full_duplex,
            "WARN: option of --full-duplex is not supported on the server",
        ),
        (
            st.reverse,
            "WARN: option of --reverse is not supported on the server",
        ),
        (
            st.no_udp_fin,
            "WARN: option of --no-udp-fin is not supported on the server",
        ),
        (
            st.peer_detect,
            "WARN: option of -X or --peer-detect not supported on the server",
        ),
        (
            st.sync_transfer_id,
            "WARN: option of --sync-transfer-id is not supported on the server",
        ),
    ];
    diag.extend(
        warns
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, w)| w.to_string()),
    );
    if st.udp && st.skip_rx_copy {
        diag.push("WARN: Option of --skip-rx-copy not supported with -u UDP".into());
    }
}

/// `-B`: split, then iperf 2's rules for each role.
fn bind(st: &State, client: bool, diag: &mut Vec<String>) -> Result<Option<Bind2>, i32> {
    let Some(raw) = &st.bind else {
        return Ok(None);
    };
    let (host, port, mut device) = units::split_bind(raw, st.v6);
    if client {
        if let Some(d) = device.take() {
            diag.push(format!(
                "WARNING: Client cannot set bind device {d} via -B consider using -c"
            ));
        }
    }
    let mut bind_port = None;
    if let Some(p) = port {
        if client {
            bind_port = Some(units::atoi(&p) as u16);
        } else {
            diag.push(format!(
                "WARNING: port {p} ignored - set receive port on server via -p or -L"
            ));
        }
    }
    if is_multicast(&host) {
        if client {
            diag.push("WARNING: Client src addr (per -B) must be ip unicast".into());
            return Err(1);
        }
        if st.ssm.as_deref().is_some_and(is_multicast) {
            diag.push("WARNING: SSM host src address (-H or --ssm-host) must be ip unicast".into());
            return Err(1);
        }
    }
    Ok(Some(Bind2 {
        host,
        port: bind_port,
        device,
    }))
}

fn seconds(t: f64) -> Duration {
    Duration::try_from_secs_f64(t).unwrap_or(TIME_FOREVER)
}

fn client_config(st: &State) -> Client2 {
    let end = match (st.amount, st.time) {
        (Some(n), _) => End2::Bytes(n as u64),
        (None, Some(t)) if t > 0.0 => End2::Time(seconds(t)),
        (None, Some(_)) => End2::Time(TIME_FOREVER),
        (None, None) => End2::Time(DEFAULT_TIME),
    };
    let mode = match (st.test, st.reverse, st.full_duplex) {
        (TestMode::Dual, ..) => Mode2::Dual,
        (TestMode::Tradeoff, ..) => Mode2::Tradeoff,
        (_, true, _) => Mode2::Reverse,
        (_, _, true) => Mode2::FullDuplex,
        _ => Mode2::Normal,
    };
    let mut host = st.host.clone().unwrap_or_default();
    if st.v6 {
        host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
    }
    Client2 {
        host,
        end,
        parallel: u32::try_from(st.threads.max(1)).unwrap_or(u32::MAX),
        rate: st.rate.map(|r| match r {
            RateArg::Bits(b) => Rate2::Bits(b.max(0) as u64),
            RateArg::Packets(p) => Rate2::Packets(p.max(0) as u64),
        }),
        mode,
        listen_port: st.listen_port.filter(|&p| p != 0).map(|p| p as u16),
        compat: st.compat,
        peer_detect: st.peer_detect,
        no_udp_fin: st.no_udp_fin,
        input: match (&st.file, st.stdin) {
            (_, true) => Input2::Stdin,
            (Some(f), _) => Input2::File(f.clone()),
            _ => Input2::Pattern,
        },
        sync_transfer_id: st.sync_transfer_id,
        txstart: st.txstart.map(|(s, us)| s as f64 + us as f64 / 1e6),
        txdelay: st.txdelay.filter(|d| *d > 0.0).map(seconds),
        connect_only: st.connect_only,
        incr_dstport: st.incr_dstport,
        bounceback: st.bounceback.map(|count| {
            let request = st.bb_request.or(st.len).unwrap_or(100).clamp(1, 1 << 30) as u32;
            Bounceback2 {
                count: u32::try_from(count.max(1)).unwrap_or(u32::MAX),
                period: st.bb_period.max(0.0),
                request,
                reply: st.bb_reply.map_or(request, |r| r.clamp(1, 1 << 30) as u32),
                hold_us: (st.bb_hold_ms.max(0.0) * 1e3) as u32,
                quickack: !st.bb_no_quickack,
                txdelay: st.bb_txdelay.unwrap_or(0.0).max(0.0),
            }
        }),
        isoch: st.isoch.map(|i| rperf3_app::iperf2::config::IsochSpec {
            ipg_ms: st.ipg_ms.unwrap_or(0.0).max(0.0),
            ..i
        }),
    }
}

fn common(st: &State, client: bool, bind: Option<Bind2>) -> Common2 {
    // Only -V makes it IPv6, as in iperf 2: `-c ::1` alone still resolves to
    // IPv6 but keeps the IPv4 default UDP length (1470).
    let family = if st.v6 {
        Family::V6
    } else if st.v4 {
        Family::V4
    } else {
        Family::Any
    };
    let time = match (client, st.amount, st.time) {
        (true, Some(_), _) => None,
        (true, None, Some(t)) if t > 0.0 => Some(seconds(t)),
        (true, None, Some(_)) => None,
        (true, None, None) => Some(DEFAULT_TIME),
        (false, _, Some(t)) if t > 0.0 => Some(seconds(t)),
        (false, _, _) => None,
    };
    Common2 {
        port: st.port as u16,
        transport: if st.udp {
            Transport2::Udp
        } else {
            Transport2::Tcp
        },
        bind,
        family,
        interval: st
            .interval_us
            .filter(|&us| us > 0)
            .map(Duration::from_micros),
        len: st.len.map(|l| l.clamp(1, i64::from(u32::MAX)) as u32),
        window: st
            .window
            .filter(|&w| w > 0)
            .map(|w| w.min(i64::from(u32::MAX)) as u32),
        mss: st
            .mss
            .filter(|&m| m > 0)
            .map(|m| m.min(i64::from(u32::MAX)) as u32),
        nodelay: st.nodelay,
        tos: st.tos,
        tos_by_dscp: st.tos_by_dscp,
        congestion: st.congestion.clone(),
        ttl: st.ttl.and_then(|t| u8::try_from(t).ok()).unwrap_or(1),
        time,
        enhanced: st.enhanced,
        print_mss: st.print_mss,
        realtime: st.realtime,
        trip_times: st.trip_times,
        permit_key: st.permit_key.clone(),
        skip_rx_copy: st.skip_rx_copy,
        tcp_quickack: st.tcp_quickack && !st.udp,
        histograms: st.histograms,
        hist_bins: st.hist_bins,
        jitter_histograms: st.jitter_histograms.filter(|_| !client),
    }
}

fn output(st: &State) -> Output2 {
    Output2 {
        format: match st.format {
            'A' => Format2::AdaptiveBytes,
            c @ ('b' | 'k' | 'm' | 'g' | 'B' | 'K' | 'M' | 'G') => Format2::Fixed(c),
            _ => Format2::AdaptiveBits,
        },
        csv: st.csv,
        exclude: Exclude2 {
            connection: st.exclude[EXCL_C],
            data: st.exclude[EXCL_D],
            multicast: st.exclude[EXCL_M],
            settings: st.exclude[EXCL_S],
            server_report: st.exclude[EXCL_V],
        },
        file: st.output.clone(),
        hide_ips: st.hide_ips,
        sum_only: st.sum_only,
        utc: st.utc,
    }
}

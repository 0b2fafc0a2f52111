//! From `RawArgs` to the typed `Config`, with iperf3's checks in iperf3's order.
//!
//! iperf3 checks some values the moment it meets them (so the first bad option on
//! the line is the one reported) and the rest after the whole line is read. This
//! file keeps that split: [`check_occurrence`] runs per option as it is parsed,
//! [`finish`] runs once at the end and builds the `Config`.

use std::path::PathBuf;
use std::time::Duration;

use rperf3_app::config::{
    ClientAuthConfig, ClientConfig, CommonConfig, Config, Direction, EndCondition, Family,
    OutputConfig, ProcessConfig, Protocol, RateLimit, Role, ServerAuthConfig, ServerConfig,
    DEFAULT_RATE_WINDOW,
};

use rperf3_proto::{
    DEFAULT_DURATION, DEFAULT_PORT, DEFAULT_PROBE_RATE, DEFAULT_RCV_TIMEOUT, MAX_AFFINITY_CPU,
    MAX_BLOCK, MAX_BURST, MAX_INTERVAL, MAX_MSS, MAX_OMIT, MAX_PROBE_RATE, MAX_STREAMS,
    MAX_TCP_BUFFER, MAX_TIME, MAX_UDP_BLOCKSIZE, MIN_INTERVAL, MIN_RCV_TIMEOUT_MS,
    MIN_UDP_BLOCKSIZE,
};

use super::error::ParamError;
use super::getopt::Occurrence;
use super::qos;
use super::raw::RawArgs;
use super::table::{Opt, Side};
use super::units::{atof, atoi, parse_rate, parse_size, to_count, UnitError};
use crate::cnum::strtol0;

/// iperf3's `--time-skew-threshold` default, seconds.
pub(super) const DEFAULT_SKEW_THRESHOLD: u32 = 10;
const DEFAULT_TIMESTAMP_FORMAT: &str = "%c ";
/// `-d` without a level, or with a level below 1, means every message.
const DEBUG_LEVEL_MAX: u8 = 4;

/// Whether `v` (an `atoi` result or a length) lies within `lo..=hi`, iperf3's
/// unsigned limits compared without overflow.
fn within(v: impl Into<i64>, lo: u32, hi: u32) -> bool {
    (i64::from(lo)..=i64::from(hi)).contains(&v.into())
}

/// `-b rate[/burst]`: the rate in bits/s and the burst if a slash was given.
fn bitrate(text: &str) -> Result<(u64, Option<u32>), ParamError> {
    let (rate, burst) = match text.split_once('/') {
        Some((rate, burst)) => {
            // iperf3 checks the burst before it reads the rate.
            let n = atoi(burst);
            if !within(n, 1, MAX_BURST) {
                return Err(ParamError::Burst);
            }
            (rate, Some(n.unsigned_abs()))
        }
        None => (text, None),
    };
    let bits = to_count(parse_rate(rate)?, rate)?;
    Ok((bits, burst))
}

/// `--server-bitrate-limit rate[/secs]`: a rate of 0 means no limit; the
/// averaging window is 5 s unless given (0 also means the default).
fn rate_limit(text: &str) -> Result<Option<RateLimit>, ParamError> {
    let (rate, window) = match text.split_once('/') {
        Some((rate, secs)) => {
            // iperf3 checks the window before it reads the rate.
            let w = atof(secs);
            if w != 0.0 && !(MIN_INTERVAL..=MAX_INTERVAL).contains(&w) {
                return Err(ParamError::TotalInterval);
            }
            (rate, w)
        }
        None => (text, 0.0),
    };
    let bits = to_count(parse_rate(rate)?, rate)?;
    let window = if window == 0.0 {
        DEFAULT_RATE_WINDOW
    } else {
        window
    };
    Ok((bits > 0).then(|| RateLimit {
        bits_per_second: bits,
        window: Duration::from_secs_f64(window),
    }))
}

/// `-A n[,m]`: this process's CPU and, from a client, the server's. Read as
/// iperf3 reads them (strtol, base 0: what follows the number is ignored, so
/// the release checklist's `-A 2/2` is CPU 2), 0..=1024; a server CPU that
/// does not parse reads as 0.
fn affinity(text: &str) -> Result<(u32, Option<u32>), ParamError> {
    let (own, server) = match text.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (text, None),
    };
    let cpu = |s: &str| {
        strtol0(s)
            .and_then(|(n, _)| u32::try_from(n).ok())
            .filter(|n| *n <= MAX_AFFINITY_CPU)
    };
    let own = cpu(own).ok_or(ParamError::Affinity)?;
    Ok((own, server.map(|s| cpu(s).unwrap_or(0))))
}

/// A size option whose value must be a non-negative whole count (`-n`, `-k`).
fn count(text: &str) -> Result<u64, ParamError> {
    Ok(to_count(parse_size(text)?, text)?)
}

/// `--nstreams`: SCTP_INITMSG holds the count in 16 bits.
fn nstreams(text: &str) -> Result<u16, ParamError> {
    let n = parse_size(text).map_err(|_| ParamError::NStreams)?;
    if n.fract() == 0.0 && (1.0..=f64::from(u16::MAX)).contains(&n) {
        Ok(n as u16)
    } else {
        Err(ParamError::NStreams)
    }
}

fn value(occ: &Occurrence) -> String {
    occ.value
        .as_ref()
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `--metrics ADDR:PORT`: a literal IP address (brackets around IPv6) and a
/// port other than 0, so the endpoint's address is never a guess.
fn metrics_addr(v: &str) -> Result<std::net::SocketAddr, ParamError> {
    match v.parse::<std::net::SocketAddr>() {
        Ok(a) if a.port() != 0 => Ok(a),
        _ => Err(ParamError::MetricsAddress(v.to_string())),
    }
}

/// `--max-tests` / `--queue`: a plain decimal count of at least `min` (not
/// iperf3's lenient atoi: a typo must not silently mean 0).
fn server_count(v: &str, long: &'static str, min: i64) -> Result<usize, ParamError> {
    match v.trim().parse::<i64>() {
        Ok(n) if n >= min && n <= 100_000 => Ok(n as usize),
        _ => Err(ParamError::BadCount(long, min)),
    }
}

/// `--cntl-ka[=idle/intvl/cnt]`: the three parts (0 = the system's value).
fn cntl_ka(v: Option<&str>) -> Result<[u32; 3], ParamError> {
    let mut parts = [0u32; 3];
    if let Some(v) = v {
        for (slot, text) in parts.iter_mut().zip(v.split('/')) {
            *slot = atoi(text).max(0).unsigned_abs();
        }
    }
    let [idle, intvl, cnt] = parts;
    if idle > 0 && u64::from(intvl) * u64::from(cnt) >= u64::from(idle) {
        return Err(ParamError::CntlKa);
    }
    Ok(parts)
}

/// The checks iperf3 makes as it meets each option. `raw` holds the options met
/// before this one.
pub(crate) fn check_occurrence(raw: &RawArgs, occ: &Occurrence) -> Result<(), ParamError> {
    let v = value(occ);
    match occ.spec.id {
        Opt::Port | Opt::ClientPort if !within(atoi(&v), 1, u16::MAX.into()) => {
            Err(ParamError::BadPort)
        }
        Opt::Format if !v.starts_with(['k', 'm', 'g', 't', 'K', 'M', 'G', 'T']) => {
            Err(ParamError::BadFormat)
        }
        Opt::Interval => {
            let i = atof(&v);
            if i != 0.0 && !(MIN_INTERVAL..=MAX_INTERVAL).contains(&i) {
                Err(ParamError::Interval)
            } else {
                Ok(())
            }
        }
        Opt::Server if raw.has(Opt::Client) => Err(ParamError::ServerAndClient),
        Opt::Client if raw.has(Opt::Server) => Err(ParamError::ServerAndClient),
        Opt::Bitrate => bitrate(&v).map(|_| ()),
        Opt::Time if !within(atoi(&v), 0, MAX_TIME) => Err(ParamError::Duration),
        Opt::Bytes | Opt::BlockCount => count(&v).map(|_| ()),
        Opt::Length | Opt::ConnectTimeout => parse_size(&v).map(|_| ()).map_err(Into::into),
        Opt::Parallel if !within(atoi(&v), 1, MAX_STREAMS) => Err(ParamError::NumStreams),
        Opt::Reverse if raw.has(Opt::Bidir) => Err(ParamError::ReverseBidir),
        Opt::Bidir if raw.has(Opt::Reverse) => Err(ParamError::ReverseBidir),
        Opt::Window => {
            let w = parse_size(&v)?;
            if w > f64::from(MAX_TCP_BUFFER) {
                Err(ParamError::BufSize)
            } else if w < 0.0 {
                Err(UnitError(v).into())
            } else {
                Ok(())
            }
        }
        Opt::Omit if !within(atoi(&v), 0, MAX_OMIT) => Err(ParamError::Omit),
        Opt::RcvTimeout if !within(atoi(&v), MIN_RCV_TIMEOUT_MS, MAX_TIME * 1000) => {
            Err(ParamError::RcvTimeout)
        }
        Opt::ServerMaxDuration if !within(atoi(&v), 0, MAX_TIME) => Err(ParamError::Duration),
        Opt::IdleTimeout if !within(atoi(&v), 1, MAX_TIME) => Err(ParamError::IdleTimeout),
        Opt::ServerBitrateLimit => rate_limit(&v).map(|_| ()),
        Opt::Affinity => affinity(&v).map(|_| ()),
        Opt::SetMss if i64::from(atoi(&v)) > i64::from(MAX_MSS) => Err(ParamError::Mss),
        Opt::Tos if qos::tos(&v).is_none() => Err(ParamError::Tos),
        Opt::Dscp if qos::dscp(&v).is_none() => Err(ParamError::Dscp),
        Opt::FlowLabel if qos::flowlabel(&v).is_none() => Err(ParamError::FlowLabel),
        Opt::FqRate => to_count(parse_rate(&v)?, &v)
            .map(|_| ())
            .map_err(Into::into),
        Opt::PacingTimer if parse_size(&v)? < 0.0 => Err(ParamError::PacingTimer),
        Opt::SndTimeout if !within(atoi(&v), 0, MAX_TIME * 1000) => Err(ParamError::SndTimeout),
        Opt::CntlKa => cntl_ka(occ.value.as_ref().map(|_| v.as_str())).map(|_| ()),
        Opt::NStreams => nstreams(&v).map(|_| ()),
        Opt::TimeSkewThreshold if atoi(&v) <= 0 => Err(ParamError::SkewThreshold),
        Opt::MaxTests => server_count(&v, "max-tests", 1).map(|_| ()),
        Opt::Queue => server_count(&v, "queue", 0).map(|_| ()),
        Opt::Metrics => metrics_addr(&v).map(|_| ()),
        _ => Ok(()),
    }
}

/// The checks iperf3 makes after reading the whole line, then the `Config`.
/// Returns the warnings to print (full lines) with it.
pub(crate) fn finish(raw: &RawArgs) -> Result<(Config, Vec<String>), ParamError> {
    let is_client = raw.has(Opt::Client) || raw.has(Opt::RpmUrl);
    let is_server = raw.has(Opt::Server);
    let used = |side: Side| {
        raw.occurrences
            .iter()
            .any(|o| o.spec.enforced && o.spec.side == side)
    };
    if is_client && used(Side::Server) {
        return Err(ParamError::ServerOnly);
    }
    if is_server && used(Side::Client) {
        return Err(ParamError::ClientOnly);
    }

    // Both halves of a side's authentication settings, or neither.
    if is_client && raw.has(Opt::Username) != raw.has(Opt::RsaPublicKeyPath) {
        return Err(ParamError::SetClientAuth);
    }
    if is_server && raw.has(Opt::RsaPrivateKeyPath) != raw.has(Opt::AuthorizedUsersPath) {
        return Err(ParamError::SetServerAuth);
    }

    // -u and --sctp each set the protocol; the last one wins, as in iperf3.
    let protocol = raw
        .occurrences
        .iter()
        .rev()
        .find_map(|o| match o.spec.id {
            Opt::Udp => Some(Protocol::Udp),
            Opt::Sctp => Some(Protocol::Sctp),
            _ => None,
        })
        .unwrap_or_default();
    let udp = protocol == Protocol::Udp;
    let length = match raw.text(Opt::Length) {
        // Already known to parse; `as` saturates like the range check needs.
        Some(t) => parse_size(&t)? as i64,
        None => 0,
    };
    if (!udp && length < 0) || length > i64::from(MAX_BLOCK) {
        return Err(ParamError::BlockSize);
    }
    if udp && length != 0 && !within(length, MIN_UDP_BLOCKSIZE, MAX_UDP_BLOCKSIZE) {
        return Err(ParamError::UdpBlockSize);
    }

    let bytes = raw
        .text(Opt::Bytes)
        .map(|t| count(&t))
        .transpose()?
        .unwrap_or(0);
    let blocks = raw
        .text(Opt::BlockCount)
        .map(|t| count(&t))
        .transpose()?
        .unwrap_or(0);
    let timed = raw.has(Opt::Time);
    let conditions = [timed, bytes != 0, blocks != 0];
    if conditions.iter().filter(|c| **c).count() > 1 {
        return Err(ParamError::EndConditions);
    }
    if !is_client && !is_server {
        return Err(ParamError::NoRole);
    }
    if is_client && udp && raw.has(Opt::File) {
        return Err(ParamError::UdpFileTransfer);
    }
    let direction = if raw.has(Opt::Bidir) {
        Direction::Bidir
    } else if raw.has(Opt::Reverse) {
        Direction::Reverse
    } else {
        Direction::Normal
    };
    // A client that only sends never waits for data.
    if is_client && raw.has(Opt::RcvTimeout) && direction == Direction::Normal {
        return Err(ParamError::RcvTimeoutReceiverOnly);
    }

    let output = output(raw);
    let mut warnings = Vec::new();
    if output.json {
        if output.format.is_some() {
            warnings.push("warning: Report format (-f) flag ignored with JSON output (-J)".into());
        }
        if output.verbose {
            warnings
                .push("warning: Verbose output (-v) may interfere with JSON output (-J)".into());
        }
        if raw.has(Opt::Debug) {
            warnings.push("warning: Debug output (-d) may interfere with JSON output (-J)".into());
        }
    }

    let role = if is_client {
        let end = if timed {
            EndCondition::Time(atoi(&raw.text(Opt::Time).unwrap_or_default()).unsigned_abs())
        } else if bytes != 0 {
            EndCondition::Bytes(bytes)
        } else if blocks != 0 {
            EndCondition::Blocks(blocks)
        } else {
            EndCondition::Time(DEFAULT_DURATION)
        };
        let mut cc = client(raw, protocol, end, length, direction)?;
        // A sent file with no end condition ends the test when it is all sent.
        cc.file_ends_test = raw.has(Opt::File) && !timed && bytes == 0 && blocks == 0;
        Role::Client(cc)
    } else {
        let count = |opt, long, min, default| {
            raw.text(opt)
                .map_or(Ok(default), |v| server_count(&v, long, min))
        };
        Role::Server(ServerConfig {
            one_off: raw.has(Opt::OneOff),
            max_tests: count(Opt::MaxTests, "max-tests", 1, 1)?,
            queue: count(Opt::Queue, "queue", 0, 0)?,
            max_duration: raw
                .text(Opt::ServerMaxDuration)
                .map(|t| atoi(&t).unsigned_abs())
                .filter(|d| *d > 0),
            bitrate_limit: raw
                .text(Opt::ServerBitrateLimit)
                .map(|t| rate_limit(&t))
                .transpose()?
                .flatten(),
            idle_timeout: raw
                .text(Opt::IdleTimeout)
                .map(|t| Duration::from_secs(u64::from(atoi(&t).unsigned_abs()))),
            metrics: raw
                .text(Opt::Metrics)
                .map(|t| metrics_addr(&t))
                .transpose()?,
            auth: match (
                raw.os(Opt::RsaPrivateKeyPath),
                raw.os(Opt::AuthorizedUsersPath),
            ) {
                (Some(key), Some(users)) => Some(ServerAuthConfig {
                    private_key_path: PathBuf::from(key),
                    users_path: PathBuf::from(users),
                    skew_threshold: raw
                        .text(Opt::TimeSkewThreshold)
                        .map_or(DEFAULT_SKEW_THRESHOLD, |t| atoi(&t).unsigned_abs()),
                }),
                _ => None,
            },
            rpm_http: super::rpm::http_server(raw)?,
        })
    };
    let config = Config {
        role,
        common: common(raw)?,
        output,
        process: ProcessConfig {
            pidfile: raw.text(Opt::Pidfile).map(PathBuf::from),
            daemon: raw.has(Opt::Daemon),
            affinity: raw
                .text(Opt::Affinity)
                .and_then(|v| affinity(&v).ok())
                .map(|a| a.0),
        },
    };
    Ok((config, warnings))
}

fn client(
    raw: &RawArgs,
    protocol: Protocol,
    end: EndCondition,
    length: i64,
    direction: Direction,
) -> Result<ClientConfig, ParamError> {
    // The rate comes from the last -b; the burst from the last -b that had one,
    // since iperf3 only touches the burst when a slash is present.
    let mut bitrate_bits = None;
    let mut burst = None;
    for o in raw.occurrences.iter().filter(|o| o.spec.id == Opt::Bitrate) {
        let (bits, b) = bitrate(&value(o))?;
        bitrate_bits = Some(bits);
        burst = b.or(burst);
    }
    let connect_timeout = match raw.text(Opt::ConnectTimeout) {
        Some(t) => {
            let ms = parse_size(&t)?;
            // iperf3 treats a negative timeout as none.
            (ms >= 0.0).then(|| Duration::from_millis(ms as u64))
        }
        None => None,
    };
    let window = match raw.text(Opt::Window) {
        Some(t) => Some(parse_size(&t)? as u32).filter(|w| *w > 0),
        None => None,
    };
    // -S and --dscp both set the TOS byte; the last one on the line wins.
    let tos = raw.occurrences.iter().rev().find_map(|o| match o.spec.id {
        Opt::Tos => qos::tos(&value(o)),
        Opt::Dscp => qos::dscp(&value(o)),
        _ => None,
    });
    Ok(ClientConfig {
        host: match raw.text(Opt::RpmUrl) {
            Some(url) => super::rpm::url_host(&url),
            None => raw.text(Opt::Client).unwrap_or_default(),
        },
        protocol,
        end,
        omit: atoi(&raw.text(Opt::Omit).unwrap_or_default()).unsigned_abs(),
        length: u32::try_from(length).ok().filter(|l| *l > 0),
        parallel: raw
            .text(Opt::Parallel)
            .map_or(1, |p| atoi(&p).unsigned_abs()),
        direction,
        bitrate: bitrate_bits,
        burst,
        title: raw.text(Opt::Title),
        extra_data: raw.text(Opt::ExtraData),
        get_server_output: raw.has(Opt::GetServerOutput),
        connect_timeout,
        udp_counters_64bit: raw.has(Opt::UdpCounters64Bit),
        repeating_payload: raw.has(Opt::RepeatingPayload),
        dont_fragment: raw.has(Opt::DontFragment),
        window,
        gsro: raw.has(Opt::Gsro),
        server_affinity: raw.text(Opt::Affinity).and_then(|v| affinity(&v).ok()?.1),
        zerocopy: raw.has(Opt::ZeroCopy),
        skip_rx_copy: raw.has(Opt::SkipRxCopy),
        // A rate outside 1..=100 is brought into it: probes must stay cheap.
        latency: raw.has(Opt::Latency).then(|| {
            raw.text(Opt::Latency).map_or(DEFAULT_PROBE_RATE, |r| {
                atoi(&r).clamp(1, MAX_PROBE_RATE as i32) as u32
            })
        }),
        congestion: raw.text(Opt::Congestion),
        mss: raw.text(Opt::SetMss).map(|m| atoi(&m)).filter(|m| *m != 0),
        nodelay: raw.has(Opt::NoDelay),
        tos: tos.filter(|t| *t != 0),
        // --no-fq-socket-pacing is --fq-rate 0; the last of the two wins.
        fq_rate: match raw.last_of(&[Opt::FqRate, Opt::NoFqSocketPacing]) {
            Some(o) if o.spec.id == Opt::FqRate => to_count(parse_rate(&value(o))?, &value(o))?,
            _ => 0,
        },
        pacing_timer: raw
            .text(Opt::PacingTimer)
            .map(|t| parse_size(&t).map(|v| v as i32))
            .transpose()?,
        mptcp: raw.has(Opt::Mptcp),
        nstreams: raw.text(Opt::NStreams).map(|n| nstreams(&n)).transpose()?,
        flowlabel: raw.text(Opt::FlowLabel).and_then(|v| qos::flowlabel(&v)),
        cport: raw
            .text(Opt::ClientPort)
            .and_then(|p| u16::try_from(atoi(&p)).ok()),
        file_ends_test: false,
        auth: match (raw.text(Opt::Username), raw.os(Opt::RsaPublicKeyPath)) {
            (Some(username), Some(key)) => Some(ClientAuthConfig {
                username,
                public_key_path: PathBuf::from(key),
                pkcs1: raw.has(Opt::UsePkcs1Padding),
            }),
            _ => None,
        },
        rpm: super::rpm::config(raw)?,
        rpm_url: super::rpm::url_client(raw)?,
        bounceback: super::bounceback::config(raw)?,
    })
}

fn common(raw: &RawArgs) -> Result<CommonConfig, ParamError> {
    let family = raw
        .occurrences
        .iter()
        .rev()
        .find_map(|o| match o.spec.id {
            Opt::Version4 => Some(Family::V4),
            Opt::Version6 => Some(Family::V6),
            _ => None,
        })
        .unwrap_or_default();
    let interval = match raw.text(Opt::Interval) {
        Some(t) => Some(atof(&t))
            .filter(|s| *s != 0.0)
            .map(Duration::from_secs_f64),
        None => Some(Duration::from_secs(1)),
    };
    let rcv_timeout = raw.text(Opt::RcvTimeout).map_or(DEFAULT_RCV_TIMEOUT, |t| {
        Duration::from_millis(u64::from(atoi(&t).unsigned_abs()))
    });
    let debug = match raw.last(Opt::Debug) {
        None => 0,
        Some(o) => match &o.value {
            None => DEBUG_LEVEL_MAX,
            Some(v) => match atoi(&v.to_string_lossy()) {
                l if l < 1 => DEBUG_LEVEL_MAX,
                l => u8::try_from(l).unwrap_or(u8::MAX),
            },
        },
    };
    Ok(CommonConfig {
        bind_dev: raw.text(Opt::BindDev),
        file: raw.text(Opt::File),
        snd_timeout_ms: raw
            .text(Opt::SndTimeout)
            .map_or(0, |t| atoi(&t).unsigned_abs()),
        cntl_ka: match raw.last(Opt::CntlKa) {
            Some(o) => Some(cntl_ka(
                o.value.as_ref().map(|v| v.to_string_lossy()).as_deref(),
            )?),
            None => None,
        },
        port: raw
            .text(Opt::Port)
            .and_then(|p| u16::try_from(atoi(&p)).ok())
            .unwrap_or(DEFAULT_PORT),
        bind: raw.text(Opt::Bind),
        xbind: raw
            .occurrences
            .iter()
            .filter(|o| o.spec.id == Opt::Xbind)
            .map(value)
            .collect(),
        family,
        interval,
        rcv_timeout,
        debug,
    })
}

fn output(raw: &RawArgs) -> OutputConfig {
    let json_stream = raw.has(Opt::JsonStream);
    let timestamps = raw.last(Opt::Timestamps).map(|o| match &o.value {
        Some(fmt) => fmt.to_string_lossy().into_owned(),
        None => DEFAULT_TIMESTAMP_FORMAT.to_string(),
    });
    OutputConfig {
        // --json-stream is a kind of JSON output for iperf3 (it sets -J too).
        json: raw.has(Opt::Json) || json_stream,
        json_stream,
        json_stream_full_output: raw.has(Opt::JsonStreamFullOutput),
        verbose: raw.has(Opt::Verbose),
        format: raw.text(Opt::Format).and_then(|f| f.chars().next()),
        logfile: raw.os(Opt::Logfile).map(PathBuf::from),
        forceflush: raw.has(Opt::ForceFlush),
        timestamps,
    }
}

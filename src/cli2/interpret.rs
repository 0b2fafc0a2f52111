//! The first pass: each option acts as it is met, in command-line order, as in
//! iperf 2. Order matters there and so here: `-d` before `-c` is "not valid
//! for server mode" and ignored; `-C` after `-d` undoes it with a warning.
//! Warnings are collected in order; a few bad values end the run at once.

use super::table::{display_name, Spec, O2};
use super::units::{self, RateArg};

/// The smallest report interval iperf 2 takes.
pub(crate) const SMALLEST_INTERVAL_US: u64 = 5_000;

/// What the command line has set so far, still in iperf 2's terms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct State {
    pub(crate) mode: ThreadMode,
    pub(crate) host: Option<String>,
    pub(crate) rate: Option<RateArg>,
    /// `-b`'s text as given, for the error that refuses it.
    pub(crate) rate_text: String,
    /// `-b 10m,1m`: a variance, which rperf3 does not do.
    pub(crate) rate_variance: bool,
    pub(crate) test: TestMode,
    pub(crate) enhanced: bool,
    pub(crate) format: char,
    /// Microseconds; `Some(0)` = interval reports off.
    pub(crate) interval_us: Option<u64>,
    pub(crate) len: Option<i64>,
    pub(crate) print_mss: bool,
    /// `-n`: bytes (time mode when `None`).
    pub(crate) amount: Option<i64>,
    /// `-t` seconds; `Some(x)` with `x <= 0` = no limit.
    pub(crate) time: Option<f64>,
    pub(crate) output: Option<String>,
    pub(crate) port: i64,
    pub(crate) port_range: bool,
    pub(crate) udp: bool,
    pub(crate) window: Option<i64>,
    pub(crate) exclude: [bool; 5],
    pub(crate) csv: bool,
    pub(crate) realtime: bool,
    pub(crate) bind: Option<String>,
    pub(crate) compat: bool,
    pub(crate) daemon: bool,
    pub(crate) file: Option<String>,
    pub(crate) stdin: bool,
    pub(crate) ssm: Option<String>,
    pub(crate) listen_port: Option<i64>,
    pub(crate) mss: Option<i64>,
    pub(crate) nodelay: bool,
    pub(crate) threads: i64,
    pub(crate) reverse: bool,
    pub(crate) tos: Option<u8>,
    /// The TOS came from `--dscp` (the last of `-S`/`--dscp` wins).
    pub(crate) tos_by_dscp: bool,
    pub(crate) ttl: Option<i64>,
    pub(crate) single_udp: bool,
    pub(crate) single_client: bool,
    pub(crate) v4: bool,
    pub(crate) v6: bool,
    pub(crate) peer_detect: bool,
    pub(crate) congestion: Option<String>,
    pub(crate) full_duplex: bool,
    pub(crate) no_udp_fin: bool,
    pub(crate) sum_only: bool,
    pub(crate) hide_ips: bool,
    pub(crate) trip_times: bool,
    /// `--bounceback[=N]`: requests per period.
    pub(crate) bounceback: Option<i64>,
    pub(crate) bb_hold_ms: f64,
    pub(crate) bb_no_quickack: bool,
    /// Seconds.
    pub(crate) bb_period: f64,
    pub(crate) bb_request: Option<i64>,
    pub(crate) bb_reply: Option<i64>,
    pub(crate) utc: bool,
    pub(crate) sync_transfer_id: bool,
    pub(crate) txstart: Option<(i64, i64)>,
    /// `--txdelay-time`: seconds between connecting and the first data.
    pub(crate) txdelay: Option<f64>,
    /// `--connect-only[=n]`.
    pub(crate) connect_only: Option<Option<u32>>,
    /// `--incr-dstport`.
    pub(crate) incr_dstport: bool,
    pub(crate) permit_key: Option<String>,
    pub(crate) skip_rx_copy: bool,
    /// `--tcp-quickack`.
    pub(crate) tcp_quickack: bool,
    /// `--histograms`.
    pub(crate) histograms: bool,
    /// `--histograms=width,bins`.
    pub(crate) hist_bins: rperf3_app::iperf2::config::HistBins2,
    /// `--jitter-histograms[=us]`: the bin width, µs.
    pub(crate) jitter_histograms: Option<u32>,
    /// `--bounceback-txdelay`, seconds.
    pub(crate) bb_txdelay: Option<f64>,
    /// `--isochronous[=fps:mean,stdev]` (with `--ipg`).
    pub(crate) isoch: Option<rperf3_app::iperf2::config::IsochSpec>,
    /// `--ipg` milliseconds.
    pub(crate) ipg_ms: Option<f64>,
}

/// `-s`, `-c`, or neither yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThreadMode {
    Unknown,
    Client,
    Listener,
}

/// `-d`, `-r` or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TestMode {
    Normal,
    Dual,
    Tradeoff,
}

impl Default for State {
    fn default() -> Self {
        Self {
            mode: ThreadMode::Unknown,
            host: None,
            rate: None,
            rate_text: String::new(),
            rate_variance: false,
            test: TestMode::Normal,
            enhanced: false,
            format: 'a',
            interval_us: None,
            len: None,
            print_mss: false,
            amount: None,
            time: None,
            output: None,
            port: 5001,
            port_range: false,
            udp: false,
            window: None,
            exclude: [false; 5],
            csv: false,
            realtime: false,
            bind: None,
            compat: false,
            daemon: false,
            file: None,
            stdin: false,
            ssm: None,
            listen_port: None,
            mss: None,
            nodelay: false,
            threads: 0,
            reverse: false,
            tos: None,
            tos_by_dscp: false,
            ttl: None,
            single_udp: false,
            single_client: false,
            v4: false,
            v6: false,
            peer_detect: false,
            congestion: None,
            full_duplex: false,
            no_udp_fin: false,
            sum_only: false,
            hide_ips: false,
            trip_times: false,
            bounceback: None,
            bb_hold_ms: 0.0,
            bb_no_quickack: false,
            bb_period: 1.0,
            bb_request: None,
            bb_reply: None,
            utc: false,
            sync_transfer_id: false,
            txstart: None,
            txdelay: None,
            connect_only: None,
            incr_dstport: false,
            permit_key: None,
            skip_rx_copy: false,
            tcp_quickack: false,
            histograms: false,
            isoch: None,
            ipg_ms: None,
            hist_bins: Default::default(),
            jitter_histograms: None,
            bb_txdelay: None,
        }
    }
}

/// What one option asks for beyond setting state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Continue,
    Help,
    Version,
    /// A bad value: the lines are written; exit with this status.
    Exit(i32),
}

/// Index of each `-x` letter in [`State::exclude`].
pub(crate) const EXCL_C: usize = 0;
pub(crate) const EXCL_D: usize = 1;
pub(crate) const EXCL_M: usize = 2;
pub(crate) const EXCL_S: usize = 3;
pub(crate) const EXCL_V: usize = 4;

impl State {
    fn client_only(&self, c: char, diag: &mut Vec<String>) -> bool {
        if self.mode != ThreadMode::Client {
            diag.push(format!("WARNING: option -{c} is not valid for server mode"));
            return false;
        }
        true
    }

    /// Acts on one option.
    pub(crate) fn apply(
        &mut self,
        spec: &Spec,
        value: Option<&str>,
        diag: &mut Vec<String>,
    ) -> Step {
        let v = value.unwrap_or("");
        match spec.id {
            O2::Help => return Step::Help,
            O2::Version => return Step::Version,
            O2::SingleClient => self.single_client = true,
            O2::V4 => self.v4 = true,
            O2::V6 | O2::Ipv6Domain => self.v6 = true,
            O2::Bandwidth => {
                self.rate = Some(units::rate(v));
                self.rate_text = v.to_string();
                self.rate_variance = matches!(self.rate, Some(RateArg::Bits(_))) && v.contains(',');
            }
            O2::Client => {
                self.host = Some(v.to_string());
                if self.mode == ThreadMode::Unknown {
                    self.mode = ThreadMode::Client;
                }
            }
            O2::DualTest | O2::Tradeoff => {
                let c = if spec.id == O2::DualTest { 'd' } else { 'r' };
                if self.client_only(c, diag) {
                    if self.compat {
                        diag.push(format!(
                            "WARNING: option -{c} is not valid in compatibility mode"
                        ));
                    }
                    self.test = if c == 'd' {
                        TestMode::Dual
                    } else {
                        TestMode::Tradeoff
                    };
                }
            }
            O2::Enhanced => self.enhanced = true,
            O2::Format => self.format = v.chars().next().unwrap_or('a'),
            O2::Interval => return self.interval(v, diag),
            O2::Len => {
                // iperf 2.2.1 takes `-l 0` and `-l abc` and then misbehaves;
                // its later sources refuse them, with these words.
                let l = units::size(v);
                if l <= 0 {
                    diag.push(format!("Invalid value for -l or --len '{v}'"));
                    return Step::Exit(1);
                }
                self.len = Some(l);
            }
            O2::PrintMss => self.print_mss = true,
            O2::Num => {
                let n = units::size(v);
                if n <= 0 {
                    diag.push(format!("Invalid value for -n amount of '{v}'"));
                    return Step::Exit(1);
                }
                self.amount = Some(n);
                self.time = None;
            }
            O2::Output => self.output = Some(v.to_string()),
            O2::Port => {
                let mut parts = v.splitn(2, '-');
                self.port = units::atoi(parts.next().unwrap_or(""));
                self.port_range = parts.next().is_some_and(|l| units::atoi(l) != self.port);
            }
            O2::Server => {
                if self.mode != ThreadMode::Unknown {
                    diag.push("WARNING: option -s is not valid for client mode".into());
                } else {
                    self.mode = ThreadMode::Listener;
                }
            }
            O2::Time => match units::strtod_whole(v) {
                Some(t) => {
                    self.time = Some(t);
                    self.amount = None;
                }
                None => {
                    diag.push(format!("ERROR: -t value of '{v}' not recognized"));
                    return Step::Exit(1);
                }
            },
            O2::Udp => self.udp = true,
            O2::Window => {
                let w = units::size(v);
                self.window = Some(w);
                if w < 2048 {
                    diag.push(format!(
                        "WARNING: TCP window size set to {w} bytes. A small window size\n\
                         will give poor performance. See the Iperf documentation."
                    ));
                }
            }
            O2::ReportExclude => self.exclude_letters(v, diag),
            O2::ReportStyle => {
                if v.starts_with(['c', 'C']) {
                    self.csv = true;
                    self.exclude[EXCL_S] = true;
                    self.exclude[EXCL_C] = true;
                } else {
                    diag.push(format!(
                        "WARNING: unknown reporting style \"{v}\", switching to default"
                    ));
                }
            }
            O2::Realtime => self.realtime = true,
            O2::Bind => {
                if self.bind.is_none() {
                    self.bind = Some(v.to_string());
                }
            }
            O2::Compat => {
                self.compat = true;
                if self.test != TestMode::Normal {
                    let c = if self.test == TestMode::Dual {
                        'd'
                    } else {
                        'r'
                    };
                    diag.push(format!(
                        "WARNING: option -{c} is not valid in compatibility mode"
                    ));
                    self.test = TestMode::Normal;
                }
            }
            O2::Daemon => self.daemon = true,
            O2::FileInput => {
                if self.client_only('F', diag) {
                    self.file = Some(v.to_string());
                    self.stdin = false;
                }
            }
            O2::SsmHost => {
                if self.mode == ThreadMode::Client {
                    diag.push("WARNING: option -H is not valid for client mode".into());
                } else {
                    self.ssm = Some(v.to_string());
                }
            }
            O2::Stdin => {
                if self.client_only('I', diag) {
                    self.stdin = true;
                    self.file = None;
                }
            }
            O2::ListenPort => {
                if self.client_only('L', diag) {
                    self.listen_port = Some(units::atoi(v));
                }
            }
            O2::Mss => {
                self.mss = Some(units::size(v));
                self.print_mss = true;
            }
            O2::NoDelay => self.nodelay = true,
            O2::Parallel => self.threads = units::atoi(v),
            O2::Reverse => self.reverse = true,
            O2::Tos => {
                self.tos_by_dscp = false;
                match units::tos(v) {
                    Some(t) => self.tos = Some(t),
                    None => {
                        diag.push(format!("WARN: Invalid --tos value of {v} ignored"));
                        self.tos = None;
                    }
                }
            }
            // 2.2.1 takes a decimal code point (C's atoi) into the TOS
            // byte's upper six bits; a name or hex reads as 0.
            O2::TcpQuickack => self.tcp_quickack = true,
            O2::IncrDstport => self.incr_dstport = true,
            // C's atoi of the attached count; none without `=`.
            O2::ConnectOnly => {
                self.connect_only = Some(
                    (!v.is_empty()).then(|| units::atoi(v).clamp(0, i64::from(u32::MAX)) as u32),
                )
            }
            O2::Dscp => {
                let t = units::atoi(v).wrapping_shl(2) as u8 & 0xFC;
                self.tos = (t != 0).then_some(t);
                self.tos_by_dscp = true;
            }
            O2::Ttl => self.ttl = Some(units::atoi(v)),
            O2::SingleUdp => {
                self.udp = true;
                self.single_udp = true;
                self.single_client = true;
            }
            O2::SuggestWin => diag.push("The -W option is not available in this release".into()),
            O2::PeerDetect => self.peer_detect = true,
            O2::Congestion => self.congestion = Some(v.to_string()),
            O2::FullDuplex => self.full_duplex = true,
            O2::NoUdpFin => self.no_udp_fin = true,
            O2::SumOnly => self.sum_only = true,
            O2::HideIps => self.hide_ips = true,
            O2::TripTimes => self.trip_times = true,
            O2::Histograms => {
                self.histograms = true;
                self.hist_bins = units::histograms(v);
            }
            O2::JitterHistograms => {
                let us = if v.is_empty() { 100 } else { units::atoi(v) };
                self.jitter_histograms =
                    Some(u32::try_from(us).ok().filter(|&u| u > 0).unwrap_or(100));
            }
            O2::Isochronous => {
                // iperf 2 turns -e on with it.
                self.enhanced = true;
                self.isoch = Some(units::isochronous(v));
            }
            O2::Ipg => self.ipg_ms = units::strtod_whole(v),
            O2::Bounceback => {
                self.bounceback = Some(if v.is_empty() { 10 } else { units::atoi(v) });
            }
            O2::BbHold => self.bb_hold_ms = units::strtod_whole(v).unwrap_or(0.0),
            O2::BbNoQuickack => self.bb_no_quickack = true,
            O2::BbPeriod => self.bb_period = units::strtod_whole(v).unwrap_or(0.0),
            O2::BbRequest => self.bb_request = Some(units::atoi(v)),
            O2::BbReply => self.bb_reply = Some(units::atoi(v)),
            O2::BbTxDelay => self.bb_txdelay = units::strtod_whole(v),
            O2::Utc => self.utc = true,
            O2::SyncTransferId => self.sync_transfer_id = true,
            O2::TxStartTime => self.txstart(v, diag),
            O2::TxDelayTime => match v.trim().parse::<f64>() {
                Ok(t) if t.is_finite() && t >= 0.0 => self.txdelay = Some(t),
                _ => {
                    diag.push(format!("Invalid value of '{v}' for --txdelay-time time"));
                    self.txdelay = None;
                }
            },
            O2::PermitKey => self.permit_key = Some(v.to_string()),
            O2::SkipRxCopy => {
                self.skip_rx_copy = true;
                self.enhanced = true;
            }
            O2::Unsupported => {
                // Ignored, it would measure something other than what was
                // asked for: refused, as a value out of range is.
                diag.push(format!(
                    "ERROR: option {} is not supported by rperf3",
                    display_name(spec)
                ));
                return Step::Exit(1);
            }
        }
        Step::Continue
    }

    fn interval(&mut self, v: &str, diag: &mut Vec<String>) -> Step {
        if v.starts_with(['f', 'F']) {
            // iperf 2's frame intervals belong to its isochronous mode.
            diag.push(format!(
                "WARNING: option -i {v} (frame intervals) is not supported by rperf3, ignored"
            ));
            return Step::Continue;
        }
        let Some(secs) = units::strtod_whole(v) else {
            diag.push(format!("Invalid value of '{v}' for -i interval"));
            return Step::Exit(1);
        };
        let max = f64::from(u32::MAX) / 1e6;
        if secs > max {
            diag.push(format!(
                "Too large value of '{v}' for -i interval, max is {max:.6}"
            ));
            return Step::Exit(1);
        }
        if secs < 0.0 {
            // iperf 2 ends up with no interval reports here.
            self.interval_us = Some(0);
            return Step::Continue;
        }
        let mut us = (secs * 1e6).ceil() as u64;
        if us < SMALLEST_INTERVAL_US {
            us = SMALLEST_INTERVAL_US;
            diag.push(format!(
                "WARNING: interval too small, increasing to {:.3} milliseconds.",
                us as f64 / 1e3
            ));
        }
        self.interval_us = Some(us);
        Step::Continue
    }

    fn exclude_letters(&mut self, v: &str, diag: &mut Vec<String>) {
        for c in v.chars() {
            let i = match c.to_ascii_uppercase() {
                'C' => EXCL_C,
                'D' => EXCL_D,
                'M' => EXCL_M,
                'S' => EXCL_S,
                'V' => EXCL_V,
                _ => {
                    diag.push(format!(
                        "WARNING: unknown reporting type \"{c}\", ignored\n valid options are:\n\t \
                         exclude: C(connection) D(data) M(multicast) S(settings) V(server) report\n"
                    ));
                    continue;
                }
            };
            self.exclude[i] = true;
        }
    }

    /// `--txstart-time seconds[.micro]` (iperf 2 turns on `-e` with it).
    fn txstart(&mut self, v: &str, diag: &mut Vec<String>) {
        self.enhanced = true;
        let (s, us) = v.split_once('.').unwrap_or((v, ""));
        let secs_ok = !s.trim_start().is_empty()
            && s.trim_start()
                .trim_start_matches(['-', '+'])
                .starts_with(|c: char| c.is_ascii_digit());
        if !secs_ok {
            self.txstart = None;
            diag.push("WARNING: invalid --txstart-time format".into());
            return;
        }
        let digits: String = us
            .chars()
            .take(6)
            .take_while(char::is_ascii_digit)
            .collect();
        // A decimal fraction: iperf 2 reads `.25` as 25 microseconds, which
        // no one means.
        let micros = format!("{digits:0<6}").parse().unwrap_or(0);
        self.txstart = Some((units::atoi(s), micros));
    }
}

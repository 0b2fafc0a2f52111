//! The one table of every iperf3 3.21 command-line option.
//!
//! Parsing, the role checks, the help text and the README's status table all read
//! this table, so an option's name, argument, side and help are written down
//! exactly once. Rows are in help order; [`LONG_ORDER`] separately keeps
//! iperf3's `longopts` order, which decides the order of the candidates getopt lists
//! for an ambiguous abbreviation.

/// Every option iperf3 3.21 knows, and rperf3's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Opt {
    Port,
    Format,
    Interval,
    Pidfile,
    File,
    Affinity,
    Bind,
    BindDev,
    Verbose,
    Json,
    JsonStream,
    JsonStreamFullOutput,
    Logfile,
    ForceFlush,
    Timestamps,
    RcvTimeout,
    SndTimeout,
    CntlKa,
    Mptcp,
    Debug,
    Version,
    Help,
    Server,
    Daemon,
    OneOff,
    MaxTests,
    Queue,
    ServerBitrateLimit,
    ServerMaxDuration,
    IdleTimeout,
    Metrics,
    RsaPrivateKeyPath,
    AuthorizedUsersPath,
    TimeSkewThreshold,
    UsePkcs1Padding,
    Client,
    Sctp,
    Xbind,
    NStreams,
    Udp,
    ConnectTimeout,
    Bitrate,
    PacingTimer,
    FqRate,
    NoFqSocketPacing,
    Time,
    Bytes,
    BlockCount,
    Length,
    ClientPort,
    Parallel,
    Reverse,
    Bidir,
    Window,
    Congestion,
    SetMss,
    NoDelay,
    Version4,
    Version6,
    Tos,
    Dscp,
    FlowLabel,
    ZeroCopy,
    SkipRxCopy,
    Omit,
    Title,
    ExtraData,
    GetServerOutput,
    UdpCounters64Bit,
    Gsro,
    RepeatingPayload,
    DontFragment,
    Username,
    RsaPublicKeyPath,
    Latency,
    Rpm,
    RpmStages,
    RpmTime,
    RpmUrl,
    Insecure,
    RpmHttp,
    TlsCert,
    TlsKey,
    Bounceback,
    BouncebackRequest,
    BouncebackReply,
    BouncebackHold,
    BouncebackPeriod,
    BouncebackLoad,
}

/// Whether an option takes an argument (getopt_long's `has_arg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgKind {
    /// A flag.
    None,
    /// `--opt value`, `--opt=value`, `-ovalue`, `-o value`.
    Required,
    /// Only `--opt=value`; the short form (if any) takes no argument, as in iperf3.
    Optional,
}

/// Where an option belongs; also the help section it is listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Both,
    Server,
    Client,
}

/// One row of the table.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OptSpec {
    pub(crate) id: Opt,
    pub(crate) short: Option<char>,
    pub(crate) long: &'static str,
    /// Further long names meaning the same option (`--bandwidth` for `--bitrate`).
    pub(crate) aliases: &'static [&'static str],
    pub(crate) arg: ArgKind,
    pub(crate) side: Side,
    /// iperf3 refuses the option on the other side (errors 3 and 4). Some options
    /// that only matter on one side are not checked by iperf3, and so not by us.
    pub(crate) enforced: bool,
    /// Left help column after the option names (`#`, `<host>`, `#[KMG]`).
    pub(crate) metavar: &'static str,
    /// Help description; `\n` starts a continuation line.
    pub(crate) help: &'static str,
}

impl OptSpec {
    /// The left help column: `-p, --port      #`.
    pub(crate) fn usage(&self) -> String {
        let names = match self.short {
            Some(c) => format!("-{c}, --{}", self.long),
            None => format!("--{}", self.long),
        };
        let m = self.metavar;
        if self.arg == ArgKind::Optional {
            // Optional values attach with "=", so the hint attaches too.
            format!("{names}{m}")
        } else if m.is_empty() {
            names
        } else if self.short.is_some() && m.starts_with('#') && 16 + m.len() < 26 {
            // iperf3 lines up the numeric hints of the short options in one column.
            format!("{names:<16}{m}")
        } else {
            format!("{names} {m}")
        }
    }
}

macro_rules! row {
    ($id:ident, $short:expr, $long:literal, $aliases:expr, $arg:ident, $side:ident,
     $enforced:literal, $metavar:literal, $help:literal) => {
        OptSpec {
            id: Opt::$id,
            short: $short,
            long: $long,
            aliases: $aliases,
            arg: ArgKind::$arg,
            side: Side::$side,
            enforced: $enforced,
            metavar: $metavar,
            help: $help,
        }
    };
}

const NO: &[&str] = &[];

/// All options, in help order: both sides, then server, then client.
pub(crate) static OPTIONS: &[OptSpec] = &[
    row!(Port, Some('p'), "port", NO, Required, Both, false, "#",
        "server port to listen on or connect to (default 5201)"),
    row!(Format, Some('f'), "format", NO, Required, Both, false, "[kmgtKMGT]",
        "rate unit of the text report: Kbits, Mbits, Gbits, Tbits\n(upper case: bytes)"),
    row!(Interval, Some('i'), "interval", NO, Required, Both, false, "#",
        "seconds between interval reports (0 turns them off)"),
    row!(Pidfile, Some('I'), "pidfile", NO, Required, Both, false, "file",
        "write the process id to a file"),
    row!(File, Some('F'), "file", NO, Required, Both, false, "name",
        "send (client) or store (server) a file instead of the buffer"),
    row!(Affinity, Some('A'), "affinity", NO, Required, Both, false, "n[,m]",
        "pin to CPU n (client: m pins the server's test)"),
    row!(Bind, Some('B'), "bind", NO, Required, Both, false, "<host>[%<dev>]",
        "bind to the local address <host>\n(optional <dev>: also bind to that interface)"),
    row!(BindDev, None, "bind-dev", NO, Required, Both, false, "<dev>",
        "bind to a network interface (SO_BINDTODEVICE)"),
    row!(Verbose, Some('V'), "verbose", NO, None, Both, false, "",
        "more detailed output"),
    row!(Json, Some('J'), "json", NO, None, Both, false, "",
        "output one JSON document"),
    row!(JsonStream, None, "json-stream", NO, None, Both, false, "",
        "output line-delimited JSON events"),
    row!(JsonStreamFullOutput, None, "json-stream-full-output", NO, None, Both, false, "",
        "with --json-stream, also print the whole JSON document"),
    row!(Logfile, None, "logfile", NO, Required, Both, false, "f",
        "append the output to a file"),
    row!(ForceFlush, None, "forceflush", NO, None, Both, false, "",
        "flush the output after every line"),
    row!(Timestamps, None, "timestamps", NO, Optional, Both, false, "<=format>",
        "start every output line with the time\n(optional \"=\" and strftime(3) format)"),
    row!(RcvTimeout, None, "rcv-timeout", NO, Required, Both, false, "#",
        "give up when no data arrives for # ms (default 120000)"),
    row!(SndTimeout, None, "snd-timeout", NO, Required, Both, false, "#",
        "give up on unacknowledged TCP data after # ms"),
    row!(CntlKa, None, "cntl-ka", NO, Optional, Both, false, "[=#/#/#]",
        "TCP keepalive on the control connection\n(idle seconds/interval seconds/count)"),
    row!(Mptcp, Some('m'), "mptcp", NO, None, Client, true, "",
        "use MPTCP instead of TCP"),
    row!(Debug, Some('d'), "debug", NO, Optional, Both, false, "[=#]",
        "debug output (optional \"=\" and level 1-4, default 4)"),
    row!(Version, Some('v'), "version", NO, None, Both, false, "",
        "print the version and exit"),
    row!(Help, Some('h'), "help", NO, None, Both, false, "",
        "print this help and exit"),
    row!(Server, Some('s'), "server", NO, None, Server, false, "",
        "run as a server"),
    row!(Daemon, Some('D'), "daemon", NO, None, Server, true, "",
        "run the server in the background"),
    row!(OneOff, Some('1'), "one-off", NO, None, Server, true, "",
        "serve one test, then exit"),
    row!(MaxTests, None, "max-tests", NO, Required, Server, true, "#",
        "run up to # tests at once (default 1)"),
    row!(Queue, None, "queue", NO, Required, Server, true, "#",
        "let up to # more clients wait for a free test slot\n(default 0: refuse them as busy)"),
    row!(ServerBitrateLimit, None, "server-bitrate-limit", NO, Required, Server, true,
        "#[KMG][/#]", "refuse tests above this total rate\n(optional \"/\" and averaging seconds)"),
    row!(ServerMaxDuration, None, "server-max-duration", NO, Required, Server, true, "#",
        "refuse tests longer than # seconds"),
    row!(IdleTimeout, None, "idle-timeout", NO, Required, Server, true, "#",
        "a one-off server exits after # seconds without a client"),
    row!(Metrics, None, "metrics", NO, Required, Server, true, "<addr>:<port>",
        "serve Prometheus metrics at http://<addr>:<port>/metrics"),
    row!(RpmHttp, None, "rpm-http", NO, Required, Server, true, "<addr>:<port>",
        "serve the RPM protocol (HTTP/2 over TLS 1.3) here too, for\nnetworkQuality, goresponsiveness and --rpm-url"),
    row!(TlsCert, None, "tls-cert", NO, Required, Server, true, "file",
        "with --rpm-http, its certificate chain (PEM; default: a\nself-signed one made at start)"),
    row!(TlsKey, None, "tls-key", NO, Required, Server, true, "file",
        "with --rpm-http, the certificate's private key (PEM)"),
    row!(RsaPrivateKeyPath, None, "rsa-private-key-path", NO, Required, Server, true,
        "file", "RSA private key (PEM) for authentication"),
    row!(AuthorizedUsersPath, None, "authorized-users-path", NO, Required, Server, true,
        "file", "the users allowed in (user,sha256 lines)"),
    row!(TimeSkewThreshold, None, "time-skew-threshold", NO, Required, Server, true,
        "#", "clock difference allowed, seconds (default 10)"),
    row!(Client, Some('c'), "client", NO, Required, Client, false, "<host>[%<dev>]",
        "run as a client of <host>\n(optional <dev>: bind to that interface)"),
    row!(Sctp, None, "sctp", NO, None, Client, true, "",
        "use SCTP instead of TCP"),
    row!(Xbind, Some('X'), "xbind", NO, Required, Client, false, "<name>",
        "bind the SCTP association to more addresses\n(server: the SCTP listener's addresses)"),
    row!(NStreams, None, "nstreams", NO, Required, Client, true, "#",
        "number of SCTP streams"),
    row!(Udp, Some('u'), "udp", NO, None, Client, true, "",
        "use UDP instead of TCP"),
    row!(ConnectTimeout, None, "connect-timeout", NO, Required, Client, true, "#",
        "give up connecting after # ms"),
    row!(Bitrate, Some('b'), "bitrate", &["bandwidth"], Required, Client, true,
        "#[KMG][/#]", "target bits/s per stream, 0 for no limit\n(default 1 Mbit/s for UDP, none for TCP;\noptional \"/\" and packets per burst)"),
    row!(PacingTimer, None, "pacing-timer", NO, Required, Client, true, "#[KMG]",
        "pacing timer in microseconds"),
    row!(FqRate, None, "fq-rate", NO, Required, Client, true, "#[KMG]",
        "socket pacing rate in bits/s (Linux)"),
    row!(NoFqSocketPacing, None, "no-fq-socket-pacing", NO, None, Client, true, "",
        "turn socket pacing off (deprecated)"),
    row!(Time, Some('t'), "time", NO, Required, Client, true, "#",
        "seconds to send (default 10)"),
    row!(Bytes, Some('n'), "bytes", NO, Required, Client, true, "#[KMG]",
        "bytes to send (instead of -t)"),
    row!(BlockCount, Some('k'), "blockcount", NO, Required, Client, true, "#[KMG]",
        "blocks (packets) to send (instead of -t or -n)"),
    row!(Length, Some('l'), "length", NO, Required, Client, true, "#[KMG]",
        "bytes per read or write\n(default 128 KB for TCP, path MSS or 1460 for UDP)"),
    row!(ClientPort, None, "cport", NO, Required, Client, false, "<port>",
        "local port of the data streams"),
    row!(Parallel, Some('P'), "parallel", NO, Required, Client, true, "#",
        "number of parallel streams (default 1)"),
    row!(Reverse, Some('R'), "reverse", NO, None, Client, true, "",
        "reverse mode: the server sends"),
    row!(Bidir, None, "bidir", NO, None, Client, true, "",
        "both sides send at once"),
    row!(Window, Some('w'), "window", NO, Required, Client, true, "#[KMG]",
        "socket buffer size (sets the TCP window)"),
    row!(Congestion, Some('C'), "congestion", &["linux-congestion"], Required, Client, true,
        "<algo>", "TCP congestion control algorithm"),
    row!(SetMss, Some('M'), "set-mss", NO, Required, Client, true, "#",
        "TCP maximum segment size"),
    row!(NoDelay, Some('N'), "no-delay", NO, None, Client, true, "",
        "turn Nagle's algorithm off"),
    row!(Version4, Some('4'), "version4", NO, None, Client, false, "",
        "IPv4 only"),
    row!(Version6, Some('6'), "version6", NO, None, Client, false, "",
        "IPv6 only"),
    row!(Tos, Some('S'), "tos", NO, Required, Client, true, "N",
        "IP type of service, 0-255 (decimal, 0octal or 0xhex)"),
    row!(Dscp, None, "dscp", NO, Required, Client, true, "N|name",
        "IP DSCP, 0-63 or a name such as af11 or ef"),
    row!(FlowLabel, Some('L'), "flowlabel", NO, Required, Client, true, "N",
        "IPv6 flow label (Linux)"),
    row!(ZeroCopy, Some('Z'), "zerocopy", NO, None, Client, true, "",
        "send with a zero-copy method"),
    row!(SkipRxCopy, None, "skip-rx-copy", NO, None, Client, true, "",
        "discard received data without copying it (MSG_TRUNC)"),
    row!(Omit, Some('O'), "omit", NO, Required, Client, true, "N",
        "leave the first N seconds out of the results"),
    row!(Title, Some('T'), "title", NO, Required, Client, true, "str",
        "put this string before every output line"),
    row!(ExtraData, None, "extra-data", NO, Required, Client, true, "str",
        "a string to put into the client and server JSON"),
    row!(GetServerOutput, None, "get-server-output", NO, None, Client, true, "",
        "show the server's output too"),
    row!(UdpCounters64Bit, None, "udp-counters-64bit", NO, None, Client, false, "",
        "64-bit counters in UDP packets"),
    row!(Gsro, None, "gsro", NO, None, Client, true, "",
        "UDP segmentation offload (GSO/GRO) on both sides"),
    row!(RepeatingPayload, None, "repeating-payload", NO, None, Client, true, "",
        "a repeating pattern as payload instead of random bytes"),
    row!(DontFragment, None, "dont-fragment", NO, None, Client, true, "",
        "set the IPv4 Don't Fragment flag"),
    row!(Username, None, "username", NO, Required, Client, true, "name",
        "user name for authentication (password: IPERF3_PASSWORD\nor asked for on the terminal)"),
    row!(RsaPublicKeyPath, None, "rsa-public-key-path", NO, Required, Client, true,
        "file", "the server's RSA public key (PEM)"),
    row!(UsePkcs1Padding, None, "use-pkcs1-padding", NO, None, Client, false, "",
        "PKCS#1 v1.5 padding, for servers of iperf3 3.16 or older\n(rperf3 servers accept both)"),
    row!(Latency, None, "latency", NO, Optional, Client, true, "[=#]",
        "round trips idle and under the load, and RPM; # foreign\nprobes a second (default 10, at most 100)"),
    row!(Rpm, None, "rpm", NO, None, Client, true, "",
        "responsiveness test (rperf3 server only): round trips per\nminute under load, downlink, uplink and both at once"),
    row!(RpmStages, None, "rpm-stages", NO, Required, Client, true, "list",
        "with --rpm, the stages to run: down,up,bidir (default all)"),
    row!(RpmTime, None, "rpm-time", NO, Required, Client, true, "#",
        "with --rpm, the most seconds each stage runs (default 15)"),
    row!(RpmUrl, None, "rpm-url", NO, Required, Client, true, "URL",
        "responsiveness test against any RPM server (HTTP/2, as\nnetworkQuality's): the URL of its config; no -c"),
    row!(Insecure, None, "insecure", NO, None, Client, true, "",
        "with --rpm-url, skip the server certificate's checks"),
    row!(Bounceback, None, "bounceback", NO, None, Client, true, "",
        "round-trip test (rperf3 server only): the TCP streams carry\nrequests and replies; transactions/sec and round trips"),
    row!(BouncebackRequest, None, "bounceback-request", NO, Required, Client, true, "#",
        "with --bounceback, request size, K/M suffixes (default 100)"),
    row!(BouncebackReply, None, "bounceback-reply", NO, Required, Client, true, "#",
        "with --bounceback, reply size, K/M suffixes (default 100)"),
    row!(BouncebackHold, None, "bounceback-hold", NO, Required, Client, true, "#",
        "with --bounceback, seconds the server holds each request\nbefore replying (default 0)"),
    row!(BouncebackPeriod, None, "bounceback-period", NO, Required, Client, true, "#",
        "with --bounceback, seconds from one request to the next\n(default 0: back to back)"),
    row!(BouncebackLoad, None, "bounceback-load", NO, Required, Client, true, "dir",
        "with --bounceback, a bulk TCP load beside the round trips:\nup, down or bidir"),
];

/// The options in iperf3 3.21's `longopts` order, each followed there by its
/// aliases: the order in which an ambiguous abbreviation's candidates are listed.
pub(crate) static LONG_ORDER: &[Opt] = &[
    Opt::Port,
    Opt::Format,
    Opt::Interval,
    Opt::Daemon,
    Opt::OneOff,
    Opt::Verbose,
    Opt::Json,
    Opt::JsonStream,
    Opt::JsonStreamFullOutput,
    Opt::Version,
    Opt::Server,
    Opt::Client,
    Opt::Udp,
    Opt::Bitrate,
    Opt::ServerBitrateLimit,
    Opt::ServerMaxDuration,
    Opt::Time,
    Opt::Bytes,
    Opt::BlockCount,
    Opt::Length,
    Opt::Parallel,
    Opt::Reverse,
    Opt::Bidir,
    Opt::Window,
    Opt::Bind,
    Opt::BindDev,
    Opt::ClientPort,
    Opt::SetMss,
    Opt::NoDelay,
    Opt::Version4,
    Opt::Version6,
    Opt::Tos,
    Opt::Dscp,
    Opt::ExtraData,
    Opt::FlowLabel,
    Opt::ZeroCopy,
    Opt::Omit,
    Opt::File,
    Opt::RepeatingPayload,
    Opt::Timestamps,
    Opt::Affinity,
    Opt::Title,
    Opt::Congestion,
    Opt::Sctp,
    Opt::NStreams,
    Opt::Xbind,
    Opt::Pidfile,
    Opt::Logfile,
    Opt::ForceFlush,
    Opt::GetServerOutput,
    Opt::UdpCounters64Bit,
    Opt::NoFqSocketPacing,
    Opt::DontFragment,
    Opt::SkipRxCopy,
    Opt::Username,
    Opt::RsaPublicKeyPath,
    Opt::RsaPrivateKeyPath,
    Opt::AuthorizedUsersPath,
    Opt::TimeSkewThreshold,
    Opt::UsePkcs1Padding,
    Opt::FqRate,
    Opt::PacingTimer,
    Opt::ConnectTimeout,
    Opt::IdleTimeout,
    Opt::RcvTimeout,
    Opt::SndTimeout,
    Opt::CntlKa,
    Opt::Mptcp,
    Opt::Gsro,
    Opt::Debug,
    Opt::Help,
    // rperf3's own options come after iperf3's, so an abbreviation that means
    // an iperf3 option still means the same one.
    Opt::MaxTests,
    Opt::Queue,
    Opt::Metrics,
    Opt::Latency,
    Opt::Rpm,
    Opt::RpmStages,
    Opt::RpmTime,
    Opt::RpmUrl,
    Opt::Insecure,
    Opt::RpmHttp,
    Opt::TlsCert,
    Opt::TlsKey,
    Opt::Bounceback,
    Opt::BouncebackRequest,
    Opt::BouncebackReply,
    Opt::BouncebackHold,
    Opt::BouncebackPeriod,
    Opt::BouncebackLoad,
];

/// Whether `id` is rperf3's own option (after iperf3's in [`LONG_ORDER`]).
pub(crate) fn is_own(id: Opt) -> bool {
    let at = |o: Opt| LONG_ORDER.iter().position(|x| *x == o);
    at(id) >= at(Opt::MaxTests)
}

/// Every long name (aliases included) with its row, in [`LONG_ORDER`].
pub(crate) fn long_names() -> impl Iterator<Item = (&'static str, &'static OptSpec)> {
    LONG_ORDER.iter().flat_map(|id| {
        let s = spec(*id);
        std::iter::once(s.long)
            .chain(s.aliases.iter().copied())
            .map(move |n| (n, s))
    })
}

/// The row of an option.
pub(crate) fn spec(id: Opt) -> &'static OptSpec {
    OPTIONS
        .iter()
        .find(|s| s.id == id)
        .expect("every Opt has a row")
}

/// The row owning a short letter.
pub(crate) fn by_short(c: char) -> Option<&'static OptSpec> {
    OPTIONS.iter().find(|s| s.short == Some(c))
}

/// What the README's table and the man page add to an option: what it needs
/// from the system, or what the wire protocol limits.
pub(crate) fn status_note(id: Opt) -> Option<&'static str> {
    Some(match id {
        Opt::Sctp | Opt::Xbind | Opt::NStreams => {
            "needs a kernel with SCTP support, on Linux the sctp module; where an end \
             lacks it, the test fails with \"Protocol not supported\" and the server \
             goes on serving"
        }
        Opt::SetMss => "a server with `--max-tests` > 1 cannot put it on the SYN-ACK",
        Opt::RpmUrl => {
            "speaks HTTP/2 over TLS 1.3 to any standard RPM server (rperf3's \
             `--rpm-http`, nginx or Apache as Apple describes them)"
        }
        Opt::Rpm | Opt::RpmStages | Opt::RpmTime => {
            "needs an rperf3 server: a stock iperf3 server makes the client stop \
             before any data with \"the server does not run the responsiveness test \
             (it is not rperf3)\""
        }
        Opt::Bounceback => {
            "needs an rperf3 server: a stock iperf3 server makes the client stop \
             before any data with \"test initialization failed: the server is not \
             rperf3 (--bounceback needs an rperf3 server)\""
        }
        _ => return None,
    })
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;

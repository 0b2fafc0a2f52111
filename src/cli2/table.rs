//! iperf 2's options as one table: what getopt matches, what the interpreter
//! acts on, and what `--help` lists.
//!
//! Every long name iperf 2.2.1 knows is here, supported or not, because
//! getopt's abbreviation rules depend on the whole list: `--ud` is ambiguous in
//! iperf 2 (`--udp`, `--udp-histograms`, ...) and must stay so here.

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    /// A flag.
    No,
    /// A value, attached or the next argument.
    Required,
    /// A value only after `=` (long form).
    Optional,
}

/// What an option is, for the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum O2 {
    SingleClient,
    V4,
    V6,
    Bandwidth,
    Client,
    DualTest,
    Enhanced,
    Format,
    Help,
    Interval,
    Len,
    PrintMss,
    Num,
    Output,
    Port,
    Tradeoff,
    Server,
    Time,
    Udp,
    Version,
    Window,
    ReportExclude,
    ReportStyle,
    Realtime,
    Bind,
    Compat,
    Daemon,
    FileInput,
    SsmHost,
    Stdin,
    ListenPort,
    Mss,
    NoDelay,
    Parallel,
    Reverse,
    Tos,
    Ttl,
    SingleUdp,
    Ipv6Domain,
    SuggestWin,
    PeerDetect,
    Congestion,
    FullDuplex,
    NoUdpFin,
    SumOnly,
    HideIps,
    TripTimes,
    Histograms,
    JitterHistograms,
    Isochronous,
    Ipg,
    Bounceback,
    BbHold,
    BbNoQuickack,
    BbPeriod,
    BbRequest,
    BbReply,
    BbTxDelay,
    Utc,
    SyncTransferId,
    TxStartTime,
    PermitKey,
    SkipRxCopy,
    Dscp,
    TcpQuickack,
    TxDelayTime,
    ConnectOnly,
    IncrDstport,
    /// Known to iperf 2.2.1, not done by rperf3: parsed, then a warning.
    Unsupported,
}

/// Where `--help` lists an option (iperf 2.2.1's sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Both,
    Server,
    Client,
    Misc,
}

/// One line of `--help`: the value placeholder and the description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HelpRow {
    pub(crate) section: Section,
    pub(crate) value: &'static str,
    pub(crate) text: &'static str,
}

/// One option.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub(crate) id: O2,
    pub(crate) short: Option<char>,
    pub(crate) long: Option<&'static str>,
    pub(crate) arg: Arg,
    /// Its `--help` lines (none: not listed).
    pub(crate) help: &'static [HelpRow],
}

const fn row(section: Section, value: &'static str, text: &'static str) -> HelpRow {
    HelpRow {
        section,
        value,
        text,
    }
}

macro_rules! opt {
    ($id:ident, $short:expr, $long:expr, $arg:ident, [$($h:expr),* $(,)?]) => {
        Spec { id: O2::$id, short: $short, long: $long, arg: Arg::$arg, help: &[$($h),*] }
    };
}

use Section::{Both, Client as Cli, Misc, Server as Srv};

/// The options, in iperf 2.2.1's long-option order (which decides nothing but
/// keeps the list easy to compare), then the short-only letters. Kept as a
/// table, one option a line or two, rather than rustfmt's five to nine.
#[rustfmt::skip]
pub(crate) static OPTIONS: &[Spec] = &[
    opt!(SingleClient, Some('1'), Some("singleclient"), No, [
        row(Srv, "", "serve one client at a time (the others wait; the server keeps running)"),
    ]),
    opt!(Bandwidth, Some('b'), Some("bandwidth"), Required, [
        row(Both, "#[kmgKMG | pps]", "target rate in bits/s, or datagrams/s with pps (UDP default 1 Mbit/s)"),
    ]),
    opt!(Client, Some('c'), Some("client"), Required, [
        row(Cli, "<host>", "be the client and connect to <host>; on a server, accept only <host>"),
    ]),
    opt!(DualTest, Some('d'), Some("dualtest"), No, [
        row(Cli, "", "both directions at once: the server connects back during the test"),
    ]),
    opt!(Enhanced, Some('e'), Some("enhanced"), No, [
        row(Both, "", "enhanced reports (writes/reads, retries, cwnd/RTT, histograms)"),
    ]),
    opt!(Format, Some('f'), Some("format"), Required, [
        row(Both, "[abkmgABKMG]", "report unit: bits (lower case) or bytes (upper case), a/A adaptive"),
    ]),
    opt!(Help, Some('h'), Some("help"), No, [row(Misc, "", "show this help and exit")]),
    opt!(Interval, Some('i'), Some("interval"), Required, [
        row(Both, "#", "seconds between interval reports (down to 0.005)"),
    ]),
    opt!(Len, Some('l'), Some("len"), Required, [
        row(Both, "#[kmKM]", "bytes per read/write (TCP 128K, UDP 1470, UDP over IPv6 1450)"),
    ]),
    opt!(PrintMss, Some('m'), Some("print_mss"), No, [row(Both, "", "show the TCP maximum segment size")]),
    opt!(Num, Some('n'), Some("num"), Required, [
        row(Cli, "#[kmgKMG]", "bytes to send, instead of a time limit"),
    ]),
    opt!(Output, Some('o'), Some("output"), Required, [
        row(Both, "<filename>", "append the reports to <filename> instead of stdout"),
    ]),
    opt!(Port, Some('p'), Some("port"), Required, [
        row(Both, "#", "port to listen on or connect to (default 5001)"),
    ]),
    opt!(Tradeoff, Some('r'), Some("tradeoff"), No, [
        row(Cli, "", "one direction, then the other: the server connects back afterwards"),
    ]),
    opt!(Server, Some('s'), Some("server"), No, [row(Srv, "", "be the server")]),
    opt!(Time, Some('t'), Some("time"), Required, [
        row(Srv, "#", "seconds to serve before exiting (default: no limit)"),
        row(Cli, "#", "seconds to send (default 10; 0 = until interrupted)"),
    ]),
    opt!(Udp, Some('u'), Some("udp"), No, [row(Both, "", "UDP instead of TCP")]),
    opt!(Version, Some('v'), Some("version"), No, [row(Misc, "", "show the version and exit")]),
    opt!(Window, Some('w'), Some("window"), Required, [row(Both, "#[KM]", "socket buffer size")]),
    opt!(ReportExclude, Some('x'), Some("reportexclude"), Required, [
        row(Misc, "[CDMSV]", "leave out C connection, D data, M multicast, S settings, V server reports"),
    ]),
    opt!(ReportStyle, Some('y'), Some("reportstyle"), Required, [
        row(Misc, "C", "reports as comma-separated values"),
    ]),
    opt!(Realtime, Some('z'), Some("realtime"), No, [row(Both, "", "ask for the real-time scheduler")]),
    opt!(Unsupported, Some('A'), Some("awdl"), No, []),
    opt!(Bind, Some('B'), Some("bind"), Required, [
        row(Srv, "<ip>[%<dev>]", "listen on <ip>, a multicast group to join, optionally on device <dev>"),
        row(Cli, "<ip>[:<port>]", "send from this local address (and port)"),
    ]),
    opt!(Bounceback, None, Some("bounceback"), Optional, [
        row(Cli, "[=n]", "round trips: n requests (10) every period, each answered by the server"),
    ]),
    opt!(BbTxDelay, None, Some("bounceback-txdelay"), Required, [
        row(Cli, "<s>", "wait this long after connecting before the first request"),
    ]),
    opt!(BbHold, None, Some("bounceback-hold"), Required, [
        row(Cli, "<ms>", "ask the server to hold each request this long before replying"),
    ]),
    opt!(BbNoQuickack, None, Some("bounceback-no-quickack"), No, [
        row(Cli, "", "ask the server not to set TCP_QUICKACK"),
    ]),
    opt!(BbPeriod, None, Some("bounceback-period"), Required, [
        row(Cli, "<s>", "seconds between bursts of requests (1; 0 = back to back)"),
    ]),
    opt!(BbRequest, None, Some("bounceback-request"), Required, [
        row(Cli, "#", "request size in bytes (100)"),
    ]),
    opt!(BbReply, None, Some("bounceback-reply"), Required, [
        row(Cli, "#", "reply size in bytes (the request's)"),
    ]),
    opt!(Compat, Some('C'), Some("compatibility"), No, [
        row(Both, "", "no test header, for very old servers"),
    ]),
    opt!(Daemon, Some('D'), Some("daemon"), No, [row(Srv, "", "detach and run in the background")]),
    opt!(Dscp, None, Some("dscp"), Required, [
        row(Both, "<n>", "DSCP code point (decimal) in the TOS byte"),
    ]),
    opt!(FileInput, Some('F'), Some("file_input"), Required, [
        row(Cli, "<name>", "send the contents of file <name>"),
    ]),
    opt!(SsmHost, Some('H'), Some("ssm-host"), Required, [
        row(Srv, "<ip>", "source of a source-specific multicast join (with -B group)"),
    ]),
    opt!(Stdin, Some('I'), Some("stdin_input"), No, [row(Cli, "", "send what arrives on stdin")]),
    opt!(Mss, Some('M'), Some("mss"), Required, [row(Both, "#", "TCP maximum segment size (TCP_MAXSEG)")]),
    opt!(NoDelay, Some('N'), Some("nodelay"), No, [row(Both, "", "TCP_NODELAY: no Nagle delay")]),
    opt!(ListenPort, Some('L'), Some("listenport"), Required, [
        row(Cli, "#", "port the server connects back to for -d and -r"),
    ]),
    opt!(Parallel, Some('P'), Some("parallel"), Required, [
        row(Srv, "#", "exit after serving # clients"),
        row(Cli, "#", "number of parallel connections"),
    ]),
    opt!(Reverse, Some('R'), Some("reverse"), No, [row(Cli, "", "the server sends, the client receives")]),
    opt!(SyncTransferId, None, Some("sync-transfer-id"), No, [
        row(Cli, "", "have the server use the client's transfer ids"),
    ]),
    opt!(Tos, Some('S'), Some("tos"), Required, [
        row(Both, "#", "IP TOS byte: a number (0x hex, 0 octal) or a name below"),
    ]),
    opt!(Ttl, Some('T'), Some("ttl"), Required, [row(Cli, "#", "multicast time-to-live (default 1)")]),
    opt!(SingleUdp, Some('U'), Some("single_udp"), No, [row(Srv, "", "UDP served by a single thread")]),
    opt!(Ipv6Domain, Some('V'), Some("ipv6_domain"), No, [
        row(Srv, "", "IPv6 socket (takes IPv4 clients too)"),
        row(Cli, "", "use IPv6"),
    ]),
    opt!(SuggestWin, Some('W'), Some("suggest_win_size"), No, []),
    opt!(PeerDetect, Some('X'), Some("peer-detect"), No, [
        row(Cli, "", "wait for the server's answer to the test header and show its version"),
    ]),
    opt!(Congestion, Some('Z'), Some("tcp-congestion"), Required, [
        row(Both, "<algo>", "TCP congestion control algorithm"),
    ]),
    opt!(Histograms, None, Some("histograms"), Optional, [
        row(Srv, "[=<w>,<n>]", "one-way delays of --trip-times writes in bins after each row"),
        row(Cli, "[=<w>,<n>]", "TCP: time each write, in <w> (100u) wide bins, <n> (100000) of them"),
    ]),
    opt!(HideIps, None, Some("hide-ips"), No, [row(Both, "", "mask addresses and host names in the output")]),
    opt!(JitterHistograms, None, Some("jitter-histograms"), Optional, [
        row(Srv, "[=<us>]", "UDP: delay variations between datagrams in bins of <us> (100) after each row"),
    ]),
    // 2.2.1 still takes 2.1.8's --udp-histogram(s) as --histograms.
    opt!(Histograms, None, Some("udp-histograms"), Optional, []),
    opt!(Unsupported, None, Some("l2checks"), No, []),
    opt!(Unsupported, None, Some("ignore-shutdown"), No, []),
    opt!(Unsupported, None, Some("incr-dstip"), No, []),
    opt!(Unsupported, None, Some("incr-srcip"), No, []),
    opt!(IncrDstport, None, Some("incr-dstport"), No, [
        row(Cli, "", "stream i (from 0) of -P connects to the port plus i"),
    ]),
    opt!(Unsupported, None, Some("incr-srcport"), No, []),
    opt!(Unsupported, None, Some("sum-dstip"), No, []),
    opt!(TxStartTime, None, Some("txstart-time"), Required, [
        row(Cli, "<epoch>", "start sending at this Unix time (seconds[.micro])"),
    ]),
    opt!(TxDelayTime, None, Some("txdelay-time"), Required, [
        row(Cli, "<secs>", "wait this long between connecting and the first data"),
    ]),
    opt!(Unsupported, None, Some("fq-rate"), Required, []),
    opt!(Unsupported, None, Some("fq-rate-step"), Required, []),
    opt!(Unsupported, None, Some("fq-rate-step-interval"), Required, []),
    opt!(TripTimes, None, Some("trip-times"), No, [
        row(Cli, "", "end-to-end latency from the sender's timestamps (synchronised clocks)"),
    ]),
    opt!(NoUdpFin, None, Some("no-udp-fin"), No, [row(Cli, "", "UDP: no end handshake, no server report")]),
    opt!(ConnectOnly, None, Some("connect-only"), Optional, [
        row(Cli, "[=<n>]", "TCP: only connect and close, n times (10; 0 until -t), each -i apart"),
    ]),
    opt!(Unsupported, None, Some("connect-retry-time"), Required, []),
    opt!(Unsupported, None, Some("connect-retry-timer"), Required, []),
    opt!(Unsupported, None, Some("no-connect-sync"), No, []),
    opt!(FullDuplex, None, Some("full-duplex"), No, [
        row(Cli, "", "both directions at once over the same connection"),
    ]),
    opt!(Ipg, None, Some("ipg"), Required, [
        row(Cli, "<ms>", "gap between the datagrams of an --isochronous frame"),
    ]),
    opt!(Isochronous, None, Some("isochronous"), Optional, [
        row(Cli, "[=<fps>:<mean>,<stdev>]", "frames at a frame rate, sizes lognormal around the mean rate"),
    ]),
    opt!(SumOnly, None, Some("sum-only"), No, [row(Both, "", "print only the [SUM] lines")]),
    opt!(Unsupported, None, Some("local-only"), Optional, []),
    opt!(Unsupported, None, Some("near-congestion"), Optional, []),
    opt!(PermitKey, None, Some("permit-key"), Optional, [
        row(Both, "[=<key>]", "TCP: a key the client must present (a server without one makes one up)"),
    ]),
    opt!(Unsupported, None, Some("permit-key-timeout"), Required, []),
    opt!(Unsupported, None, Some("burst-size"), Required, []),
    opt!(Unsupported, None, Some("burst-period"), Required, []),
    opt!(SkipRxCopy, None, Some("skip-rx-copy"), No, [
        row(Srv, "", "TCP: discard data in the kernel (MSG_TRUNC) instead of copying it"),
    ]),
    opt!(Unsupported, None, Some("tos-override"), Required, []),
    opt!(Unsupported, None, Some("tcp-rx-window-clamp"), Required, []),
    opt!(TcpQuickack, None, Some("tcp-quickack"), No, [
        row(Both, "", "TCP: set TCP_QUICKACK before each read (the client asks its server too)"),
    ]),
    opt!(Unsupported, None, Some("tcp-tx-delay"), Required, []),
    opt!(Unsupported, None, Some("tcp-write-prefetch"), Required, []),
    opt!(Unsupported, None, Some("tcp-write-times"), No, []),
    opt!(Unsupported, None, Some("test-exchange-timeout"), Required, []),
    opt!(Unsupported, None, Some("tap-dev"), Optional, []),
    opt!(Unsupported, None, Some("tun-dev"), Optional, []),
    opt!(Unsupported, None, Some("udp-l4s"), No, []),
    opt!(Unsupported, None, Some("udp-l4s-video"), Optional, []),
    opt!(Unsupported, None, Some("working-load"), Optional, []),
    opt!(Unsupported, None, Some("working-load-cca"), Required, []),
    opt!(Unsupported, None, Some("tcp-cca"), Required, []),
    opt!(Utc, None, Some("utc"), No, [row(Both, "", "print times in UTC")]),
    opt!(Unsupported, None, Some("NUM_REPORT_STRUCTS"), Required, []),
    opt!(V4, Some('4'), None, No, []),
    opt!(V6, Some('6'), None, No, []),
];

/// The option a short letter names.
pub(crate) fn by_short(c: char) -> Option<&'static Spec> {
    OPTIONS.iter().find(|s| s.short == Some(c))
}

/// What a long name (without `--`, before any `=`) matches: an exact name, or
/// every option the name abbreviates.
pub(crate) fn by_long(name: &str) -> Vec<&'static Spec> {
    if let Some(s) = OPTIONS.iter().find(|s| s.long == Some(name)) {
        return vec![s];
    }
    OPTIONS
        .iter()
        .filter(|s| s.long.is_some_and(|l| l.starts_with(name)))
        .collect()
}

/// How an option is named in messages: its long name, else its letter.
pub(crate) fn display_name(s: &Spec) -> String {
    match (s.long, s.short) {
        (Some(l), _) => format!("--{l}"),
        (None, Some(c)) => format!("-{c}"),
        (None, None) => String::new(),
    }
}

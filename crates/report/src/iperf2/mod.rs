//! iperf 2's outputs: the records an iperf 2 run reports ([`model`]) and the
//! formatters that print them in iperf 2.2.1's text, enhanced (`-e`) and CSV
//! (`-y C`) layouts (the layout choice and its two exceptions are in
//! [`Printer2`]).

mod connection;
pub use connection::{connect_times_line, tos_note};
mod csv;
mod hist;
pub mod model;
mod rows;
mod settings;
mod units;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod golden_bb;
#[cfg(test)]
mod golden_csv;
#[cfg(test)]
mod golden_extra;
#[cfg(test)]
mod golden_fields;
#[cfg(test)]
mod golden_latency;
#[cfg(test)]
mod golden_parse;
#[cfg(test)]
mod golden_write;

use std::sync::Mutex;

use model::{Event2, Layout2, Row2, Side2, Tag2};
use rows::{Header, RowUse};
use units::{civil, date_ms};

/// The line an `--isochronous` sender prints on stderr after "Sent" (2.2.1):
/// "[  1] Isoch schedule errors (mean/min/max/stdev) = 0.243/0.071/3.770/0.683 ms",
/// how far each frame left from its slot, in milliseconds.
pub fn isoch_schedule_line(
    tag: Tag2,
    mean_ms: f64,
    min_ms: f64,
    max_ms: f64,
    stdev_ms: f64,
) -> String {
    format!(
        "{}Isoch schedule errors (mean/min/max/stdev) = {mean_ms:.3}/{min_ms:.3}/{max_ms:.3}/{stdev_ms:.3} ms",
        rows::tag(tag)
    )
}

/// Where an iperf 2 run's events go. Shared by a server's concurrent tests.
pub trait Report2: Send + Sync {
    /// Reports one event.
    fn event(&self, e: Event2);
}

/// Where a printer's lines go: one call per line, without its newline.
pub type LineOut = Box<dyn FnMut(&str) + Send>;

/// Prints events as iperf 2 text or CSV lines through `out` (one call per
/// line, without its newline), which must never block the caller.
///
/// The layout is iperf 2.2.1's (the newest), with two deliberate differences
/// where 2.2.1's output is wrong: a client's "Server Report" prints the real
/// loss percentage (2.2.1 always prints `(0%)`), and a UDP client's
/// `IPG target:` prints the real gap (2.2.1 prints `0.00 us`).
///
/// Column-title lines are printed once while tests run, as iperf 2 does: a
/// server's concurrent tests share them, and they are printed again for the
/// first test after every test has ended.
pub struct Printer2 {
    side: Side2,
    layout: Layout2,
    state: Mutex<State>,
}

struct State {
    out: LineOut,
    /// Header kinds printed since the printer last went idle, one bit each.
    headers: u32,
    /// CSV field-name lines printed, one bit per row kind.
    csv_headers: u32,
    /// Streams connected and not yet ended, by transfer id.
    live: Vec<u32>,
    /// A Server Report was printed since the printer last went idle: iperf 2
    /// heads the first one with its own `[ ID]` line even when receiver rows
    /// (a `-d`/`-r` direction back) already printed the same one.
    report_headed: bool,
}

impl std::fmt::Debug for Printer2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer2")
            .field("side", &self.side)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl Printer2 {
    /// A printer for `side` in `layout`.
    pub fn new(side: Side2, layout: Layout2, out: LineOut) -> Self {
        Self {
            side,
            layout,
            state: Mutex::new(State {
                out,
                headers: 0,
                csv_headers: 0,
                live: Vec::new(),
                report_headed: false,
            }),
        }
    }
}

impl State {
    fn emit(&mut self, line: &str) {
        (self.out)(line);
    }

    fn header(&mut self, h: Header) {
        if self.headers & h.bit() == 0 {
            self.headers |= h.bit();
            self.emit(&h.text());
        }
    }

    /// A stream connected: the first one after an idle spell starts a new
    /// run of headers.
    fn connected(&mut self, tag: Tag2) {
        if self.live.is_empty() {
            self.headers = 0;
            self.csv_headers = 0;
            self.report_headed = false;
        }
        if let Tag2::Id(n) | Tag2::ReverseId(n) = tag {
            if !self.live.contains(&n) {
                self.live.push(n);
            }
        }
    }

    fn ended(&mut self, tag: Tag2) {
        if let Tag2::Id(n) | Tag2::ReverseId(n) = tag {
            self.live.retain(|&m| m != n);
        }
    }
}

fn is_stream(tag: Tag2) -> bool {
    !matches!(tag, Tag2::Sum(_) | Tag2::FullDuplex(_))
}

impl Printer2 {
    /// Data rows are off with `-x D`; `--sum-only` keeps only the sums.
    fn shows(&self, r: &Row2) -> bool {
        !(self.layout.no_data || (self.layout.sum_only && is_stream(r.tag)))
    }

    fn row(&self, st: &mut State, r: &Row2, used: RowUse, last: bool) {
        let l = &self.layout;
        if l.csv {
            // 2.2.1 has no CSV record for a full-duplex pair.
            if used == RowUse::ServerReport || matches!(r.tag, Tag2::FullDuplex(_)) {
                return;
            }
            if l.enhanced {
                let bit = 1 << kind_index(&r.kind);
                if st.csv_headers & bit == 0 {
                    st.csv_headers |= bit;
                    st.emit(csv::header(&r.kind));
                }
            }
            let line = csv::record(r, l, self.side, last);
            st.emit(&line);
            return;
        }
        let (header, lines) = rows::row(r, l, self.side, used);
        st.header(header);
        for line in &lines {
            st.emit(line);
        }
    }
}

fn kind_index(k: &model::RowKind2) -> u32 {
    match k {
        model::RowKind2::TcpSend(_) => 0,
        model::RowKind2::TcpRecv(_) => 1,
        model::RowKind2::UdpSend(_) => 2,
        model::RowKind2::UdpRecv(_) => 3,
        model::RowKind2::Bounceback(_) => 4,
        model::RowKind2::UdpDuplex(_) => 5,
    }
}

impl Report2 for Printer2 {
    fn event(&self, e: Event2) {
        let l = &self.layout;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match e {
            Event2::Settings(s) => {
                if !l.csv && !l.no_settings {
                    for line in settings::block(&s, l) {
                        st.emit(&line);
                    }
                }
            }
            Event2::Connected(c) => {
                st.connected(c.tag);
                if !l.csv && !l.no_connection && !l.sum_only {
                    let line = connection::line(&c, l);
                    st.emit(&line);
                }
            }
            Event2::Interval(r) => {
                if self.shows(&r) {
                    self.row(&mut st, &r, RowUse::Own, false);
                }
            }
            Event2::Final(r) => {
                if self.shows(&r) {
                    self.row(&mut st, &r, RowUse::Own, true);
                }
                st.ended(r.tag);
            }
            Event2::Sent { tag, datagrams } => {
                if l.csv || l.no_data || (l.sum_only && is_stream(tag)) {
                    return;
                }
                let prefix = match tag {
                    Tag2::Sum(n) => rows::sumcnt_tag(n),
                    t => rows::tag(t),
                };
                st.emit(&format!("{prefix}Sent {datagrams} datagrams"));
            }
            Event2::ServerReport(r) => {
                if l.csv || l.no_server_report {
                    return;
                }
                // The report on a `-d`/`-r` direction back (`[ *2]` rows) is
                // headed `[  2] Server Report:`, as iperf 2 heads it.
                let head = match r.tag {
                    Tag2::ReverseId(n) => Tag2::Id(n),
                    t => t,
                };
                st.emit(&format!("{}Server Report:", rows::tag(head)));
                if !std::mem::replace(&mut st.report_headed, true) {
                    st.headers &= !(Header::JitterLoss.bit()
                        | Header::JitterLossEnh.bit()
                        | Header::JitterLossTrip.bit());
                }
                self.row(&mut st, &r, RowUse::ServerReport, true);
            }
            Event2::TxStart { tag, start, now } => {
                if !l.csv {
                    let zone = l.tz_name.as_deref().unwrap_or("UTC");
                    let left = start.duration_since(now).unwrap_or_default();
                    let at = date_ms(civil(start, l.utc_offset_secs));
                    let now = date_ms(civil(now, l.utc_offset_secs));
                    // 2.2.1 prints the start to the second, the time now
                    // to the millisecond with -e only.
                    let second = |t: &str| t.split('.').next().unwrap_or_default().to_string();
                    st.emit(&format!(
                        "{}Client traffic to start in {} seconds at {} current time is {} ({zone})",
                        rows::tag(tag),
                        left.as_secs_f64().ceil(),
                        second(&at),
                        if l.enhanced { now } else { second(&now) }
                    ));
                }
            }
            Event2::Histogram(h) => {
                if !l.csv && !l.no_data {
                    st.emit(&hist::line(&h));
                }
            }
            Event2::Message(m) => st.emit(&m),
            Event2::Line(t) => {
                if !l.csv {
                    st.emit(&t);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::golden::print;
    use super::model::*;
    use std::time::UNIX_EPOCH;

    fn row(tag: Tag2, kind: RowKind2, bytes: u64) -> Row2 {
        Row2 {
            tag,
            addrs: None,
            start: 0.0,
            end: 1.0,
            bytes,
            kind,
            at: UNIX_EPOCH,
        }
    }

    fn conn(n: u32) -> Event2 {
        Event2::Connected(Connection2 {
            tag: Tag2::Id(n),
            local: ([127, 0, 0, 1], 5001).into(),
            device: None,
            peer: ([127, 0, 0, 1], 40000 + n as u16).into(),
            notes: vec![],
            peer_version: None,
            tcp: None,
            connect_time: None,
            connect_only: false,
            at: UNIX_EPOCH,
        })
    }

    fn tcp_recv(n: u32) -> Row2 {
        row(
            Tag2::Id(n),
            RowKind2::TcpRecv(TcpRecv2::default()),
            125_000_000,
        )
    }

    #[test]
    fn headers_print_once_while_tests_overlap_and_again_after_idle() {
        let l = Layout2::default();
        // Two overlapping tests on one server share the header...
        let got = print(
            Side2::Server,
            &l,
            vec![
                conn(1),
                conn(2),
                Event2::Interval(tcp_recv(1)),
                Event2::Final(tcp_recv(1)),
                Event2::Interval(tcp_recv(2)),
                Event2::Final(tcp_recv(2)),
                // ...and a later test, after both ended, gets it again.
                conn(3),
                Event2::Final(tcp_recv(3)),
            ],
        );
        let heads = got.iter().filter(|x| x.starts_with("[ ID]")).count();
        assert_eq!(heads, 2, "{got:#?}");
        assert_eq!(got[2], "[ ID] Interval       Transfer     Bandwidth");
        assert_eq!(got[3], "[  1] 0.00-1.00 sec   119 MBytes  1.00 Gbits/sec");
        assert_eq!(got[8], "[ ID] Interval       Transfer     Bandwidth");
    }

    fn udp_report() -> Row2 {
        row(
            Tag2::Id(1),
            RowKind2::UdpRecv(UdpRecv2 {
                jitter: 12e-6,
                lost: 3,
                total: 851,
                out_of_order: 2,
                ..UdpRecv2::default()
            }),
            1_246_560,
        )
    }

    #[test]
    fn a_dual_tests_reports_are_headed_as_iperf_2_heads_them() {
        // Server side of -d (2.2.1): receiver rows, the direction back, then
        // "[  2] Server Report:" with its own header line and the `[ *2]` row.
        let back = Row2 {
            tag: Tag2::ReverseId(2),
            ..udp_report()
        };
        let got = print(
            Side2::Server,
            &Layout2::default(),
            vec![
                conn(1),
                Event2::Final(udp_report()),
                Event2::ServerReport(back.clone()),
                Event2::ServerReport(back),
            ],
        );
        let head =
            "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams";
        let at = got
            .iter()
            .position(|l| l == "[  2] Server Report:")
            .unwrap();
        assert_eq!(got[at + 1], head, "{got:#?}");
        assert!(got[at + 2].starts_with("[ *2] 0.00-1.00 sec"), "{got:#?}");
        // Only the first report is headed.
        assert_eq!(got.iter().filter(|l| *l == head).count(), 2, "{got:#?}");
    }

    #[test]
    fn exclusions_drop_what_they_name() {
        let settings = Settings2 {
            side: Side2::Server,
            proto: Proto2::Udp,
            host: None,
            port: 5001,
            pid: 7,
            flows: 1,
            len: 1470,
            ipg_us: None,
            window: 212_992,
            window_requested: false,
            requested_window: None,
            congestion: None,
            congestion_asked: None,
            tos: 0,
            tos_by_dscp: false,
            connect_only: false,
            nodelay: false,
            mss: None,
            multicast: Some(Multicast2 {
                group: "239.1.1.1".into(),
                source: None,
            }),
            ttl: None,
            mode_note: None,
            trip_times: false,
            bounceback: None,
            histograms: false,
            hist_bins: Default::default(),
            jitter_bin_us: None,
            isoch: None,
        };
        let events = || {
            vec![
                Event2::Settings(settings.clone()),
                conn(1),
                Event2::Interval(udp_report()),
                Event2::Sent {
                    tag: Tag2::Id(1),
                    datagrams: 851,
                },
                Event2::ServerReport(udp_report()),
            ]
        };
        let all = print(Side2::Client, &Layout2::default(), events());
        assert!(all
            .iter()
            .any(|l| l == "Joining multicast group  239.1.1.1"));
        assert!(all.iter().any(|l| l == "[  1] Server Report:"));
        // The out-of-order count gets its own line.
        assert!(all
            .iter()
            .any(|l| l == "[  1] 0.00-1.00 sec  2 datagrams received out-of-order"));
        let no_m = print(
            Side2::Client,
            &Layout2 {
                no_multicast: true,
                ..Layout2::default()
            },
            events(),
        );
        assert!(!no_m.iter().any(|l| l.contains("multicast")), "{no_m:#?}");
        assert_eq!(no_m.len(), all.len() - 2);
        let no_v = print(
            Side2::Client,
            &Layout2 {
                no_server_report: true,
                ..Layout2::default()
            },
            events(),
        );
        assert!(!no_v.iter().any(|l| l.contains("Server Report")));
        let no_d = print(
            Side2::Client,
            &Layout2 {
                no_data: true,
                ..Layout2::default()
            },
            events(),
        );
        // -x D drops the rows and "Sent"; the server report is -x V's.
        let secs = |v: &[String]| v.iter().filter(|l| l.contains(" sec ")).count();
        assert_eq!((secs(&all), secs(&no_d)), (4, 2), "{no_d:#?}");
        assert!(!no_d.iter().any(|l| l.contains("Sent")));
        // CSV has rows only: no blocks, connection lines, Sent or reports.
        let csv = print(
            Side2::Client,
            &Layout2 {
                csv: true,
                ..Layout2::default()
            },
            events(),
        );
        assert_eq!(
            csv,
            ["19700101000000,127.0.0.1,5001,127.0.0.1,5001,1,0.0-1.0,1246560,9972480,0.012,3,851,0.353,2"
                .replace(",127.0.0.1,5001,127.0.0.1,5001,", ",0.0.0.0,0,0.0.0.0,0,")]
        );
    }

    #[test]
    fn f_letters_fix_the_units() {
        let r = || Event2::Final(tcp_recv(1));
        for (f, want) in [
            (
                Some('k'),
                "[  1] 0.00-1.00 sec  122070 KBytes  1000000 Kbits/sec",
            ),
            (
                Some('m'),
                "[  1] 0.00-1.00 sec   119 MBytes  1000 Mbits/sec",
            ),
            (
                Some('M'),
                "[  1] 0.00-1.00 sec   119 MBytes   119 MBytes/sec",
            ),
            (
                Some('g'),
                "[  1] 0.00-1.00 sec  0.116 GBytes  1.00 Gbits/sec",
            ),
            (
                Some('b'),
                "[  1] 0.00-1.00 sec  125000000 Bytes  1000000000 bits/sec",
            ),
        ] {
            let l = Layout2 {
                format: f,
                ..Layout2::default()
            };
            let got = print(Side2::Server, &l, vec![conn(1), r()]);
            assert_eq!(got[2], want, "-f {f:?}");
        }
    }

    #[test]
    fn enhanced_rows_without_figures_print_iperf2s_placeholders() {
        let l = Layout2 {
            enhanced: true,
            ..Layout2::default()
        };
        // A sender with no RTT sample: NetPwr is NAN (2.2.1's -R server).
        let send = row(Tag2::Id(1), RowKind2::TcpSend(TcpSend2::default()), 1 << 20);
        let got = print(Side2::Server, &l, vec![conn(1), Event2::Final(send)]);
        assert!(
            got[2].ends_with("0/0         0        0K(0)/0K(0)/0(0) us  NAN"),
            "{}",
            got[2]
        );
        // A receiver without latency samples: dashes and no NetPwr.
        let got = print(
            Side2::Server,
            &l,
            vec![conn(1), Event2::Final(udp_report())],
        );
        assert!(
            got[2].ends_with(" 0.012 ms 3/851 (0.35%) -/-/-/- ms 848 pps 0/0/0"),
            "{}",
            got[2]
        );
    }
}

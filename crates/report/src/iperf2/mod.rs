//! iperf 2's outputs: the records an iperf 2 run reports ([`model`]) and the
//! formatters that print them in iperf 2.2.1's text, enhanced (`-e`) and CSV
//! (`-y C`) layouts (the layout choice and its two exceptions are in
//! [`Printer2`]).

mod connection;
mod csv;
pub mod model;
mod rows;
mod settings;
mod units;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod golden_csv;
#[cfg(test)]
mod golden_parse;

use std::sync::Mutex;

use model::{Event2, Layout2, Row2, Side2, Tag2};
use rows::{Header, RowUse};

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
    !matches!(tag, Tag2::Sum(_))
}

impl Printer2 {
    /// Data rows are off with `-x D`; `--sum-only` keeps only the sums.
    fn shows(&self, r: &Row2) -> bool {
        !(self.layout.no_data || (self.layout.sum_only && is_stream(r.tag)))
    }

    fn row(&self, st: &mut State, r: &Row2, used: RowUse, last: bool) {
        let l = &self.layout;
        if l.csv {
            if used == RowUse::ServerReport {
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
                st.emit(&format!("{}Server Report:", rows::tag(r.tag)));
                self.row(&mut st, &r, RowUse::ServerReport, true);
            }
            Event2::Message(m) => st.emit(&m),
        }
    }
}

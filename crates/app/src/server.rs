//! The server: a listener that hosts one session per control connection.
//!
//! The listener holds no test state. While a session is creating its streams,
//! new connections on the port are its data streams; otherwise a connection is a
//! new control connection, refused with ACCESS_DENIED while a test runs (iperf3's
//! policy; the session structure allows concurrent tests later).

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rperf3_proto::{IperfError, ACCESS_DENIED_BYTES, IE_LISTEN};
use rperf3_report::Reporter;

use crate::config::{CommonConfig, ServerConfig};
use crate::interrupt::Interrupt;
use crate::session::{Session, SessionLink};
use crate::Outcome;

/// How often the accept loop wakes without events (to reap finished sessions).
const ACCEPT_TICK: Duration = Duration::from_millis(100);

struct Active {
    link: Arc<SessionLink>,
    streams: Sender<TcpStream>,
    stop: std::os::unix::net::UnixStream,
    thread: JoinHandle<bool>,
}

/// Serves tests until interrupted (or after one with `-1`). `make_reporter` is
/// called once per test, before its banner is printed.
pub fn serve(
    sc: &ServerConfig,
    common: &CommonConfig,
    mut make_reporter: impl FnMut() -> Reporter,
    intr: &mut Interrupt,
) -> Outcome {
    let listener = match rperf3_sys::net::listen_tcp(
        common.bind.as_deref(),
        common.port,
        common.family.into(),
    ) {
        Ok(l) => l,
        Err(e) => {
            let mut rep = make_reporter();
            return Outcome::finish(&mut rep, Some(IperfError::from_io(IE_LISTEN, &e)));
        }
    };
    let mut test_number: u64 = 1;
    let mut rep = Some(make_reporter());
    if let Some(r) = rep.as_mut() {
        r.server_banner(common.port, test_number);
    }
    let mut active: Option<Active> = None;
    loop {
        let ready = match rperf3_sys::poll::wait_readable(
            &[listener_fd(&listener), intr.fd()],
            ACCEPT_TICK,
        ) {
            Ok(r) => r,
            Err(_) => vec![false, false],
        };
        if ready[1] && intr.triggered() {
            if let Some(a) = active.take() {
                let mut stop = a.stop;
                let _ = stop.write_all(b"x");
                let _ = a.thread.join();
            }
            // Signal exit: iperf3 3.19+ exits 0.
            if let Some(mut r) = rep.take() {
                r.interrupted(&IperfError::new(rperf3_proto::IE_SERVER_TERM).text());
                let _ = r.finish();
            }
            return Outcome { status: 0 };
        }
        if ready[0] {
            if let Ok((conn, peer)) = listener.accept() {
                // A session that is only tidying up is waited for (bounded by its
                // own close deadline), so back-to-back clients are never refused.
                if active
                    .as_ref()
                    .is_some_and(|a| a.link.finishing() && !a.link.wants_streams())
                {
                    let a = active.take().expect("checked above");
                    match reap(a, sc, common, &mut test_number, &mut make_reporter) {
                        Reaped::Exit => {
                            refuse(conn);
                            return Outcome { status: 0 };
                        }
                        Reaped::Next(r) => rep = Some(*r),
                    }
                }
                match &active {
                    Some(a) if a.link.wants_streams() => {
                        let _ = a.streams.send(conn);
                    }
                    Some(_) => refuse(conn),
                    None => {
                        let r = rep.take().unwrap_or_else(&mut make_reporter);
                        match start_session(conn, peer, r, common) {
                            Ok(a) => active = Some(a),
                            Err(e) => eprintln!("rperf3: unable to start a session: {e}"),
                        }
                    }
                }
            }
        }
        if active.as_ref().is_some_and(|a| a.thread.is_finished()) {
            let a = active.take().expect("checked above");
            match reap(a, sc, common, &mut test_number, &mut make_reporter) {
                Reaped::Exit => return Outcome { status: 0 },
                Reaped::Next(r) => rep = Some(*r),
            }
        }
    }
}

enum Reaped {
    /// `-1` and the test counted: the server exits.
    Exit,
    /// The next test's reporter, banner printed.
    Next(Box<Reporter>),
}

/// Joins a finished (or finishing) session and prepares for the next test.
fn reap(
    a: Active,
    sc: &ServerConfig,
    common: &CommonConfig,
    test_number: &mut u64,
    make_reporter: &mut impl FnMut() -> Reporter,
) -> Reaped {
    let counted = a.thread.join().unwrap_or(true);
    if sc.one_off && counted {
        return Reaped::Exit;
    }
    if counted {
        *test_number += 1;
    }
    let mut r = make_reporter();
    r.server_banner(common.port, *test_number);
    Reaped::Next(Box::new(r))
}

fn listener_fd(l: &TcpListener) -> std::os::fd::BorrowedFd<'_> {
    use std::os::fd::AsFd;
    l.as_fd()
}

/// ACCESS_DENIED before reading the cookie, then close (as iperf3).
fn refuse(mut conn: TcpStream) {
    let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = conn.write_all(&ACCESS_DENIED_BYTES);
}

fn start_session(
    conn: TcpStream,
    peer: std::net::SocketAddr,
    rep: Reporter,
    common: &CommonConfig,
) -> std::io::Result<Active> {
    let link = Arc::new(SessionLink::default());
    let (tx, rx) = mpsc::channel();
    let (stop_rx, stop_tx) = Interrupt::pair()?;
    let session = Session::new(conn, peer, rep, common.clone(), link.clone(), rx, stop_rx)?;
    let thread = std::thread::Builder::new()
        .name("session".into())
        .spawn(move || session.run())?;
    Ok(Active {
        link,
        streams: tx,
        stop: stop_tx,
        thread,
    })
}

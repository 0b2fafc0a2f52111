//! The one way the server turns a connection away: ACCESS_DENIED (0xFF), as
//! iperf3 answers a client it is too busy for or a data connection no test
//! expects, then close.

use std::io::Write;
use std::net::TcpStream;

use rperf3_proto::ACCESS_DENIED_BYTES;

/// Writes ACCESS_DENIED and drops the connection, best effort and never
/// blocking: a client that does not read cannot hold the caller.
pub(crate) fn access_denied(conn: TcpStream) {
    let _ = conn.set_nonblocking(true);
    let _ = (&conn).write(&ACCESS_DENIED_BYTES);
}

//! Blocking reads and writes of probe frames, each with an absolute deadline.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rperf3_proto::probe::{Frame, ProbeDecoder};

/// Time left until `deadline`, or `TimedOut` when none is.
fn left(deadline: Instant) -> io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "probe deadline"));
    }
    Ok(d)
}

/// The next frame from `sock`, read by `deadline`. Bytes that are no frame are
/// `InvalidData` (with the decoder's reason); a close is `UnexpectedEof`.
pub(crate) fn read_frame(
    sock: &TcpStream,
    dec: &mut ProbeDecoder,
    deadline: Instant,
) -> io::Result<Frame> {
    let mut buf = [0u8; 2048];
    loop {
        match dec.next_frame() {
            Ok(Some(f)) => return Ok(f),
            Ok(None) => {}
            Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
        }
        sock.set_read_timeout(Some(left(deadline)?))?;
        match (&*sock).read(&mut buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => dec.push(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes `bytes` whole by `deadline`.
pub(crate) fn write_all(sock: &TcpStream, bytes: &[u8], deadline: Instant) -> io::Result<()> {
    sock.set_write_timeout(Some(left(deadline)?))?;
    (&*sock).write_all(bytes)
}

/// Whether an error only means "the time is up".
pub(crate) fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_proto::probe::Request;
    use std::net::TcpListener;

    #[test]
    fn frames_cross_and_silence_times_out_at_the_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let f = Frame::Request(Request::new(4, 5, 100, 100));
        let soon = Instant::now() + Duration::from_secs(2);
        write_all(&a, &f.encode(), soon).unwrap();
        let mut dec = ProbeDecoder::new();
        assert_eq!(read_frame(&b, &mut dec, soon).unwrap(), f);
        let t = Instant::now();
        let e = read_frame(&b, &mut dec, t + Duration::from_millis(150)).unwrap_err();
        assert!(timed_out(&e), "{e}");
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(1));
        (&a).write_all(b"GET / HTTP/1.0\r\n").unwrap();
        let e = read_frame(&b, &mut dec, soon).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("not a probe frame"), "{e}");
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (d, _) = l.accept().unwrap();
        drop(c);
        let mut dec = ProbeDecoder::new();
        let e = read_frame(&d, &mut dec, soon).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}

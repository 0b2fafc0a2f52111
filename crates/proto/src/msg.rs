//! The one-byte state codes that travel on the control connection.
//!
//! iperf3 sends its state machine's state as a signed byte; the reader has to know
//! the meaning of each value, including the negative ones, and reject all others.

/// A state code as it appears on the control connection (spec §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum Msg {
    /// 1: server → client, streams are set up; start timers.
    TestStart = 1,
    /// 2: server → client, start moving data.
    TestRunning = 2,
    /// 3: defined, never used.
    ResultRequest = 3,
    /// 4: client → server, the test is over.
    TestEnd = 4,
    /// 5: defined, never used.
    StreamBegin = 5,
    /// 6: defined, never used.
    StreamRunning = 6,
    /// 7: defined, never used.
    StreamEnd = 7,
    /// 8: defined, never used.
    AllStreamsEnd = 8,
    /// 9: server → client, "send me your parameters".
    ParamExchange = 9,
    /// 10: server → client, "open your data streams now".
    CreateStreams = 10,
    /// 11: server → client, the server was killed.
    ServerTerminate = 11,
    /// 12: client → server, the client was killed.
    ClientTerminate = 12,
    /// 13: server → client, "send me your results".
    ExchangeResults = 13,
    /// 14: server → client, results exchanged, print the report.
    DisplayResults = 14,
    /// 15: the server's idle state; never sent.
    IperfStart = 15,
    /// 16: client → server, the client is finished.
    IperfDone = 16,
    /// -1 (0xFF): server busy, or bad cookie on a data connection.
    AccessDenied = -1,
    /// -2 (0xFE): followed by an error code and errno (int32 BE each).
    ServerError = -2,
}

impl Msg {
    /// Decodes a byte read from the control connection. `None` for values iperf3
    /// does not define (0, 17..=253): the reader then fails with error 110.
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b as i8 {
            1 => Self::TestStart,
            2 => Self::TestRunning,
            3 => Self::ResultRequest,
            4 => Self::TestEnd,
            5 => Self::StreamBegin,
            6 => Self::StreamRunning,
            7 => Self::StreamEnd,
            8 => Self::AllStreamsEnd,
            9 => Self::ParamExchange,
            10 => Self::CreateStreams,
            11 => Self::ServerTerminate,
            12 => Self::ClientTerminate,
            13 => Self::ExchangeResults,
            14 => Self::DisplayResults,
            15 => Self::IperfStart,
            16 => Self::IperfDone,
            -1 => Self::AccessDenied,
            -2 => Self::ServerError,
            _ => return None,
        })
    }

    /// The byte on the wire.
    pub fn to_byte(self) -> u8 {
        self as i8 as u8
    }

    /// The signed value iperf3 uses for this state.
    pub fn value(self) -> i8 {
        self as i8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_or_is_unknown() {
        let mut known = 0;
        for b in 0..=255u8 {
            if let Some(m) = Msg::from_byte(b) {
                assert_eq!(m.to_byte(), b);
                known += 1;
            }
        }
        assert_eq!(known, 18);
    }

    #[test]
    fn negative_codes_use_twos_complement_bytes() {
        assert_eq!(Msg::AccessDenied.to_byte(), 0xFF);
        assert_eq!(Msg::ServerError.to_byte(), 0xFE);
        assert_eq!(Msg::from_byte(0xFE), Some(Msg::ServerError));
        assert_eq!(Msg::from_byte(0), None);
        assert_eq!(Msg::from_byte(17), None);
        assert_eq!(Msg::IperfDone.to_byte(), 0x10);
        assert_eq!(Msg::CreateStreams.value(), 10);
    }
}

//! What a control-connection machine wants written, in order.
//!
//! The machines never touch the socket: each message they decide to send is
//! queued with the error a failed write of it means (111, 113 or 116), and the
//! driver writes the queue out ([`Outbox::pop`] through the machines'
//! `poll_transmit`). So every send of the protocol has its error code in one
//! place, beside the message.

use std::collections::VecDeque;

use crate::error_codes::{IE_SEND_MESSAGE, IE_SEND_PARAMS, IE_SEND_RESULTS};
use crate::msg::Msg;

/// Bytes for the control connection and the error their failed write means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// What to write.
    pub bytes: Vec<u8>,
    /// The iperf3 error code if the write fails.
    pub error: i32,
}

/// A machine's queue of writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outbox(VecDeque<Transmit>);

impl Outbox {
    /// One state byte (error 111 on failure).
    pub(crate) fn msg(&mut self, m: Msg) {
        self.push(vec![m.to_byte()], IE_SEND_MESSAGE);
    }

    /// Bytes that are not a state byte alone (a SERVER_ERROR with its codes).
    pub(crate) fn message_bytes(&mut self, bytes: Vec<u8>) {
        self.push(bytes, IE_SEND_MESSAGE);
    }

    /// The framed parameters document (error 113).
    pub(crate) fn params(&mut self, bytes: Vec<u8>) {
        self.push(bytes, IE_SEND_PARAMS);
    }

    /// The framed results document (error 116).
    pub(crate) fn results(&mut self, bytes: Vec<u8>) {
        self.push(bytes, IE_SEND_RESULTS);
    }

    fn push(&mut self, bytes: Vec<u8>, error: i32) {
        self.0.push_back(Transmit { bytes, error });
    }

    /// The oldest write not yet taken.
    pub(crate) fn pop(&mut self) -> Option<Transmit> {
        self.0.pop_front()
    }
}

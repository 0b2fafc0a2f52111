//! The iperf3 wire protocol without sockets or clocks.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

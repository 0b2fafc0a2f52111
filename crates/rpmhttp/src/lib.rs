//! The responsiveness (RPM) protocol as the world's tools speak it: HTTP/2
//! over TLS 1.3 with a config, a 1-byte `small`, an endless `large` and an
//! upload sink (the IETF responsiveness draft; macOS's `networkQuality` and
//! goresponsiveness are its clients).
//!
//! [`server`] serves the endpoints beside the iperf3 port (`--rpm-http`); its
//! visitors take the iperf3 server's test slots. [`client`] runs the method
//! against any such server (`--rpm-url`) through the same stage loop and
//! report as `--rpm`. Everything here runs on this crate's own runtime threads.

pub mod client;
pub mod endpoints;
pub mod server;
pub mod tls;
pub mod visitors;

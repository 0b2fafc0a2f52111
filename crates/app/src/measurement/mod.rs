//! The test both sides run: the plan made from the parameters, the control
//! loop that takes it from setup to results, the data streams and their
//! workers, interval sampling and the final figures. The client and the server
//! differ only in who connects the streams and who decides the end.

pub(crate) mod bounceback;
pub(crate) mod choice;
pub(crate) mod cpu;
pub(crate) mod ctrl;
pub(crate) mod diskfile;
pub(crate) mod driver;
pub(crate) mod plan;
pub(crate) mod pool;
pub(crate) mod ratelimit;
pub(crate) mod run;
pub(crate) mod sampler;
pub(crate) mod setup;
pub(crate) mod sockopts;
pub(crate) mod streams;
pub(crate) mod tcp_stamps;
pub(crate) mod ticker;
pub(crate) mod udp_setup;
pub(crate) mod udp_wire;
pub(crate) mod workers;

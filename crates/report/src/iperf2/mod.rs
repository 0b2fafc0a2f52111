//! iperf 2's outputs: the records an iperf 2 run reports ([`model`]) and the
//! formatters that print them in iperf 2's text, enhanced (`-e`) and CSV
//! (`-y C`) layouts.

pub mod model;

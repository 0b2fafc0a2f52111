//! The integration suite, one test binary: end-to-end runs of the rperf3 binary,
//! raw-bytes server tests, interop with stock iperf3, and output checks. The
//! network-namespace ground truth is its own binary (`tests/netns_ground_truth.rs`):
//! its rate measurements need the machine to themselves, and cargo runs test
//! binaries one after another.

#[macro_use]
mod common;

mod affinity;
mod auth;
mod auth_inputs;
mod blocked_output;
mod bounceback;
mod contrib;
mod copy_options;
mod corked_senders;
mod e2e_cli;
mod e2e_output;
mod e2e_tcp;
mod e2e_udp;
mod file_option;
mod generate;
mod hostile_clients;
mod hostile_control;
mod interop_p128;
mod interop_tcp;
mod interop_udp;
mod interop_v6;
mod iperf2_bounceback_calls;
mod iperf2_bulk_paths;
mod iperf2_cli;
mod iperf2_connect_only;
mod iperf2_enhanced;
mod iperf2_hist_udp;
mod iperf2_incr_dstport;
mod iperf2_isoch;
mod iperf2_latency;
mod iperf2_layout;
mod iperf2_mss;
mod iperf2_quickack;
mod iperf2_single_client;
mod iperf2_tcp;
mod iperf2_tcp_isoch;
mod iperf2_tos;
mod iperf2_trip_back;
mod iperf2_txdelay;
mod iperf2_udp;
mod iperf2_udp_dual;
mod iperf2_udp_interrupt;
mod iperf2_udp_read_len;
mod iperf2_udp_text;
mod iperf2_udp_two_way_sums;
mod json_shape;
mod latency_data_owd;
mod latency_interop;
mod latency_probe;
mod logging;
mod many_streams;
mod mesh;
mod metrics;
mod metrics_delays;
mod metrics_outcomes;
mod module_circles;
mod mptcp;
mod multi_test;
mod multi_test_kill;
mod plot;
mod prerelease;
mod raw_server;
mod read_placement;
mod rpm_client;
mod rpm_http;
mod rpm_server;
mod sctp;
mod server_ops;
mod soak;
mod sockopts;

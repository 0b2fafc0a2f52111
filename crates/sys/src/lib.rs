//! Every OS call rperf3 makes. The only crate allowed `unsafe`.
#![deny(missing_docs)]

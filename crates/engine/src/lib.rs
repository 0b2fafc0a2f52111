//! Stream workers, pacing, counters and UDP receive statistics.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

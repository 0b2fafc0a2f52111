//! Client and server drivers: protocol, engine and report tied together.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod config;

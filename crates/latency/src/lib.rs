//! The latency core: every round trip, one-way delay, percentile, trimmed mean and RPM
//! that rperf3 reports is computed here, once, and fed to every output (iperf3 text and
//! JSON, iperf 2 text and CSV, plots, metrics). Formatters only print what it gives.
//!
//! Nothing here touches a socket; clocks are read only in [`clock`], so the rest is
//! tested with made-up samples.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bins;
pub mod clock;
pub mod figures;
pub mod histogram;
pub mod oneway;
pub mod oneway_wire;
pub mod rpm;
pub mod rpm_plan;
pub mod stability;
pub mod summary;
pub mod transit;

pub use bins::Binned;
pub use clock::{wall_ns, Clock};
pub use figures::{Collector, Figures, Kind, Samples, Way};
pub use histogram::{Histogram, Parts};
pub use oneway::OneWay;
pub use rpm::{rpm, trimmed_mean_ms, Band, Responsiveness};
pub use rpm_plan::{Action, IntervalData, Load, Params, RpmRun, Stage, StagePlan, StageResult};
pub use stability::{Confidence, Stability};
pub use summary::Summary;
pub use transit::{Jitter, Transit};

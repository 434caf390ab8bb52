//! The convert Lambda: S3 object notifications arrive through SQS, and each named upload is
//! converted by [`proflake::process_upload`] into Sample v2 chunks and Parquet stack tables.
//!
//! This crate only parses events, picks the stores, runs the pipeline off the async runtime,
//! and reports: per-message batch failures to SQS, one log line per object, and CloudWatch
//! EMF metrics per batch. Conversion logic lives in `proflake`.

#![warn(missing_docs)]

mod app;
mod batch;
mod config;
mod logging;
mod metrics;
mod object;
mod tally;

pub use app::App;
pub use batch::{function_handler, handle_batch};
pub use config::{
    Config, ConfigError, LogFormat, DEFAULT_CONCURRENCY, DEFAULT_FUNCTION_NAME,
    DEFAULT_METRICS_NAMESPACE,
};
pub use logging::init_logging;
pub use metrics::{emf_documents, print_documents, MetricsTarget};
pub use tally::BatchTally;

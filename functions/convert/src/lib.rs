//! The convert Lambda: S3 object notifications arrive through SQS, and each named upload is
//! converted by [`proflake::process_upload`] into Sample v2 chunks and Parquet stack tables.
//!
//! This crate only turns a message's notification into `process_upload` calls, off the async
//! runtime, and counts and logs their outcomes (one log line per object). The plumbing it
//! shares with the other functions (settings, logging, S3 stores, batches with per-message
//! failures for SQS, CloudWatch EMF metrics) is `proflake_lambda`; conversion logic lives in
//! `proflake`.

#![warn(missing_docs)]

mod app;
mod config;
mod function;
mod object;
mod tally;

pub use app::App;
pub use config::{Config, ConvertSettings, DEFAULT_FUNCTION_NAME};
pub use function::handle_batch;
pub use proflake_lambda::{
    function_handler, ConfigError, LogFormat, DEFAULT_CONCURRENCY, DEFAULT_METRICS_NAMESPACE,
};
pub use tally::BatchTally;

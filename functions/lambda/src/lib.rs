//! What proflake's Lambda functions share. Each function is an SQS consumer: its `main` reads
//! its [`Config`] (plus any variables of its own, through [`Vars`]), sets up logging with
//! [`init_logging`], builds its [`Stores`], and answers each batch with [`handle_batch`], giving
//! it the function's own work for one message. This crate does the rest: bounded concurrency,
//! caught panics, partial batch failures for SQS, and the batch's CloudWatch EMF metrics from
//! the function's [`Tally`].

#![warn(missing_docs)]

mod batch;
mod config;
mod logging;
mod metrics;
mod stores;
mod tally;

pub use batch::{finish_batch, handle_batch, handle_batch_tallied, MessageOutcome};
pub use config::{
    Config, ConfigError, LogFormat, Vars, DEFAULT_CONCURRENCY, DEFAULT_METRICS_NAMESPACE,
};
pub use logging::init_logging;
pub use metrics::{emf_documents, print_documents, Metric, MetricsTarget, Unit};
pub use stores::{aws_config_from_env, s3_client, s3_client_from_env, StorePair, Stores};
pub use tally::Tally;

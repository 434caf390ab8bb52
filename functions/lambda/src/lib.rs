//! What proflake's Lambda functions share. Each function is an SQS consumer that supplies only
//! what is its own: its state as a [`Function`] with its work (each message on its own,
//! [`PerMessage`], or the batch as a whole, [`WholeBatch`]), what its messages ask
//! ([`Request`]), its settings ([`OwnSettings`]), and its counters, declared once with
//! [`counters!`]. Its `main` is [`run`]. This crate does the rest: settings from the
//! environment, logging, stores, bounded concurrency, caught panics, messages that are no
//! request, the logging of failed work ([`work_failed!`]), partial batch failures for SQS, and
//! the batch's log line and CloudWatch EMF metrics from the function's [`Tally`].

#![warn(missing_docs)]

mod batch;
mod config;
mod counters;
mod function;
mod logging;
mod metrics;
mod run;
mod settings;
mod stores;
mod tally;
mod work;

pub use config::{
    Config, ConfigError, LogFormat, Vars, DEFAULT_CONCURRENCY, DEFAULT_METRICS_NAMESPACE,
};
pub use function::{
    function_handler, AsAWhole, Batch, EachMessage, Function, PerMessage, Request, WholeBatch,
};
pub use logging::init_logging;
pub use metrics::{emf_documents, print_documents, MetricsTarget};
pub use run::run;
pub use settings::{FunctionConfig, OwnSettings};
pub use stores::{
    aws_config_from_env, s3_client, s3_client_from_env, BucketStores, StorePair, Stores,
};
pub use tally::{Metric, Tally, Unit};
pub use work::{off_runtime, Failure};

/// What the crate's macros expand to; not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::counters::merge_failures;
    pub use proflake::error_chain;
    pub use tracing;
}

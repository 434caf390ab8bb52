//! The publish Lambda: the lake's single writer. Its queue receives S3 notifications of the
//! manifests the convert and rehydrate functions write (`converted/<source_id>/manifest.json`
//! in the output bucket), and the schedule's sweep and maintenance messages.
//!
//! A batch is published as a whole: every manifest its messages name goes into one
//! [`proflake::lake::Lake::publish`], which makes at most one commit per lake table, so the
//! event source mapping's batching window sets how many uploads share a commit. Messages whose
//! conversion is still settling its key, or whose publish failed, are reported back to SQS as
//! failed and come again; the rest succeed together. The function runs with a reserved
//! concurrency of 1, so it is the only writer; a second writer would only make commits retry.
//!
//! The sweep publishes every key (conversions whose notification was lost, keys whose content
//! is gone); maintenance compacts, checkpoints and vacuums the lake.

#![warn(missing_docs)]

mod app;
mod config;
mod function;
mod lake_work;
mod message;
mod tally;

pub use app::{App, LakeRoot};
pub use config::{Config, PublishSettings, DEFAULT_FUNCTION_NAME};
pub use function::{handle_batch, handle_batch_tallied};
pub use message::{parse_request, Request, SCHEDULE_SOURCE};
pub use proflake_lambda::function_handler;
pub use tally::BatchTally;

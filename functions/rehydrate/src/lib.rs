//! The rehydrate Lambda: re-symbolization of converted uploads by build ID. Its queue receives
//! S3 notifications of debug files uploaded under `debuginfo/<build-id>/` in the output bucket,
//! the scheduled sweep, and the continuations it sends itself.
//!
//! - A debug file goes through [`proflake::symbols::add_debug_file`] (validated, its lookup
//!   cache built, or refused with a report), then the uploads that reference its build ID are
//!   converted again by [`proflake::rehydrate`].
//! - The sweep rehydrates every indexed upload whose symbols changed, then removes the pending
//!   records of replaced content that no settling job will see again (older than
//!   `PROFLAKE_REHYDRATE_PENDING_GRACE_SECONDS`), with what they name.
//! - Work is bounded per message (`PROFLAKE_REHYDRATE_MAX_UPLOADS` conversions): when a scope
//!   has more, the function sends a continuation message to its own queue that resumes after
//!   the last index key it looked at.
//!
//! This crate only parses messages and plumbs them into the library, off the async runtime,
//! and counts and logs what happened (one line per debug file and per page). Settings,
//! logging, stores, batches and metrics are `proflake_lambda`'s.

#![warn(missing_docs)]

mod app;
mod config;
mod debug_file;
mod function;
mod message;
mod page;
mod tally;

pub use app::{App, ContinuationQueue};
pub use config::{
    Config, RehydrateSettings, DEFAULT_FUNCTION_NAME, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_UPLOADS,
};
pub use function::{handle_batch, handle_batch_tallied};
pub use message::{
    parse_request, Continuation, Page, Request, Scope, CONTINUATION_SOURCE, SCHEDULE_SOURCE,
};
pub use proflake_lambda::{function_handler, ConfigError, LogFormat, Tally};
pub use tally::BatchTally;

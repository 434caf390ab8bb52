//! proflake: decode profiling data (Perfetto traces, OTLP profiles, pprof, folded stacks,
//! Sentry envelopes) into one neutral model, and write it out as Sentry Sample v2 profile
//! chunks and Parquet stack tables.
//!
//! Data flows one way: bytes → decompress → sniff → decoder → model → (symbolize) → plan →
//! writers (Sample v2, tables) → outputs → store, then landing tables → lake.
//! `ARCHITECTURE.md` draws it and says what each module holds. The root holds the jobs; each
//! public module is the part of the crate it names:
//!
//! - **Decode a profile:** [`decode`] gives a [`Decoded`] profile of an [`InputFormat`] within
//!   [`Limits`].
//! - **The jobs:** [`convert_upload`] (in memory, [`ConvertOptions`] → [`Converted`]),
//!   [`process_upload`] (one key of a store, [`ProcessOptions`] → [`Outcome`], the conversion's
//!   [`Manifest`]) and [`rehydrate`] (stored conversions again with new symbols,
//!   [`RehydrateOptions`], [`RehydrateScope`] → [`RehydratePage`]).
//! - **[`events`]:** the object notifications the functions are sent.
//! - **[`store`]:** [`store::ObjectStore`], the local directory and S3 stores, and putting
//!   uploads in and listing them.
//! - **[`symbols`]:** debug files and their build IDs, stored for the jobs to symbolize with.
//! - **[`tables`], [`export`], [`compare`]:** reading the stack tables back, exporting
//!   profiles from them, comparing releases.
//! - **`lake`** (feature `lake`): publishing the landing tables into Delta tables, compacting
//!   them.
//! - **[`receive`]:** [`receive::Receiver`] reads OTLP/HTTP and Pyroscope requests and files
//!   them as uploads, for `proflake serve` and the ingest function.
//! - **Errors and metadata:** [`Error`], [`ErrorKind`], [`Result`], [`error_chain`],
//!   [`UploadMetadata`].
//!
//! [`return_large_blocks`] is for a binary's `main`: it keeps freed large blocks from staying
//! in the heap.

#![warn(missing_docs)]

// The native library's profiles (tests/native_profiles.rs) name the library `proflake` both in
// the tests outside it and in the fixture tests within.
#[cfg(test)]
extern crate self as proflake;

mod allocator;
mod calendar;
pub mod compare;
mod error;
pub mod events;
pub mod export;
#[cfg(test)]
mod fixture_tests;
mod formats;
mod ids;
#[cfg(feature = "lake")]
pub mod lake;
#[cfg(test)]
mod layering_tests;
mod limits;
mod metadata;
mod model;
mod pipeline;
mod plan;
pub mod receive;
mod relay;
pub mod store;
mod symbolize;
pub mod symbols;
pub mod tables;
mod writers;

pub use allocator::return_large_blocks;
pub use error::{error_chain, Error, ErrorKind, Result};
pub use formats::InputFormat;
pub use limits::Limits;
pub use metadata::UploadMetadata;
pub use pipeline::{
    convert_upload, decode, process_upload, rehydrate, ConvertOptions, Converted, Decoded,
    Manifest, Outcome, ProcessOptions, RehydrateOptions, RehydratePage, RehydrateScope,
};

//! Sentry Sample v2 as an output: writing chunks from plans, passing through the chunks an
//! input already held, and rewriting a stored chunk's frames once they are symbolized. The
//! chunk's JSON shape, Relay's rules and the reader belong to the format
//! ([`crate::formats`]'s `sample_v2`); the names re-exported here are its public face.

mod rewrite;
#[cfg(test)]
#[path = "schema_tests.rs"]
mod schema_tests;
mod write;

pub use crate::formats::sample_v2::{frame_handles, read_chunk};
pub use crate::relay::{check_chunk, check_sample_v2, schema, Rule, Violation};
pub use rewrite::rewrite_frames;
pub use write::{
    prepare_planned_chunk, write_chunk, write_planned_chunk, write_sample_v2, PreparedChunk,
    SampleV2Chunk, StreamedChunk,
};

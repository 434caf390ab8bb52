//! Sentry Sample v2: the chunk's JSON shape (`schema`), writing chunks from plans, reading
//! them back, rewriting a stored chunk's frames once they are symbolized, and Relay's rules
//! for checking them.

mod read;
mod rewrite;
mod rules;
pub mod schema;
mod write;

pub(crate) use read::{accept, import};
pub use read::{frame_handles, read_chunk, PassThrough};
pub use rewrite::rewrite_frames;
pub use rules::{check_chunk, check_sample_v2, Rule, Violation};
pub use write::{
    prepare_planned_chunk, write_chunk, write_planned_chunk, write_sample_v2, PreparedChunk,
    SampleV2Chunk, StreamedChunk,
};

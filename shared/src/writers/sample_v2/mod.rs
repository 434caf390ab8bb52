//! Sentry Sample v2 as an output: writing chunks from plans, and the chunk JSON of the typed
//! schema. The chunk's shape and Relay's rules are [`crate::relay`]'s, shared with the reader
//! in the formats; this writer reaches no format.

mod write;

#[cfg(test)]
pub(crate) use crate::relay::{check_chunk, check_sample_v2, Rule};
pub(crate) use write::model_frame_rows;
#[cfg(test)]
pub(crate) use write::write_sample_v2;
pub use write::{prepare_planned_chunk, write_chunk, PreparedChunk, SampleV2Chunk};

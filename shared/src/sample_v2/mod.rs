//! Sentry Sample v2: the chunk's JSON shape (`schema`), writing chunks from plans, and Relay's
//! rules for checking them.

mod rules;
pub mod schema;
mod write;

pub use rules::{check_chunk, check_sample_v2, Rule, Violation};
pub use write::{write_chunk, write_planned_chunk, write_sample_v2, SampleV2Chunk};

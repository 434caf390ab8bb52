//! Sentry Sample v2: writing chunks from plans, and Relay's rules for checking them.

mod rules;
mod write;

pub use rules::{check_sample_v2, Rule, Violation};
pub use write::{write_planned_chunk, write_sample_v2, SampleV2Chunk};

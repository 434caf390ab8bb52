//! Sentry's Sample v2 profile chunk as Relay accepts it: its JSON shape ([`schema`]) and
//! Relay's rules for checking one ([`check_chunk`]). It is neither a format nor a writer: the
//! Sample v2 reader (`formats::sentry::chunk`) and the Sample v2 writer (`sample_v2`) both build on
//! it, and it reaches neither.

mod rules;
pub mod schema;

pub(crate) use rules::{canonical_frame, parse};
pub use rules::{check_chunk, Violation};
#[cfg(test)]
pub(crate) use rules::{check_sample_v2, Rule};

//! Plans: which observations of a profile go into which output.
//!
//! Sample v2's plan ([`plan_chunks`]) follows Relay's rules: 60 s windows per process, one
//! CPU- or wall-time series, threads with at least two samples, aggregated weights laid out on
//! a bounded timeline. The tables keep every observation of every series.

mod chunks;
mod timeline;

pub use chunks::{plan_chunks, ChunkPlan, MAX_CHUNK_DURATION_NS};
pub(crate) use timeline::interval_ns;
pub use timeline::{PlannedSample, Timing, DEFAULT_INTERVAL_NS, MAX_EXPANDED_SAMPLES};

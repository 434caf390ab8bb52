//! Plans: which observations of a profile go into which output.
//!
//! Sample v2's plan ([`plan_chunks`]) follows Relay's rules: 60 s windows per process, one
//! CPU- or wall-time series, threads with at least two samples, aggregated weights laid out on
//! a bounded timeline. The tables keep every observation of every series.

#[cfg(test)]
mod aggregated_tests;
mod chunks;
mod grid;
mod platform;
mod rows;
mod span_sampling;
mod tables;
mod timeline;

#[cfg(test)]
pub(crate) use chunks::plan_chunks;
pub(crate) use chunks::{carried_series, SampleV2Plan};
pub use chunks::{left_out, plan_sample_v2_on, ChunkPlan, SeriesCoverage};
#[cfg(test)]
pub use chunks::{plan_sample_v2, MAX_CHUNK_DURATION_NS};
pub(crate) use grid::cut_spans_at_windows;
pub use grid::Grid;
pub use platform::Runtimes;
pub use rows::RowsIter;
pub use span_sampling::DEFAULT_SPAN_INTERVAL_NS;
pub use tables::{plan_tables, plan_tables_on, TableProfilePlan};
pub use timeline::{PlannedSamples, Timing};
#[cfg(test)]
pub use timeline::{DEFAULT_INTERVAL_NS, MAX_EXPANDED_SAMPLES, MIN_INTERVAL_NS};

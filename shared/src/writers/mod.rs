//! Writers: from the model to output bytes. Writers never know which format a profile came
//! from.

mod sample_v2;
mod tables;
mod timeline;

pub use sample_v2::{
    derived_id, plan_chunks, write_planned_chunk, write_sample_v2, ChunkPlan, SampleV2Chunk,
    MAX_CHUNK_DURATION_NS,
};
pub use tables::{
    build_tables, write_tables, Table, TableBatches, TableChunk, TableObject, TableSource,
    TABLES_SCHEMA_VERSION,
};
pub use timeline::{PlannedSample, Timing, DEFAULT_INTERVAL_NS, MAX_EXPANDED_SAMPLES};

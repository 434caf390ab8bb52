//! proflake: decode profiling data (Perfetto traces, ...) into one neutral model and write it
//! out as Sentry Sample v2 profile chunks.
//!
//! Data flows one way: bytes → [`decode`] → [`Profile`] → writers → store. The
//! [`convert`](pipeline) pipeline composes these steps.

#![warn(missing_docs)]

mod calendar;
mod error;
mod events;
mod flamegraph;
mod formats;
mod ids;
#[cfg(test)]
mod layering_tests;
mod metadata;
mod model;
mod pipeline;
mod plan;
mod sample_v2;
mod store;
mod summary;
mod symbol_names;
mod tables;

pub use calendar::utc_millis;
pub use error::{error_chain, Error, ErrorKind, Result};
pub use events::{decode_object_key, parse_notification, Notification, ObjectChange, ObjectEvent};
pub use flamegraph::{
    flame_frame_name, fold, parse_time_ns, render_svg, FlameFilter, Folded, IdOrName,
};
pub use formats::{sniff, Container, InputFormat, MAX_DECOMPRESSED_BYTES};
pub use ids::derived_id;
pub use metadata::{
    ClientSdk, Measurement, MeasurementUnit, MeasurementValue, UploadMetadata,
    OBJECT_METADATA_FIELDS,
};
pub use model::{
    ids_from_build_id, time_unit_ns, CpuMode, Frame, FrameAddress, FrameHandle, FrameKind, Image,
    ImageHandle, InlinedCall, Label, LabelSetHandle, LabelValue, Link, LinkHandle, Process,
    ProcessHandle, Profile, Sample, Series, SeriesHandle, SeriesKind, StackHandle, StackNode,
    StringHandle, Thread, ThreadHandle, Timestamps,
};
pub use pipeline::{
    build_id_index, convert_into, convert_upload, decode, process_upload, publish, store_upload,
    BuildIdIndexEntry, ConvertOptions, ConvertReport, Converted, ConvertedUpload, Decoded,
    ErrorReport, IndexedMapping, Manifest, ManifestExpansion, ManifestOutput, ManifestProfile,
    ManifestSampleV2, ManifestSeries, ManifestSource, MemoryOutputs, Outcome, OutputSink,
    ProcessOptions, Quarantine, SkipReason, StoreOutputs, BUILD_ID_INDEX_VERSION,
    DEFAULT_MAX_OBJECT_BYTES, ERROR_REPORT_VERSION, MANIFEST_VERSION,
};
pub use plan::{
    left_out, plan_chunks, plan_sample_v2, plan_tables, ChunkPlan, PlannedSample, SampleV2Plan,
    SeriesCoverage, TableProfilePlan, Timing, DEFAULT_INTERVAL_NS, MAX_CHUNK_DURATION_NS,
    MAX_EXPANDED_SAMPLES, MIN_INTERVAL_NS, TABLE_WINDOW_NS,
};
pub use sample_v2::schema as sample_v2_schema;
pub use sample_v2::{
    check_chunk, check_sample_v2, read_chunk, write_chunk, write_planned_chunk, write_sample_v2,
    PassThrough, Rule, SampleV2Chunk, Violation,
};
#[cfg(feature = "s3")]
pub use store::S3Store;
pub use store::{
    build_id_index_key, chunk_key, content_etag, current_conversion_key, error_report_key,
    manifest_key, profile_key_of_sidecar, sidecar_key, source_id, table_key, upload_key,
    LocalDirStore, ObjectInfo, ObjectStore, PrefixedStore, BUILD_ID_INDEX_PREFIX, CONVERTED_PREFIX,
    ERROR_REPORT_SUFFIX, METADATA_SIDECAR_SUFFIX, TABLES_PREFIX, UPLOADS_PREFIX,
};
pub use summary::{
    frame_label, summarize, FunctionSummary, ImageSummary, ProcessSummary, ProfileSummary,
    SeriesSummary, ThreadSummary,
};
pub use tables::{
    build_tables, read_table_objects, read_tables, table_prefix, write_tables, Table, TableBatches,
    TableObject, TableProfileInput, TableSource, TABLES_SCHEMA_VERSION,
};

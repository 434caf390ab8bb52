//! proflake: decode profiling data (Perfetto traces, ...) into one neutral model and write it
//! out as Sentry Sample v2 profile chunks.
//!
//! Data flows one way: bytes → [`formats`] → [`model`] → [`plan`] → [`sample_v2`] and
//! [`tables`] → [`pipeline`]'s outputs → [`store`]. The modules are public; the names below
//! are the front door: what the functions, the command line and the tests use.

#![warn(missing_docs)]

pub mod allocator;
pub mod calendar;
pub mod error;
pub mod events;
pub mod formats;
pub mod ids;
#[cfg(feature = "lake")]
pub mod lake;
#[cfg(test)]
mod layering_tests;
pub mod limits;
pub mod metadata;
pub mod model;
pub mod pipeline;
pub mod plan;
pub mod sample_v2;
pub mod store;
pub mod symbolize;
pub mod tables;

pub use calendar::utc_millis;
pub use error::{error_chain, Error, ErrorKind, Result};
pub use events::{parse_notification, Notification, ObjectChange, ObjectEvent};
pub use formats::{sniff, Container, InputFormat};
pub use limits::{Limits, LimitsError};

pub use metadata::{ClientSdk, UploadMetadata};
pub use model::BuildId;
pub use model::{
    CpuMode, Frame, FrameAddress, FrameHandle, FrameKind, Image, Label, LabelValue, Process,
    Profile, Sample, Series, SeriesKind, StackHandle, Thread, Timestamps,
};
pub use pipeline::{
    build_id_index, convert_upload, decode, decode_with_limits, process_upload,
    stream_above_bytes_from, BuildIdIndexEntry, ConvertOptions, Converted, ConvertedUpload,
    Decoded, ErrorReport, Manifest, Outcome, ProcessOptions, Quarantine, SkipReason,
    STREAM_ABOVE_BYTES,
};
pub use plan::{
    left_out, plan_chunks, plan_tables, Timing, DEFAULT_INTERVAL_NS, MAX_CHUNK_DURATION_NS,
    MAX_EXPANDED_SAMPLES, MIN_INTERVAL_NS,
};
pub use sample_v2::{
    check_sample_v2, read_chunk, write_chunk, write_planned_chunk, write_sample_v2, SampleV2Chunk,
};
#[cfg(feature = "s3")]
pub use store::S3Store;
pub use store::{
    content_etag, current_conversion_key, error_report_key, manifest_key, sidecar_key, source_id,
    store_upload, upload_key, LocalDirStore, ObjectInfo, ObjectStore, ObjectWriter, PrefixedStore,
    ERROR_REPORT_SUFFIX, METADATA_SIDECAR_SUFFIX, UPLOADS_PREFIX,
};
pub use tables::{
    read_table_objects, read_tables, write_tables, Table, TableBatches, TableProfileInput,
    TableSource,
};

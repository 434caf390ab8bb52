//! proflake: decode profiling data (Perfetto traces, ...) into one neutral model and write it
//! out as Sentry Sample v2 profile chunks.
//!
//! Data flows one way: bytes → [`decode`] → [`Profile`] → writers → store. The
//! [`convert`](pipeline) pipeline composes these steps.

#![warn(missing_docs)]

mod error;
mod formats;
mod metadata;
mod model;
mod pipeline;
mod relay_rules;
mod store;
mod summary;
mod symbol_names;
mod writers;

pub use error::{Error, ErrorKind, Result};
pub use formats::{decode, sniff, Container, Decoded, InputFormat, MAX_DECOMPRESSED_BYTES};
pub use metadata::{ClientSdk, Measurement, MeasurementUnit, MeasurementValue, UploadMetadata};
pub use model::{
    ids_from_build_id, time_unit_ns, CpuMode, Frame, FrameAddress, FrameHandle, FrameKind, Image,
    ImageHandle, InlinedCall, Label, LabelSetHandle, LabelValue, Link, LinkHandle, Process,
    ProcessHandle, Profile, Sample, Series, SeriesHandle, SeriesKind, StackHandle, StackNode,
    StringHandle, Thread, ThreadHandle, Timestamps,
};
pub use pipeline::{
    convert_upload, publish, store_upload, ConvertOptions, Converted, Manifest, ManifestOutput,
    ManifestProfile, ManifestSource, MANIFEST_VERSION,
};
pub use relay_rules::{check_sample_v2, Rule, Violation};
pub use store::{
    chunk_key, content_etag, manifest_key, source_id, upload_key, LocalDirStore, ObjectStore,
    CONVERTED_PREFIX, UPLOADS_PREFIX,
};
pub use summary::{
    frame_label, summarize, FunctionSummary, ImageSummary, ProcessSummary, ProfileSummary,
    SeriesSummary, ThreadSummary,
};
pub use writers::{
    derived_id, plan_chunks, write_planned_chunk, write_sample_v2, ChunkPlan, PlannedSample,
    SampleV2Chunk, Timing, DEFAULT_INTERVAL_NS, MAX_CHUNK_DURATION_NS, MAX_EXPANDED_SAMPLES,
};

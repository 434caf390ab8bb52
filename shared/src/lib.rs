//! proflake: decode profiling data (Perfetto traces, OTLP profiles, pprof, folded stacks,
//! Sentry envelopes) into one neutral model, and write it out as Sentry Sample v2 profile
//! chunks and Parquet stack tables.
//!
//! Data flows one way: bytes → decompress → sniff → decoder → model → (symbolize) → plan →
//! writers (Sample v2, tables) → outputs → store, then landing tables → lake.
//! `ARCHITECTURE.md` draws it and says what each module holds; the modules themselves are
//! private. This is the front door, by role:
//!
//! - **Decode a profile:** [`decode`] gives a [`Decoded`] profile of an [`InputFormat`].
//! - **The jobs:** [`convert_upload`] (in memory, [`ConvertOptions`] → [`Converted`]),
//!   [`process_upload`] (one key of a store, [`ProcessOptions`] → [`Outcome`]) and
//!   [`rehydrate`] (stored conversions again with new symbols, [`RehydrateOptions`]); the rest
//!   of their vocabulary is in [`jobs`], debug files and build IDs in [`symbols`], and the lake
//!   tier's publishing and compaction in `lake` (feature `lake`).
//! - **The store:** [`ObjectStore`] and [`LocalDirStore`]; the rest, the S3 store and the
//!   bucket's key layout, in [`store`].
//! - **Events and metadata:** [`parse_notification`] and [`UploadMetadata`]; the rest in
//!   [`inputs`].
//! - **Receiving over HTTP:** [`receive::Receiver`] reads OTLP/HTTP and Pyroscope requests and
//!   files them as uploads, for `proflake serve` and the ingest function.
//! - **Errors and limits:** [`Error`], [`ErrorKind`], [`Result`], [`error_chain`], [`Limits`].
//! - **The model and the outputs:** [`model`], the [`Manifest`] and the rest of what a
//!   conversion writes in [`outputs`].
//!
//! [`return_large_blocks`] is for a binary's `main`: it keeps freed large blocks from staying
//! in the heap.

#![warn(missing_docs)]

// The native library's profiles (tests/native_profiles.rs) name the library `proflake` both in
// the tests outside it and in the fixture tests within.
#[cfg(test)]
extern crate self as proflake;

mod allocator;
mod calendar;
mod compare;
mod error;
mod events;
mod export;
#[cfg(test)]
mod fixture_tests;
mod formats;
mod ids;
#[cfg(feature = "lake")]
pub mod lake;
#[cfg(test)]
mod layering_tests;
mod limits;
mod metadata;
pub mod model;
mod pipeline;
mod plan;
pub mod receive;
mod relay;
pub mod store;
mod symbolize;
mod tables;
mod writers;

pub use allocator::return_large_blocks;
pub use error::{error_chain, Error, ErrorKind, Result};
pub use events::parse_notification;
pub use formats::InputFormat;
pub use limits::Limits;
pub use metadata::UploadMetadata;
pub use pipeline::{
    convert_upload, decode, process_upload, rehydrate, ConvertOptions, Converted, Decoded,
    Manifest, Outcome, ProcessOptions, RehydrateOptions,
};
pub use store::{LocalDirStore, ObjectStore};

/// The jobs' vocabulary beyond the front door: converting with symbols, decoding within limits,
/// what processing a key did, rehydration's scopes and pages, exports and release comparison,
/// and the settings the functions read from the environment.
pub mod jobs {
    pub use crate::compare::{
        compare_releases, report_releases, CompareReport, CompareRequest, ReleaseReport,
        REPORTS_PREFIX,
    };
    pub use crate::export::{
        export_profiles, export_tables, flame_frame_name, ExportFormat, ExportRequest, Exported,
        ExportedSeries, IdOrName, Selection, EXPORT_TABLES, NO_STACK,
    };
    pub use crate::limits::LimitsError;
    pub use crate::pipeline::{
        convert_upload, convert_upload_with, decode, decode_stream_with_limits, decode_with_limits,
        indexed_uploads, process_upload, rehydrate, rehydrate_keys, stream_above_bytes_from,
        ConvertOptions, Converted, ConvertedUpload, Decoded, ErrorReport, Outcome, ProcessOptions,
        Quarantine, RehydrateOptions, RehydratePage, RehydrateScope, SkipReason,
        ERROR_REPORT_VERSION, STREAM_ABOVE_BYTES,
    };
}

/// Debug files and build IDs: storing a debug file under its build ID, the index of the
/// conversions that reference one, and the sans-IO symbolizer the jobs run.
pub mod symbols {
    pub use crate::formats::binaries::has_unwind_tables;
    pub use crate::model::BuildId;
    pub use crate::pipeline::{
        add_debug_file, build_id_index, current_debug_meta, list_debug_files, BuildIdIndexEntry,
        DebugFileOutcome, IndexedMapping, StoreSymbols, BUILD_ID_INDEX_VERSION,
    };
    pub use crate::symbolize::{
        debug_file_build_id, ingest_debug_file, symbolizable_build_ids, symbolize, DebugFileKeys,
        DebugFileMeta, ImageSymbolization, IngestedDebugFile, NoSymbols, Quality, Segment,
        SymbolSource, SymbolizeReport, Symbols, DEBUG_META_VERSION,
    };
}

/// What comes in: object notifications, an upload's metadata, and the formats and containers
/// it is detected as.
pub mod inputs {
    pub use crate::events::{
        decode_object_key, parse_notification, Notification, ObjectChange, ObjectEvent,
    };
    pub use crate::formats::{sniff, Container, InputFormat, PassThrough};
    pub use crate::metadata::{
        ClientSdk, Measurement, MeasurementUnit, MeasurementValue, UploadMetadata,
        OBJECT_METADATA_FIELDS,
    };
}

/// What a conversion writes: the manifest, the stack tables (and reading them back), and
/// Sample v2 chunks (and checking them by Relay's rules).
pub mod outputs {
    pub use crate::calendar::{days_from_civil, utc_millis, utc_seconds, utc_time};
    pub use crate::formats::sentry::chunk::read_chunk;
    pub use crate::pipeline::{
        Manifest, ManifestExpansion, ManifestOutput, ManifestProfile, ManifestSampleV2,
        ManifestSeries, ManifestSource, MANIFEST_VERSION,
    };
    pub use crate::tables::{
        read_table_objects, read_tables, table_prefix, Table, TableBatches, TablesFrom,
        TABLES_SCHEMA_VERSION,
    };
    pub use crate::writers::sample_v2::{
        check_chunk, check_sample_v2, schema, write_chunk, write_sample_v2, Rule, SampleV2Chunk,
        Violation,
    };
}

//! The jobs: compose decoding, writing and storage. Handlers and the command line only call
//! these.

mod clock;
mod convert;
mod decode;
mod error_report;
mod outcome;
mod pass_through;
mod process;
mod rehydrate;
mod source;
mod summary;
mod summary_text;
mod supersede;
mod symbol_store;

pub use crate::writers::build_id_index::{
    build_id_index, BuildIdIndexEntry, IndexedMapping, BUILD_ID_INDEX_VERSION,
};
pub use crate::writers::manifest::{
    Manifest, ManifestExpansion, ManifestOutput, ManifestProfile, ManifestSampleV2, ManifestSeries,
    ManifestSource, MANIFEST_VERSION,
};
#[cfg(test)]
pub(crate) use convert::convert_into;
pub use convert::{
    convert_upload, convert_upload_with, stream_above_bytes_from, ConvertOptions, Converted,
    STREAM_ABOVE_BYTES,
};
#[cfg(test)]
pub(crate) use decode::UploadInput;
pub use decode::{decode, decode_stream_with_limits, decode_with_limits, Decoded};
pub use error_report::{ErrorReport, ERROR_REPORT_VERSION};
pub use outcome::{ConvertedUpload, Outcome, Quarantine, SkipReason};
pub use process::{process_upload, ProcessOptions};
pub use rehydrate::{
    indexed_uploads, rehydrate, rehydrate_keys, RehydrateOptions, RehydratePage, RehydrateScope,
};
pub use symbol_store::{
    add_debug_file, current_debug_meta, list_debug_files, DebugFileOutcome, StoreSymbols,
};

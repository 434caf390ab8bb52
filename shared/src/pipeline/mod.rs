//! The jobs: compose decoding, writing and storage. Handlers and the command line only call
//! these.

mod build_id_index;
mod convert;
mod decode;
mod manifest;
mod outputs;
mod process;
mod rehydrate;
mod series;
mod streamed;
mod supersede;
mod symbols;
mod window_buffer;
mod windows;
#[cfg(test)]
mod windows_tests;

pub use build_id_index::{
    build_id_index, BuildIdIndexEntry, IndexedMapping, BUILD_ID_INDEX_VERSION,
};
pub use convert::{
    convert_into, convert_upload, convert_upload_with, publish, stream_above_bytes_from,
    ConvertOptions, ConvertReport, Converted, UploadInput, STREAM_ABOVE_BYTES,
};
pub use decode::{decode, decode_stream_with_limits, decode_with_limits, Decoded};
pub use manifest::{
    Manifest, ManifestExpansion, ManifestOutput, ManifestProfile, ManifestSampleV2, ManifestSeries,
    ManifestSource, MANIFEST_VERSION,
};
pub use outputs::{MemoryOutputs, OutputSink, StoreOutputs};
pub use process::{
    process_upload, ConvertedUpload, ErrorReport, Outcome, ProcessOptions, Quarantine, SkipReason,
    ERROR_REPORT_VERSION,
};
pub use rehydrate::{rehydrate, rehydrate_keys, RehydrateOptions, RehydratePage, RehydrateScope};
pub use streamed::Reopen;
pub use symbols::{
    add_debug_file, current_debug_meta, list_debug_files, DebugFileOutcome, StoreSymbols,
};

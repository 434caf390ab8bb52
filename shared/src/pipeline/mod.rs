//! The jobs: compose decoding, writing and storage. Handlers and the command line only call
//! these.

mod convert;
mod manifest;

pub use convert::{convert_upload, publish, store_upload, ConvertOptions, Converted};
pub use manifest::{Manifest, ManifestOutput, ManifestProfile, ManifestSource, MANIFEST_VERSION};

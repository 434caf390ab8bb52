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

pub use crate::writers::manifest::Manifest;
#[cfg(test)]
pub(crate) use convert::{convert_into, convert_upload_with};
pub use convert::{convert_upload, ConvertOptions, Converted};
#[cfg(test)]
pub(crate) use decode::UploadInput;
pub use decode::{decode, Decoded};
pub(crate) use error_report::write_error_report;
#[cfg(test)]
pub(crate) use error_report::ErrorReport;
pub use outcome::Outcome;
#[cfg(test)]
pub(crate) use outcome::SkipReason;
pub use process::{process_upload, ProcessOptions};
pub use rehydrate::{rehydrate, RehydrateOptions, RehydratePage, RehydrateScope};

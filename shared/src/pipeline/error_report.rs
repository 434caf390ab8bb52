//! The error report written next to an object that cannot be converted or ingested (an
//! upload, a debug file), and how one is written.

use serde::{Deserialize, Serialize};

use crate::error::{error_chain, Error, Result};
use crate::store::{error_report_key, ObjectStore};

/// Version of the error report layout.
pub const ERROR_REPORT_VERSION: u32 = 1;

/// The error report written next to a quarantined upload (`<key>.error.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReport {
    /// Layout version ([`ERROR_REPORT_VERSION`]).
    pub report_version: u32,
    /// The converter and its version.
    pub converter: String,
    /// The upload's key.
    pub key: String,
    /// The upload's ETag, so a report can be matched to the content it is about.
    pub etag: String,
    /// Bytes of the upload (0 when refused unread).
    pub bytes: u64,
    /// [`ErrorKind::reason`](crate::ErrorKind::reason).
    pub reason: String,
    /// The error and its causes, readable.
    pub error: String,
}

/// Writes the error report of the object at `key` (an upload, or a debug file) next to it;
/// returns where it went, the reason and the readable error.
pub(crate) fn write_error_report(
    store: &dyn ObjectStore,
    key: &str,
    etag: &str,
    bytes: u64,
    error: Error,
) -> Result<(String, &'static str, String)> {
    let error = error.for_input(key);
    let reason = error.kind().reason();
    let message = error_chain(&error);
    let report = ErrorReport {
        report_version: ERROR_REPORT_VERSION,
        converter: format!("proflake {}", env!("CARGO_PKG_VERSION")),
        key: key.into(),
        etag: etag.into(),
        bytes,
        reason: reason.into(),
        error: message.clone(),
    };
    let report_key = error_report_key(key);
    let json = serde_json::to_vec_pretty(&report).expect("error report serializes");
    store.put(&report_key, &json)?;
    Ok((report_key, reason, message))
}

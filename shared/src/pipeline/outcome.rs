//! What the object job did with one key, for logs, metrics and callers.

/// What processing one key did.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Converted and stored; the manifest was written last.
    Converted(ConvertedUpload),
    /// The manifest of this exact upload (key and ETag) already exists: nothing was written.
    AlreadyConverted {
        /// The upload's key.
        key: String,
        /// Its manifest.
        manifest_key: String,
    },
    /// The upload cannot be converted; an error report was written next to it.
    Quarantined(Quarantine),
    /// Nothing to do for this key.
    Skipped {
        /// The key.
        key: String,
        /// Why.
        why: SkipReason,
    },
}

/// A stored conversion, summed up for logs and metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertedUpload {
    /// The upload's key.
    pub key: String,
    /// Its identity ([`source_id`](crate::store::source_id)).
    pub source_id: String,
    /// Its manifest.
    pub manifest_key: String,
    /// Detected format.
    pub format: String,
    /// Bytes read.
    pub bytes: u64,
    /// Samples written to Sample v2.
    pub samples: u64,
    /// Objects written, the manifest included.
    pub objects: u64,
    /// Frames a debug file named.
    pub frames_symbolized: u64,
    /// The earlier conversion of the same key (other content) this one replaced and removed.
    pub replaced: Option<String>,
    /// How many pieces the samples were written in: one, or one per few windows for a long
    /// Perfetto trace converted a window at a time.
    pub pieces: u64,
}

/// An upload that cannot be converted.
#[derive(Clone, Debug, PartialEq)]
pub struct Quarantine {
    /// The upload's key.
    pub key: String,
    /// Where its error report is.
    pub report_key: String,
    /// [`ErrorKind::reason`](crate::ErrorKind::reason) of the failure.
    pub reason: &'static str,
    /// The error, readable.
    pub message: String,
    /// Bytes of the upload (0 when it was refused unread).
    pub bytes: u64,
}

/// Why a key needs no work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The object no longer exists (deleted or overwritten before it was read).
    Missing,
    /// The key is one of proflake's own error reports.
    ErrorReport,
    /// The key is a metadata sidecar whose upload has not arrived (it is converted with the
    /// sidecar when it does).
    SidecarWithoutUpload,
    /// The key is a metadata sidecar the upload's current conversion already read (it was
    /// written before its upload, as the HTTP receiver writes them).
    SidecarAlreadyRead,
    /// The key was overwritten while this content was converted; the newer content's own event
    /// converts it, and this conversion was removed.
    Overwritten,
}

impl SkipReason {
    /// A short, stable name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::Missing => "missing",
            SkipReason::ErrorReport => "error_report",
            SkipReason::SidecarWithoutUpload => "sidecar_without_upload",
            SkipReason::SidecarAlreadyRead => "sidecar_already_read",
            SkipReason::Overwritten => "overwritten",
        }
    }
}

/// The outcome of a key that needs no work.
pub(crate) fn skipped(key: &str, why: SkipReason) -> Outcome {
    Outcome::Skipped {
        key: key.into(),
        why,
    }
}

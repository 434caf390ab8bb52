//! The library's error type: a kind callers can match on, the input it concerns, and the
//! underlying cause.

use std::fmt;

/// What went wrong. Callers decide retry versus quarantine from this, never from message text.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// No decoder recognised the bytes.
    #[error("unsupported input format: not {tried}")]
    UnsupportedFormat {
        /// The formats that were tried, comma separated.
        tried: String,
    },
    /// The input ends in the middle of a record.
    #[error("input is truncated at byte {offset}: {what}")]
    Truncated {
        /// Byte offset (in the decompressed stream) where the cut record starts.
        offset: u64,
        /// What was being read.
        what: &'static str,
    },
    /// The input's structure is wrong for its format.
    #[error("malformed {format} input at byte {offset}: {what}")]
    Malformed {
        /// Format being decoded.
        format: &'static str,
        /// Byte offset (in the decompressed stream) of the bad record.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A compressed container (whole file or embedded packets) could not be inflated.
    #[error("corrupt {container} data")]
    Decompression {
        /// `gzip`, `zstd`, `zlib`.
        container: &'static str,
    },
    /// A safety limit was reached; the input is too large or too deeply nested to convert.
    #[error("the input exceeds the limit {limit} = {max}{}", variable_hint(limit))]
    LimitExceeded {
        /// Name of the limit: a [`Limits`](crate::Limits) field, for the limits that can be
        /// set.
        limit: &'static str,
        /// The limit.
        max: u64,
    },
    /// The input decoded but holds no samples the output can use.
    #[error("no usable samples: {why}")]
    NoSamples {
        /// Why none remained.
        why: String,
    },
    /// Sample times are on a trace clock with no known relation to wall-clock time, and no
    /// start time was given.
    #[error(
        "sample times are on the {clock} clock and the input records no wall-clock (REALTIME) \
         reference; give the profile's start time (metadata `timestamp` or --start-time)"
    )]
    NoWallClock {
        /// The clock the times are on.
        clock: String,
    },
    /// The input has no per-sample times and says nothing of when it was recorded, so its
    /// samples cannot be placed on the wall clock.
    #[error(
        "the input is aggregated (no per-sample times) and records no start time; give the \
         profile's start time (metadata `timestamp` or --start-time)"
    )]
    NoStartTime,
    /// Upload metadata is invalid.
    #[error("invalid metadata: {what}")]
    InvalidMetadata {
        /// What is wrong.
        what: String,
    },
    /// A queue message is not an object notification.
    #[error("invalid event: {what}")]
    InvalidEvent {
        /// What is wrong.
        what: String,
    },
    /// A key in the store already holds different content, which would be lost.
    #[error("{key} already exists with different content")]
    KeyConflict {
        /// The key.
        key: String,
    },
    /// A stack table could not be encoded (Arrow or Parquet refused the data, or a column
    /// outgrew its 32-bit offsets). Permanent: the same input fails the same way.
    #[error("cannot encode the {table} table: {what}")]
    TableEncoding {
        /// The table's name.
        table: &'static str,
        /// What failed.
        what: String,
    },
    /// A store (a directory mirroring the bucket, or the bucket) that should hold stack tables
    /// has no file under a table's prefix (`tables/v2/<table>/`).
    #[error("no stack tables at {path}: expected the output of a conversion, with {path}dt=…/")]
    NoTables {
        /// The table's key prefix.
        path: String,
    },
    /// A debug file cannot be used: it is corrupt, or holds nothing to symbolize with.
    #[error("unusable debug file: {what}")]
    DebugFile {
        /// What is wrong.
        what: String,
    },
    /// A debug file has no build ID to file it under.
    #[error("the {format} file has no build ID (link with -Wl,--build-id)")]
    NoBuildId {
        /// The file's format.
        format: String,
    },
    /// A debug file was uploaded under a build ID that is not its own.
    #[error("the key names build ID {key_build_id} but the file's build ID is {file_build_id}")]
    BuildIdMismatch {
        /// The build ID in the key.
        key_build_id: String,
        /// The file's own.
        file_build_id: String,
    },
    /// A key under `debuginfo/` that does not name a build ID.
    #[error("debug files go under debuginfo/<build-id>/<file name>; {key} does not")]
    DebugFileKey {
        /// The key.
        key: String,
    },
    /// A table of the lake (a Delta table under `lake/`) could not be read or written, or a
    /// commit kept conflicting with other writers. Transient: the same work can be retried.
    #[error("lake table {table}: {what}")]
    Lake {
        /// The table's location.
        table: String,
        /// What failed.
        what: String,
    },
    /// A table of the lake has columns this version cannot write: a column it requires is
    /// missing, or one it has differs in type (or requires values where this version allows
    /// none), or it has columns this version does not know (compaction would drop them).
    /// Columns are only ever added within a version, nullable, so this means another schema
    /// version wrote the table. Permanent: the same lake fails the same way.
    #[error("lake table {table} was written by an incompatible schema version: {what}")]
    LakeSchema {
        /// The table's location.
        table: String,
        /// What differs.
        what: String,
    },
    /// A conversion cannot be published into the lake: a landing file its manifest lists is
    /// missing, or its bytes are not those the manifest recorded. Permanent until the upload
    /// is converted again.
    #[error("cannot publish {manifest_key}: {what}")]
    Unpublishable {
        /// The conversion's manifest.
        manifest_key: String,
        /// What is wrong.
        what: String,
    },
    /// An export could not be written in its format.
    #[error("cannot write the {format} export: {what}")]
    Export {
        /// The export format.
        format: &'static str,
        /// What failed.
        what: String,
    },
    /// Reading or writing storage failed.
    #[error("storage I/O failed on {key}")]
    Storage {
        /// The key or path.
        key: String,
    },
}

impl ErrorKind {
    /// Whether retrying the same input can succeed: storage failures are transient, everything
    /// about the input itself is permanent.
    pub fn is_transient(&self) -> bool {
        matches!(self, ErrorKind::Storage { .. } | ErrorKind::Lake { .. })
    }

    /// A short, stable name for the kind: the `reason` of error reports and failure metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            ErrorKind::UnsupportedFormat { .. } => "unsupported_format",
            ErrorKind::Truncated { .. } => "truncated",
            ErrorKind::Malformed { .. } => "malformed",
            ErrorKind::Decompression { .. } => "decompression",
            ErrorKind::LimitExceeded { .. } => "limit_exceeded",
            ErrorKind::NoSamples { .. } => "no_samples",
            ErrorKind::NoWallClock { .. } => "no_wall_clock",
            ErrorKind::NoStartTime => "no_start_time",
            ErrorKind::InvalidMetadata { .. } => "invalid_metadata",
            ErrorKind::InvalidEvent { .. } => "invalid_event",
            ErrorKind::KeyConflict { .. } => "key_conflict",
            ErrorKind::TableEncoding { .. } => "table_encoding",
            ErrorKind::NoTables { .. } => "no_tables",
            ErrorKind::DebugFile { .. } => "bad_debug_file",
            ErrorKind::NoBuildId { .. } => "no_build_id",
            ErrorKind::BuildIdMismatch { .. } => "build_id_mismatch",
            ErrorKind::DebugFileKey { .. } => "debug_file_key",
            ErrorKind::Lake { .. } => "lake",
            ErrorKind::LakeSchema { .. } => "lake_schema",
            ErrorKind::Unpublishable { .. } => "unpublishable",
            ErrorKind::Export { .. } => "export",
            ErrorKind::Storage { .. } => "storage",
        }
    }
}

/// Where the variable of every limit that can be set starts: `PROFLAKE_LIMIT_` and the
/// [`Limits`](crate::Limits) field in capitals (the limits' tests hold every field to this).
const LIMIT_VARIABLE_PREFIX: &str = "PROFLAKE_LIMIT_";

/// " (PROFLAKE_LIMIT_…)" after a limit's name in messages, so a reader of an error report
/// knows what to set. The limits that can be set are named by their field (`max_samples`);
/// other bounds are named in words (`object size in bytes`) and get no hint. So the name alone
/// tells the variable, and the error needs nothing from the limits.
fn variable_hint(limit: &str) -> String {
    let field = !limit.is_empty()
        && (limit.bytes()).all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if field {
        format!(" ({LIMIT_VARIABLE_PREFIX}{})", limit.to_ascii_uppercase())
    } else {
        String::new()
    }
}

/// An error, with the input it concerns (a file path or object key) when known.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    input: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error of `kind` with no cause.
    pub fn new(kind: ErrorKind) -> Self {
        Error {
            kind,
            input: None,
            source: None,
        }
    }

    /// Attaches the underlying cause.
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Names the input the error concerns, unless one is already named.
    pub fn for_input(mut self, input: &str) -> Self {
        if self.input.is_none() {
            self.input = Some(input.to_owned());
        }
        self
    }

    /// Moves byte offsets by `by`: for errors from a decoder that ran on a slice of a larger
    /// input (a trace inside an envelope).
    pub(crate) fn offset_by(mut self, by: u64) -> Self {
        match &mut self.kind {
            ErrorKind::Truncated { offset, .. } | ErrorKind::Malformed { offset, .. } => {
                *offset = offset.saturating_add(by);
            }
            _ => {}
        }
        self
    }

    /// Renames the limit of a [`ErrorKind::LimitExceeded`] error: a store refuses an object
    /// over the size it is given, and only the caller knows which limit that size was.
    pub(crate) fn name_limit(mut self, name: &'static str) -> Self {
        if let ErrorKind::LimitExceeded { limit, .. } = &mut self.kind {
            *limit = name;
        }
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The input the error concerns.
    pub fn input(&self) -> Option<&str> {
        self.input.as_deref()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.input {
            Some(input) => write!(f, "{input}: {}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// The error and its causes, `: `-separated: one line for a log field or an error report.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Carries a typed error through `io::Read`/`io::Write`, whose methods can only return an
/// `io::Error` (a store's reader or writer failing); [`from_io`] takes it back out.
pub(crate) fn to_io(error: Error) -> std::io::Error {
    std::io::Error::other(error)
}

/// The typed error inside `error` when `to_io` put one there; otherwise a storage error on
/// `key` caused by `error` (a failing reader or writer around the store's).
pub fn from_io(key: &str, error: std::io::Error) -> Error {
    if error.get_ref().is_some_and(|e| e.is::<Error>()) {
        let inner = error.into_inner().expect("checked above");
        return *inner.downcast::<Error>().expect("checked above");
    }
    Error::new(ErrorKind::Storage { key: key.into() }).with_source(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_names_its_variable_and_a_bound_in_words_none() {
        let exceeded = |limit| ErrorKind::LimitExceeded { limit, max: 2 }.to_string();
        assert_eq!(
            exceeded("max_samples"),
            "the input exceeds the limit max_samples = 2 (PROFLAKE_LIMIT_MAX_SAMPLES)"
        );
        assert_eq!(
            exceeded("object size in bytes"),
            "the input exceeds the limit object size in bytes = 2"
        );
    }

    #[test]
    fn error_chain_includes_every_cause() {
        let io = std::io::Error::other("connection reset");
        let e = Error::new(ErrorKind::Storage {
            key: "s3://b/k".into(),
        })
        .with_source(io)
        .for_input("uploads/a");
        assert_eq!(
            error_chain(&e),
            "uploads/a: storage I/O failed on s3://b/k: connection reset"
        );
    }
}

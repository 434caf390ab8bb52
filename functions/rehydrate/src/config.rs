//! The function's settings, read once at cold start from its environment.

use proflake_lambda::{ConfigError, FunctionConfig, OwnSettings, Vars};

/// The function's settings: the shared ones (`common`) and its own ([`RehydrateSettings`]).
pub type Config = FunctionConfig<RehydrateSettings>;

/// Default of `AWS_LAMBDA_FUNCTION_NAME` when running outside Lambda.
pub const DEFAULT_FUNCTION_NAME: &str = "proflake-rehydrate";

/// Default of `PROFLAKE_REHYDRATE_MAX_UPLOADS`: conversions per message, so that one
/// invocation stays well inside its time limit.
pub const DEFAULT_MAX_UPLOADS: usize = 25;

/// Default of `PROFLAKE_REHYDRATE_MAX_ENTRIES`: build-ID index entries read per message.
pub const DEFAULT_MAX_ENTRIES: usize = 5_000;

/// Default of `PROFLAKE_REHYDRATE_PENDING_GRACE_SECONDS`: an hour, four times the longest a
/// Lambda invocation runs.
pub const DEFAULT_PENDING_GRACE_SECONDS: u64 = 3_600;

/// The rehydrate function's own settings, beside the shared ones (see [`proflake_lambda::Config`]),
/// of which `PROFLAKE_OUTPUT_BUCKET` is required here and read again into `output_bucket`:
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `PROFLAKE_UPLOAD_BUCKET` | the bucket the uploads are in (index entries name keys only) | required |
/// | `PROFLAKE_REHYDRATE_QUEUE_URL` | the function's own queue, for continuation messages | required |
/// | `PROFLAKE_REHYDRATE_MAX_UPLOADS` | conversions per message; more goes to a continuation | `25` |
/// | `PROFLAKE_REHYDRATE_MAX_ENTRIES` | build-ID index entries (or keys under `converted/by-key/`) read per message | `5000` |
/// | `PROFLAKE_REHYDRATE_PENDING_GRACE_SECONDS` | the sweep leaves pending records younger than this | `3600` |
///
/// Debug files larger than `PROFLAKE_LIMIT_MAX_DEBUG_FILE_BYTES` (one of the shared limits) are
/// refused unread. `AWS_LAMBDA_FUNCTION_NAME` defaults to [`DEFAULT_FUNCTION_NAME`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RehydrateSettings {
    /// `PROFLAKE_OUTPUT_BUCKET`: the outputs and the symbol store (`debuginfo/`).
    pub output_bucket: String,
    /// `PROFLAKE_UPLOAD_BUCKET`.
    pub upload_bucket: String,
    /// `PROFLAKE_REHYDRATE_QUEUE_URL`.
    pub queue_url: String,
    /// `PROFLAKE_REHYDRATE_MAX_UPLOADS`.
    pub max_uploads: usize,
    /// `PROFLAKE_REHYDRATE_MAX_ENTRIES`.
    pub max_entries: usize,
    /// `PROFLAKE_REHYDRATE_PENDING_GRACE_SECONDS`.
    pub pending_grace_seconds: u64,
}

impl OwnSettings for RehydrateSettings {
    fn from_vars(vars: &Vars<'_>) -> Result<RehydrateSettings, ConfigError> {
        Ok(RehydrateSettings {
            output_bucket: vars.required("PROFLAKE_OUTPUT_BUCKET", "the output bucket's name")?,
            upload_bucket: vars.required("PROFLAKE_UPLOAD_BUCKET", "the upload bucket's name")?,
            queue_url: vars.required(
                "PROFLAKE_REHYDRATE_QUEUE_URL",
                "the URL of the function's own queue",
            )?,
            max_uploads: vars
                .positive("PROFLAKE_REHYDRATE_MAX_UPLOADS")?
                .unwrap_or(DEFAULT_MAX_UPLOADS),
            max_entries: vars
                .positive("PROFLAKE_REHYDRATE_MAX_ENTRIES")?
                .unwrap_or(DEFAULT_MAX_ENTRIES),
            pending_grace_seconds: vars
                .positive("PROFLAKE_REHYDRATE_PENDING_GRACE_SECONDS")?
                .unwrap_or(DEFAULT_PENDING_GRACE_SECONDS),
        })
    }

    const DEFAULT_FUNCTION_NAME: &'static str = DEFAULT_FUNCTION_NAME;
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUIRED: [(&str, &str); 3] = [
        ("PROFLAKE_OUTPUT_BUCKET", "out"),
        ("PROFLAKE_UPLOAD_BUCKET", "up"),
        ("PROFLAKE_REHYDRATE_QUEUE_URL", "https://sqs.test/1/q"),
    ];

    fn config(extra: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(&Vars::from_pairs(extra.iter().chain(&REQUIRED)))
    }

    #[test]
    fn defaults_and_required_variables() {
        let c = config(&[]).unwrap();
        assert_eq!(c.common.function_name, "proflake-rehydrate");
        assert_eq!(
            (
                c.output_bucket.as_str(),
                c.upload_bucket.as_str(),
                c.queue_url.as_str()
            ),
            ("out", "up", "https://sqs.test/1/q")
        );
        assert_eq!((c.max_uploads, c.max_entries), (25, 5_000));
        assert_eq!(c.pending_grace_seconds, 3_600);
        assert_eq!(c.common.limits.max_debug_file_bytes, 2 << 30);
        for (name, _) in REQUIRED {
            let err = config(&[(name, "")]).unwrap_err();
            assert_eq!(err.variable, name);
            assert!(err.to_string().contains("required"), "{err}");
        }
    }

    #[test]
    fn own_variables_are_read_and_checked() {
        let c = config(&[
            ("PROFLAKE_REHYDRATE_MAX_UPLOADS", "2"),
            ("PROFLAKE_REHYDRATE_MAX_ENTRIES", "10"),
            ("PROFLAKE_REHYDRATE_PENDING_GRACE_SECONDS", "60"),
            ("PROFLAKE_LIMIT_MAX_DEBUG_FILE_BYTES", "4096"),
            ("PROFLAKE_CONCURRENCY", "1"),
        ])
        .unwrap();
        assert_eq!(
            (
                c.max_uploads,
                c.max_entries,
                c.common.limits.max_debug_file_bytes
            ),
            (2, 10, 4096)
        );
        assert_eq!(c.common.concurrency, 1);
        assert_eq!(c.pending_grace_seconds, 60);
        let err = config(&[("PROFLAKE_REHYDRATE_MAX_UPLOADS", "0")]).unwrap_err();
        assert_eq!(err.variable, "PROFLAKE_REHYDRATE_MAX_UPLOADS");
    }
}

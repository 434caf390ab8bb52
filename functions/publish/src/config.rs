//! The function's settings, read once at cold start from its environment.

use proflake::lake::LakeSettings;
use proflake_lambda::{ConfigError, FunctionConfig, OwnSettings, Vars};

/// The function's settings: the shared ones (`common`) and its own ([`PublishSettings`]).
pub type Config = FunctionConfig<PublishSettings>;

/// Default of `AWS_LAMBDA_FUNCTION_NAME` when running outside Lambda.
pub const DEFAULT_FUNCTION_NAME: &str = "proflake-publish";

/// The publish function's own settings, beside the shared ones (see [`proflake_lambda::Config`]),
/// of which `PROFLAKE_OUTPUT_BUCKET` is required here and read again into `output_bucket`:
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `PROFLAKE_UPLOAD_BUCKET` | the bucket the uploads are in (is a conversion still settling its key?) | required |
/// | `PROFLAKE_LAKE_TARGET_FILE_BYTES` | size data files are written and compacted to | `268435456` |
/// | `PROFLAKE_LAKE_RETENTION_HOURS` | hours unreferenced files are kept before vacuum | `168` |
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishSettings {
    /// `PROFLAKE_OUTPUT_BUCKET`: the landing tables and the lake.
    pub output_bucket: String,
    /// `PROFLAKE_UPLOAD_BUCKET`.
    pub upload_bucket: String,
    /// The lake's settings.
    pub lake: LakeSettings,
}

impl OwnSettings for PublishSettings {
    fn from_vars(vars: &Vars<'_>) -> Result<PublishSettings, ConfigError> {
        let mut lake = LakeSettings::default();
        if let Some(bytes) = vars.positive("PROFLAKE_LAKE_TARGET_FILE_BYTES")? {
            lake.target_file_bytes = bytes;
        }
        if let Some(hours) = vars.positive("PROFLAKE_LAKE_RETENTION_HOURS")? {
            lake.retention_hours = hours;
        }
        Ok(PublishSettings {
            output_bucket: vars.required("PROFLAKE_OUTPUT_BUCKET", "the output bucket's name")?,
            upload_bucket: vars.required("PROFLAKE_UPLOAD_BUCKET", "the upload bucket's name")?,
            lake,
        })
    }

    const DEFAULT_FUNCTION_NAME: &'static str = DEFAULT_FUNCTION_NAME;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let required = [
            ("PROFLAKE_OUTPUT_BUCKET", "out"),
            ("PROFLAKE_UPLOAD_BUCKET", "up"),
        ];
        Config::from_vars(&Vars::from_pairs(extra.iter().chain(&required)))
    }

    #[test]
    fn defaults_required_and_own_variables() {
        let c = config(&[]).unwrap();
        assert_eq!(c.common.function_name, "proflake-publish");
        assert_eq!(
            (c.output_bucket.as_str(), c.upload_bucket.as_str()),
            ("out", "up")
        );
        assert_eq!(c.lake, LakeSettings::default());
        let c = config(&[
            ("PROFLAKE_LAKE_TARGET_FILE_BYTES", "1000"),
            ("PROFLAKE_LAKE_RETENTION_HOURS", "2"),
        ])
        .unwrap();
        assert_eq!(
            (c.lake.target_file_bytes, c.lake.retention_hours),
            (1000, 2)
        );
        for name in ["PROFLAKE_OUTPUT_BUCKET", "PROFLAKE_UPLOAD_BUCKET"] {
            let err = config(&[(name, "")]).unwrap_err();
            assert_eq!(err.variable, name);
        }
        let err = config(&[("PROFLAKE_LAKE_TARGET_FILE_BYTES", "x")]).unwrap_err();
        assert_eq!(err.variable, "PROFLAKE_LAKE_TARGET_FILE_BYTES");
    }
}

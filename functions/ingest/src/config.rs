//! The function's settings, read once at cold start from its environment.

use proflake_lambda::{ConfigError, FunctionConfig, OwnSettings, Vars};

/// The function's settings: the shared ones (`common`) and its own ([`IngestSettings`]).
pub type Config = FunctionConfig<IngestSettings>;

/// Default of `AWS_LAMBDA_FUNCTION_NAME` when running outside Lambda.
pub const DEFAULT_FUNCTION_NAME: &str = "proflake-ingest";

/// Default of `PROFLAKE_UPLOAD_URL_SECONDS`: how long a presigned upload URL is good for.
const DEFAULT_UPLOAD_URL_SECONDS: u64 = 900;

/// How requests prove who sends them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// A token the function checks: read from the SSM parameter named here (a SecureString),
    /// or given as it is (`PROFLAKE_INGEST_TOKEN`, for running outside AWS).
    Token(TokenSource),
    /// The function URL's `AWS_IAM` auth: Lambda checks each request's SigV4 signature before
    /// the function sees it, so the function checks nothing.
    Iam,
}

/// Where the token comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// The name of an SSM SecureString parameter.
    Parameter(String),
    /// The token itself.
    Value(String),
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSource::Parameter(name) => write!(f, "Parameter({name:?})"),
            TokenSource::Value(_) => f.write_str("Value(..)"),
        }
    }
}

/// The ingest function's own settings, beside the ones every proflake function shares (see
/// [`proflake_lambda::Config`]; its `PROFLAKE_LIMIT_MAX_REQUEST_BYTES` bounds a request):
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `PROFLAKE_UPLOAD_BUCKET` | the bucket uploads are written to | required |
/// | `PROFLAKE_INGEST_AUTH` | `token` (the function checks a token) or `iam` (the function URL's `AWS_IAM`) | `token` |
/// | `PROFLAKE_INGEST_TOKEN_PARAMETER` | the SSM SecureString parameter holding the token | |
/// | `PROFLAKE_INGEST_TOKEN` | the token itself, when there is no parameter (outside AWS) | |
/// | `PROFLAKE_UPLOAD_URL_SECONDS` | how long a presigned upload URL is good for, 1 to 604800 | `900` |
///
/// With `token` auth, one of the token variables must be set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestSettings {
    /// `PROFLAKE_UPLOAD_BUCKET`.
    pub uploads_bucket: String,
    /// `PROFLAKE_INGEST_AUTH` and the token's source.
    pub auth: Auth,
    /// `PROFLAKE_UPLOAD_URL_SECONDS`.
    pub upload_url_seconds: u64,
}

impl OwnSettings for IngestSettings {
    const DEFAULT_FUNCTION_NAME: &'static str = DEFAULT_FUNCTION_NAME;

    fn from_vars(vars: &Vars<'_>) -> Result<IngestSettings, ConfigError> {
        let uploads_bucket =
            vars.required("PROFLAKE_UPLOAD_BUCKET", "the uploads bucket's name")?;
        let auth = match vars.get("PROFLAKE_INGEST_AUTH").as_deref() {
            None | Some("token") => {
                let source = match (
                    vars.get("PROFLAKE_INGEST_TOKEN_PARAMETER"),
                    vars.get("PROFLAKE_INGEST_TOKEN"),
                ) {
                    (Some(name), _) => TokenSource::Parameter(name),
                    (None, Some(token)) => TokenSource::Value(token),
                    (None, None) => {
                        return Err(ConfigError::new(
                            "PROFLAKE_INGEST_TOKEN_PARAMETER",
                            "",
                            "with token auth, the SSM parameter holding the token \
                             (or PROFLAKE_INGEST_TOKEN)",
                        ))
                    }
                };
                Auth::Token(source)
            }
            Some("iam") => Auth::Iam,
            Some(other) => {
                return Err(ConfigError::new(
                    "PROFLAKE_INGEST_AUTH",
                    other,
                    "token or iam",
                ))
            }
        };
        let upload_url_seconds = match vars.get("PROFLAKE_UPLOAD_URL_SECONDS") {
            None => DEFAULT_UPLOAD_URL_SECONDS,
            Some(text) => text
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=604_800).contains(s))
                .ok_or_else(|| {
                    ConfigError::new(
                        "PROFLAKE_UPLOAD_URL_SECONDS",
                        &text,
                        "whole seconds from 1 to 604800 (S3's longest)",
                    )
                })?,
        };
        Ok(IngestSettings {
            uploads_bucket,
            auth,
            upload_url_seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let pairs = pairs.to_vec();
        Config::from_lookup(move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn token_auth_needs_a_token_and_iam_none() {
        let bucket = ("PROFLAKE_UPLOAD_BUCKET", "up");
        let err = config(&[bucket]).unwrap_err();
        assert_eq!(err.variable, "PROFLAKE_INGEST_TOKEN_PARAMETER");
        let c = config(&[
            bucket,
            ("PROFLAKE_INGEST_TOKEN_PARAMETER", "/proflake/token"),
        ])
        .unwrap();
        assert_eq!(
            c.auth,
            Auth::Token(TokenSource::Parameter("/proflake/token".into()))
        );
        assert_eq!(c.upload_url_seconds, 900);
        assert_eq!(c.common.function_name, "proflake-ingest");
        let c = config(&[bucket, ("PROFLAKE_INGEST_AUTH", "iam")]).unwrap();
        assert_eq!(c.auth, Auth::Iam);
        let c = config(&[bucket, ("PROFLAKE_INGEST_TOKEN", "secret")]).unwrap();
        assert!(
            !format!("{c:?}").contains("secret"),
            "the token is never printed"
        );
    }

    #[test]
    fn bad_settings_name_their_variable() {
        let bucket = ("PROFLAKE_UPLOAD_BUCKET", "up");
        assert_eq!(config(&[]).unwrap_err().variable, "PROFLAKE_UPLOAD_BUCKET");
        let err = config(&[bucket, ("PROFLAKE_INGEST_AUTH", "none")]).unwrap_err();
        assert_eq!(err.variable, "PROFLAKE_INGEST_AUTH");
        for seconds in ["0", "604801", "soon"] {
            let err = config(&[
                bucket,
                ("PROFLAKE_INGEST_AUTH", "iam"),
                ("PROFLAKE_UPLOAD_URL_SECONDS", seconds),
            ])
            .unwrap_err();
            assert_eq!(err.variable, "PROFLAKE_UPLOAD_URL_SECONDS");
        }
    }
}

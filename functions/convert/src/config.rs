//! The function's settings, read once at cold start from its environment.

use tracing_subscriber::EnvFilter;

/// How log lines are written to stdout (and so to CloudWatch Logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line, queryable with CloudWatch Logs Insights.
    Json,
    /// Human-readable lines, for running locally.
    Text,
}

/// Settings of the convert function. Each comes from an environment variable; an unset or
/// empty variable takes the default.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `PROFLAKE_OUTPUT_BUCKET` | bucket the outputs are written to | the bucket the event names |
/// | `PROFLAKE_OUTPUT_PREFIX` | prepended to every output key | empty, so keys equal the local CLI's |
/// | `PROFLAKE_MAX_OBJECT_BYTES` | larger uploads are quarantined unread | `268435456` (256 MiB) |
/// | `PROFLAKE_CONCURRENCY` | messages converted at once per invocation, ≥ 1 | `2` |
/// | `PROFLAKE_METRICS_NAMESPACE` | CloudWatch namespace of the EMF metrics | `proflake` |
/// | `PROFLAKE_LOG` | tracing filter (`info`, `proflake=debug,info`, ...) | `AWS_LAMBDA_LOG_LEVEL` lowercased if set, else `info` |
/// | `PROFLAKE_LOG_FORMAT` | `json` or `text` | `json` |
/// | `AWS_LAMBDA_FUNCTION_NAME` | the `FunctionName` metric dimension (set by Lambda) | `proflake-convert` |
///
/// The S3 client reads the standard AWS variables (`AWS_REGION`, credentials,
/// `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_S3`) through `aws-config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `PROFLAKE_OUTPUT_BUCKET`.
    pub output_bucket: Option<String>,
    /// `PROFLAKE_OUTPUT_PREFIX`.
    pub output_prefix: String,
    /// `PROFLAKE_MAX_OBJECT_BYTES`.
    pub max_object_bytes: u64,
    /// `PROFLAKE_CONCURRENCY`.
    pub concurrency: usize,
    /// `PROFLAKE_METRICS_NAMESPACE`.
    pub metrics_namespace: String,
    /// `AWS_LAMBDA_FUNCTION_NAME`.
    pub function_name: String,
    /// `PROFLAKE_LOG` (or `AWS_LAMBDA_LOG_LEVEL`).
    pub log_filter: String,
    /// `PROFLAKE_LOG_FORMAT`.
    pub log_format: LogFormat,
}

/// A variable holds a value the function cannot run with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} is invalid: {expected}")]
pub struct ConfigError {
    /// The environment variable.
    pub variable: &'static str,
    /// What it holds.
    pub value: String,
    /// What it should hold.
    pub expected: String,
}

impl ConfigError {
    fn new(variable: &'static str, value: &str, expected: impl Into<String>) -> Self {
        ConfigError {
            variable,
            value: value.into(),
            expected: expected.into(),
        }
    }
}

/// Default of `PROFLAKE_CONCURRENCY`: conversion is CPU-bound, and two at a time keep a
/// two-vCPU function busy while one of them waits on S3.
pub const DEFAULT_CONCURRENCY: usize = 2;

/// Default of `PROFLAKE_METRICS_NAMESPACE`.
pub const DEFAULT_METRICS_NAMESPACE: &str = "proflake";

/// Default of `AWS_LAMBDA_FUNCTION_NAME` when running outside Lambda.
pub const DEFAULT_FUNCTION_NAME: &str = "proflake-convert";

impl Config {
    /// The settings from the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// The settings from `get`, which returns a variable's value (`None` when unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        // Deployment templates tend to pass "" for "not set".
        let get = |name: &str| get(name).filter(|v| !v.is_empty());
        let log_filter = match (get("PROFLAKE_LOG"), get("AWS_LAMBDA_LOG_LEVEL")) {
            (Some(filter), _) => checked_filter("PROFLAKE_LOG", &filter)?,
            (None, Some(level)) => lambda_log_level(&level)?,
            (None, None) => "info".to_owned(),
        };
        Ok(Config {
            output_bucket: get("PROFLAKE_OUTPUT_BUCKET"),
            output_prefix: get("PROFLAKE_OUTPUT_PREFIX").unwrap_or_default(),
            max_object_bytes: match get("PROFLAKE_MAX_OBJECT_BYTES") {
                Some(v) => positive("PROFLAKE_MAX_OBJECT_BYTES", &v)?,
                None => proflake::DEFAULT_MAX_OBJECT_BYTES,
            },
            concurrency: match get("PROFLAKE_CONCURRENCY") {
                Some(v) => positive("PROFLAKE_CONCURRENCY", &v)?,
                None => DEFAULT_CONCURRENCY,
            },
            metrics_namespace: get("PROFLAKE_METRICS_NAMESPACE")
                .unwrap_or_else(|| DEFAULT_METRICS_NAMESPACE.into()),
            function_name: get("AWS_LAMBDA_FUNCTION_NAME")
                .unwrap_or_else(|| DEFAULT_FUNCTION_NAME.into()),
            log_filter,
            log_format: match get("PROFLAKE_LOG_FORMAT") {
                None => LogFormat::Json,
                Some(v) if v.eq_ignore_ascii_case("json") => LogFormat::Json,
                Some(v) if v.eq_ignore_ascii_case("text") => LogFormat::Text,
                Some(v) => {
                    return Err(ConfigError::new(
                        "PROFLAKE_LOG_FORMAT",
                        &v,
                        "expected json or text",
                    ))
                }
            },
        })
    }
}

fn positive<T: std::str::FromStr + Default + PartialEq>(
    variable: &'static str,
    value: &str,
) -> Result<T, ConfigError> {
    match value.trim().parse::<T>() {
        Ok(n) if n != T::default() => Ok(n),
        _ => Err(ConfigError::new(
            variable,
            value,
            "expected a whole number of at least 1",
        )),
    }
}

/// Refuses a filter now rather than have `init_logging` fall back to logging nothing useful.
fn checked_filter(variable: &'static str, filter: &str) -> Result<String, ConfigError> {
    match EnvFilter::builder().parse(filter) {
        Ok(_) => Ok(filter.to_owned()),
        Err(e) => Err(ConfigError::new(
            variable,
            filter,
            format!("expected a tracing filter ({e})"),
        )),
    }
}

/// Lambda's advanced logging controls name levels in capitals and include `FATAL`, which
/// tracing does not have.
fn lambda_log_level(level: &str) -> Result<String, ConfigError> {
    let lowered = level.trim().to_ascii_lowercase();
    match lowered.as_str() {
        "trace" | "debug" | "info" | "warn" | "error" => Ok(lowered),
        "fatal" => Ok("error".to_owned()),
        _ => Err(ConfigError::new(
            "AWS_LAMBDA_LOG_LEVEL",
            level,
            "expected TRACE, DEBUG, INFO, WARN, ERROR or FATAL",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = config(&[]).unwrap();
        assert_eq!(
            c,
            Config {
                output_bucket: None,
                output_prefix: String::new(),
                max_object_bytes: 268_435_456,
                concurrency: 2,
                metrics_namespace: "proflake".into(),
                function_name: "proflake-convert".into(),
                log_filter: "info".into(),
                log_format: LogFormat::Json,
            }
        );
        assert_eq!(config(&[("PROFLAKE_OUTPUT_BUCKET", "")]).unwrap(), c);
    }

    #[test]
    fn every_variable_is_read() {
        let c = config(&[
            ("PROFLAKE_OUTPUT_BUCKET", "out"),
            ("PROFLAKE_OUTPUT_PREFIX", "p/"),
            ("PROFLAKE_MAX_OBJECT_BYTES", "1024"),
            ("PROFLAKE_CONCURRENCY", "8"),
            ("PROFLAKE_METRICS_NAMESPACE", "ns"),
            ("AWS_LAMBDA_FUNCTION_NAME", "fn"),
            ("PROFLAKE_LOG", "proflake=debug,warn"),
            ("PROFLAKE_LOG_FORMAT", "TEXT"),
        ])
        .unwrap();
        assert_eq!(c.output_bucket.as_deref(), Some("out"));
        assert_eq!(c.output_prefix, "p/");
        assert_eq!(c.max_object_bytes, 1024);
        assert_eq!(c.concurrency, 8);
        assert_eq!(c.metrics_namespace, "ns");
        assert_eq!(c.function_name, "fn");
        assert_eq!(c.log_filter, "proflake=debug,warn");
        assert_eq!(c.log_format, LogFormat::Text);
    }

    #[test]
    fn log_filter_falls_back_to_the_lambda_log_level() {
        let level = |v| config(&[("AWS_LAMBDA_LOG_LEVEL", v)]).map(|c| c.log_filter);
        assert_eq!(level("DEBUG").unwrap(), "debug");
        assert_eq!(level("FATAL").unwrap(), "error");
        let both = config(&[("AWS_LAMBDA_LOG_LEVEL", "DEBUG"), ("PROFLAKE_LOG", "warn")]);
        assert_eq!(both.unwrap().log_filter, "warn");
        assert_eq!(level("LOUD").unwrap_err().variable, "AWS_LAMBDA_LOG_LEVEL");
    }

    #[test]
    fn bad_values_name_the_variable_and_value() {
        for (variable, value) in [
            ("PROFLAKE_CONCURRENCY", "0"),
            ("PROFLAKE_CONCURRENCY", "-1"),
            ("PROFLAKE_CONCURRENCY", "two"),
            ("PROFLAKE_MAX_OBJECT_BYTES", "1e6"),
            ("PROFLAKE_MAX_OBJECT_BYTES", "0"),
            ("PROFLAKE_LOG_FORMAT", "yaml"),
            ("PROFLAKE_LOG", "proflake=loud"),
        ] {
            let err = config(&[(variable, value)]).unwrap_err();
            assert_eq!((err.variable, err.value.as_str()), (variable, value));
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("{variable}=\"{value}\" is invalid")),
                "{text}"
            );
        }
    }
}

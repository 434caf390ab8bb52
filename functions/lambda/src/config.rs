//! The settings every function shares, read once at cold start from its environment, and the
//! reading of environment variables a function adds of its own.

use tracing_subscriber::EnvFilter;

/// How log lines are written to stdout (and so to CloudWatch Logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line, queryable with CloudWatch Logs Insights.
    Json,
    /// Human-readable lines, for running locally.
    Text,
}

/// The settings every function shares. Each comes from an environment variable; an unset or
/// empty variable takes the default.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `PROFLAKE_OUTPUT_BUCKET` | bucket the outputs are written to | the bucket the event names |
/// | `PROFLAKE_OUTPUT_PREFIX` | prepended to every output key | empty, so keys equal the local CLI's |
/// | `PROFLAKE_LIMIT_*` | the [`proflake::Limits`], one variable per limit | [`proflake::Limits::default`] |
/// | `PROFLAKE_CONCURRENCY` | messages handled at once per invocation, ≥ 1 | `2` |
/// | `PROFLAKE_METRICS_NAMESPACE` | CloudWatch namespace of the EMF metrics | `proflake` |
/// | `PROFLAKE_LOG` | tracing filter (`info`, `proflake=debug,info`, ...) | `AWS_LAMBDA_LOG_LEVEL` lowercased if set, else `info` |
/// | `PROFLAKE_LOG_FORMAT` | `json` or `text` | `json` |
/// | `AWS_LAMBDA_FUNCTION_NAME` | the `FunctionName` metric dimension (set by Lambda) | the function's own default |
///
/// The S3 client reads the standard AWS variables (`AWS_REGION`, credentials,
/// `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_S3`) through `aws-config`; see
/// [`s3_client_from_env`](crate::s3_client_from_env).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `PROFLAKE_OUTPUT_BUCKET`.
    pub output_bucket: Option<String>,
    /// `PROFLAKE_OUTPUT_PREFIX`.
    pub output_prefix: String,
    /// `PROFLAKE_LIMIT_*`: what an input may make the function do.
    pub limits: proflake::Limits,
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
    /// `variable` holds `value`, which is not what the function `expected`.
    pub fn new(variable: &'static str, value: &str, expected: impl Into<String>) -> Self {
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

/// Variables that became limits: refused rather than ignored, so a deployment that still sets
/// one does not silently run with the default.
const RENAMED: [(&str, &str); 2] = [
    (
        "PROFLAKE_MAX_OBJECT_BYTES",
        "PROFLAKE_LIMIT_MAX_OBJECT_BYTES",
    ),
    (
        "PROFLAKE_MAX_DEBUG_FILE_BYTES",
        "PROFLAKE_LIMIT_MAX_DEBUG_FILE_BYTES",
    ),
];

/// Where a function's settings come from: the process environment, or a lookup (tests). A set
/// but empty variable reads as unset, because deployment templates tend to pass "" for "not
/// set".
pub struct Vars<'a> {
    get: Box<Lookup<'a>>,
}

type Lookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

impl Vars<'static> {
    /// The process environment.
    pub fn from_env() -> Self {
        Vars::from_lookup(|name| std::env::var(name).ok())
    }
}

impl Vars<'static> {
    /// The variables `pairs` sets, the first of a name winning (tests).
    pub fn from_pairs<'p>(pairs: impl IntoIterator<Item = &'p (&'p str, &'p str)>) -> Self {
        let mut set = std::collections::HashMap::new();
        for (name, value) in pairs {
            set.entry(name.to_string())
                .or_insert_with(|| value.to_string());
        }
        Vars::from_lookup(move |name| set.get(name).cloned())
    }
}

impl<'a> Vars<'a> {
    /// The variables `get` returns (`None` when unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String> + 'a) -> Self {
        Vars { get: Box::new(get) }
    }

    /// The value of `name`; `None` when it is unset or empty.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.get)(name).filter(|v| !v.is_empty())
    }

    /// The value of `name`, which the function cannot run without: `what` says what it is.
    pub fn required(&self, name: &'static str, what: &str) -> Result<String, ConfigError> {
        self.get(name)
            .ok_or_else(|| ConfigError::new(name, "", format!("required: {what}")))
    }

    /// A whole number of at least 1 in `name`; `None` when it is unset.
    pub fn positive<T: std::str::FromStr + Default + PartialEq>(
        &self,
        name: &'static str,
    ) -> Result<Option<T>, ConfigError> {
        self.get(name).map(|v| positive(name, &v)).transpose()
    }

    /// A tracing filter in `name`, checked; `None` when it is unset.
    pub fn tracing_filter(&self, name: &'static str) -> Result<Option<String>, ConfigError> {
        self.get(name).map(|v| checked_filter(name, &v)).transpose()
    }
}

impl Config {
    /// The settings from the process environment; `default_function_name` names the function
    /// in its metrics when `AWS_LAMBDA_FUNCTION_NAME` is unset (outside Lambda).
    pub fn from_env(default_function_name: &str) -> Result<Config, ConfigError> {
        Config::from_vars(&Vars::from_env(), default_function_name)
    }

    /// The settings from `vars`; see [`Config::from_env`].
    pub fn from_vars(vars: &Vars<'_>, default_function_name: &str) -> Result<Config, ConfigError> {
        let log_filter = match (
            vars.tracing_filter("PROFLAKE_LOG")?,
            vars.get("AWS_LAMBDA_LOG_LEVEL"),
        ) {
            (Some(filter), _) => filter,
            (None, Some(level)) => lambda_log_level(&level)?,
            (None, None) => "info".to_owned(),
        };
        for (old, new) in RENAMED {
            if let Some(value) = vars.get(old) {
                return Err(ConfigError::new(old, &value, format!("renamed: set {new}")));
            }
        }
        let limits = proflake::Limits::from_vars(|name| vars.get(name))
            .map_err(|e| ConfigError::new(e.variable, &e.value, e.expected))?;
        Ok(Config {
            output_bucket: vars.get("PROFLAKE_OUTPUT_BUCKET"),
            output_prefix: vars.get("PROFLAKE_OUTPUT_PREFIX").unwrap_or_default(),
            limits,
            concurrency: vars
                .positive("PROFLAKE_CONCURRENCY")?
                .unwrap_or(DEFAULT_CONCURRENCY),
            metrics_namespace: vars
                .get("PROFLAKE_METRICS_NAMESPACE")
                .unwrap_or_else(|| DEFAULT_METRICS_NAMESPACE.into()),
            function_name: vars
                .get("AWS_LAMBDA_FUNCTION_NAME")
                .unwrap_or_else(|| default_function_name.into()),
            log_filter,
            log_format: match vars.get("PROFLAKE_LOG_FORMAT") {
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

    /// The bucket outputs of an upload in `upload_bucket` go to.
    pub fn output_bucket<'a>(&'a self, upload_bucket: &'a str) -> &'a str {
        self.output_bucket.as_deref().unwrap_or(upload_bucket)
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

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(&Vars::from_pairs(pairs), "proflake-fn")
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        let c = config(&[]).unwrap();
        assert_eq!(
            c,
            Config {
                output_bucket: None,
                output_prefix: String::new(),
                limits: proflake::Limits::default(),
                concurrency: 2,
                metrics_namespace: "proflake".into(),
                function_name: "proflake-fn".into(),
                log_filter: "info".into(),
                log_format: LogFormat::Json,
            }
        );
        assert_eq!(config(&[("PROFLAKE_OUTPUT_BUCKET", "")]).unwrap(), c);
        assert_eq!(c.output_bucket("uploads"), "uploads");
    }

    #[test]
    fn every_variable_is_read() {
        let c = config(&[
            ("PROFLAKE_OUTPUT_BUCKET", "out"),
            ("PROFLAKE_OUTPUT_PREFIX", "p/"),
            ("PROFLAKE_LIMIT_MAX_OBJECT_BYTES", "1024"),
            ("PROFLAKE_LIMIT_MAX_SAMPLES", "5000"),
            ("PROFLAKE_CONCURRENCY", "8"),
            ("PROFLAKE_METRICS_NAMESPACE", "ns"),
            ("AWS_LAMBDA_FUNCTION_NAME", "fn"),
            ("PROFLAKE_LOG", "proflake=debug,warn"),
            ("PROFLAKE_LOG_FORMAT", "TEXT"),
        ])
        .unwrap();
        assert_eq!(c.output_bucket.as_deref(), Some("out"));
        assert_eq!(c.output_bucket("uploads"), "out");
        assert_eq!(c.output_prefix, "p/");
        assert_eq!(
            c.limits,
            proflake::Limits {
                max_object_bytes: 1024,
                max_samples: 5000,
                ..proflake::Limits::default()
            }
        );
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
            ("PROFLAKE_LIMIT_MAX_OBJECT_BYTES", "1e6"),
            ("PROFLAKE_LIMIT_MAX_OBJECT_BYTES", "0"),
            ("PROFLAKE_LIMIT_MAX_JSON_DEPTH", "500"),
            ("PROFLAKE_MAX_OBJECT_BYTES", "1024"),
            ("PROFLAKE_MAX_DEBUG_FILE_BYTES", "1024"),
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
        let renamed = config(&[("PROFLAKE_MAX_OBJECT_BYTES", "1024")]).unwrap_err();
        assert!(
            renamed
                .to_string()
                .ends_with("renamed: set PROFLAKE_LIMIT_MAX_OBJECT_BYTES"),
            "{renamed}"
        );
    }

    #[test]
    fn a_function_reads_its_own_variables_alike() {
        let v = Vars::from_pairs(&[("PROFLAKE_X_LIMIT", " 12 "), ("PROFLAKE_X_EMPTY", "")]);
        assert_eq!(v.positive::<u32>("PROFLAKE_X_LIMIT"), Ok(Some(12)));
        assert_eq!(v.positive::<u32>("PROFLAKE_X_EMPTY"), Ok(None));
        assert_eq!(v.get("PROFLAKE_X_EMPTY"), None);
        assert_eq!(v.tracing_filter("PROFLAKE_X_UNSET"), Ok(None));
        let bad = Vars::from_pairs(&[("PROFLAKE_X_LIMIT", "0")]);
        let err = bad.positive::<u32>("PROFLAKE_X_LIMIT").unwrap_err();
        assert_eq!(err.variable, "PROFLAKE_X_LIMIT");
        assert_eq!(
            v.required("PROFLAKE_X_LIMIT", "a limit"),
            Ok(" 12 ".to_owned())
        );
        let err = v.required("PROFLAKE_X_EMPTY", "a bucket").unwrap_err();
        assert_eq!(
            err.to_string(),
            "PROFLAKE_X_EMPTY=\"\" is invalid: required: a bucket"
        );
    }
}

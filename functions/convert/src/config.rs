//! The function's settings, read once at cold start from its environment.

use proflake_lambda::{ConfigError, FunctionConfig, OwnSettings, Vars};

/// The function's settings: the shared ones (`common`) and its own ([`ConvertSettings`]).
pub type Config = FunctionConfig<ConvertSettings>;

/// Default of `AWS_LAMBDA_FUNCTION_NAME` when running outside Lambda.
pub const DEFAULT_FUNCTION_NAME: &str = "proflake-convert";

/// The convert function's own setting, beside the ones every proflake function shares (see
/// [`proflake_lambda::Config`] for the variables and their defaults):
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `PROFLAKE_STREAM_ABOVE_BYTES` | Perfetto uploads larger than this are converted with a second pass, a window at a time | [`proflake::ProcessOptions::STREAM_ABOVE_BYTES`] |
/// | `PROFLAKE_REQUIRE_START_TIME` | `true`: an upload on a clock of its own that neither it nor its metadata places on the wall clock is quarantined (`no_wall_clock`) instead of placed at its arrival | `false` |
///
/// `AWS_LAMBDA_FUNCTION_NAME` defaults to [`DEFAULT_FUNCTION_NAME`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertSettings {
    /// `PROFLAKE_STREAM_ABOVE_BYTES`.
    pub stream_above_bytes: Option<u64>,
    /// `PROFLAKE_REQUIRE_START_TIME`.
    pub require_start_time: bool,
}

impl OwnSettings for ConvertSettings {
    fn from_vars(vars: &Vars<'_>) -> Result<ConvertSettings, ConfigError> {
        Ok(ConvertSettings {
            stream_above_bytes: proflake::ProcessOptions::stream_above_bytes_from(|name| {
                vars.get(name)
            })
            .map_err(|e| ConfigError::new(e.variable, &e.value, e.expected))?,
            require_start_time: flag(vars, REQUIRE_START_TIME)?,
        })
    }

    const DEFAULT_FUNCTION_NAME: &'static str = DEFAULT_FUNCTION_NAME;
}

const REQUIRE_START_TIME: &str = "PROFLAKE_REQUIRE_START_TIME";

/// A yes-or-no setting: `true` or `false` (unset: `false`).
fn flag(vars: &Vars<'_>, name: &'static str) -> Result<bool, ConfigError> {
    match vars.get(name).as_deref() {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ConfigError::new(name, other, "true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_proflake_convert_outside_lambda() {
        let c = Config::from_lookup(|_| None).unwrap();
        assert_eq!(c.common.function_name, "proflake-convert");
        let c = Config::from_lookup(|name| {
            (name == "AWS_LAMBDA_FUNCTION_NAME").then(|| "prod-convert".to_owned())
        })
        .unwrap();
        assert_eq!(c.common.function_name, "prod-convert");
    }

    #[test]
    fn shared_settings_are_read() {
        let c = Config::from_lookup(|name| match name {
            "PROFLAKE_CONCURRENCY" => Some("8".into()),
            "PROFLAKE_OUTPUT_PREFIX" => Some("p/".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            (c.common.concurrency, c.common.output_prefix.as_str()),
            (8, "p/")
        );
        let err = Config::from_lookup(|name| (name == "PROFLAKE_CONCURRENCY").then(|| "0".into()));
        assert_eq!(err.unwrap_err().variable, "PROFLAKE_CONCURRENCY");
    }

    #[test]
    fn the_streaming_threshold_is_read() {
        let c = Config::from_lookup(|_| None).unwrap();
        assert_eq!(c.stream_above_bytes, None);
        let set = |v: &'static str| {
            Config::from_lookup(move |name| {
                (name == "PROFLAKE_STREAM_ABOVE_BYTES").then(|| v.into())
            })
        };
        assert_eq!(set("1048576").unwrap().stream_above_bytes, Some(1 << 20));
        let err = set("lots").unwrap_err();
        assert_eq!(err.variable, "PROFLAKE_STREAM_ABOVE_BYTES");
    }

    #[test]
    fn requiring_a_start_time_is_read() {
        let set = |v: &'static str| {
            Config::from_lookup(move |name| (name == REQUIRE_START_TIME).then(|| v.into()))
        };
        assert!(!Config::from_lookup(|_| None).unwrap().require_start_time);
        assert!(set("true").unwrap().require_start_time);
        assert!(!set("false").unwrap().require_start_time);
        assert_eq!(set("yes").unwrap_err().variable, REQUIRE_START_TIME);
    }

    #[test]
    fn limits_are_read_and_a_bad_one_fails_init() {
        let limit = |value: &'static str| {
            Config::from_lookup(move |name| {
                (name == "PROFLAKE_LIMIT_MAX_SAMPLES").then(|| value.into())
            })
        };
        let c = limit("1000").unwrap();
        assert_eq!(c.common.limits.max_samples, 1000);
        assert_eq!(
            c.common.limits.max_threads,
            proflake::Limits::default().max_threads
        );
        // main prints this and exits before the runtime starts.
        assert_eq!(
            limit("lots").unwrap_err().to_string(),
            "PROFLAKE_LIMIT_MAX_SAMPLES=\"lots\" is invalid: expected a whole number of at least 1"
        );
    }
}

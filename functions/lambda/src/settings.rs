//! A function's settings: the ones every function shares and its own, read together.

use std::ops::Deref;

use crate::config::{Config, ConfigError, Vars};

/// The settings a function has of its own, read from its environment after the shared ones.
pub trait OwnSettings: Sized + Send + Sync + 'static {
    /// The `FunctionName` metric dimension when `AWS_LAMBDA_FUNCTION_NAME` is unset (outside
    /// Lambda).
    const DEFAULT_FUNCTION_NAME: &'static str;

    /// The settings from `vars`.
    fn from_vars(vars: &Vars<'_>) -> Result<Self, ConfigError>;
}

/// A function's settings: the shared [`Config`] in `common`, and its own (`S`), whose fields
/// read as this type's through `Deref`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionConfig<S> {
    /// The shared settings.
    pub common: Config,
    own: S,
}

impl<S: OwnSettings> FunctionConfig<S> {
    /// The settings from `vars`: the shared ones first, so their errors come first.
    pub fn from_vars(vars: &Vars<'_>) -> Result<Self, ConfigError> {
        Ok(FunctionConfig {
            common: Config::from_vars(vars, S::DEFAULT_FUNCTION_NAME)?,
            own: S::from_vars(vars)?,
        })
    }

    /// The settings from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        FunctionConfig::from_vars(&Vars::from_env())
    }

    /// The settings from `get`, which returns a variable's value (`None` when unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        FunctionConfig::from_vars(&Vars::from_lookup(get))
    }
}

impl<S> Deref for FunctionConfig<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.own
    }
}

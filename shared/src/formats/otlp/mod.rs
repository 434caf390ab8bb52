//! OTLP profiles (in progress).

use crate::error::{ErrorKind, Result};
use crate::model::Profile;

pub(crate) fn test(_prefix: &[u8]) -> bool {
    false
}

pub(crate) fn test_json(_prefix: &[u8]) -> bool {
    false
}

pub(crate) fn decode(_bytes: &[u8]) -> Result<Profile> {
    Err(ErrorKind::UnsupportedFormat { tried: "otlp".into() }.into())
}

pub(crate) fn decode_json(_bytes: &[u8]) -> Result<Profile> {
    Err(ErrorKind::UnsupportedFormat { tried: "otlp-json".into() }.into())
}

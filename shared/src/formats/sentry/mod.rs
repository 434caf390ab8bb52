//! Sentry (in progress).

use super::Extras;
use crate::error::{ErrorKind, Result};
use crate::model::Profile;

pub(crate) fn test_envelope(_prefix: &[u8]) -> bool {
    false
}

pub(crate) fn test_chunk(_prefix: &[u8]) -> bool {
    false
}

pub(crate) fn decode_envelope(_bytes: &[u8]) -> Result<(Profile, Extras)> {
    Err(ErrorKind::UnsupportedFormat { tried: "sentry".into() }.into())
}

pub(crate) fn decode_chunk(_bytes: &[u8]) -> Result<(Profile, Extras)> {
    Err(ErrorKind::UnsupportedFormat { tried: "sentry".into() }.into())
}

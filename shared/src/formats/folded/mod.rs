//! folded (in progress).

use crate::error::{ErrorKind, Result};
use crate::model::Profile;

pub(crate) fn test(_prefix: &[u8]) -> bool {
    false
}

pub(crate) fn decode(_bytes: &[u8]) -> Result<Profile> {
    Err(ErrorKind::UnsupportedFormat { tried: "folded".into() }.into())
}

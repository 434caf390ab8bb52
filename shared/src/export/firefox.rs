//! The Firefox Profiler's processed format (in progress).

use super::slice::Slice;
use crate::error::{ErrorKind, Result};

pub(crate) fn write(_slice: &Slice, _name: &str) -> Result<Vec<u8>> {
    Err(ErrorKind::Export {
        format: "firefox",
        what: "not written yet".into(),
    }
    .into())
}

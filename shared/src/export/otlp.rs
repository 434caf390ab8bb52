//! OTLP v1.10 (in progress).

use super::slice::Slice;
use crate::error::{ErrorKind, Result};

pub(crate) fn write(_slice: &Slice, _json: bool) -> Result<Vec<u8>> {
    Err(ErrorKind::Export {
        format: "otlp",
        what: "not written yet".into(),
    }
    .into())
}

//! A JSON document read whole into typed structs (never a generic value), with errors that
//! name the input's format and the path of what does not fit.

use serde::Deserialize;

use crate::error::{Error, ErrorKind, Result};

/// The error of a `format` document that is not what the format says, at no particular offset.
pub(crate) fn malformed(format: &'static str, what: String) -> Error {
    ErrorKind::Malformed {
        format,
        offset: 0,
        what,
    }
    .into()
}

/// Parses `json` as `T`, naming the path of what does not fit (`profiles[0].events[3].at:
/// invalid type`). Its depth must have been checked against `max_json_depth` first.
pub(crate) fn parse<'a, T: Deserialize<'a>>(format: &'static str, json: &'a [u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| malformed(format, format!("{}: {}", e.path(), e.inner())))?;
    de.end()
        .map_err(|e| malformed(format, format!("after the document: {e}")))?;
    Ok(value)
}

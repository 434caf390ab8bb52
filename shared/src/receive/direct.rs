//! `POST /v1/uploads`: a client too large for a request body (a function URL takes 6 MB) asks
//! where to upload a file straight into the bucket. The receiver names the key and the object
//! metadata; the front end that can (the ingest function) answers with a presigned PUT URL.

use http::request::Parts;
use serde::Deserialize;

use super::body::{decoded_body, media_type, unsupported_media_type};
use super::Refusal;
use crate::limits::Limits;
use crate::store::direct_upload_key;

/// Longest file name kept in a direct upload's key, in bytes.
const MAX_NAME_BYTES: usize = 128;

/// Where a client is to upload a file itself, and the object metadata it must send with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectUpload {
    /// The upload's key.
    pub key: String,
    /// S3 user metadata (`x-amz-meta-<name>`), names without the prefix: the service, release
    /// and environment the request gave.
    pub metadata: Vec<(String, String)>,
}

/// The request's JSON body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ask {
    /// The file's name; its extension is kept in the key.
    name: String,
    #[serde(default)]
    service: Option<String>,
    #[serde(default)]
    release: Option<String>,
    #[serde(default)]
    environment: Option<String>,
}

/// Reads an upload request. `id` makes the key unique (the front end's request id): the
/// content is not known yet, so it cannot name the key.
pub(super) fn read(
    head: &Parts,
    body: &[u8],
    limits: &Limits,
    id: &str,
) -> Result<DirectUpload, Refusal> {
    if media_type(head).as_deref() != Some("application/json") {
        return Err(unsupported_media_type(head, "application/json"));
    }
    let content = decoded_body(head, body, limits)?;
    let ask: Ask = serde_json::from_slice(&content).map_err(|e| {
        Refusal::bad_request(format!(
            "the body is not an upload request {{\"name\", \"service\", \"release\", \"environment\"}}: {e}"
        ))
    })?;
    let name = ask.name.trim();
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(Refusal::bad_request(format!(
            "name must be 1 to {MAX_NAME_BYTES} bytes"
        )));
    }
    let service = ask.service.as_deref().filter(|s| !s.is_empty());
    let key = direct_upload_key(service.unwrap_or("unknown"), id, name);
    let mut metadata = Vec::new();
    for (field, value) in [
        ("service", service),
        ("release", ask.release.as_deref()),
        ("environment", ask.environment.as_deref()),
    ] {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            // S3 sends user metadata as HTTP headers: printable ASCII only.
            if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) || value.len() > 256 {
                return Err(Refusal::bad_request(format!(
                    "{field} must be printable ASCII of at most 256 bytes (it travels as S3 object metadata)"
                )));
            }
            metadata.push((field.to_string(), value.to_string()));
        }
    }
    Ok(DirectUpload { key, metadata })
}

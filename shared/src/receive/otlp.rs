//! OTLP/HTTP profiles: an `ExportProfilesServiceRequest` in protobuf or JSON, filed whole as
//! one upload under `uploads/otlp/<service>/`, its resource's `service.name`,
//! `service.version` and `deployment.environment.name` as the upload's service, release and
//! environment. The request is parsed (in any layout the decoder reads) and checked by the
//! profcheck rules, but no profile is built: that is the conversion's work.

use http::request::Parts;

use super::body::{decoded_body, media_type, refusal_of, unsupported_media_type};
use super::{content_id, Partial, Read, Refusal, Upload};
use crate::formats::{read_otlp_request, InputFormat, OtlpRequest};
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::store::received_upload_key;

/// Conformance findings a partial success quotes; the rest are counted.
const FINDINGS_QUOTED: usize = 3;

pub(super) fn read(head: &Parts, body: &[u8], limits: &Limits) -> Result<Read, Refusal> {
    let (format, extension) = match media_type(head).as_deref() {
        Some("application/x-protobuf" | "application/protobuf") => (InputFormat::Otlp, "otlp"),
        Some("application/json") => (InputFormat::OtlpJson, "otlp.json"),
        _ => {
            return Err(unsupported_media_type(
                head,
                "application/x-protobuf or application/json",
            ))
        }
    };
    let content = decoded_body(head, body, limits)?;
    let json = format == InputFormat::OtlpJson;
    let request = read_otlp_request(&content, json, limits)
        .map_err(|e| refusal_of(&e, format, "the request"))?;
    if request.samples == 0 {
        // Nothing to convert: an empty request (or one of empty profiles) succeeds as is.
        let partial = Partial {
            rejected: 0,
            message: "the request holds no samples; nothing was stored".into(),
        };
        return Ok((Vec::new(), Some(partial), None));
    }
    let metadata = UploadMetadata {
        service: everywhere(&request, "service.name"),
        release: everywhere(&request, "service.version"),
        environment: everywhere(&request, "deployment.environment.name"),
        ..UploadMetadata::default()
    };
    let service = metadata.service.as_deref().unwrap_or("unknown");
    let id = content_id(&[b"otlp", &content]);
    let upload = Upload {
        key: received_upload_key("otlp", service, &id, extension),
        bytes: body.to_vec(),
        metadata: super::sidecar_json(&metadata),
    };
    Ok((vec![upload], findings(&request), None))
}

/// The value every resource that has `key` gives it, if they all agree: a request from several
/// services names none, and each profile keeps its own.
fn everywhere(request: &OtlpRequest, key: &str) -> Option<String> {
    let mut values = request
        .resources
        .iter()
        .filter_map(|attributes| attributes.iter().find(|(k, _)| k == key))
        .map(|(_, v)| v.as_str());
    let first = values.next()?;
    values
        .all(|v| v == first)
        .then(|| first.to_string())
        .filter(|v| !v.is_empty())
}

/// The profcheck findings of a stored request, as the warning of a partial success (no profile
/// rejected): the client hears of them, and the conversion lists them in the manifest.
fn findings(request: &OtlpRequest) -> Option<Partial> {
    if request.findings_total == 0 {
        return None;
    }
    let quoted: Vec<&str> = request
        .findings
        .iter()
        .take(FINDINGS_QUOTED)
        .map(String::as_str)
        .collect();
    Some(Partial {
        rejected: 0,
        message: format!(
            "stored, with {} conformance finding(s): {}",
            request.findings_total,
            quoted.join("; ")
        ),
    })
}

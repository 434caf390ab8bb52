//! OTLP/HTTP profiles: an `ExportProfilesServiceRequest` in protobuf or JSON, filed whole as
//! one upload under `uploads/otlp/<service>/`, its resource's `service.name`,
//! `service.version` and `deployment.environment.name` as the upload's service, release and
//! environment.

use http::request::Parts;

use super::body::{check_profile, decoded_body, media_type, unsupported_media_type};
use super::{content_id, Partial, Read, Refusal, Upload};
use crate::formats::InputFormat;
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::model::Profile;
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
    let decoded = check_profile(&content, format, limits, "the request")?;
    let profile = &decoded.profile;
    if profile.samples().is_empty() {
        // Nothing to convert: an empty request (or one of empty profiles) succeeds as is.
        let partial = Partial {
            rejected: 0,
            message: "the request holds no samples; nothing was stored".into(),
        };
        return Ok((Vec::new(), Some(partial), None));
    }
    let metadata = UploadMetadata {
        service: everywhere(profile, "service.name"),
        release: everywhere(profile, "service.version"),
        environment: everywhere(profile, "deployment.environment.name"),
        ..UploadMetadata::default()
    };
    let service = metadata.service.as_deref().unwrap_or("unknown");
    let id = content_id(&[b"otlp", &content]);
    let upload = Upload {
        key: received_upload_key("otlp", service, &id, extension),
        bytes: body.to_vec(),
        metadata: super::sidecar_json(&metadata),
    };
    Ok((vec![upload], findings(profile), None))
}

/// The value every process of the profile (else the profile itself) gives `key`, if they all
/// agree: a request from several services names none, and each profile keeps its own.
fn everywhere(profile: &Profile, key: &str) -> Option<String> {
    let mut values = profile.processes().filter_map(|(_, process)| {
        process
            .attributes
            .iter()
            .find(|(k, _)| profile.str(*k) == key)
            .map(|(_, v)| profile.str(*v))
    });
    let first = values
        .next()
        .or_else(|| profile.attributes.get(key).map(String::as_str))?;
    values
        .all(|v| v == first)
        .then(|| first.to_string())
        .filter(|v| !v.is_empty())
}

/// The profcheck findings of a stored request, as the warning of a partial success (no profile
/// rejected): the client hears of them, and the conversion lists them in the manifest.
fn findings(profile: &Profile) -> Option<Partial> {
    if profile.findings.is_empty() {
        return None;
    }
    let quoted: Vec<&str> = profile
        .findings
        .iter()
        .take(FINDINGS_QUOTED)
        .map(String::as_str)
        .collect();
    Some(Partial {
        rejected: 0,
        message: format!(
            "stored, with {} conformance finding(s): {}",
            profile.findings.len(),
            quoted.join("; ")
        ),
    })
}

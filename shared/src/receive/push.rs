//! Pyroscope's push API (`push.v1.PusherService/Push` over Connect), as every current
//! Pyroscope SDK sends it: a `PushRequest` of series, each a set of labels and raw pprof
//! profiles. Each profile becomes one upload under `uploads/pyroscope/<service>/`, with
//! `service_name` as its service, `__name__` as the label `profile_type`, and every other
//! label kept with it.

use std::collections::BTreeMap;

use base64::Engine;
use http::request::Parts;
use proflake_proto::pyroscope::push::v1::PushRequest;
use prost::Message;
use serde::Deserialize;

use super::body::{check_profile, decoded_body, media_type, unsupported_media_type};
use super::{content_id, sidecar_json, Read, Refusal, Upload};
use crate::formats::InputFormat;
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::store::received_upload_key;

/// The label that names the service.
const SERVICE_LABEL: &str = "service_name";
/// The label that names the profile type (`process_cpu`), kept as `profile_type`.
const NAME_LABEL: &str = "__name__";

pub(super) fn read(head: &Parts, body: &[u8], limits: &Limits) -> Result<Read, Refusal> {
    let json = match media_type(head).as_deref() {
        Some("application/proto" | "application/protobuf" | "application/x-protobuf") => false,
        Some("application/json") => true,
        _ => {
            return Err(unsupported_media_type(
                head,
                "application/proto or application/json",
            ))
        }
    };
    let content = decoded_body(head, body, limits)?;
    let series = if json {
        series_of_json(&content)?
    } else {
        series_of_proto(&content)?
    };
    let mut uploads = Vec::new();
    for (s, (labels, samples)) in series.into_iter().enumerate() {
        let (service, metadata) = metadata_of(labels);
        let metadata_json = sidecar_json(&metadata);
        let label_text = metadata_json.as_deref().unwrap_or_default();
        for (p, raw) in samples.into_iter().enumerate() {
            let what = format!("series {s} profile {p}");
            if raw.is_empty() {
                return Err(Refusal::bad_request(format!("{what} has no raw_profile")));
            }
            check_profile(&raw, InputFormat::Pprof, limits, &what)?;
            let id = content_id(&[b"pyroscope push", label_text, &raw]);
            uploads.push(Upload {
                key: received_upload_key("pyroscope", &service, &id, "pprof"),
                bytes: raw,
                metadata: metadata_json.clone(),
            });
        }
    }
    Ok((uploads, None, None))
}

/// A series: its labels in order, and its raw profiles.
type Series = (Vec<(String, String)>, Vec<Vec<u8>>);

fn series_of_proto(content: &[u8]) -> Result<Vec<Series>, Refusal> {
    let request = PushRequest::decode(content)
        .map_err(|e| Refusal::bad_request(format!("the body is not a push.v1.PushRequest: {e}")))?;
    Ok(request
        .series
        .into_iter()
        .map(|series| {
            let labels = series
                .labels
                .into_iter()
                .map(|l| (l.name, l.value))
                .collect();
            let samples = series.samples.into_iter().map(|s| s.raw_profile).collect();
            (labels, samples)
        })
        .collect())
}

/// The protobuf JSON mapping of `PushRequest`, as Connect's JSON codec writes it.
#[derive(Deserialize)]
struct JsonPush {
    #[serde(default)]
    series: Vec<JsonSeries>,
}

#[derive(Deserialize)]
struct JsonSeries {
    #[serde(default)]
    labels: Vec<JsonLabel>,
    #[serde(default)]
    samples: Vec<JsonSample>,
}

#[derive(Deserialize)]
struct JsonLabel {
    #[serde(default)]
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct JsonSample {
    #[serde(default, rename = "rawProfile", alias = "raw_profile")]
    raw_profile: String,
}

fn series_of_json(content: &[u8]) -> Result<Vec<Series>, Refusal> {
    let request: JsonPush = serde_json::from_slice(content).map_err(|e| {
        Refusal::bad_request(format!(
            "the body is not a push.v1.PushRequest in JSON: {e}"
        ))
    })?;
    let base64 = base64::engine::general_purpose::STANDARD;
    request
        .series
        .into_iter()
        .enumerate()
        .map(|(s, series)| {
            let labels = series
                .labels
                .into_iter()
                .map(|l| (l.name, l.value))
                .collect();
            let samples = series
                .samples
                .into_iter()
                .enumerate()
                .map(|(p, sample)| {
                    base64.decode(sample.raw_profile.as_bytes()).map_err(|e| {
                        Refusal::bad_request(format!(
                            "series {s} profile {p}: rawProfile is not base64: {e}"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok((labels, samples))
        })
        .collect()
}

/// A series' service and the metadata its uploads carry: `service_name` the service,
/// `__name__` the label `profile_type`, the other labels as they are (a repeated name keeps
/// its last value).
fn metadata_of(labels: Vec<(String, String)>) -> (String, UploadMetadata) {
    let mut kept = BTreeMap::new();
    let mut service = None;
    for (name, value) in labels {
        match name.as_str() {
            SERVICE_LABEL => service = Some(value),
            NAME_LABEL => {
                kept.insert("profile_type".to_string(), value);
            }
            _ => {
                kept.insert(name, value);
            }
        }
    }
    let service = service.filter(|s| !s.is_empty());
    let metadata = UploadMetadata {
        service: service.clone(),
        labels: kept,
        ..UploadMetadata::default()
    };
    (service.unwrap_or_else(|| "unknown".into()), metadata)
}

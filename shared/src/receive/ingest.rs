//! Pyroscope's ingest API, which older SDKs and the Java agent use:
//! `POST /ingest?name=APP{k=v,...}&from=&until=&format=pprof|jfr|folded|lines&sampleRate=...`,
//! the body the profile itself or `multipart/form-data` (`profile` for pprof, `jfr` for JFR).
//! `APP` becomes the upload's service and the `{k=v}` pairs its labels, `from` its start,
//! `sampleRate` the sampling rate of counted samples; `spyName`, `units` and `aggregationType`
//! are kept as labels.

use std::collections::BTreeMap;

use bytes::Bytes;
use http::request::Parts;

use super::body::{check_profile, decoded_body, media_type};
use super::{content_id, sidecar_json, Read, Refusal, Upload};
use crate::formats::InputFormat;
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::store::received_upload_key;

/// Query parameters kept as labels, under these names.
const KEPT_PARAMETERS: &[(&str, &str)] = &[
    ("spyName", "spy_name"),
    ("units", "units"),
    ("aggregationType", "aggregation_type"),
];

/// Most parts of a multipart body read.
const MAX_PARTS: usize = 16;

pub(super) fn read(head: &Parts, body: &[u8], limits: &Limits) -> Result<Read, Refusal> {
    let query = Query::parse(head.uri.query().unwrap_or(""));
    let name = query
        .get("name")
        .ok_or_else(|| Refusal::bad_request("the query has no name=APP{labels}"))?;
    let (service, mut labels) = parse_name(name)?;
    for (parameter, label) in KEPT_PARAMETERS {
        if let Some(value) = query.get(parameter).filter(|v| !v.is_empty()) {
            labels.insert((*label).to_string(), value.to_string());
        }
    }
    let timestamp = query.get("from").map(parse_time).transpose()?;
    let sample_rate_hz = match query.get("sampleRate").filter(|v| !v.is_empty()) {
        None => None,
        Some(text) => Some(
            text.trim()
                .parse::<u64>()
                .ok()
                .filter(|hz| (1..=1_000_000_000).contains(hz))
                .ok_or_else(|| {
                    Refusal::bad_request(format!("sampleRate={text:?} is not a rate in Hz"))
                })?,
        ),
    };
    let format = query.get("format").unwrap_or("folded").to_ascii_lowercase();
    let content = decoded_body(head, body, limits)?;
    let multipart = media_type(head).is_some_and(|m| m == "multipart/form-data");
    let parts = if multipart {
        multipart_parts(head, &content)?
    } else {
        Vec::new()
    };
    let part = |name: &str| {
        parts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.to_vec())
    };
    let whole = || {
        if multipart {
            None
        } else {
            Some(content.to_vec())
        }
    };
    let mut context_labels = Default::default();
    let (bytes, extension) = match format.as_str() {
        "pprof" => {
            let bytes = part("profile")
                .or_else(whole)
                .ok_or_else(|| Refusal::bad_request("the multipart body has no profile part"))?;
            check_profile(&bytes, InputFormat::Pprof, limits, "the profile")?;
            (bytes, "pprof")
        }
        "folded" => {
            let bytes = whole().or_else(|| part("profile")).unwrap_or_default();
            check_profile(&bytes, InputFormat::Folded, limits, "the profile")?;
            (bytes, "folded")
        }
        // A stack a line, each one sample: folded stacks with a count of 1.
        "lines" => {
            let text = whole().or_else(|| part("profile")).unwrap_or_default();
            let bytes = folded_of_lines(&text);
            check_profile(&bytes, InputFormat::Folded, limits, "the profile")?;
            (bytes, "folded")
        }
        // The Java agent's labels of async-profiler's contexts go into the sidecar, applied to
        // the recording's samples when it is converted.
        "jfr" => {
            let bytes = part("jfr")
                .or_else(whole)
                .ok_or_else(|| Refusal::bad_request("the multipart body has no jfr part"))?;
            if bytes.is_empty() {
                return Err(Refusal::bad_request("the JFR recording is empty"));
            }
            check_profile(&bytes, InputFormat::Jfr, limits, "the recording")?;
            if let Some(snapshot) = part("labels").filter(|l| !l.is_empty()) {
                context_labels = labels_snapshot(&snapshot, limits)?;
            }
            (bytes, "jfr")
        }
        other => {
            return Err(Refusal::bad_request(format!(
                "format={other} is not taken; send pprof, jfr, folded or lines"
            )))
        }
    };
    let metadata = UploadMetadata {
        service: Some(service.clone()),
        timestamp,
        labels,
        context_labels,
        sample_rate_hz,
        ..UploadMetadata::default()
    };
    let metadata_json = sidecar_json(&metadata);
    let id = content_id(&[
        b"pyroscope ingest",
        metadata_json.as_deref().unwrap_or_default(),
        &bytes,
    ]);
    let upload = Upload {
        key: received_upload_key("pyroscope", &service, &id, extension),
        bytes,
        metadata: metadata_json,
    };
    Ok((vec![upload], None, None))
}

/// The query's parameters, percent-decoded (`+` a space), the first of each name.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(query: &str) -> Query {
        let decode = |text: &str| {
            let text = text.replace('+', " ");
            percent_encoding::percent_decode_str(&text)
                .decode_utf8_lossy()
                .into_owned()
        };
        Query(
            query
                .split('&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| match pair.split_once('=') {
                    Some((name, value)) => (decode(name), decode(value)),
                    None => (decode(pair), String::new()),
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The labels of a JFR upload's contexts from its `labels` part: a `LabelsSnapshot`, gzipped
/// or not, inflated to at most `max_request_bytes`.
fn labels_snapshot(part: &[u8], limits: &Limits) -> Result<crate::formats::ContextLabels, Refusal> {
    use std::io::Read as _;
    let refused =
        |e: &crate::Error| super::body::refusal_of(e, InputFormat::Jfr, "the labels part");
    let plain = if part.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        let cap = limits.max_request_bytes;
        flate2::read::GzDecoder::new(part)
            .take(cap.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|e| Refusal::bad_request(format!("the labels part is not gzip: {e}")))?;
        if out.len() as u64 > cap {
            return Err(refused(&crate::limits::exceeded("max_request_bytes", cap)));
        }
        out
    } else {
        part.to_vec()
    };
    crate::formats::read_labels_snapshot(&plain, limits).map_err(|e| refused(&e))
}

/// `APP{k=v,k2=v2}` (the braces optional) as the service and its labels.
fn parse_name(name: &str) -> Result<(String, BTreeMap<String, String>), Refusal> {
    let (app, labels) = match name.split_once('{') {
        None => (name, ""),
        Some((app, rest)) => {
            let inner = rest.strip_suffix('}').ok_or_else(|| {
                Refusal::bad_request(format!("name={name:?}: the labels do not end in }}"))
            })?;
            (app, inner)
        }
    };
    let app = app.trim();
    if app.is_empty() {
        return Err(Refusal::bad_request(format!(
            "name={name:?} names no application"
        )));
    }
    let mut map = BTreeMap::new();
    for pair in labels.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').ok_or_else(|| {
            Refusal::bad_request(format!("name={name:?}: label {pair:?} is not key=value"))
        })?;
        map.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok((app.to_string(), map))
}

/// `from` as Unix seconds: Pyroscope takes seconds, milliseconds, microseconds or nanoseconds
/// and tells them apart by size.
fn parse_time(text: &str) -> Result<f64, Refusal> {
    let value: u64 = text
        .trim()
        .parse()
        .map_err(|_| Refusal::bad_request(format!("from={text:?} is not a Unix time")))?;
    let seconds = match value {
        v if v < 10_000_000_000 => v as f64,
        v if v < 10_000_000_000_000 => v as f64 / 1e3,
        v if v < 10_000_000_000_000_000 => v as f64 / 1e6,
        v => v as f64 / 1e9,
    };
    Ok(seconds)
}

/// The `lines` format (a stack a line, each one sample) as folded stacks.
fn folded_of_lines(text: &[u8]) -> Vec<u8> {
    let mut folded = Vec::with_capacity(text.len() + text.len() / 8);
    for line in text.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        folded.extend_from_slice(line);
        folded.extend_from_slice(b" 1\n");
    }
    folded
}

/// The named parts of a `multipart/form-data` body (at most [`MAX_PARTS`]).
fn multipart_parts(head: &Parts, content: &[u8]) -> Result<Vec<(String, Bytes)>, Refusal> {
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = multer::parse_boundary(content_type)
        .map_err(|e| Refusal::bad_request(format!("the multipart body has no boundary: {e}")))?;
    let body = Bytes::copy_from_slice(content);
    let stream = futures::stream::once(async move { Ok::<_, std::io::Error>(body) });
    let mut multipart = multer::Multipart::new(stream, boundary);
    let bad =
        |e: multer::Error| Refusal::bad_request(format!("the multipart body is malformed: {e}"));
    futures::executor::block_on(async {
        let mut parts = Vec::new();
        while let Some(field) = multipart.next_field().await.map_err(bad)? {
            if parts.len() == MAX_PARTS {
                return Err(Refusal::bad_request(format!(
                    "the multipart body has more than {MAX_PARTS} parts"
                )));
            }
            let name = field.name().unwrap_or("").to_string();
            let bytes = field.bytes().await.map_err(bad)?;
            parts.push((name, bytes));
        }
        Ok(parts)
    })
}

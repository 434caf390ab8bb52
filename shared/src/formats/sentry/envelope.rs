//! Sentry envelopes: a header line, then items, each an item-header line followed by its
//! payload (`length` bytes, or up to the next newline when the header gives no length).
//!
//! Of the items, only `profile_chunk` ones are read; others (client reports, attachments)
//! are counted and skipped. A `profile_chunk` item is either Sample v2 JSON, handed on as
//! bytes, or, with `meta_length` in its header, the SDK's chunk metadata JSON immediately
//! followed by a raw Perfetto trace: Relay's compound item, split and merged as Relay does.

use std::io::Cursor;

use serde::Deserialize;

use crate::error::{ErrorKind, Result};
use crate::formats::{perfetto, Extras, SampleV2Item};
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::model::Profile;

const FORMAT: &str = "sentry-envelope";

#[derive(Deserialize)]
struct ItemHeader {
    #[serde(rename = "type")]
    kind: String,
    length: Option<u64>,
    platform: Option<String>,
    meta_length: Option<u64>,
    content_type: Option<String>,
}

/// One item: its header, where its payload starts, and the payload.
struct Item<'a> {
    header: ItemHeader,
    offset: u64,
    payload: &'a [u8],
}

fn malformed(offset: u64, what: impl Into<String>) -> crate::error::Error {
    ErrorKind::Malformed {
        format: FORMAT,
        offset,
        what: what.into(),
    }
    .into()
}

/// Splits an envelope into items.
fn items<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Vec<Item<'a>>> {
    let line_end = |from: usize| {
        bytes[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| from + i)
    };
    let header_end = line_end(0);
    limits.check_json_depth(&bytes[..header_end])?;
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes[..header_end])
        .map_err(|e| malformed(0, format!("envelope header is not a JSON object: {e}")))?;
    let mut items = Vec::new();
    let mut pos = (header_end + 1).min(bytes.len());
    while pos < bytes.len() {
        let end = line_end(pos);
        let line = &bytes[pos..end];
        if line.iter().all(u8::is_ascii_whitespace) {
            pos = end + 1;
            continue;
        }
        limits.check_json_depth(line)?;
        let header: ItemHeader = serde_json::from_slice(line).map_err(|e| {
            malformed(
                pos as u64,
                format!("item header is not valid JSON with a type: {e}"),
            )
        })?;
        let start = (end + 1).min(bytes.len());
        let payload_end = match header.length {
            Some(len) => {
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                let payload_end = start.checked_add(len).filter(|&e| e <= bytes.len());
                payload_end.ok_or(ErrorKind::Truncated {
                    offset: start as u64,
                    what: "envelope item payload shorter than its length header",
                })?
            }
            None => line_end(start),
        };
        items.push(Item {
            header,
            offset: start as u64,
            payload: &bytes[start..payload_end],
        });
        // The newline after a payload is optional.
        pos = payload_end;
        if bytes.get(pos) == Some(&b'\n') {
            pos += 1;
        }
    }
    Ok(items)
}

/// Decodes an envelope's profile chunks.
pub(crate) fn decode_envelope(bytes: &[u8], limits: &Limits) -> Result<(Profile, Extras)> {
    let mut json_items = Vec::new();
    let mut perfetto_items = Vec::new();
    let mut skipped = 0u64;
    for item in items(bytes, limits)? {
        match (item.header.kind.as_str(), item.header.meta_length) {
            ("profile_chunk", Some(_)) => perfetto_items.push(item),
            ("profile_chunk", None) => json_items.push(item),
            _ => skipped += 1,
        }
    }
    let mut result = match (perfetto_items.len(), json_items.is_empty()) {
        (0, true) => {
            return Err(ErrorKind::NoSamples {
                why: "the envelope has no profile_chunk item".into(),
            }
            .into())
        }
        (0, false) => {
            let sample_v2 = json_items
                .into_iter()
                .map(|item| SampleV2Item {
                    offset: item.offset,
                    platform: item.header.platform,
                    json: item.payload.to_vec(),
                })
                .collect();
            let extras = Extras {
                metadata: None,
                sample_v2,
            };
            (Profile::new(FORMAT), extras)
        }
        (1, true) => perfetto_item(&perfetto_items[0], limits)?,
        (n, _) => {
            // SDKs send one chunk per envelope; mixing would make one upload two profiles.
            return Err(malformed(
                perfetto_items[0].offset,
                format!(
                    "{n} Perfetto profile_chunk item(s) and {} JSON one(s): an upload holds one \
                     Perfetto chunk, or JSON chunks only",
                    json_items.len()
                ),
            ));
        }
    };
    for _ in 0..skipped {
        result.0.count("envelope items that are not profile chunks");
    }
    Ok(result)
}

/// Splits a compound item into metadata and trace, and decodes both.
fn perfetto_item(item: &Item<'_>, limits: &Limits) -> Result<(Profile, Extras)> {
    let header = &item.header;
    let meta_length = header.meta_length.unwrap_or(0);
    let platform = header.platform.as_deref().ok_or_else(|| {
        malformed(
            item.offset,
            "Perfetto profile_chunk item without a platform header",
        )
    })?;
    let split = usize::try_from(meta_length)
        .ok()
        .filter(|&m| m > 0 && m < item.payload.len())
        .ok_or_else(|| {
            malformed(
                item.offset,
                format!(
                    "meta_length {meta_length} must lie between 0 and the payload's {} bytes \
                     (Relay: InvalidSampledProfile)",
                    item.payload.len()
                ),
            )
        })?;
    if let Some(ct) = header.content_type.as_deref() {
        if ct != "application/x-perfetto-trace" {
            return Err(malformed(
                item.offset,
                format!("profile_chunk with meta_length has content_type {ct:?}, not application/x-perfetto-trace"),
            ));
        }
    }
    let (meta_bytes, trace) = item.payload.split_at(split);
    limits.check_json_depth(meta_bytes)?;
    let metadata = UploadMetadata::from_json(meta_bytes)?;
    if let Some(p) = metadata.platform.as_deref().filter(|&p| p != platform) {
        return Err(malformed(
            item.offset,
            format!("item header platform {platform:?} differs from the metadata's {p:?} (Relay: InvalidProfileType)"),
        ));
    }
    if let Some(ct) = metadata
        .content_type
        .as_deref()
        .filter(|&c| c != "perfetto")
    {
        return Err(malformed(
            item.offset,
            format!("chunk metadata content_type is {ct:?}, not \"perfetto\""),
        ));
    }
    let trace_offset = item.offset + split as u64;
    let profile = perfetto::decode(Cursor::new(trace), "plain", limits)
        .map_err(|e| e.offset_by(trace_offset))?;
    let metadata = UploadMetadata {
        platform: Some(platform.to_owned()),
        ..metadata
    };
    Ok((
        profile,
        Extras {
            metadata: Some(metadata),
            sample_v2: Vec::new(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use crate::{ConvertOptions, ErrorKind};

    /// Chunk metadata whose timestamp lies past 2262, in front of a trace on a trace clock:
    /// anchoring the trace at that time overflowed the conversion to ns.
    #[test]
    fn chunk_metadata_time_past_2262_is_invalid_metadata() {
        let envelope = include_bytes!(
            "../../../../tests/fuzz/regressions/convert/metadata_timestamp_past_2262.envelope"
        );
        let err = crate::convert_upload("uploads/e", "etag", envelope, &ConvertOptions::default())
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidMetadata { what } if what.contains("1e300")),
            "{err}"
        );
    }
}

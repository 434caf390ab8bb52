//! Sentry inputs: a Sample v2 profile chunk on its own, or an envelope of `profile_chunk`
//! items as SDKs send them to Relay.
//!
//! A Sample v2 chunk is already the output format: it is handed on as bytes, for the Sample v2
//! reader to check against Relay's rules, pass through and read into the model. A Perfetto
//! item (SDK metadata JSON followed by a raw trace) is split as Relay splits it; the trace is
//! decoded like any Perfetto upload and the metadata becomes the upload's metadata.

mod envelope;

pub(crate) use envelope::decode_envelope;

use super::{Extras, SampleV2Item};
use crate::model::Profile;

/// A standalone Sample v2 chunk: no profile of its own yet, the chunk as its one item.
pub(crate) fn decode_chunk(bytes: Vec<u8>) -> (Profile, Extras) {
    let item = SampleV2Item {
        offset: 0,
        platform: None,
        json: bytes,
    };
    let extras = Extras {
        metadata: None,
        sample_v2: vec![item],
    };
    (Profile::new("sample-v2"), extras)
}

/// Whether the content is one JSON object with Sample v2's marks: `"version":"2"` and a
/// `profile` or chunk id near the start.
pub(crate) fn test_chunk(prefix: &[u8]) -> bool {
    let text = String::from_utf8_lossy(prefix);
    let trimmed = text.trim_start();
    trimmed.starts_with('{')
        && compact_contains(trimmed, "\"version\":\"2\"")
        && ["\"profile\"", "\"chunk_id\"", "\"profiler_id\""]
            .iter()
            .any(|k| trimmed.contains(k))
}

/// Whether the content starts like an envelope: a JSON object header line, then an item
/// header line with a `type`.
pub(crate) fn test_envelope(prefix: &[u8]) -> bool {
    let mut lines = prefix.splitn(3, |&b| b == b'\n');
    let (Some(header), Some(item)) = (lines.next(), lines.next()) else {
        return false;
    };
    let header_ok = matches!(
        serde_json::from_slice::<serde_json::Value>(header),
        Ok(serde_json::Value::Object(_))
    );
    let item_text = String::from_utf8_lossy(item);
    header_ok && item_text.trim_start().starts_with('{') && item_text.contains("\"type\"")
}

/// `needle` (written without spaces) occurs in `haystack` once whitespace is ignored.
fn compact_contains(haystack: &str, needle: &str) -> bool {
    let compact: String = haystack.chars().filter(|c| !c.is_whitespace()).collect();
    compact.contains(needle)
}

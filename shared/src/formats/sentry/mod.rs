//! Sentry inputs: a Sample v2 profile chunk on its own, or an envelope of `profile_chunk`
//! items as SDKs send them to Relay.
//!
//! A Sample v2 chunk is already the output format: the chunk reader ([`chunk`]) checks it
//! against Relay's rules and reads it into the model, and it is passed through as received. A
//! Perfetto
//! item (SDK metadata JSON followed by a raw trace) is split as Relay splits it; the trace is
//! decoded like any Perfetto upload and the metadata becomes the upload's metadata.

pub(crate) mod chunk;
mod envelope;

pub(crate) use envelope::decode_envelope;

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

//! Sentry Sample v2 profile chunks as an input: the reader that takes in a chunk an input
//! holds (alone, or as an envelope item), checks it by Relay's rules ([`crate::relay`], which
//! also holds the chunk's JSON shape) and reads it into the model. Relay accepts such a chunk,
//! so it is also passed through as received: the Sample v2 writer stores it.

mod read;

pub use read::{frame_handles, read_chunk, PassThrough};
pub(crate) use read::{import, import_frames, Imported, FORMAT};

use crate::error::Result;
use crate::formats::{Extras, SampleV2Item};
use crate::limits::Limits;
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
    (Profile::new(FORMAT), extras)
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

/// `needle` (written without spaces) occurs in `haystack` once whitespace is ignored.
fn compact_contains(haystack: &str, needle: &str) -> bool {
    let compact: String = haystack.chars().filter(|c| !c.is_whitespace()).collect();
    compact.contains(needle)
}

/// Takes in the Sample v2 chunks an input holds: each must pass Relay's rules, and is read
/// into `profile`, whose samples are then in time order. What Relay would repair is passed
/// through as sent, and said in the profile's findings.
pub(crate) fn accept_items(
    profile: &mut Profile,
    items: Vec<SampleV2Item>,
    limits: &Limits,
) -> Result<Vec<PassThrough>> {
    let mut chunks = Vec::with_capacity(items.len());
    for item in items {
        limits.check_json_depth(&item.json)?;
        let (chunk, repairs) = read::accept(item.json, item.offset, item.platform.as_deref())?;
        profile.findings.extend(
            repairs
                .iter()
                .map(|v| format!("sample v2 at byte {}: {v}", item.offset)),
        );
        import(profile, &chunk.chunk);
        chunks.push(chunk);
    }
    if !chunks.is_empty() {
        profile.sort_samples_by_time();
    }
    Ok(chunks)
}

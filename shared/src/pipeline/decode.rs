//! Decoding an upload: the format's decoder builds the model, and the Sample v2 chunks a
//! Sentry input already holds are checked against Relay's rules, kept as sent, and read into
//! the same model.

use std::io::Read;

use crate::error::Result;
use crate::formats::{self, Container, InputFormat};
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::model::Profile;
use crate::sample_v2::{self, PassThrough};

/// A decoded input.
#[derive(Debug)]
pub struct Decoded {
    /// The profile.
    pub profile: Profile,
    /// The detected format.
    pub format: InputFormat,
    /// The whole-file compression that was undone.
    pub container: Container,
    /// Metadata the input carries itself (the SDK's chunk metadata in a Sentry envelope). The
    /// caller's metadata takes precedence over it.
    pub metadata: Option<UploadMetadata>,
    /// Sample v2 chunks the input already holds; Relay accepts them, so they are passed
    /// through unchanged instead of being written from the model.
    pub chunks: Vec<PassThrough>,
}

/// Decodes `bytes` (compressed or not) into a profile within the default [`Limits`].
/// `format` overrides detection.
pub fn decode(bytes: &[u8], format: Option<InputFormat>) -> Result<Decoded> {
    decode_with_limits(bytes, format, &Limits::default())
}

/// [`decode`] within `limits`.
pub fn decode_with_limits(
    bytes: &[u8],
    format: Option<InputFormat>,
    limits: &Limits,
) -> Result<Decoded> {
    accept_decoded(formats::decode(bytes, format, limits)?, limits)
}

/// [`decode_with_limits`] of the `len` bytes `input` reads: a Perfetto trace is decoded as
/// it is read, so it is never held whole.
pub fn decode_stream_with_limits(
    input: impl Read,
    len: u64,
    format: Option<InputFormat>,
    limits: &Limits,
) -> Result<Decoded> {
    accept_decoded(formats::decode_stream(input, len, format, limits)?, limits)
}

/// [`decode_stream_with_limits`] of an upload already opened (its format detected).
pub(crate) fn decode_opened_with_limits(
    opened: formats::Opened<impl Read>,
    len: u64,
    limits: &Limits,
) -> Result<Decoded> {
    accept_decoded(formats::decode_opened(opened, len, limits)?, limits)
}

fn accept_decoded(input: formats::DecodedInput, limits: &Limits) -> Result<Decoded> {
    let mut profile = input.profile;
    let mut chunks = Vec::with_capacity(input.sample_v2.len());
    for item in input.sample_v2 {
        limits.check_json_depth(&item.json)?;
        let (chunk, repairs) = sample_v2::accept(item.json, item.offset, item.platform.as_deref())?;
        // What Relay would repair is passed through as sent, and said.
        profile.findings.extend(
            repairs
                .iter()
                .map(|v| format!("sample v2 at byte {}: {v}", item.offset)),
        );
        sample_v2::import(&mut profile, &chunk.chunk);
        chunks.push(chunk);
    }
    if !chunks.is_empty() {
        profile.sort_samples_by_time();
    }
    limits.check_profile(&profile)?;
    Ok(Decoded {
        profile,
        format: input.format,
        container: input.container,
        metadata: input.metadata,
        chunks,
    })
}

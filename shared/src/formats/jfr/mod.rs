//! Java Flight Recorder recordings (`.jfr`): the JDK's and async-profiler's. A file is chunks
//! back to back, each self-contained: a 68-byte header, then events, among them the chunk's
//! metadata (the classes of every value, by name) and its constant pools, which sit near the
//! chunk's end. So a chunk's records are read first, its metadata and pools kept and its
//! events spilled aside ([`spool`]); then its events are read back and decoded, and the chunk
//! is dropped before the next is read. Only the model, one chunk's metadata and pools and one
//! event are held.
//!
//! Values are decoded by their fields' names from each chunk's metadata, so the reader follows
//! the JDK's versions. The events that become samples and their series are listed in
//! `events::EVENTS`; every other event is counted and passed over by its size.

mod chunk;
mod constant_pool;
mod context_labels;
mod events;
mod metadata;
mod reader;
mod second_pass;
mod spool;
mod values;

use std::io::Read;

pub(crate) use self::context_labels::{
    apply as apply_context_labels, read_snapshot, relabeling as context_relabeling, ContextLabels,
};
pub(crate) use self::second_pass::first_pass;

use self::chunk::{Header, HEADER_BYTES, MAGIC};
use self::constant_pool::Pools;
use self::events::{Importer, Samples};
use self::metadata::Metadata;
use self::spool::SpooledChunk;
use crate::error::{ErrorKind, Result};
use crate::formats::Extras;
use crate::limits::Limits;
use crate::metadata::UploadMetadata;
use crate::model::Profile;

const FORMAT: &str = "jfr";

/// Event type of the metadata.
const METADATA_EVENT: u64 = 0;

/// Whether `prefix` starts a JFR chunk: its magic and a major version of 2.
pub(crate) fn test(prefix: &[u8]) -> bool {
    prefix.starts_with(MAGIC) && prefix.get(4..6) == Some(&[0, 2])
}

/// Decodes a (decompressed) recording a chunk at a time. A last chunk cut short is left out
/// and counted (`jfr_truncated_chunk`); a recording without one whole chunk is refused.
/// `codec` names the whole-file compression, for error messages.
pub(crate) fn decode(input: impl Read, codec: &'static str, limits: &Limits) -> Result<Profile> {
    let mut importer = Importer::new(limits, Samples::Keep);
    let chunks = read_chunks(input, codec, limits, &mut importer)?;
    Ok(finish(importer, chunks))
}

/// The model and what carries over it, once every chunk is read: its samples in time order.
fn finish(importer: Importer<'_>, chunks: u64) -> Profile {
    // What `inspect` and the tables' attributes show of the recording itself.
    let mut profile = importer.finish();
    profile
        .attributes
        .insert("jfr.chunks".into(), chunks.to_string());
    profile
}

/// Reads the recording's chunks into `importer`, one at a time; gives how many were whole.
fn read_chunks(
    input: impl Read,
    codec: &'static str,
    limits: &Limits,
    importer: &mut Importer<'_>,
) -> Result<u64> {
    // Records are read size first, a byte at a time.
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    let mut bytes = Vec::with_capacity(HEADER_BYTES);
    let mut offset = 0u64;
    let mut whole = 0u64;
    loop {
        bytes.clear();
        let read = (&mut input)
            .take(HEADER_BYTES as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| super::io_error(e, codec, offset, "JFR chunk"))?;
        if read == 0 {
            break;
        }
        if bytes.len() < HEADER_BYTES {
            importer.profile.count("jfr_truncated_chunk");
            break;
        }
        // The JVM writes a chunk's size when it closes the chunk: 0 is one still being
        // written, as the last chunk of a recording copied while it runs.
        if bytes[8..16] == [0; 8] {
            importer.profile.count("jfr_truncated_chunk");
            break;
        }
        let header = Header::read(&bytes, offset)?;
        let Some(mut spooled) = SpooledChunk::read(&mut input, &header, offset, codec, limits)?
        else {
            importer.profile.count("jfr_truncated_chunk");
            break;
        };
        decode_chunk(importer, &header, &mut spooled, limits)?;
        if whole == 0 {
            let version = format!("{}.{}", header.major, header.minor);
            importer
                .profile
                .attributes
                .insert("jfr.version".into(), version);
        }
        offset += header.size;
        whole += 1;
    }
    if whole == 0 {
        return Err(ErrorKind::Truncated {
            offset: 0,
            what: "the first JFR chunk",
        }
        .into());
    }
    Ok(whole)
}

/// What a recording says of itself: its chunks are Java's (Sentry's `java` platform, not the
/// `android` that JVM frames alone would make of them).
pub(crate) fn extras() -> Extras {
    Extras {
        metadata: Some(UploadMetadata {
            platform: Some("java".to_owned()),
            ..UploadMetadata::default()
        }),
        sample_v2: Vec::new(),
    }
}

/// Decodes one chunk's events, with its metadata and its constant pools.
fn decode_chunk(
    importer: &mut Importer<'_>,
    header: &Header,
    spooled: &mut SpooledChunk,
    limits: &Limits,
) -> Result<()> {
    let kept = spooled.kept();
    let metadata_at = spooled.locate(header.metadata_offset).ok_or_else(|| {
        kept.malformed(format!(
            "the header's metadata offset {} leads to no metadata record",
            header.metadata_offset
        ))
    })?;
    let mut r = kept.record(metadata_at, "metadata")?;
    let ty = r.varint()?;
    if ty != METADATA_EVENT {
        return Err(r.malformed(format!(
            "the header's metadata offset leads to an event of type {ty}"
        )));
    }
    let metadata = Metadata::read(&mut r, limits)?;
    let pools = Pools::read(
        &metadata,
        &kept,
        header.constant_pool_offset,
        &|position| spooled.locate(position),
        limits,
    )?;
    importer.chunk(header, &metadata, &pools, spooled)
}

#[cfg(test)]
pub(crate) mod synthetic_tests;
#[cfg(test)]
mod tests;

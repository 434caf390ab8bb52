//! Java Flight Recorder recordings (`.jfr`): the JDK's and async-profiler's. A file is chunks
//! back to back, each self-contained: a 68-byte header, then events, among them the chunk's
//! metadata (the classes of every value, by name) and its constant pools, which sit near the
//! chunk's end. So a chunk is read whole, decoded, and dropped before the next is read; only
//! the model and one chunk are held.
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
mod two_readings;
mod values;

use std::io::Read;

pub(crate) use self::context_labels::{
    apply as apply_context_labels, read_snapshot, relabeling as context_relabeling, ContextLabels,
};
pub(crate) use self::two_readings::first_reading;

use self::chunk::{Header, HEADER_BYTES, MAGIC};
use self::constant_pool::Pools;
use self::events::{Importer, Samples};
use self::metadata::Metadata;
use self::reader::Reader;
use crate::error::{ErrorKind, Result};
use crate::formats::Extras;
use crate::limits::{exceeded, Limits};
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
    mut input: impl Read,
    codec: &'static str,
    limits: &Limits,
    importer: &mut Importer<'_>,
) -> Result<u64> {
    let mut bytes = Vec::new();
    let mut offset = 0u64;
    let mut whole = 0u64;
    loop {
        bytes.clear();
        // Read in steps that double what is there, each reserved exactly: the buffer ends the
        // size of the chunk, where letting `read_to_end` grow it rounded it up to a power of
        // two (a third more for a 12 MB chunk).
        let read = |input: &mut dyn Read, bytes: &mut Vec<u8>, n: u64| {
            let mut read = 0;
            while read < n {
                let step = (n - read).min((bytes.len() as u64).max(1 << 16));
                bytes.reserve_exact(step as usize);
                let got = input
                    .take(step)
                    .read_to_end(bytes)
                    .map_err(|e| super::io_error(e, codec, offset, "JFR chunk"))?;
                read += got as u64;
                if (got as u64) < step {
                    break;
                }
            }
            Ok::<u64, crate::Error>(read)
        };
        if read(&mut input, &mut bytes, HEADER_BYTES as u64)? == 0 {
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
        // Grown as the bytes arrive: a header that lies about the size allocates nothing.
        // One byte past the limit is read so that a chunk the input cuts short is told
        // apart from one really too large: the first is truncated, only the second a limit.
        let wanted = header.size.min(limits.max_event_bytes.saturating_add(1));
        read(&mut input, &mut bytes, wanted - HEADER_BYTES as u64)?;
        if header.size > limits.max_event_bytes && bytes.len() as u64 == wanted {
            return Err(exceeded("max_event_bytes", limits.max_event_bytes));
        }
        if (bytes.len() as u64) < header.size {
            importer.profile.count("jfr_truncated_chunk");
            break;
        }
        decode_chunk(importer, &header, &bytes, offset, limits)?;
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

fn decode_chunk(
    importer: &mut Importer<'_>,
    header: &Header,
    bytes: &[u8],
    offset: u64,
    limits: &Limits,
) -> Result<()> {
    let chunk = Reader::new(bytes, 0, offset, header.compressed_integers);
    let at = header.metadata_offset as usize;
    let mut r = chunk.record(at, "metadata")?;
    let ty = r.varint()?;
    if ty != METADATA_EVENT {
        return Err(r.malformed(format!(
            "the header's metadata offset leads to an event of type {ty}"
        )));
    }
    let metadata = Metadata::read(&mut r, limits)?;
    let pools = Pools::read(
        &metadata,
        &chunk,
        header.constant_pool_offset as usize,
        limits,
    )?;
    importer.chunk(header, &metadata, &pools, chunk)
}

#[cfg(test)]
mod synthetic_tests;
#[cfg(test)]
mod tests;

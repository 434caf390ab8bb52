//! Perfetto protobuf traces (`.pftrace`): CPU samples from `PerfSample` (traced_perf),
//! `StreamingProfilePacket` (Chrome) and `StackSample`, with trace_processor's import
//! semantics: per-sequence incremental state, interning, packet defaults and clock
//! conversion.
//!
//! The trace is streamed packet by packet; memory grows with the interned state and the
//! samples, not with the file.

mod clocks;
mod importer;
mod limits;
mod packets;
mod sequence;
mod vocab;

use std::io::Read;

use super::protowire;
use crate::error::Result;
use crate::model::Profile;

/// Whether decompressed content looks like a Perfetto trace: a first `Trace.packet` record
/// whose body parses as protobuf fields with a known `TracePacket` field number.
pub(crate) fn test(prefix: &[u8]) -> bool {
    // Perfetto's own sniffer only checks for 0x0a; pprof and OTLP start with the same byte,
    // so look one level deeper.
    let Some(rest) = prefix.strip_prefix(&[0x0a]) else {
        return false;
    };
    let Some((len, body)) = read_varint(rest) else {
        return false;
    };
    let body = &body[..body.len().min(usize::try_from(len).unwrap_or(usize::MAX))];
    if body.is_empty() {
        return len == 0;
    }
    let Some((tag, _)) = read_varint(body) else {
        return false;
    };
    const PACKET_FIELDS: &[u64] = &[
        2, 3, 6, 8, 10, 11, 12, 13, 33, 35, 36, 41, 42, 43, 44, 45, 50, 54, 58, 59, 60, 66, 79, 87,
        133, 135,
    ];
    let (field, wire_type) = (tag >> 3, tag & 7);
    PACKET_FIELDS.contains(&field) && matches!(wire_type, 0 | 2)
}

fn read_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (value, len) = protowire::varint(bytes).ok()?;
    Some((value, &bytes[len..]))
}

/// Decodes a (decompressed) trace stream. `codec` names the whole-file compression, for
/// error messages.
pub(crate) fn decode(input: impl Read, codec: &'static str) -> Result<Profile> {
    let mut importer = importer::Importer::new();
    packets::PacketWalker::new().walk(input, codec, &mut |packet| importer.packet(packet))?;
    Ok(importer.finish())
}

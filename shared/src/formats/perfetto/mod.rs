//! Perfetto protobuf traces (`.pftrace`): CPU samples from `PerfSample` (traced_perf),
//! `StreamingProfilePacket` (Chrome) and `StackSample`, with trace_processor's import
//! semantics: per-sequence incremental state, interning, packet defaults and clock
//! conversion.
//!
//! The trace is streamed packet by packet; memory grows with the interned state and the
//! samples, not with the file. `decode_without_samples` and `second_pass` read a trace's model,
//! then its samples in a second pass, so as not to hold them all; [`first_pass`] offers them
//! to the pipeline.

mod clocks;
mod importer;
mod module_symbols;
mod packets;
mod perf_packet;
mod second_pass;
mod sequence;
mod vocab;

use std::io::Read;

use super::protowire;
use crate::error::Result;
use crate::limits::Limits;
use crate::model::Profile;

pub(crate) use second_pass::first_pass;

/// Whether decompressed content looks like a Perfetto trace: a first `Trace.packet` record
/// whose body parses as protobuf fields with a known `TracePacket` field number.
pub(crate) fn test(prefix: &[u8]) -> bool {
    // Perfetto's own sniffer only checks for 0x0a; pprof and OTLP start with the same byte,
    // so look one level deeper.
    let mut rest = prefix;
    // Empty packets say nothing, and a pprof whose first sample type has neither type nor
    // unit starts with the same `0a 00`. A trace holds nothing but packets, so what follows
    // an empty one must be another packet; pprof follows with other fields (`12` sample,
    // `32` string table) or a named sample type, whose first field (1) is no packet field.
    loop {
        let Some(after_tag) = rest.strip_prefix(&[0x0a]) else {
            return false;
        };
        let Some((len, body)) = read_varint(after_tag) else {
            return false;
        };
        if len > 0 {
            let body = &body[..body.len().min(usize::try_from(len).unwrap_or(usize::MAX))];
            return starts_packet(body);
        }
        if body.is_empty() {
            // Only empty packets up to the end of what was looked at.
            return true;
        }
        rest = body;
    }
}

/// Whether a non-empty packet's body starts with a `TracePacket` field.
fn starts_packet(body: &[u8]) -> bool {
    let Some((tag, _)) = read_varint(body) else {
        return false;
    };
    const PACKET_FIELDS: &[u64] = &[
        2, 3, 6, 8, 10, 11, 12, 13, 33, 35, 36, 41, 42, 43, 44, 45, 50, 54, 58, 59, 60, 61, 66, 79,
        87, 133, 135,
    ];
    let (field, wire_type) = (tag >> 3, tag & 7);
    PACKET_FIELDS.contains(&field) && matches!(wire_type, 0 | 2)
}

fn read_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (value, len) = protowire::varint(bytes).ok()?;
    Some((value, &bytes[len..]))
}

/// Decodes a (decompressed) trace stream within `limits`. `codec` names the whole-file
/// compression, for error messages.
pub(crate) fn decode(input: impl Read, codec: &'static str, limits: &Limits) -> Result<Profile> {
    let mut importer = importer::Importer::new(limits);
    packets::PacketWalker::new(limits).walk(input, codec, &mut |packet| importer.packet(packet))?;
    Ok(importer.finish())
}

#[cfg(test)]
mod tests {
    use super::test;

    #[test]
    fn empty_packets_are_followed_by_packets() {
        // Empty packets, then { timestamp (8): 5, trusted_packet_sequence_id (10): 1 }.
        assert!(test(&[
            0x0a, 0x00, 0x0a, 0x00, 0x0a, 0x04, 0x40, 0x05, 0x50, 0x01
        ]));
        assert!(test(&[0x0a, 0x00]), "nothing but an empty packet");
        // pprof with an unnamed first sample type: an empty ValueType, then a sample
        // (`12`), a string table (`32`) or a named sample type (its field 1 is a varint).
        assert!(!test(&[0x0a, 0x00, 0x12, 0x02, 0x08, 0x01]));
        assert!(!test(&[0x0a, 0x00, 0x32, 0x00]));
        assert!(!test(&[0x0a, 0x00, 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02]));
        assert!(!test(&[0x0a, 0x00, 0x0a, 0x00, 0x12, 0x00]));
        assert!(!test(&[0x0a, 0x05]), "cut after the length");
    }

    #[test]
    fn module_symbols_can_come_first() {
        // `traceconv symbolize` output on its own: { module_symbols (61): {} }.
        assert!(test(&[0x0a, 0x03, 0xea, 0x03, 0x00]));
    }
}

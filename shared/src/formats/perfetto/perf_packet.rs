//! `PerfSample` packets read straight off the wire.
//!
//! traced_perf writes one packet per sample, so a trace holds millions of packets of one
//! shape: a timestamp, a sequence id, perhaps flags, and a `PerfSample` of a few varints.
//! prost decoding each into a whole `TracePacket` was the largest cost of the decode. This
//! reads that shape directly. A packet of any other shape, one with a field this does not
//! read, or one that is malformed gives `None` and goes through prost, so the result is always
//! the packet prost gives: [`read`] is only ever a faster path to the same value.

use proflake_proto::perfetto::PerfSample;

use crate::formats::protowire;

/// A traced_perf sample packet: the `TracePacket` fields such a packet carries, beside its
/// sample. It is a fraction of a `TracePacket`'s size, which matters for millions of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct PerfSamplePacket {
    pub timestamp: Option<u64>,
    pub timestamp_clock_id: Option<u32>,
    pub trusted_packet_sequence_id: Option<u32>,
    pub sequence_flags: Option<u32>,
    /// `trusted_pid` and `first_packet_on_sequence`, which the importer does not use, are
    /// read and dropped.
    pub sample: PerfSample,
}

/// `TracePacket` field numbers of our schema; any other field is unknown and skipped, as
/// prost skips it.
const KNOWN_PACKET_FIELDS: &[u64] = &[
    2, 6, 8, 10, 12, 13, 41, 42, 43, 44, 50, 54, 58, 59, 60, 61, 66, 79, 87, 133, 135,
];

/// `PerfSample` field numbers of our schema.
const KNOWN_SAMPLE_FIELDS: &[u64] = &[1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19];

/// The packet `bytes` encode, if it is a `PerfSample` packet of the common shape.
#[inline]
pub(super) fn read(bytes: &[u8]) -> Option<PerfSamplePacket> {
    let mut packet = PerfSamplePacket::default();
    let mut sample = None;
    let mut at = 0;
    while at < bytes.len() {
        let (field, wire_type) = tag(bytes, &mut at)?;
        match (field, wire_type) {
            (8, 0) => packet.timestamp = Some(varint(bytes, &mut at)?),
            (58, 0) => packet.timestamp_clock_id = Some(varint(bytes, &mut at)? as u32),
            (10, 0) => packet.trusted_packet_sequence_id = Some(varint(bytes, &mut at)? as u32),
            (13, 0) => packet.sequence_flags = Some(varint(bytes, &mut at)? as u32),
            (79 | 87, 0) => drop(varint(bytes, &mut at)?),
            // prost merges a repeated message field into the first; leave that to prost.
            (66, 2) if sample.is_none() => {
                let body = body(bytes, &mut at)?;
                sample = Some(perf_sample(body)?);
            }
            (f, _) if KNOWN_PACKET_FIELDS.contains(&f) => return None,
            (_, w) => skip(bytes, &mut at, w)?,
        }
    }
    packet.sample = sample?;
    Some(packet)
}

/// A `PerfSample` of varints only: no follower counts and no producer event.
#[inline]
fn perf_sample(bytes: &[u8]) -> Option<PerfSample> {
    let mut s = PerfSample::default();
    let mut at = 0;
    while at < bytes.len() {
        let (field, wire_type) = tag(bytes, &mut at)?;
        match (field, wire_type) {
            (1, 0) => s.cpu = Some(varint(bytes, &mut at)? as u32),
            (2, 0) => s.pid = Some(varint(bytes, &mut at)? as u32),
            (3, 0) => s.tid = Some(varint(bytes, &mut at)? as u32),
            (4, 0) => s.callstack_iid = Some(varint(bytes, &mut at)?),
            (5, 0) => s.cpu_mode = Some(varint(bytes, &mut at)? as i32),
            (6, 0) => s.timebase_count = Some(varint(bytes, &mut at)?),
            (16, 0) => s.unwind_error = Some(varint(bytes, &mut at)? as i32),
            (17, 0) => s.kernel_records_lost = Some(varint(bytes, &mut at)?),
            (18, 0) => s.sample_skipped_reason = Some(varint(bytes, &mut at)? as i32),
            (f, _) if KNOWN_SAMPLE_FIELDS.contains(&f) => return None,
            (_, w) => skip(bytes, &mut at, w)?,
        }
    }
    Some(s)
}

/// A field's number and wire type, as prost accepts them.
#[inline]
fn tag(bytes: &[u8], at: &mut usize) -> Option<(u64, u64)> {
    let tag = varint(bytes, at)?;
    let field = tag >> 3;
    (tag <= u64::from(u32::MAX) && field != 0).then_some((field, tag & 7))
}

/// A varint as prost reads it: at most 10 bytes, the tenth at most 1.
#[inline]
fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let rest = bytes.get(*at..)?;
    let (value, len) = protowire::varint(rest).ok()?;
    // More than 64 bits: prost refuses it.
    if len == 10 && rest[9] > 1 {
        return None;
    }
    *at += len;
    Some(value)
}

/// A length-delimited field's body.
#[inline]
fn body<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let len = usize::try_from(varint(bytes, at)?).ok()?;
    let end = at.checked_add(len).filter(|&end| end <= bytes.len())?;
    let body = &bytes[*at..end];
    *at = end;
    Some(body)
}

/// Steps over an unknown field's value. Groups are left to prost.
#[inline]
fn skip(bytes: &[u8], at: &mut usize, wire_type: u64) -> Option<()> {
    let len = match wire_type {
        0 => return varint(bytes, at).map(drop),
        1 => 8,
        2 => return body(bytes, at).map(drop),
        5 => 4,
        _ => return None,
    };
    *at = at.checked_add(len).filter(|&end| end <= bytes.len())?;
    Some(())
}

#[cfg(test)]
#[path = "perf_packet_tests.rs"]
mod tests;

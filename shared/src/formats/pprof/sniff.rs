//! Recognising a pprof `Profile` from its first bytes.
//!
//! pprof has no magic number, and OTLP requests and Perfetto traces also start with a
//! length-delimited field 1. What tells them apart is the shape below the first tag, so the
//! sniffer checks every field in the prefix against the schema of `profile.proto`, nested
//! messages included: each field number must exist in its message and carry the wire type
//! that message gives it. An OTLP `ResourceProfiles` (first inner field a message) or a
//! Perfetto `TracePacket` (fields above 2) then fails as the body of a `sample_type`, whose
//! only fields are two varints.
//!
//! The prefix must also hold one complete `sample_type`: every profile with samples has one,
//! and requiring it keeps text that happens to parse as a few protobuf fields out.

use crate::formats::protowire::{self, Step, Steps, Value};

/// How a field is encoded.
#[derive(Clone, Copy)]
enum Kind {
    /// A non-repeated scalar: varint only.
    Varint,
    /// A repeated scalar: packed (one body of varints) or one varint per entry.
    Packed,
    /// String or bytes: any body.
    Bytes,
    /// An embedded message with its own schema.
    Message(&'static [(u64, Kind)]),
}

use Kind::{Bytes, Message, Packed, Varint};

const VALUE_TYPE: &[(u64, Kind)] = &[(1, Varint), (2, Varint)];
const LABEL: &[(u64, Kind)] = &[(1, Varint), (2, Varint), (3, Varint), (4, Varint)];
const SAMPLE: &[(u64, Kind)] = &[(1, Packed), (2, Packed), (3, Message(LABEL))];
const MAPPING: &[(u64, Kind)] = &[
    (1, Varint),
    (2, Varint),
    (3, Varint),
    (4, Varint),
    (5, Varint),
    (6, Varint),
    (7, Varint),
    (8, Varint),
    (9, Varint),
    (10, Varint),
];
const LINE: &[(u64, Kind)] = &[(1, Varint), (2, Varint), (3, Varint)];
const LOCATION: &[(u64, Kind)] = &[
    (1, Varint),
    (2, Varint),
    (3, Varint),
    (4, Message(LINE)),
    (5, Varint),
];
const FUNCTION: &[(u64, Kind)] = &[
    (1, Varint),
    (2, Varint),
    (3, Varint),
    (4, Varint),
    (5, Varint),
];
const PROFILE: &[(u64, Kind)] = &[
    (1, Message(VALUE_TYPE)),
    (2, Message(SAMPLE)),
    (3, Message(MAPPING)),
    (4, Message(LOCATION)),
    (5, Message(FUNCTION)),
    (6, Bytes),
    (7, Varint),
    (8, Varint),
    (9, Varint),
    (10, Varint),
    (11, Message(VALUE_TYPE)),
    (12, Varint),
    (13, Packed),
    (14, Varint),
    (15, Varint),
];

const SAMPLE_TYPE: u64 = 1;
const STRING_TABLE: u64 = 6;

/// Whether `prefix`, the first bytes of decompressed content, looks like a pprof `Profile`.
pub(crate) fn test(prefix: &[u8]) -> bool {
    let mut sample_types = 0;
    let mut strings = 0;
    for step in Steps::new(prefix) {
        match step {
            Step::Field { number, value, .. } => {
                if !fits(PROFILE, number, value) {
                    return false;
                }
                if number == SAMPLE_TYPE {
                    sample_types += 1;
                }
                if number == STRING_TABLE {
                    strings += 1;
                    // string_table[0] is always "".
                    if strings == 1 && !matches!(value, Value::Len(b"")) {
                        return false;
                    }
                }
            }
            Step::CutBody {
                number, partial, ..
            } => {
                if !cut_fits(PROFILE, number, partial) {
                    return false;
                }
            }
            Step::Cut { .. } | Step::End => {}
            Step::Invalid { .. } => return false,
        }
    }
    sample_types > 0
}

fn kind_of(schema: &[(u64, Kind)], number: u64) -> Option<Kind> {
    schema.iter().find(|(n, _)| *n == number).map(|&(_, k)| k)
}

/// Whether a complete field fits its message's schema, nested bodies included.
fn fits(schema: &[(u64, Kind)], number: u64, value: Value) -> bool {
    match (kind_of(schema, number), value) {
        (Some(Varint | Packed), Value::Varint) => true,
        (Some(Packed), Value::Len(body)) => packed_varints(body, false),
        (Some(Bytes), Value::Len(_)) => true,
        (Some(Message(inner)), Value::Len(body)) => message(inner, body, false),
        _ => false,
    }
}

/// Whether the start of a length-delimited field cut off by the prefix end fits its schema.
fn cut_fits(schema: &[(u64, Kind)], number: u64, partial: &[u8]) -> bool {
    match kind_of(schema, number) {
        Some(Packed) => packed_varints(partial, true),
        Some(Bytes) => true,
        Some(Message(inner)) => message(inner, partial, true),
        Some(Varint) | None => false,
    }
}

/// Whether `body` parses as a message of `schema`; `cut` allows it to end mid-field.
fn message(schema: &[(u64, Kind)], body: &[u8], cut: bool) -> bool {
    Steps::new(body).all(|step| match step {
        Step::Field { number, value, .. } => fits(schema, number, value),
        Step::CutBody {
            number, partial, ..
        } => cut && cut_fits(schema, number, partial),
        Step::Cut { .. } => cut,
        Step::End => true,
        Step::Invalid { .. } => false,
    })
}

fn packed_varints(mut body: &[u8], cut: bool) -> bool {
    while !body.is_empty() {
        match protowire::varint(body) {
            Ok((_, n)) => body = &body[n..],
            Err(ended) => return cut && ended,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::test;

    macro_rules! fixture {
        ($rel:literal) => {
            include_bytes!(concat!("../../../../tests/fixtures/", $rel)).as_slice()
        };
    }

    fn prefix(bytes: &[u8]) -> &[u8] {
        &bytes[..bytes.len().min(4096)]
    }

    #[test]
    fn fixtures() {
        for gz in [
            fixture!("pprof/google-pprof_report_sample.cpu.pb.gz"),
            fixture!("pprof/google-pprof_cppbench.cpu_no_samples_type.pb.gz"),
            fixture!("pprof/google-pprof_go.nomappings.crash.pb.gz"),
        ] {
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(gz)
                .read_to_end(&mut plain)
                .unwrap();
            assert!(test(prefix(&plain)));
            assert!(!test(prefix(gz)), "still compressed");
        }
        // The OTLP sniffer runs first and would hide a mistake here, so check pprof's own
        // verdict on OTLP requests and Perfetto traces.
        for other in [
            fixture!("pprof/not_pprof/sig-profiling_profile.v1_10.pb.prefix"),
            fixture!("pprof/not_pprof/sig-profiling_profile.v1_8.otlp.prefix"),
            fixture!("pprof/not_pprof/sig-profiling_k8s_0.v1_10.pb.prefix"),
            fixture!("pprof/not_pprof/sig-profiling_k8s_1.v1_10.pb.prefix"),
            fixture!("pprof/not_pprof/sig-profiling_k8s.v1_8.lenprefixed.otlp.prefix"),
            fixture!("pprof/not_pprof/synthetic_edge_cases.v1_10.pb.prefix"),
            fixture!("pprof/not_pprof/synthetic_edge_cases.v1_9.pb.prefix"),
            fixture!("perfetto/synthetic/perf_basic.pftrace"),
            fixture!("perfetto/synthetic/streaming_chrome.pftrace"),
            fixture!("perfetto/difftests/traces/stack_sample.pftrace"),
        ] {
            assert!(!test(prefix(other)));
        }
    }

    #[test]
    fn minimal_profile_and_cut_prefix() {
        // sample_type {type: 1, unit: 2}, string_table "", "cpu", "ns".
        let profile = [
            0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x32, 0x00, 0x32, 0x03, b'c', b'p', b'u', 0x32,
            0x02, b'n', b's',
        ];
        assert!(test(&profile));
        // Cut inside the second string: still pprof.
        assert!(test(&profile[..11]));
        // Cut inside the sample_type: no complete sample_type seen.
        assert!(!test(&profile[..4]));
    }

    #[test]
    fn rejects_other_shapes() {
        // An OTLP request: resource_profiles { resource { ... } }.
        assert!(!test(&[0x0a, 0x06, 0x0a, 0x04, 0x0a, 0x02, 0x08, 0x01]));
        // A Perfetto packet: { timestamp (8): 5, trusted_packet_sequence_id (10): 1 }.
        assert!(!test(&[0x0a, 0x04, 0x40, 0x05, 0x50, 0x01]));
        // string_table[0] must be empty.
        assert!(!test(&[0x0a, 0x02, 0x08, 0x01, 0x32, 0x01, b'x']));
        // Text and JSON.
        assert!(!test(b"main;foo;bar 10\n"));
        assert!(!test(b"{\"version\":\"2\"}"));
        assert!(!test(b""));
        // A varint where sample_type must be a message.
        assert!(!test(&[0x08, 0x01]));
    }
}

use proptest::prelude::*;
use prost::Message;

use proflake_proto::perfetto::trace_packet::{Data, OptionalTrustedPacketSequenceId};
use proflake_proto::perfetto::TracePacket;

use super::*;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One field as the generator writes it.
#[derive(Clone, Debug)]
enum Field {
    Varint(u64, u64),
    Fixed64(u64),
    Fixed32(u64),
    Bytes(u64, Vec<u8>),
    /// A `PerfSample` body (field 66) made of these fields.
    Sample(Vec<Field>),
    /// Raw bytes: a cut-off or corrupt tail.
    Raw(Vec<u8>),
}

fn encode(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        match f {
            Field::Varint(n, v) => {
                put_varint(&mut out, n << 3);
                put_varint(&mut out, *v);
            }
            Field::Fixed64(n) => {
                put_varint(&mut out, n << 3 | 1);
                out.extend_from_slice(&[7; 8]);
            }
            Field::Fixed32(n) => {
                put_varint(&mut out, n << 3 | 5);
                out.extend_from_slice(&[7; 4]);
            }
            Field::Bytes(n, body) => {
                put_varint(&mut out, n << 3 | 2);
                put_varint(&mut out, body.len() as u64);
                out.extend_from_slice(body);
            }
            Field::Sample(fields) => {
                let body = encode(fields);
                put_varint(&mut out, 66 << 3 | 2);
                put_varint(&mut out, body.len() as u64);
                out.extend_from_slice(&body);
            }
            Field::Raw(bytes) => out.extend_from_slice(bytes),
        }
    }
    out
}

/// The fast path gives what prost gives, or nothing.
fn agrees(bytes: &[u8]) -> bool {
    let Some(fast) = read(bytes) else {
        return false;
    };
    let mut prost = TracePacket::decode(bytes).expect("prost decodes what the fast path reads");
    // The two fields the fast path reads past.
    prost.trusted_pid = None;
    prost.first_packet_on_sequence = None;
    let expected = TracePacket {
        timestamp: fast.timestamp,
        timestamp_clock_id: fast.timestamp_clock_id,
        optional_trusted_packet_sequence_id: fast
            .trusted_packet_sequence_id
            .map(OptionalTrustedPacketSequenceId::TrustedPacketSequenceId),
        sequence_flags: fast.sequence_flags,
        data: Some(Data::PerfSample(fast.sample.clone())),
        ..Default::default()
    };
    assert_eq!(expected, prost, "{bytes:02x?}");
    true
}

fn traced_perf_packet(ts: u64, iid: u64) -> Vec<Field> {
    vec![
        Field::Varint(8, ts),
        Field::Varint(10, 3),
        Field::Sample(vec![
            Field::Varint(1, 2),
            Field::Varint(2, 1234),
            Field::Varint(3, 1240),
            Field::Varint(4, iid),
            Field::Varint(5, 2),
            Field::Varint(6, 1 << 40),
        ]),
    ]
}

#[test]
fn traced_perf_packets_read_as_prost_reads_them() {
    let bytes = encode(&traced_perf_packet(1_000_000_123, 77));
    assert!(agrees(&bytes));
    let p = read(&bytes).unwrap();
    assert_eq!(p.timestamp, Some(1_000_000_123));
    let s = p.sample;
    assert_eq!(
        (s.cpu, s.tid, s.callstack_iid),
        (Some(2), Some(1240), Some(77))
    );

    // Every field the fast path reads, each scalar twice (the last one counts), with flags,
    // clock, trusted pid and unknown fields of every wire type around them.
    let mut sample: Vec<Field> = [1, 2, 3, 4, 5, 6, 16, 17, 18]
        .into_iter()
        .flat_map(|n| [Field::Varint(n, n), Field::Varint(n, u64::MAX - n)])
        .collect();
    sample.extend([
        Field::Fixed64(30),
        Field::Bytes(31, vec![1, 2]),
        Field::Fixed32(32),
    ]);
    let packet = vec![
        Field::Varint(13, 3),
        Field::Varint(58, 6),
        Field::Varint(79, u64::MAX),
        Field::Varint(87, 2),
        Field::Varint(3, 1000),
        Field::Bytes(1000, vec![0xff; 3]),
        Field::Sample(sample),
        Field::Fixed64(200),
        Field::Varint(8, 5),
        Field::Varint(8, 6),
        Field::Varint(10, 1),
    ];
    assert!(agrees(&encode(&packet)));
    assert!(agrees(&encode(&[Field::Sample(vec![])])), "an empty sample");
}

#[test]
fn other_shapes_go_through_prost() {
    let mut cases: Vec<Vec<Field>> = vec![
        // Follower counts, a producer event, a second sample, interned data, another payload,
        // no payload at all.
        vec![Field::Sample(vec![Field::Varint(7, 1)])],
        vec![Field::Sample(vec![Field::Bytes(19, vec![])])],
        vec![Field::Sample(vec![]), Field::Sample(vec![])],
        vec![Field::Bytes(12, vec![]), Field::Sample(vec![])],
        vec![Field::Sample(vec![]), Field::Bytes(54, vec![])],
        vec![Field::Varint(8, 1), Field::Varint(10, 1)],
        // A known field with another wire type, a group, a varint of 11 bytes, a body past
        // the end, a cut tag.
        vec![Field::Fixed64(8), Field::Sample(vec![])],
        vec![Field::Sample(vec![Field::Bytes(1, vec![])])],
        vec![Field::Raw(vec![0xdb, 0x01]), Field::Sample(vec![])],
        vec![
            Field::Sample(vec![]),
            Field::Raw(vec![
                0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
            ]),
        ],
        vec![
            Field::Sample(vec![]),
            Field::Raw(vec![0xa2, 0x06, 0x05, 0x08]),
        ],
        vec![Field::Sample(vec![]), Field::Raw(vec![0x80])],
        // Field number 0.
        vec![Field::Sample(vec![]), Field::Raw(vec![0x00, 0x01])],
    ];
    for fields in cases.drain(..) {
        let bytes = encode(&fields);
        assert!(read(&bytes).is_none(), "{fields:?}");
    }
}

fn field(in_sample: bool) -> impl Strategy<Value = Field> {
    let numbers: Vec<u64> = if in_sample {
        vec![1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 99]
    } else {
        vec![3, 8, 10, 12, 13, 41, 42, 54, 58, 79, 87, 100, 4000]
    };
    let number = proptest::sample::select(numbers);
    let value = prop_oneof![
        Just(0u64),
        0u64..300,
        any::<u64>(),
        Just(u64::MAX),
        Just(u64::from(u32::MAX) + 1)
    ];
    prop_oneof![
        8 => (number.clone(), value).prop_map(|(n, v)| Field::Varint(n, v)),
        1 => number.clone().prop_map(Field::Fixed64),
        1 => number.clone().prop_map(Field::Fixed32),
        1 => (number, proptest::collection::vec(any::<u8>(), 0..4))
            .prop_map(|(n, b)| Field::Bytes(n, b)),
        1 => proptest::collection::vec(any::<u8>(), 1..4).prop_map(Field::Raw),
    ]
}

fn packet() -> impl Strategy<Value = Vec<Field>> {
    let sample = proptest::collection::vec(field(true), 0..8).prop_map(Field::Sample);
    (
        proptest::collection::vec(field(false), 0..5),
        proptest::collection::vec(sample, 0..3),
        proptest::collection::vec(field(false), 0..3),
    )
        .prop_map(|(mut before, samples, after)| {
            before.extend(samples);
            before.extend(after);
            before
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn any_packet_reads_as_prost_reads_it_or_not_at_all(fields in packet()) {
        agrees(&encode(&fields));
    }

    #[test]
    fn every_traced_perf_packet_takes_the_fast_path(ts: u64, iid: u64) {
        prop_assert!(agrees(&encode(&traced_perf_packet(ts, iid))));
    }
}

#[test]
fn android_perf_samples_take_the_fast_path_unless_they_bring_interned_data() {
    use super::super::packets::{Packet, PacketWalker};
    use crate::limits::Limits;

    // A trace as traced_perf writes it, with trusted uid and pid on every packet.
    let trace = include_bytes!("../../../../samples/perfetto/android_app.pftrace");
    let limits = Limits::default();
    let (mut fast, mut slow) = (0, 0);
    PacketWalker::new(&limits)
        .walk(&trace[..], "none", &mut |packet| {
            match packet {
                Packet::PerfSample(_) => fast += 1,
                Packet::Full(p) if matches!(p.data, Some(Data::PerfSample(_))) => {
                    // Only the samples that bring interned data along go through prost.
                    assert!(p.interned_data.is_some(), "{p:?}");
                    slow += 1;
                }
                Packet::Full(_) => {}
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(fast + slow, 2_581);
    assert!(slow * 100 < fast, "{slow} of {} through prost", fast + slow);
}

//! Perfetto traces symbolized by Perfetto's own tools: `traceconv symbolize` appends
//! `module_symbols` packets (TracePacket field 61) after the samples, and the decoder names
//! the frames from them as trace_processor does (match by mapping name and raw build id, then
//! by exact `rel_pc`).
//!
//! The traces are built here with the prost types: native frames without names in one mapping
//! with a build id, then the symbol packets.

use crate::{convert_upload, formats::sniff, ConvertOptions, InputFormat, UploadMetadata};
use proflake_proto::perfetto::{
    trace_packet::{Data, OptionalTrustedPacketSequenceId},
    AddressSymbols, Callstack, Frame, InternedData, InternedString, Line, Mapping, ModuleSymbols,
    PerfSample, Trace, TracePacket,
};
use prost::Message;
use serde_json::Value;

use super::util::{decode_ok, samples, stat, FrameView};

const LIB: &str = "/system/lib64/libfoo.so";
/// Raw build id bytes, not valid UTF-8: upstream declares the field `string`.
const BUILD_ID: &[u8] = &[0xb0, 0x3e, 0xff, 0x7f, 0x5e, 0x88, 0x4c, 0x8d];
/// rel_pcs of the three frames: the leaf (symbolized with an inline chain), the root (a plain
/// symbol) and one the symbol packets never name.
const LEAF_PC: u64 = 0x1234;
const ROOT_PC: u64 = 0x5678;
const UNNAMED_PC: u64 = 0x9abc;

fn string(iid: u64, s: &[u8]) -> InternedString {
    InternedString {
        iid: Some(iid),
        r#str: Some(s.to_vec()),
    }
}

fn on_sequence(mut p: TracePacket) -> TracePacket {
    p.optional_trusted_packet_sequence_id =
        Some(OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(1));
    p
}

/// A traced_perf-style sequence: one mapping `/system/lib64/libfoo.so` with BUILD_ID, three
/// nameless native frames, callstack root → UNNAMED → LEAF, and `n` samples of it.
fn sample_packets(n: u64) -> Vec<TracePacket> {
    let frame = |iid, rel_pc| Frame {
        iid: Some(iid),
        mapping_id: Some(1),
        rel_pc: Some(rel_pc),
        ..Default::default()
    };
    let start = on_sequence(TracePacket {
        sequence_flags: Some(1),
        timestamp: Some(1_000),
        interned_data: Some(InternedData {
            mapping_paths: vec![
                string(1, b"system"),
                string(2, b"lib64"),
                string(3, b"libfoo.so"),
            ],
            build_ids: vec![string(1, BUILD_ID)],
            mappings: vec![Mapping {
                iid: Some(1),
                build_id: Some(1),
                start: Some(0x7000_0000),
                end: Some(0x7010_0000),
                path_string_ids: vec![1, 2, 3],
                ..Default::default()
            }],
            frames: vec![frame(1, ROOT_PC), frame(2, UNNAMED_PC), frame(3, LEAF_PC)],
            callstacks: vec![Callstack {
                iid: Some(1),
                frame_ids: vec![1, 2, 3],
            }],
            ..Default::default()
        }),
        ..Default::default()
    });
    let mut packets = vec![start];
    for i in 0..n {
        packets.push(on_sequence(TracePacket {
            sequence_flags: Some(2),
            timestamp: Some(2_000_000 + i * 10_000_000),
            data: Some(Data::PerfSample(PerfSample {
                cpu: Some(0),
                pid: Some(7),
                tid: Some(7),
                cpu_mode: Some(2),
                callstack_iid: Some(1),
                ..Default::default()
            })),
            ..Default::default()
        }));
    }
    packets
}

fn line(function: &str, file: &str, line: u32) -> Line {
    Line {
        function_name: Some(function.into()),
        source_file_name: Some(file.into()),
        line_number: Some(line),
    }
}

/// A `module_symbols` packet as traceconv writes it: no sequence, no timestamp.
fn symbols(path: &str, build_id: &[u8], entries: Vec<(u64, Vec<Line>)>) -> TracePacket {
    TracePacket {
        data: Some(Data::ModuleSymbols(ModuleSymbols {
            path: Some(path.into()),
            build_id: Some(build_id.to_vec()),
            address_symbols: entries
                .into_iter()
                .map(|(address, lines)| AddressSymbols {
                    address: Some(address),
                    lines,
                })
                .collect(),
        })),
        ..Default::default()
    }
}

/// The symbol packets: the right one (an inline chain for the leaf, a plain symbol for the
/// root, an address no frame has), then one with a wrong build id and one with a wrong path,
/// both naming UNNAMED_PC.
fn symbol_packets() -> Vec<TracePacket> {
    vec![
        symbols(
            LIB,
            BUILD_ID,
            vec![
                (
                    LEAF_PC,
                    vec![
                        line("_ZN3foo5innerEv", "foo/inner.h", 10),
                        line("foo::middle", "foo/middle.cc", 20),
                        line("_Z5outerv", "foo/outer.cc", 30),
                    ],
                ),
                (ROOT_PC, vec![line("main", "main.cc", 5)]),
                (0xdead, vec![line("ghost", "ghost.cc", 1)]),
            ],
        ),
        symbols(
            LIB,
            &BUILD_ID[1..],
            vec![(UNNAMED_PC, vec![line("wrong_build_id", "", 0)])],
        ),
        symbols(
            "/system/lib64/libbar.so",
            BUILD_ID,
            vec![(UNNAMED_PC, vec![line("wrong_path", "", 0)])],
        ),
    ]
}

/// Samples first and the symbols appended, as `cat trace symbols > symbolized` gives.
fn symbolized_trace(n: u64) -> Vec<u8> {
    let mut trace = Trace {
        packet: sample_packets(n),
    }
    .encode_to_vec();
    trace.extend(
        Trace {
            packet: symbol_packets(),
        }
        .encode_to_vec(),
    );
    trace
}

/// The stack of the (only) sample, root first.
fn stack(bytes: &[u8]) -> (crate::Decoded, Vec<FrameView>) {
    let d = decode_ok(bytes, "symbolized trace");
    let all = samples(&d.profile);
    assert!(!all.is_empty());
    let stack = all[0].stack.clone().expect("the sample has a stack");
    assert!(all.iter().all(|s| s.stack.as_ref() == Some(&stack)));
    (d, stack)
}

fn assert_symbolized(d: &crate::Decoded, stack: &[FrameView]) {
    let [root, unnamed, leaf] = stack else {
        panic!("{stack:?}")
    };
    assert_eq!(root.rel_pc(), Some(ROOT_PC));
    assert_eq!(root.function.as_deref(), Some("main"));
    assert_eq!(root.system_name, None);
    assert_eq!(
        (root.file.as_deref(), root.line),
        (Some("main.cc"), Some(5))
    );
    assert_eq!(root.image_path.as_deref(), Some(LIB));

    assert_eq!(leaf.rel_pc(), Some(LEAF_PC));
    assert_eq!(leaf.function.as_deref(), Some("foo::inner()"));
    assert_eq!(leaf.system_name.as_deref(), Some("_ZN3foo5innerEv"));
    assert_eq!(
        (leaf.file.as_deref(), leaf.line),
        (Some("foo/inner.h"), Some(10))
    );

    // The packets with the wrong build id or path named nothing.
    assert_eq!(unnamed.rel_pc(), Some(UNNAMED_PC));
    assert_eq!(unnamed.function, None);

    // The inline chain, and the status, are not in the flat view: read the model frame.
    let p = &d.profile;
    let (_, leaf_frame) = p
        .frames()
        .find(|(_, f)| f.function.map(|s| p.str(s)) == Some("foo::inner()"))
        .expect("leaf frame");
    let chain: Vec<_> = leaf_frame
        .inlined_into
        .iter()
        .map(|c| {
            (
                p.opt_str(c.function),
                p.opt_str(c.system_name),
                p.opt_str(c.file),
                c.line,
            )
        })
        .collect();
    assert_eq!(
        chain,
        [
            (Some("foo::middle"), None, Some("foo/middle.cc"), Some(20)),
            (
                Some("outer()"),
                Some("_Z5outerv"),
                Some("foo/outer.cc"),
                Some(30)
            ),
        ]
    );
    assert_eq!(
        leaf_frame.symbol_status,
        Some(crate::model::SymbolStatus::Symbolicated)
    );
    let statuses: Vec<_> = p.frames().map(|(_, f)| f.symbol_status).collect();
    assert_eq!(
        statuses.iter().filter(|s| s.is_some()).count(),
        2,
        "{statuses:?}"
    );

    assert_eq!(stat(p, "module_symbols_packets"), 1);
    assert_eq!(stat(p, "module_symbols_frames"), 2);
    assert_eq!(
        stat(p, "stackprofile_invalid_mapping_id"),
        2,
        "{:?}",
        p.stats
    );
    assert_eq!(stat(p, "stackprofile_invalid_frame_id"), 1, "{:?}", p.stats);
}

#[test]
fn appended_module_symbols_name_the_frames() {
    let bytes = symbolized_trace(3);
    let (d, stack) = stack(&bytes);
    assert_eq!(d.format, InputFormat::Perfetto);
    assert_eq!(d.profile.samples().len(), 3);
    assert_symbolized(&d, &stack);
}

#[test]
fn without_module_symbols_the_frames_stay_nameless() {
    // The control: the names above come from the symbol packets.
    let bytes = Trace {
        packet: sample_packets(1),
    }
    .encode_to_vec();
    let (d, stack) = stack(&bytes);
    assert!(stack.iter().all(|f| f.function.is_none()), "{stack:?}");
    assert!(d.profile.frames().all(|(_, f)| f.symbol_status.is_none()));
    assert_eq!(stat(&d.profile, "module_symbols_frames"), 0);
}

#[test]
fn module_symbols_first_is_still_a_perfetto_trace() {
    // trace_processor sniffs such a file as its separate "symbols" importer; it is still
    // Perfetto's format, and the symbols apply wherever they stand.
    let mut packets = symbol_packets();
    packets.extend(sample_packets(3));
    let bytes = Trace { packet: packets }.encode_to_vec();
    assert_eq!(sniff(&bytes), Some(InputFormat::Perfetto));
    let (d, stack) = stack(&bytes);
    assert_symbolized(&d, &stack);
}

#[test]
fn symbolized_trace_converts_to_sample_v2_with_names_and_inline_frames() {
    let options = ConvertOptions {
        metadata: UploadMetadata::from_json(
            br#"{"platform": "android", "timestamp": 1700000000.0}"#,
        )
        .unwrap(),
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/sym", "etag", &symbolized_trace(5), &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let chunks = converted.sample_v2();
    assert_eq!(chunks.len(), 1);
    let (key, json) = chunks[0];
    assert_eq!(
        crate::writers::sample_v2::check_sample_v2(json),
        vec![],
        "{key}"
    );
    let doc: Value = serde_json::from_slice(json).unwrap();
    let frames = doc["profile"]["frames"].as_array().unwrap();
    let stacks = doc["profile"]["stacks"].as_array().unwrap();
    assert_eq!(doc["profile"]["samples"].as_array().unwrap().len(), 5);
    let [stack] = &stacks[..] else {
        panic!("{stacks:?}")
    };
    // Leaf first: the leaf frame and the two functions it was inlined into, then the
    // nameless frame, then main.
    let rows: Vec<_> = stack
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let f = &frames[i.as_u64().unwrap() as usize];
            (
                f["function"].as_str(),
                // Symbolized frames follow symbolicator: `filename` is the last component of
                // the path, which `abs_path` keeps whole.
                f["abs_path"].as_str().or(f["filename"].as_str()),
                f["lineno"].as_u64(),
                f["instruction_addr"].as_str(),
            )
        })
        .collect();
    let leaf_addr = format!("{:#x}", 0x7000_0000 + LEAF_PC);
    let unnamed_addr = format!("{:#x}", 0x7000_0000 + UNNAMED_PC);
    let root_addr = format!("{:#x}", 0x7000_0000 + ROOT_PC);
    assert_eq!(
        rows,
        [
            (
                Some("foo::inner()"),
                Some("foo/inner.h"),
                Some(10),
                Some(leaf_addr.as_str())
            ),
            (
                Some("foo::middle"),
                Some("foo/middle.cc"),
                Some(20),
                Some(leaf_addr.as_str())
            ),
            (
                Some("outer()"),
                Some("foo/outer.cc"),
                Some(30),
                Some(leaf_addr.as_str())
            ),
            (None, None, None, Some(unnamed_addr.as_str())),
            (
                Some("main"),
                Some("main.cc"),
                Some(5),
                Some(root_addr.as_str())
            ),
        ]
    );
}

//! Every limit tripped by a small input under a lowered limit: the typed error names it, the
//! same input passes under the defaults, and an upload that trips it is quarantined with a
//! report naming it. Plus reading the limits from variables, and the table of them in docs/limits.md.

use std::io::Write;

use proflake_proto::perfetto::{
    clock_snapshot::Clock,
    trace_packet::{Data, OptionalTrustedPacketSequenceId},
    AddressSymbols, ClockSnapshot, InternedData, InternedString, Line, ModuleSymbols, Trace,
    TracePacket,
};
use prost::Message;
use serde_json::json;

use super::*;
use crate::formats::InputFormat;
use crate::pipeline::{process_upload, ErrorReport, Outcome, ProcessOptions};
use crate::store::{LocalDirStore, ObjectStore};
use crate::symbols::{add_debug_file, DebugFileOutcome};

// ---- inputs -------------------------------------------------------------------------------

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

fn trace(packets: Vec<TracePacket>) -> Vec<u8> {
    Trace { packet: packets }.encode_to_vec()
}

fn on_sequence(seq: u32) -> TracePacket {
    TracePacket {
        optional_trusted_packet_sequence_id: Some(
            OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(seq),
        ),
        timestamp: Some(1),
        ..TracePacket::default()
    }
}

fn compressed(inner: &[u8]) -> TracePacket {
    TracePacket {
        data: Some(Data::CompressedPackets(zlib(inner))),
        ..TracePacket::default()
    }
}

/// A trace of one packet record holding `len` bytes of an unknown field drawn from four
/// letters: it compresses about 4:1, far from any bomb, and prost skips the field.
fn padded_trace(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let padding: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            b"acgt"[(state >> 60) as usize & 3]
        })
        .collect();
    // TracePacket field 1000, length-delimited: unknown to the decoder.
    let mut body = varint(1000 << 3 | 2);
    body.extend(varint(len as u64));
    body.extend(padding);
    let mut record = vec![0x0a];
    record.extend(varint(body.len() as u64));
    record.extend(body);
    record
}

fn otlp_fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/fixtures/otlp/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A Sample v2 chunk Relay accepts: two threads, stacks up to three frames deep.
fn sample_v2_chunk() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "version": "2",
        "chunk_id": "0123456789abcdef0123456789abcdef",
        "profiler_id": "fedcba9876543210fedcba9876543210",
        "platform": "python",
        "release": "app@1.0",
        "environment": "production",
        "client_sdk": {"name": "proflake", "version": "0.1.0"},
        "profile": {
            "samples": [
                {"timestamp": 1700000001.0, "stack_id": 0, "thread_id": "42"},
                {"timestamp": 1700000001.01, "stack_id": 1, "thread_id": "42"},
                {"timestamp": 1700000001.02, "stack_id": 1, "thread_id": "43"},
                {"timestamp": 1700000001.03, "stack_id": 0, "thread_id": "43"}
            ],
            "stacks": [[1, 0], [2, 1, 0]],
            "frames": [
                {"function": "main", "filename": "main.py", "lineno": 1},
                {"function": "run", "filename": "main.py", "lineno": 2},
                {"function": "work", "filename": "work.py", "lineno": 3}
            ],
            "thread_metadata": {"42": {"name": "main"}, "43": {"name": "worker"}}
        }
    }))
    .unwrap()
}

/// One case: an input that trips `limit` once it is lowered to `max`.
struct Case {
    limit: &'static str,
    max: u64,
    input: Vec<u8>,
    format: Option<InputFormat>,
}

fn case(limit: &'static str, max: u64, input: impl Into<Vec<u8>>) -> Case {
    Case {
        limit,
        max,
        input: input.into(),
        format: None,
    }
}

impl Case {
    fn decoded_as(mut self, format: InputFormat) -> Case {
        self.format = Some(format);
        self
    }

    fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        let field = match self.limit {
            "max_decompressed_bytes" => &mut limits.max_decompressed_bytes,
            "max_decompression_ratio" => &mut limits.max_decompression_ratio,
            "max_packet_bytes" => &mut limits.max_packet_bytes,
            "max_inflated_packet_bytes" => &mut limits.max_inflated_packet_bytes,
            "max_packet_nesting" => &mut limits.max_packet_nesting,
            "max_packets" => &mut limits.max_packets,
            "max_sequences" => &mut limits.max_sequences,
            "max_interned_entries" => &mut limits.max_interned_entries,
            "max_clock_snapshots" => &mut limits.max_clock_snapshots,
            "max_module_symbol_lines" => &mut limits.max_module_symbol_lines,
            "max_stream_messages" => &mut limits.max_stream_messages,
            "max_table_entries" => &mut limits.max_table_entries,
            "max_samples" => &mut limits.max_samples,
            "max_stack_depth" => &mut limits.max_stack_depth,
            "max_stack_nodes" => &mut limits.max_stack_nodes,
            "max_line_bytes" => &mut limits.max_line_bytes,
            "max_string_bytes" => &mut limits.max_string_bytes,
            "max_json_depth" => &mut limits.max_json_depth,
            "max_threads" => &mut limits.max_threads,
            "max_processes" => &mut limits.max_processes,
            "max_events" => &mut limits.max_events,
            "max_event_bytes" => &mut limits.max_event_bytes,
            other => panic!("no decoding case lowers {other}"),
        };
        *field = self.max;
        limits
    }
}

/// One input per limit that decoding enforces. The object and debug file sizes are enforced
/// before anything is decoded; they have tests of their own below.
fn cases() -> Vec<Case> {
    // About 1.5 MiB, compressing a few times over: beyond the ratio's floor.
    let folded_lines: String = (0..100_000).map(|i| format!("f{i};g{i} 1\n")).collect();
    assert!(folded_lines.len() as u64 > RATIO_FLOOR_BYTES + RATIO_FLOOR_BYTES / 4);
    let interned = TracePacket {
        sequence_flags: Some(1), // SEQ_INCREMENTAL_STATE_CLEARED
        interned_data: Some(InternedData {
            function_names: (1..=3)
                .map(|iid| InternedString {
                    iid: Some(iid),
                    r#str: Some(b"main".to_vec()),
                })
                .collect(),
            ..InternedData::default()
        }),
        ..on_sequence(1)
    };
    let symbols = TracePacket {
        data: Some(Data::ModuleSymbols(ModuleSymbols {
            path: Some("/lib/libx.so".into()),
            build_id: None,
            address_symbols: vec![AddressSymbols {
                address: Some(0x10),
                lines: ["inner", "outer"]
                    .map(|f| Line {
                        function_name: Some(f.into()),
                        source_file_name: None,
                        line_number: None,
                    })
                    .to_vec(),
            }],
        })),
        ..TracePacket::default()
    };
    let clock = || TracePacket {
        data: Some(Data::ClockSnapshot(ClockSnapshot {
            clocks: vec![Clock {
                clock_id: Some(6), // BOOTTIME
                timestamp: Some(1),
                ..Clock::default()
            }],
            ..ClockSnapshot::default()
        })),
        ..TracePacket::default()
    };
    let request = otlp_fixture("sig-profiling_profile.v1_10.pb");
    let mut stream = Vec::new();
    for _ in 0..2 {
        stream.extend((request.len() as u32).to_be_bytes());
        stream.extend(&request);
    }
    let pprof = std::fs::read(format!(
        "{}/../samples/pprof/google-pprof_report_sample.cpu.pb.gz",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    vec![
        case(
            "max_decompressed_bytes",
            64,
            gzip(&b"main;work 1\n".repeat(20)),
        ),
        case("max_decompression_ratio", 2, gzip(folded_lines.as_bytes())),
        case(
            "max_decompression_ratio",
            2,
            trace(vec![compressed(&padded_trace(3 << 19))]),
        ),
        case("max_packet_bytes", 4, trace(vec![on_sequence(u32::MAX)])),
        case(
            "max_inflated_packet_bytes",
            16,
            trace(vec![compressed(&trace(vec![on_sequence(1); 4]))]),
        ),
        case(
            "max_packet_nesting",
            1,
            trace(vec![compressed(&trace(vec![compressed(&trace(vec![
                on_sequence(1),
            ]))]))]),
        ),
        case("max_packets", 2, trace(vec![on_sequence(1); 3])),
        case(
            "max_sequences",
            2,
            trace((1..=3).map(on_sequence).collect()),
        ),
        case("max_interned_entries", 2, trace(vec![interned])),
        case("max_clock_snapshots", 1, trace(vec![clock(), clock()])),
        case("max_module_symbol_lines", 1, trace(vec![symbols])),
        case("max_stream_messages", 1, stream).decoded_as(InputFormat::Otlp),
        case("max_table_entries", 2, pprof.clone()),
        case("max_samples", 1, pprof),
        case(
            "max_table_entries",
            2,
            otlp_fixture("sig-profiling_profile.v1_10.pb"),
        ),
        case(
            "max_json_depth",
            3,
            otlp_fixture("sig-profiling_profile.v1_10.json"),
        ),
        case("max_json_depth", 2, sample_v2_chunk()),
        case("max_samples", 2, "main;a 1\nmain;b 1\nmain;c 1\n").decoded_as(InputFormat::Folded),
        case("max_samples", 3, sample_v2_chunk()),
        case("max_samples", 1, PERF_SCRIPT).decoded_as(InputFormat::PerfScript),
        case("max_line_bytes", 20, PERF_SCRIPT).decoded_as(InputFormat::PerfScript),
        // A Chrome trace's counter values, one mark per numeric arg.
        case(
            "max_samples",
            2,
            r#"[{"name": "n", "ph": "C", "ts": 1, "args": {"a": 1, "b": 2, "c": 3}}]"#,
        ),
        case(
            "max_events",
            2,
            r#"[{"name": "a", "ph": "i", "ts": 1}, {"name": "b", "ph": "i", "ts": 2},
                {"name": "c", "ph": "i", "ts": 3}]"#,
        ),
        // The stream reads a block at a time, and grows past it only for a longer event.
        case(
            "max_event_bytes",
            1 << 20,
            format!(
                r#"[{{"name": "a", "ph": "i", "ts": 1, "args": {{"text": "{}"}}}}]"#,
                "x".repeat(1_500_000)
            ),
        ),
        // A Sample v2 chunk passes through unchanged: a stack too deep cannot be cut from it.
        case("max_stack_depth", 2, sample_v2_chunk()),
        case("max_stack_nodes", 2, "main;work;spin 1\n").decoded_as(InputFormat::Folded),
        case("max_line_bytes", 10, "main;work;spin 1\n").decoded_as(InputFormat::Folded),
        case("max_string_bytes", 10, "main;a_long_function_name 1\n")
            .decoded_as(InputFormat::Folded),
        case(
            "max_threads",
            1,
            "P7;T0:8;/a/b.py:main:3 1000\nP7;T0:9;/a/b.py:main:3 1000\n",
        ),
        case("max_threads", 1, sample_v2_chunk()),
        case(
            "max_processes",
            1,
            "P7;T0:8;/a/b.py:main:3 1000\nP8;T0:8;/a/b.py:main:3 1000\n",
        ),
    ]
}

/// Two `perf script` records.
const PERF_SCRIPT: &str =
    "app 7 1.5: 10 cycles:\n\t4005f6 main+0x16 (/bin/app)\n\napp 7 2.5: 10 cycles:\n";

#[test]
fn every_limit_is_tripped_by_a_case_of_its_own() {
    let mut tripped: Vec<&str> = cases().iter().map(|c| c.limit).collect();
    // Enforced before decoding: see the tests of their own below.
    tripped.extend(["max_object_bytes", "max_debug_file_bytes"]);
    // The HTTP receiver's: see receive::tests.
    tripped.push("max_request_bytes");
    // Args past it are counted and left out, never an error: see formats::chrome's tests.
    tripped.push("max_span_args");
    for (name, _) in Limits::VARIABLES {
        assert!(tripped.contains(name), "no test trips {name}");
    }
}

#[test]
fn each_case_decodes_under_the_defaults_and_fails_naming_its_limit() {
    for case in cases() {
        let what = format!("{} = {}", case.limit, case.max);
        if let Err(e) = crate::decode(&case.input, case.format, &Limits::default()) {
            panic!("{what}: the input fails under the defaults too: {e}");
        }
        let error = crate::decode(&case.input, case.format, &case.limits())
            .map(|d| d.profile.samples().len())
            .expect_err(&what);
        assert_eq!(
            error.kind(),
            &ErrorKind::LimitExceeded {
                limit: case.limit,
                max: case.max
            },
            "{what}: {error}"
        );
        let text = error.to_string();
        let variable = Limits::variable(case.limit).unwrap();
        assert!(
            text.contains(case.limit) && text.contains(variable),
            "{what}: {text}"
        );
    }
}

fn local() -> (tempfile::TempDir, LocalDirStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    (dir, store)
}

/// Processes `input` uploaded at `key` within `limits` and returns its error report.
#[track_caller]
fn quarantined(key: &str, input: &[u8], options: &ProcessOptions) -> ErrorReport {
    let (_dir, store) = local();
    store.put(key, input).unwrap();
    let outcome = process_upload(&store, &store, key, options).unwrap();
    let Outcome::Quarantined(q) = outcome else {
        panic!("{key} is not quarantined: {outcome:?}")
    };
    assert_eq!(q.reason, "limit_exceeded", "{}", q.message);
    let report: ErrorReport =
        serde_json::from_slice(&store.get(&q.report_key).unwrap().expect("a report")).unwrap();
    assert_eq!(report.reason, "limit_exceeded");
    assert_eq!(store.list("converted/").unwrap(), Vec::<String>::new());
    report
}

#[test]
fn each_case_uploaded_is_quarantined_with_a_report_naming_its_limit() {
    for (i, case) in cases().into_iter().enumerate() {
        let options = ProcessOptions {
            format: case.format,
            limits: case.limits(),
            ..ProcessOptions::default()
        };
        let report = quarantined(&format!("uploads/case-{i}"), &case.input, &options);
        let variable = Limits::variable(case.limit).unwrap();
        assert!(
            report.error.contains(&format!(
                "the input exceeds the limit {} = {} ({variable})",
                case.limit, case.max
            )),
            "{}: {}",
            case.limit,
            report.error
        );
    }
}

#[test]
fn an_upload_over_max_object_bytes_is_quarantined_unread() {
    let input = b"main;work 1\n";
    let limits = Limits {
        max_object_bytes: input.len() as u64 - 1,
        ..Limits::default()
    };
    let options = ProcessOptions {
        limits,
        ..ProcessOptions::default()
    };
    let report = quarantined("uploads/a.folded", input, &options);
    assert_eq!(report.bytes, 0, "refused unread");
    assert!(
        report.error.contains(&format!(
            "max_object_bytes = {} (PROFLAKE_LIMIT_MAX_OBJECT_BYTES)",
            input.len() - 1
        )),
        "{}",
        report.error
    );
    // At the limit it converts.
    let (_dir, store) = local();
    store.put("uploads/a.folded", input).unwrap();
    let at_limit = ProcessOptions {
        limits: Limits {
            max_object_bytes: input.len() as u64,
            ..Limits::default()
        },
        ..ProcessOptions::default()
    };
    let outcome = process_upload(&store, &store, "uploads/a.folded", &at_limit).unwrap();
    assert!(matches!(outcome, Outcome::Converted(_)), "{outcome:?}");
}

#[test]
fn a_sidecar_is_held_to_the_size_and_json_depth_limits() {
    let (_dir, store) = local();
    store.put("uploads/a.folded", b"main;work 1\n").unwrap();
    let sidecar = br#"{"release": "1.0", "client_sdk": {"name": "sdk", "version": "1"}}"#;
    store
        .put("uploads/a.folded.metadata.json", sidecar)
        .unwrap();
    let process = |limits: Limits| {
        let options = ProcessOptions {
            limits,
            reconvert: true,
            ..ProcessOptions::default()
        };
        process_upload(&store, &store, "uploads/a.folded", &options).unwrap()
    };
    let outcome = process(Limits::default());
    assert!(matches!(outcome, Outcome::Converted(_)), "{outcome:?}");
    for (limits, named) in [
        (
            Limits {
                max_json_depth: 1,
                ..Limits::default()
            },
            "max_json_depth = 1",
        ),
        (
            Limits {
                max_object_bytes: sidecar.len() as u64 - 1,
                ..Limits::default()
            },
            "max_object_bytes",
        ),
    ] {
        let Outcome::Quarantined(q) = process(limits) else {
            panic!("{named}: not quarantined")
        };
        assert_eq!(q.reason, "limit_exceeded");
        assert!(
            q.message.starts_with("uploads/a.folded.metadata.json: ") && q.message.contains(named),
            "{}",
            q.message
        );
    }
}

#[test]
fn a_debug_file_over_max_debug_file_bytes_is_refused_with_a_report() {
    let (_dir, store) = local();
    let key = "debuginfo/0123456789abcdef0123456789abcdef01234567/libx.so";
    store.put(key, &[0u8; 64]).unwrap();
    let outcome = add_debug_file(&store, key, 63).unwrap();
    let DebugFileOutcome::Refused {
        message,
        report_key,
        ..
    } = outcome
    else {
        panic!("not refused: {outcome:?}")
    };
    assert!(
        message.contains("max_debug_file_bytes = 63 (PROFLAKE_LIMIT_MAX_DEBUG_FILE_BYTES)"),
        "{message}"
    );
    let report: ErrorReport =
        serde_json::from_slice(&store.get(&report_key).unwrap().unwrap()).unwrap();
    assert_eq!(report.reason, "limit_exceeded");
    assert!(
        report.error.contains("max_debug_file_bytes"),
        "{}",
        report.error
    );
}

#[test]
fn decoders_keep_a_too_deep_stack_without_its_frames() {
    // Only a Sample v2 chunk is refused for it; the decoders count the sample and go on.
    let limits = Limits {
        max_stack_depth: 2,
        ..Limits::default()
    };
    let decoded = crate::decode(
        b"main;work;spin 3\nmain;idle 4\n",
        Some(InputFormat::Folded),
        &limits,
    )
    .unwrap();
    let samples = decoded.profile.samples();
    assert_eq!(samples.iter().map(|s| s.weight).sum::<i64>(), 7);
    assert_eq!(samples.iter().filter(|s| s.stack.is_none()).count(), 1);
    assert_eq!(decoded.profile.stats.get("folded_stack_too_deep"), Some(&1));

    let pprof = std::fs::read(format!(
        "{}/../samples/pprof/google-pprof_report_sample.cpu.pb.gz",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let full = crate::decode(&pprof, None, &Limits::default()).unwrap();
    let cut = crate::decode(&pprof, None, &limits).unwrap();
    assert_eq!(cut.profile.samples().len(), full.profile.samples().len());
    let too_deep = cut.profile.stats.get("pprof_stack_too_deep").copied();
    let unstacked = cut.profile.samples().iter().filter(|s| s.stack.is_none());
    assert!(too_deep.is_some_and(|n| n > 0), "{:?}", cut.profile.stats);
    assert!(unstacked.count() > 0);
    assert!(!full.profile.stats.contains_key("pprof_stack_too_deep"));
}

// ---- reading the limits -------------------------------------------------------------------

fn from(pairs: &[(&str, &str)]) -> std::result::Result<Limits, LimitsError> {
    Limits::from_vars(|name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

#[test]
fn unset_or_empty_variables_leave_the_defaults() {
    assert_eq!(from(&[]), Ok(Limits::default()));
    assert_eq!(
        from(&[
            ("PROFLAKE_LIMIT_MAX_SAMPLES", ""),
            ("PROFLAKE_LIMIT_MAX_THREADS", "  ")
        ]),
        Ok(Limits::default())
    );
    // Variables of other settings are not limits.
    assert_eq!(
        from(&[("PROFLAKE_MAX_SAMPLES", "1")]),
        Ok(Limits::default())
    );
}

#[test]
fn every_variable_sets_its_limit() {
    for (i, (name, variable)) in Limits::VARIABLES.iter().enumerate() {
        let value = (i as u64 % 100) + 1;
        let limits = from(&[(variable, &format!(" {value} "))]).unwrap();
        assert_eq!(limits.get(name), Some(value), "{variable}");
        // Only that one.
        let mut back = limits.clone();
        for (other, _) in Limits::VARIABLES.iter().filter(|(o, _)| o != name) {
            assert_eq!(back.get(other), Limits::default().get(other), "{variable}");
        }
        back = Limits::default();
        assert_ne!(back, limits, "{variable} changed nothing");
        assert_eq!(*variable, format!("PROFLAKE_LIMIT_{}", name.to_uppercase()));
    }
    let two = from(&[
        ("PROFLAKE_LIMIT_MAX_OBJECT_BYTES", "1024"),
        ("PROFLAKE_LIMIT_MAX_PACKET_NESTING", "0"),
    ])
    .unwrap();
    assert_eq!(
        two,
        Limits {
            max_object_bytes: 1024,
            max_packet_nesting: 0,
            ..Limits::default()
        }
    );
}

#[test]
fn a_bad_value_names_the_variable_and_the_value() {
    for (variable, value, expected) in [
        (
            "PROFLAKE_LIMIT_MAX_SAMPLES",
            "lots",
            "expected a whole number of at least 1",
        ),
        (
            "PROFLAKE_LIMIT_MAX_SAMPLES",
            "0",
            "expected a whole number of at least 1",
        ),
        (
            "PROFLAKE_LIMIT_MAX_OBJECT_BYTES",
            "-1",
            "expected a whole number of at least 1",
        ),
        (
            "PROFLAKE_LIMIT_MAX_OBJECT_BYTES",
            "256MiB",
            "expected a whole number of at least 1",
        ),
        (
            "PROFLAKE_LIMIT_MAX_PACKET_NESTING",
            "1.5",
            "expected a whole number",
        ),
        (
            "PROFLAKE_LIMIT_MAX_JSON_DEPTH",
            "128",
            "expected a whole number from 1 to 127",
        ),
        (
            "PROFLAKE_LIMIT_MAX_JSON_DEPTH",
            "0",
            "expected a whole number from 1 to 127",
        ),
    ] {
        let error = from(&[(variable, value)]).unwrap_err();
        assert_eq!(
            error,
            LimitsError {
                variable,
                value: value.to_owned(),
                expected: expected.to_owned(),
            }
        );
        assert_eq!(
            error.to_string(),
            format!("{variable}={value:?} is invalid: {expected}")
        );
    }
}

#[test]
fn json_depth_counts_brackets_outside_strings_only() {
    let limits = Limits {
        max_json_depth: 2,
        ..Limits::default()
    };
    let depth = |json: &str| limits.check_json_depth(json.as_bytes());
    assert!(depth(r#"{"a": [1, 2], "b": {"c": "[[[{{{"}}"#).is_ok());
    assert!(depth(r#"{"a": "\"[[[", "b": [[]]}"#).is_err());
    assert!(
        depth(r#"[{"a": "\\"}, [{}]]"#).is_err(),
        "an escaped backslash ends"
    );
    assert!(depth(r#"[[], [], {}]"#).is_ok(), "siblings do not add up");
    assert_eq!(
        depth("[[[]]]").unwrap_err().kind(),
        &ErrorKind::LimitExceeded {
            limit: "max_json_depth",
            max: 2
        }
    );
}

#[test]
fn the_ratio_binds_only_beyond_its_floor_and_below_the_size_limit() {
    let limits = Limits {
        max_decompression_ratio: 10,
        ..Limits::default()
    };
    let size = ("max_inflated_packet_bytes", 64 * MIB);
    let cap = limits.inflate_cap(1000, size);
    assert_eq!(
        (cap.bytes, cap.limit, cap.max),
        (RATIO_FLOOR_BYTES, "max_decompression_ratio", 10)
    );
    let cap = limits.inflate_cap(MIB as usize, size);
    assert_eq!(
        (cap.bytes, cap.limit, cap.max),
        (10 * MIB, "max_decompression_ratio", 10)
    );
    let cap = limits.inflate_cap(10 * MIB as usize, size);
    assert_eq!(
        (cap.bytes, cap.limit, cap.max),
        (64 * MIB, "max_inflated_packet_bytes", 64 * MIB)
    );
}

#[test]
fn the_limits_page_lists_every_limit_with_its_variable_and_default() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/limits.md"))
        .expect("docs/limits.md");
    let defaults = Limits::default();
    for (name, variable) in Limits::VARIABLES {
        let row = format!(
            "| `{name}` | `{variable}` | `{}` |",
            defaults.get(name).unwrap()
        );
        assert!(page.contains(&row), "docs/limits.md lacks the row {row}");
    }
}

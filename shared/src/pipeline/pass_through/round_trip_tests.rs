//! Tests of the chunk schema: reading a chunk and writing it back loses nothing.
use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Map, Number, Value};

use super::{pass_through, rewrite::rewrite_frames, rewrite_chunk};
use crate::formats::sentry::chunk::{frame_handles, read_chunk};
use crate::relay::schema::*;
use crate::writers::sample_v2::{check_chunk, check_sample_v2, write_chunk};

/// Reads and writes back, as bytes.
fn rewrite(json: &[u8]) -> Vec<u8> {
    write_chunk(&read_chunk(json).expect("the chunk reads"))
}

fn value(json: &[u8]) -> Value {
    serde_json::from_slice(json).expect("JSON")
}

/// A chunk as an Android SDK sends one, with everything our writer never writes: SDK
/// packages, the top-level timestamp, a ProGuard image and an image type of its own,
/// measurements with integer values and `elapsed_since_start_ns`, `in_app`, frame and sample
/// keys of later SDKs, thread priorities.
fn sdk_chunk() -> Value {
    json!({
        "version": "2",
        "chunk_id": "0123456789abcdef0123456789abcdef",
        "profiler_id": "fedcba9876543210fedcba9876543210",
        "platform": "android",
        "release": "app@1.0",
        "environment": "production",
        "content_type": "perfetto",
        "timestamp": 1700000000.5,
        "client_sdk": {"name": "sentry.java.android", "version": "8.38.0",
                       "packages": [{"name": "maven:io.sentry:sentry", "version": "8.38.0"}]},
        "measurements": {
            "cpu_usage": {"unit": "percent", "values": [
                {"timestamp": 1700000001.0, "value": 66, "elapsed_since_start_ns": "1000"},
                {"timestamp": 1700000001.5, "value": 47.25}]},
            "frozen_frame_renders": {"unit": "nanosecond", "values": [
                {"timestamp": 1700000001.2, "value": 749833322}]}
        },
        "debug_meta": {"sdk_info": {"sdk_name": "android"}, "images": [
            {"type": "proguard", "uuid": "32420279-25e2-34e6-8bc7-8a006a8f2425"},
            {"type": "symbolic", "code_file": "/system/lib64/libc.so",
             "debug_id": "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd", "image_addr": "0x7328f11000",
             "image_vmaddr": "0x4000", "image_size": 503808, "arch": "arm64"},
            {"type": "jvm", "debug_id": "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbe",
             "debug_file": "classes.dex"}
        ]},
        "synthetic_timestamps": {"interval_ns": 10000000, "rule": "spread", "origin": "pprof"},
        "profile": {
            "samples": [
                {"timestamp": 1700000001.0, "stack_id": 0, "thread_id": "42"},
                {"timestamp": 1700000001, "stack_id": 1, "thread_id": "42", "state": "running"}
            ],
            "stacks": [[1, 0], [0]],
            "frames": [
                {"function": "main", "instruction_addr": "0x7328f12000",
                 "package": "/system/lib64/libc.so", "platform": "native", "symbol": "main",
                 "sym_addr": "0x7328f11f00", "status": "symbolicated", "lang": "c"},
                {"function": "run", "module": "com.example.Worker", "in_app": true,
                 "platform": "java", "lineno": 12, "data": {"deobfuscated": true}}
            ],
            "thread_metadata": {"42": {"name": "main", "priority": 5, "state": "R"}},
            "queue_metadata": {}
        },
        "transaction": {"name": "checkout"}
    })
}

#[test]
fn an_sdk_chunk_survives_reading_and_writing() {
    let sent = serde_json::to_vec(&sdk_chunk()).unwrap();
    let chunk = read_chunk(&sent).unwrap();
    // What our writer never writes is typed, not left to the unknown keys.
    let cpu = &chunk.measurements.as_ref().unwrap()["cpu_usage"];
    assert_eq!(cpu.unit, "percent");
    assert_eq!(cpu.values[0].value, Number::from(66));
    assert_eq!(cpu.values[0].other["elapsed_since_start_ns"], "1000");
    assert_eq!(chunk.client_sdk.name, "sentry.java.android");
    assert!(chunk.client_sdk.other.contains_key("packages"));
    assert_eq!(chunk.content_type.as_deref(), Some("perfetto"));
    let images = &chunk.debug_meta.as_ref().unwrap().images;
    assert_eq!(images[0].kind.as_deref(), Some("proguard"));
    assert_eq!(
        images[0].uuid.as_deref(),
        Some("32420279-25e2-34e6-8bc7-8a006a8f2425")
    );
    assert_eq!(images[1].image_size, Some(503808));
    assert_eq!(images[2].other["debug_file"], "classes.dex");
    let synthetic = chunk.synthetic_timestamps.as_ref().unwrap();
    assert_eq!(synthetic.interval_ns, 10_000_000);
    assert_eq!(synthetic.other["origin"], "pprof");
    assert_eq!(chunk.timestamp, Number::from_f64(1700000000.5));
    assert_eq!(chunk.profile.frames[1].in_app, Some(true));
    // Symbolication's frame keys are typed too; others stay unknown.
    let native = &chunk.profile.frames[0];
    assert_eq!(native.symbol.as_deref(), Some("main"));
    assert_eq!(native.sym_addr.as_deref(), Some("0x7328f11f00"));
    assert_eq!(native.status.as_deref(), Some("symbolicated"));
    assert_eq!(native.other.keys().collect::<Vec<_>>(), ["lang"]);
    assert_eq!(
        chunk.profile.samples[1].timestamp,
        Number::from(1700000001u64)
    );
    assert!(chunk.other.contains_key("transaction"));

    let written = write_chunk(&chunk);
    assert_eq!(
        value(&written),
        sdk_chunk(),
        "read then write lost or changed something"
    );
    assert_eq!(rewrite(&written), written, "a rewrite is stable");
}

#[test]
fn relay_accepts_the_sdk_chunk() {
    let rejects: Vec<_> = check_sample_v2(&serde_json::to_vec(&sdk_chunk()).unwrap())
        .into_iter()
        .filter(|v| v.rule.relay_rejects())
        .collect();
    assert_eq!(rejects, vec![]);
}

#[test]
fn absent_and_empty_stay_apart() {
    let mut doc = sdk_chunk();
    doc["profile"]["thread_metadata"] = json!({});
    doc["measurements"] = json!({});
    doc["debug_meta"]["images"] = json!([]);
    doc["release"] = Value::Null;
    let written = rewrite(&serde_json::to_vec(&doc).unwrap());
    assert_eq!(value(&written), doc);
    for key in [
        "environment",
        "content_type",
        "measurements",
        "debug_meta",
        "timestamp",
    ] {
        doc.as_object_mut().unwrap().remove(key);
    }
    let written = rewrite(&serde_json::to_vec(&doc).unwrap());
    assert_eq!(value(&written), doc);
}

#[test]
fn a_null_optional_key_and_a_missing_release_do_not_read() {
    for (key, new) in [
        ("environment", Some(Value::Null)),
        ("debug_meta", Some(Value::Null)),
        ("release", None),
    ] {
        let mut doc = sdk_chunk();
        match new {
            Some(v) => doc[key] = v,
            None => {
                doc.as_object_mut().unwrap().remove(key);
            }
        }
        assert!(
            read_chunk(&serde_json::to_vec(&doc).unwrap()).is_err(),
            "{key}"
        );
    }
}

// ---- random chunks ------------------------------------------------------------------------

fn hex(digits: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[0-9a-f]{{{digits}}}")).unwrap()
}

fn text() -> impl Strategy<Value = String> {
    // Quotes, backslashes, control and non-ASCII characters exercise JSON escaping.
    proptest::string::string_regex("[a-zA-Z0-9 ./:_\"\\\\\u{1}é漢🦀-]{0,10}").unwrap()
}

/// Keys no schema object names, so they land in `other`.
fn unknown_key() -> impl Strategy<Value = String> {
    proptest::string::string_regex("x_[a-z0-9_]{0,6}").unwrap()
}

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![-1e12..1e12f64, Just(0.0), Just(1e300), Just(5e-324)]
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<u64>().prop_map(Number::from),
        any::<i64>().prop_map(Number::from),
        finite().prop_map(|f| Number::from_f64(f).unwrap()),
    ]
}

/// Floats that serde_json's own parser reads back exactly: at most 15 significant digits,
/// which it reads as one integer and one exact power of ten. Unknown keys are serde_json
/// values, so a float there survives as exactly as serde_json reads it; longer ones may come
/// back one unit in the last place off (the schema's own numbers are read exactly).
fn short_float() -> impl Strategy<Value = Number> {
    (-999_999_999_999_999i64..=999_999_999_999_999, 0..=15)
        .prop_map(|(digits, scale)| digits as f64 / 10f64.powi(scale))
        .prop_map(|f| Number::from_f64(f).unwrap())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<u64>().prop_map(|n| Value::Number(n.into())),
        short_float().prop_map(Value::Number),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(unknown_key(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn other() -> impl Strategy<Value = Other> {
    prop::collection::btree_map(unknown_key(), json_value(), 0..3)
        .prop_map(|m| m.into_iter().collect::<Map<String, Value>>())
}

/// A canonical address Relay keeps as is, below the cocoa pointer authentication bits.
fn address() -> impl Strategy<Value = String> {
    (0u64..0xF_FFFF_FFFF).prop_map(|a| format!("{a:#x}"))
}

fn uuid() -> impl Strategy<Value = String> {
    (hex(8), hex(4), hex(4), hex(4), hex(12))
        .prop_map(|(a, b, c, d, e)| format!("{a}-{b}-{c}-{d}-{e}"))
}

fn image() -> impl Strategy<Value = DebugImage> {
    let native = (
        prop_oneof![Just("symbolic"), Just("macho")],
        (text(), prop::option::of("[0-9a-f]{40}")),
        uuid(),
        address(),
        prop::option::of(address()),
        prop::option::of(any::<u64>()),
        other(),
    )
        .prop_map(
            |(
                kind,
                (code_file, code_id),
                debug_id,
                image_addr,
                image_vmaddr,
                image_size,
                other,
            )| DebugImage {
                code_file: Some(code_file),
                code_id,
                debug_id: Some(debug_id),
                kind: Some(kind.to_owned()),
                image_addr: Some(image_addr),
                image_vmaddr,
                image_size,
                uuid: None,
                other,
            },
        );
    let proguard = (uuid(), other()).prop_map(|(uuid, other)| DebugImage {
        kind: Some("proguard".to_owned()),
        uuid: Some(uuid),
        other,
        ..DebugImage::default()
    });
    let other_kind = (
        prop_oneof![Just("sourcemap"), Just("jvm")],
        prop::option::of(text()),
        prop::option::of(uuid()),
        other(),
    )
        .prop_map(|(kind, code_file, debug_id, other)| DebugImage {
            kind: Some(kind.to_owned()),
            code_file,
            debug_id,
            other,
            ..DebugImage::default()
        });
    prop_oneof![native, proguard, other_kind]
}

fn measurement() -> impl Strategy<Value = Measurement> {
    let point =
        (number(), number(), other()).prop_map(|(timestamp, value, other)| MeasurementValue {
            timestamp,
            value,
            other,
        });
    (
        prop_oneof![
            Just("nanosecond"),
            Just("hz"),
            Just("byte"),
            Just("percent")
        ],
        prop::collection::vec(point, 0..3),
        other(),
    )
        .prop_map(|(unit, values, other)| Measurement {
            unit: unit.to_owned(),
            values,
            other,
        })
}

fn frame(index: usize) -> impl Strategy<Value = Frame> {
    let status = prop_oneof![
        Just("symbolicated"),
        Just("missing_symbol"),
        Just("unknown_image"),
        Just("malformed"),
        Just("missing"),
    ];
    (
        (prop::option::of(text()), prop::option::of(any::<u32>())),
        (prop::option::of(text()), prop::option::of(any::<bool>())),
        (prop::option::of(address()), prop::option::of(any::<u32>())),
        (prop::option::of(text()), prop::option::of(text())),
        prop::option::of(prop_oneof![Just("java"), Just("native"), Just("python")]),
        (
            prop::option::of(status),
            prop::option::of(address()),
            prop::option::of(text()),
        ),
        other(),
    )
        .prop_map(
            move |(
                (abs_path, colno),
                (filename, in_app),
                (instruction_addr, lineno),
                (module, package),
                platform,
                (status, sym_addr, symbol),
                other,
            )| Frame {
                abs_path,
                colno,
                filename,
                // Distinct names keep frames distinct, as Relay's rules ask.
                function: Some(format!("f{index}")),
                in_app,
                instruction_addr,
                lineno,
                module,
                package,
                platform: platform.map(str::to_owned),
                status: status.map(str::to_owned),
                sym_addr,
                symbol,
                other,
            },
        )
}

/// Frames, distinct non-empty stacks over them, and per thread at least two samples with a
/// stack, sorted by time within a minute: a profile Relay accepts.
fn profile_data() -> impl Strategy<Value = ProfileData> {
    (1usize..5)
        .prop_flat_map(|frames| {
            let frames = (0..frames).map(frame).collect::<Vec<_>>();
            let stacks =
                prop::collection::btree_set(prop::collection::vec(0..frames.len(), 1..4), 1..4);
            (frames, stacks)
        })
        .prop_flat_map(|(frames, stacks)| {
            let stacks: Vec<Vec<usize>> = stacks.into_iter().collect();
            let per_thread = prop::collection::vec(
                prop::collection::vec((0..stacks.len(), other()), 2..4),
                1..3,
            );
            (
                Just(frames),
                Just(stacks),
                per_thread,
                any::<bool>(),
                prop::option::of(prop::collection::vec(
                    (
                        prop::option::of(text()),
                        prop::option::of(any::<u32>()),
                        other(),
                    ),
                    2,
                )),
                other(),
            )
        })
        .prop_map(
            |(frames, stacks, per_thread, integer_times, metadata, other)| {
                let mut samples = Vec::new();
                for (thread, picks) in per_thread.iter().enumerate() {
                    for (stack_id, other) in picks {
                        samples.push((thread.to_string(), *stack_id, other.clone()));
                    }
                }
                let samples = samples
                    .into_iter()
                    .enumerate()
                    .map(|(i, (thread_id, stack_id, other))| Sample {
                        timestamp: if integer_times {
                            Number::from(1_700_000_000 + i as u64)
                        } else {
                            Number::from_f64(1_700_000_000.0 + i as f64 * 0.0101).unwrap()
                        },
                        stack_id,
                        thread_id,
                        other,
                    })
                    .collect();
                let thread_metadata = metadata.map(|entries| {
                    entries
                        .into_iter()
                        .take(per_thread.len())
                        .enumerate()
                        .map(|(thread, (name, priority, other))| {
                            let entry = ThreadMetadata {
                                name,
                                priority,
                                other,
                            };
                            (thread.to_string(), entry)
                        })
                        .collect::<BTreeMap<_, _>>()
                });
                ProfileData {
                    samples,
                    stacks,
                    frames,
                    thread_metadata,
                    other,
                }
            },
        )
}

fn chunk() -> impl Strategy<Value = Chunk> {
    let head = (
        (hex(32), hex(32)),
        prop_oneof![Just("android"), Just("cocoa"), Just("python"), Just("node")],
        (prop::option::of(text()), prop::option::of(text())),
        prop::option::of(text()),
        (text(), text(), other()),
    );
    let body = (
        prop::option::of(prop::collection::btree_map(text(), measurement(), 0..3)),
        prop::option::of((prop::collection::vec(image(), 0..4), other())),
        prop::option::of((any::<i64>(), text(), other())),
        prop::option::of(number()),
        profile_data(),
        other(),
    );
    (head, body).prop_map(
        |(
            ((chunk_id, profiler_id), platform, (release, environment), content_type, sdk),
            (measurements, debug_meta, synthetic, timestamp, profile, other),
        )| Chunk {
            measurements,
            chunk_id,
            profiler_id,
            debug_meta: debug_meta.map(|(images, other)| DebugMeta { images, other }),
            environment,
            platform: platform.to_owned(),
            content_type,
            release,
            client_sdk: ClientSdk {
                name: sdk.0,
                version: sdk.1,
                other: sdk.2,
            },
            version: "2".to_owned(),
            synthetic_timestamps: synthetic.map(|(interval_ns, rule, other)| SyntheticTimestamps {
                interval_ns,
                rule,
                scaled_from: (interval_ns % 3 == 0).then_some(interval_ns.unsigned_abs()),
                other,
            }),
            profile,
            timestamp,
            other,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_chunks_read_back_as_written(chunk in chunk()) {
        let rejects: Vec<_> = check_chunk(&chunk)
            .into_iter()
            .filter(|v| v.rule.relay_rejects())
            .collect();
        prop_assert!(rejects.is_empty(), "not a valid chunk: {:?}", rejects);
        let written = write_chunk(&chunk);
        let read = read_chunk(&written);
        prop_assert!(read.is_ok(), "{:?}", read.err());
        prop_assert_eq!(read.unwrap(), chunk);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A chunk whose model nobody symbolized is not rewritten: every frame's model frame writes
    /// as the frame read from the chunk.
    #[test]
    fn an_unsymbolized_model_rewrites_nothing(chunk in chunk()) {
        let json = write_chunk(&chunk);
        let pass = crate::formats::PassThrough { chunk: chunk.clone(), json: json.clone() };
        let (profile, mut output) = pass_through(pass);
        let mut same = chunk.clone();
        let handles = frame_handles(&chunk);
        prop_assert_eq!(rewrite_frames(&mut same, &profile, &handles).unwrap(), 0);
        prop_assert_eq!(&same, &chunk);
        prop_assert_eq!(rewrite_chunk(&mut output, &profile).unwrap(), 0);
        prop_assert_eq!(output.json, json);
    }
}

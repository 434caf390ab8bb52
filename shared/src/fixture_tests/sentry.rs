//! Sentry inputs: Sample v2 chunks pass through unchanged and are read into the model;
//! envelopes are split as Relay splits them, including the Perfetto compound item.

use super::decode;
use crate::{
    convert_upload, formats::sniff, writers::sample_v2::check_sample_v2, ConvertOptions, ErrorKind,
    InputFormat, UploadMetadata,
};
use serde_json::Value;

use super::util::{fixture, fixture_text, repo_file};

fn sample_trace() -> Vec<u8> {
    repo_file("samples/perfetto/android_app.pftrace")
}

fn envelope_header() -> String {
    fixture_text("sentry/relay_perfetto_envelope_headers.jsonl")
        .lines()
        .next()
        .unwrap()
        .to_owned()
}

/// An envelope of `(item header, payload)` pairs, each header given a `length`.
fn envelope(items: &[(Value, &[u8])]) -> Vec<u8> {
    let mut out = envelope_header().into_bytes();
    out.push(b'\n');
    for (header, payload) in items {
        let mut header = header.clone();
        header["length"] = Value::from(payload.len());
        out.extend(serde_json::to_vec(&header).unwrap());
        out.push(b'\n');
        out.extend_from_slice(payload);
        out.push(b'\n');
    }
    out
}

/// The compound item the Android SDK sends: its real metadata in front of a trace.
fn perfetto_envelope(metadata: &[u8], trace: &[u8]) -> Vec<u8> {
    let mut payload = metadata.to_vec();
    payload.extend_from_slice(trace);
    let header = serde_json::json!({
        "content_type": "application/x-perfetto-trace",
        "filename": "profile.perfetto-stack-sample",
        "type": "profile_chunk",
        "platform": "android",
        "meta_length": metadata.len(),
    });
    envelope(&[(header, &payload)])
}

fn chunk_header(platform: &str) -> Value {
    serde_json::json!({"type": "profile_chunk", "platform": platform})
}

fn convert(bytes: &[u8]) -> crate::Result<crate::Converted> {
    convert_upload("uploads/x", "etag", bytes, &ConvertOptions::default())
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

/// Our own chunks from the sample trace: real Sample v2 to feed back in.
fn our_chunks() -> Vec<Vec<u8>> {
    let meta = repo_file("samples/perfetto/android_app.metadata.json");
    let options = ConvertOptions {
        metadata: UploadMetadata::from_json(&meta).unwrap(),
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/a", "e", &sample_trace(), &options).unwrap();
    converted
        .sample_v2()
        .into_iter()
        .map(|(_, b)| b.clone())
        .collect()
}

#[test]
fn a_sample_v2_chunk_passes_through_byte_for_byte() {
    let bytes = fixture("sentry/vroomrs_sample_v2_valid_android.json");
    assert_eq!(sniff(&bytes), Some(InputFormat::SampleV2));
    let converted = convert(&bytes).unwrap();
    assert_eq!(converted.decoded.format, InputFormat::SampleV2);
    assert_eq!(converted.sample_v2().len(), 1);
    assert_eq!(converted.sample_v2()[0].1, bytes, "stored unchanged");
    let doc = json(&bytes);
    let key = &converted.sample_v2()[0].0;
    assert!(
        key.ends_with(&format!("{}.json", doc["chunk_id"].as_str().unwrap())),
        "{key}"
    );
    // Tabulated too: one model sample per chunk sample, thread names from thread_metadata.
    let profile = &converted.decoded.profile;
    let n = doc["profile"]["samples"].as_array().unwrap().len();
    assert_eq!(profile.samples().len(), n);
    assert_eq!(converted.manifest.outputs[0].samples, Some(n as u64));
    assert!(profile.samples().iter().all(|s| s.time.is_some()));
    // Relay would accept it after repairs (re-sorting, dropping server-only fields): said.
    assert!(
        profile
            .findings
            .iter()
            .any(|f| f.contains("UnsortedSamples")),
        "{:?}",
        profile.findings
    );
    let java = profile
        .frames()
        .filter(|(_, f)| f.kind == crate::model::FrameKind::Jvm)
        .count();
    assert!(java > 0, "java frames keep their platform");
}

#[test]
fn a_chunk_relay_would_reject_is_a_typed_error() {
    let bytes = fixture("sentry/vroomrs_sample_v2_valid_python.json");
    let err = decode(&bytes, None).unwrap_err();
    match err.kind() {
        ErrorKind::Malformed { format, what, .. } => {
            assert_eq!(*format, "sample-v2");
            assert!(what.contains("MalformedStacks"), "{what}");
            assert!(what.contains("NotEnoughSamples"), "{what}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn envelope_round_trip_keeps_our_chunks_exactly() {
    let chunks = our_chunks();
    assert!(chunks.len() >= 2);
    let items: Vec<(Value, &[u8])> = chunks
        .iter()
        .map(|c| (chunk_header("android"), c.as_slice()))
        .collect();
    let env = envelope(&items);
    assert_eq!(sniff(&env), Some(InputFormat::SentryEnvelope));
    let converted = convert(&env).unwrap();
    let out: Vec<&Vec<u8>> = converted.sample_v2().into_iter().map(|(_, b)| b).collect();
    assert_eq!(out, chunks.iter().collect::<Vec<_>>());
    let total: usize = chunks
        .iter()
        .map(|c| json(c)["profile"]["samples"].as_array().unwrap().len())
        .sum();
    assert_eq!(converted.decoded.profile.samples().len(), total);
    // Re-writing the model gives chunks Relay accepts, with the same samples.
    let rewritten = crate::writers::sample_v2::write_sample_v2(
        &converted.decoded.profile,
        &UploadMetadata::default(),
        "again",
    )
    .unwrap();
    assert_eq!(rewritten.iter().map(|c| c.samples).sum::<usize>(), total);
    for c in &rewritten {
        assert_eq!(check_sample_v2(&c.json), vec![]);
    }
}

#[test]
fn item_platform_must_match_the_chunk() {
    let chunks = our_chunks();
    let env = envelope(&[(chunk_header("cocoa"), chunks[0].as_slice())]);
    let err = decode(&env, None).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Malformed { what, .. } if what.contains("InvalidProfileType")),
        "{err}"
    );
}

#[test]
fn perfetto_item_merges_sdk_metadata_as_relay_does() {
    let metadata = fixture("sentry/relay_perfetto_chunk_metadata.json");
    let env = perfetto_envelope(&metadata, &sample_trace());
    assert_eq!(sniff(&env), Some(InputFormat::SentryEnvelope));
    let converted = convert(&env).unwrap();
    assert_eq!(converted.decoded.format, InputFormat::SentryEnvelope);
    let meta = json(&metadata);
    let direct = convert(&sample_trace()).unwrap();
    assert_eq!(
        converted.manifest.profile.samples, direct.manifest.profile.samples,
        "the trace inside decodes as the trace alone"
    );
    let mut measured = 0;
    for (_, bytes) in converted.sample_v2() {
        assert_eq!(check_sample_v2(bytes), vec![]);
        let chunk = json(bytes);
        assert_eq!(chunk["profiler_id"], meta["profiler_id"]);
        assert_eq!(chunk["release"], meta["release"]);
        assert_eq!(chunk["environment"], meta["environment"]);
        assert_eq!(chunk["platform"], "android");
        assert_eq!(chunk["content_type"], "perfetto");
        assert_eq!(chunk["client_sdk"]["name"], "sentry.java.android");
        assert_eq!(chunk["client_sdk"]["version"], "8.38.0");
        assert!(
            chunk["client_sdk"].get("packages").is_none(),
            "Relay drops extra keys"
        );
        if let Some(m) = chunk.get("measurements") {
            measured += 1;
            // Relay's units and points: `byte`, `hertz`; `{timestamp, value}` only.
            assert_eq!(m["screen_frame_rates"]["unit"], "hertz");
            let point = &m["cpu_usage"]["values"][0];
            assert_eq!(point.as_object().unwrap().len(), 2, "{point}");
        }
        // Relay's key order: measurements first, content_type after platform.
        let text = String::from_utf8_lossy(bytes);
        let pos = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
        assert!(pos("platform") < pos("content_type") && pos("content_type") < pos("release"));
    }
    assert!(measured > 0, "measurements reach the chunks");
}

#[test]
fn caller_metadata_overrides_the_envelope() {
    let metadata = fixture("sentry/relay_perfetto_chunk_metadata.json");
    let env = perfetto_envelope(&metadata, &sample_trace());
    let options = ConvertOptions {
        metadata: UploadMetadata {
            release: Some("override@1".into()),
            ..UploadMetadata::default()
        },
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/e", "e", &env, &options).unwrap();
    for (_, bytes) in converted.sample_v2() {
        assert_eq!(json(bytes)["release"], "override@1");
    }
}

#[test]
fn bad_meta_length_and_platform_are_typed_errors() {
    let metadata = fixture("sentry/relay_perfetto_chunk_metadata.json");
    let trace = sample_trace();
    let mut payload = metadata.clone();
    payload.extend_from_slice(&trace);
    for meta_length in [0, payload.len(), payload.len() + 1] {
        let header = serde_json::json!({"type": "profile_chunk", "platform": "android", "meta_length": meta_length});
        let err = decode(&envelope(&[(header, &payload)]), None).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Malformed { what, .. } if what.contains("meta_length")),
            "{meta_length}: {err}"
        );
    }
    let header = serde_json::json!({"type": "profile_chunk", "platform": "cocoa", "meta_length": metadata.len()});
    let err = decode(&envelope(&[(header, &payload)]), None).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Malformed { .. }), "{err}");
    let header = serde_json::json!({"type": "profile_chunk", "meta_length": metadata.len()});
    let err = decode(&envelope(&[(header, &payload)]), None).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Malformed { what, .. } if what.contains("platform")));
}

#[test]
fn a_corrupt_trace_inside_an_envelope_names_its_offset() {
    let metadata = fixture("sentry/relay_perfetto_chunk_metadata.json");
    let trace = sample_trace();
    let env = perfetto_envelope(&metadata, &trace[..trace.len() / 2]);
    let err = decode(&env, None).unwrap_err();
    match err.kind() {
        ErrorKind::Truncated { offset, .. } | ErrorKind::Malformed { offset, .. } => {
            assert!(
                *offset > metadata.len() as u64,
                "offset {offset} points into the trace"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn truncated_and_empty_envelopes_are_typed_errors() {
    let chunks = our_chunks();
    let env = envelope(&[(chunk_header("android"), chunks[0].as_slice())]);
    let cut = &env[..env.len() - 100];
    let err = decode(cut, Some(InputFormat::SentryEnvelope)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");

    let only_other = envelope(&[(serde_json::json!({"type": "client_report"}), b"{}")]);
    let err = decode(&only_other, None).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoSamples { .. }), "{err}");

    let err = decode(b"{}\nnot json\n", Some(InputFormat::SentryEnvelope)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Malformed { .. }), "{err}");
}

#[test]
fn other_items_are_skipped_and_counted() {
    let chunks = our_chunks();
    let env = envelope(&[
        (serde_json::json!({"type": "client_report"}), b"{\"x\":1}"),
        (chunk_header("android"), chunks[0].as_slice()),
    ]);
    let decoded = decode(&env, None).unwrap();
    assert_eq!(decoded.chunks.len(), 1);
    assert_eq!(
        decoded
            .profile
            .stats
            .get("envelope items that are not profile chunks"),
        Some(&1)
    );
}

#[test]
fn pretty_printed_chunks_sniff_too() {
    let chunk = our_chunks().remove(0);
    let pretty = serde_json::to_vec_pretty(&json(&chunk)).unwrap();
    assert_eq!(sniff(&pretty), Some(InputFormat::SampleV2));
    assert_eq!(sniff(&chunk), Some(InputFormat::SampleV2));
}

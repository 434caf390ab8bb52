//! Long Perfetto traces and JFR recordings converted with a second pass, a window at a time,
//! give byte for byte the outputs of the same inputs converted whole: every object the
//! conversion stores, the manifest included. Either way, on one thread or on several.

use std::collections::BTreeMap;
use std::process::Command;

use proflake::{process_upload, store::LocalDirStore, store::ObjectStore, Outcome, ProcessOptions};

use crate::util::{fixture, gzip, plain, repo_file};

/// Every object `bytes` converts to at `key` (with `sidecar` as its metadata), by key:
/// streamed when `stream` says so, whole otherwise, on `threads` threads.
fn outputs(
    key: &str,
    bytes: &[u8],
    sidecar: Option<&[u8]>,
    stream: bool,
    threads: usize,
) -> Written {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    store.put(key, bytes).unwrap();
    if let Some(sidecar) = sidecar {
        store.put(&format!("{key}.metadata.json"), sidecar).unwrap();
    }
    let options = ProcessOptions {
        stream_above_bytes: Some(if stream { 0 } else { u64::MAX }),
        threads: Some(threads),
        ..ProcessOptions::default()
    };
    let pieces = match process_upload(&store, &store, key, &options).unwrap() {
        Outcome::Converted(c) => c.pieces,
        other => panic!("{key}: {other:?}"),
    };
    let objects = store
        .list("")
        .unwrap()
        .into_iter()
        .filter(|k| k != key && !k.ends_with(".metadata.json"))
        .map(|k| {
            let bytes = store.get(&k).unwrap().unwrap();
            (k, bytes)
        })
        .collect();
    Written { objects, pieces }
}

/// A conversion's stored objects, by key, and how many pieces its samples were written in.
struct Written {
    objects: BTreeMap<String, Vec<u8>>,
    pieces: u64,
}

/// The outputs of `bytes` converted whole on one thread, after checking that streamed in
/// `pieces` pieces, and on several threads either way, they are the same.
fn assert_same(
    key: &str,
    bytes: &[u8],
    sidecar: Option<&[u8]>,
    pieces: u64,
) -> BTreeMap<String, Vec<u8>> {
    let whole = outputs(key, bytes, sidecar, false, 1);
    assert_eq!(whole.pieces, 1, "{key}");
    for (stream, threads) in [(false, 4), (true, 1), (true, 4)] {
        let other = outputs(key, bytes, sidecar, stream, threads);
        let how = format!("{key}, streamed: {stream}, {threads} threads");
        assert_eq!(other.pieces, if stream { pieces } else { 1 }, "{how}");
        assert_eq!(
            other.objects.keys().collect::<Vec<_>>(),
            whole.objects.keys().collect::<Vec<_>>(),
            "{how}"
        );
        for (k, bytes) in &whole.objects {
            // Compared whole but not printed: a mismatch would dump files of bytes.
            assert!(other.objects[k] == *bytes, "{how}: {k} differs");
        }
    }
    whole.objects
}

fn generated_trace(seconds: &str, threads: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace.pftrace");
    let status = Command::new(env!("CARGO_BIN_EXE_proflake-gen-inputs"))
        .arg("perfetto")
        .arg(&out)
        .args([seconds, threads])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(out).unwrap()
}

fn manifest(outputs: &BTreeMap<String, Vec<u8>>) -> serde_json::Value {
    let (_, json) = outputs
        .iter()
        .find(|(k, _)| k.ends_with("/manifest.json"))
        .expect("a manifest");
    serde_json::from_slice(json).unwrap()
}

#[test]
fn the_android_sample_streamed_is_the_sample_converted_whole() {
    let trace = repo_file("samples/perfetto/android_app.pftrace");
    let sidecar = repo_file("samples/perfetto/android_app.metadata.json");
    // Its 2,581 samples span two windows but fit one block of the first pass's summary, which
    // cannot tell where within a block a window ends: one piece, at the end.
    let out = assert_same("uploads/android_app.pftrace", &trace, Some(&sidecar), 1);
    let m = manifest(&out);
    assert_eq!(m["profile"]["samples"], 2_581);
    assert_eq!(m["sample_v2"]["chunks"], 4);
}

#[test]
fn a_long_trace_streamed_is_the_trace_converted_whole() {
    // 150 s of two threads: three windows, each written before the next is decoded. The
    // first two hold 120,000 samples each, past the 65,536 that may wait: each is written in
    // two pieces, the samples the watermark has passed and then the rest.
    let trace = generated_trace("150", "2");
    let out = assert_same("uploads/long.pftrace", &trace, None, 5);
    let m = manifest(&out);
    assert_eq!(m["profile"]["samples"], 150 * 1000 * 2);
    let chunks = out.keys().filter(|k| k.contains("/sample-v2/")).count();
    assert_eq!(chunks, 3, "{:?}", m["sample_v2"]);
    // Gzipped, the trace is decompressed once per pass.
    let gz = assert_same("uploads/long.pftrace.gz", &gzip(&trace), None, 5);
    assert_eq!(manifest(&gz)["sample_v2"], m["sample_v2"]);
}

/// The JFR recording with three chunks, each with its own metadata and pools.
const JFR_CHUNKS: &str = "jfr/jdk17-chunks.jfr.gz";

/// How many events `jfr print` found in it (every one becomes a sample).
fn jfr_printed_events() -> u64 {
    let printed = plain(fixture("jfr/jdk17-chunks.json.gz"), "jdk17-chunks.json.gz");
    let events: Vec<serde_json::Value> = serde_json::from_slice(&printed).unwrap();
    events.len() as u64
}

/// Where each chunk of a (plain) recording starts, by the sizes their headers give.
fn jfr_chunk_starts(recording: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 0;
    while at < recording.len() {
        starts.push(at);
        let size = u64::from_be_bytes(recording[at + 8..at + 16].try_into().unwrap());
        at += size as usize;
    }
    assert_eq!(at, recording.len(), "the chunks fill the recording");
    starts
}

#[test]
fn a_jfr_recording_with_a_second_pass_is_the_recording_converted_whole() {
    let recording = fixture(JFR_CHUNKS);
    let out = assert_same("uploads/chunks.jfr.gz", &recording, None, 1);
    let m = manifest(&out);
    assert_eq!(m["profile"]["samples"], jfr_printed_events());
    assert_eq!(m["source"]["format"], "jfr");
}

#[test]
fn a_jfr_recording_over_minutes_is_written_a_chunk_at_a_time() {
    // The same chunks, each started 100 s after the one before (the header's start time, in
    // ns since the epoch at byte 32, places every event's ticks): each chunk's samples are
    // written once the next chunk's first-pass bounds say no earlier sample is left.
    let mut recording = plain(fixture(JFR_CHUNKS), JFR_CHUNKS);
    let starts = jfr_chunk_starts(&recording);
    assert_eq!(starts.len(), 3);
    for (k, &at) in starts.iter().enumerate() {
        let field = &mut recording[at + 32..at + 40];
        let start = i64::from_be_bytes(field.try_into().unwrap());
        let moved = start + k as i64 * 100_000_000_000;
        field.copy_from_slice(&moved.to_be_bytes());
    }
    let out = assert_same("uploads/minutes.jfr", &recording, None, 3);
    let m = manifest(&out);
    assert_eq!(m["profile"]["samples"], jfr_printed_events());
}

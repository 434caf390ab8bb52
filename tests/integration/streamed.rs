//! Long Perfetto traces converted in two passes, a window at a time, give byte for byte the
//! outputs of the same traces converted whole: every object the conversion stores, the
//! manifest included.

use std::collections::BTreeMap;
use std::process::Command;

use proflake::{process_upload, LocalDirStore, ObjectStore, Outcome, ProcessOptions};

use crate::util::{gzip, repo_file};

/// Every object `bytes` converts to at `key` (with `sidecar` as its metadata), by key:
/// streamed when `stream` says so, whole otherwise.
fn outputs(key: &str, bytes: &[u8], sidecar: Option<&[u8]>, stream: bool) -> Written {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    store.put(key, bytes).unwrap();
    if let Some(sidecar) = sidecar {
        store.put(&format!("{key}.metadata.json"), sidecar).unwrap();
    }
    let options = ProcessOptions {
        stream_above_bytes: Some(if stream { 0 } else { u64::MAX }),
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

/// The outputs of `bytes` converted whole, after checking that streamed in `pieces` pieces
/// they are the same.
fn assert_same(
    key: &str,
    bytes: &[u8],
    sidecar: Option<&[u8]>,
    pieces: u64,
) -> BTreeMap<String, Vec<u8>> {
    let whole = outputs(key, bytes, sidecar, false);
    assert_eq!(whole.pieces, 1, "{key}");
    let streamed = outputs(key, bytes, sidecar, true);
    assert_eq!(streamed.pieces, pieces, "{key}");
    let (whole, streamed) = (whole.objects, streamed.objects);
    assert_eq!(
        streamed.keys().collect::<Vec<_>>(),
        whole.keys().collect::<Vec<_>>(),
        "{key}"
    );
    for (k, bytes) in &whole {
        // Compared whole but not printed: a mismatch would dump files of bytes.
        assert!(streamed[k] == *bytes, "{key}: {k} differs");
    }
    whole
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
    // 150 s of two threads: three windows, each written before the next is decoded.
    let trace = generated_trace("150", "2");
    let out = assert_same("uploads/long.pftrace", &trace, None, 3);
    let m = manifest(&out);
    assert_eq!(m["profile"]["samples"], 150 * 1000 * 2);
    let chunks = out.keys().filter(|k| k.contains("/sample-v2/")).count();
    assert_eq!(chunks, 3, "{:?}", m["sample_v2"]);
    // Gzipped, the trace is decompressed once per pass.
    let gz = assert_same("uploads/long.pftrace.gz", &gzip(&trace), None, 3);
    assert_eq!(manifest(&gz)["sample_v2"], m["sample_v2"]);
}

//! Sample v2 output over every Perfetto input we have: each chunk passes Relay's rules, and
//! every container of the same trace gives byte-identical chunks.

use std::io::Write;
use std::path::Path;

use proflake::{
    check_sample_v2, write_sample_v2, ErrorKind, Profile, Timestamps, UploadMetadata,
    MAX_CHUNK_DURATION_NS,
};

use crate::util::{decode_ok, fixture, fixture_path};

/// Wall-clock anchor for traces that only have a trace clock (2023-11-14T22:13:20Z).
const ANCHOR_NS: i64 = 1_700_000_000_000_000_000;

fn sample_trace() -> Vec<u8> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/perfetto/android_app.pftrace");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn anchored(mut profile: Profile) -> Profile {
    if let Timestamps::TraceClock(_) = profile.timestamps {
        profile.anchor_first_sample_at(ANCHOR_NS);
    }
    profile
}

fn chunks_of(bytes: &[u8], what: &str) -> proflake::Result<Vec<proflake::SampleV2Chunk>> {
    let profile = anchored(decode_ok(bytes, what).profile);
    write_sample_v2(&profile, &UploadMetadata::default(), "identity")
}

fn all_perfetto_fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out = vec![(
        "samples/perfetto/android_app.pftrace".to_owned(),
        sample_trace(),
    )];
    for dir in ["perfetto/synthetic", "perfetto/difftests/traces"] {
        let mut names: Vec<_> = std::fs::read_dir(fixture_path(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".pftrace") || n.ends_with(".pftrace.gz"))
            .collect();
        names.sort();
        for name in names {
            let rel = format!("{dir}/{name}");
            out.push((rel.clone(), fixture(&rel)));
        }
    }
    out
}

#[test]
fn every_chunk_from_every_trace_passes_relay_rules() {
    let mut converted = Vec::new();
    for (name, bytes) in all_perfetto_fixtures() {
        match chunks_of(&bytes, &name) {
            Ok(chunks) => {
                assert!(!chunks.is_empty(), "{name}");
                for chunk in &chunks {
                    let violations = check_sample_v2(&chunk.json);
                    assert!(violations.is_empty(), "{name}: {violations:?}");
                    assert!(chunk.end_ns - chunk.start_ns < MAX_CHUNK_DURATION_NS);
                }
                converted.push((name, chunks.len()));
            }
            // Traces whose threads have fewer than 2 stacked CPU samples cannot make a chunk;
            // that must be the reported reason, nothing else.
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::NoSamples { .. }),
                "{name}: unexpected error {e}"
            ),
        }
    }
    let names: Vec<&str> = converted.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "samples/perfetto/android_app.pftrace",
        "perfetto/synthetic/perf_basic.pftrace",
        "perfetto/synthetic/perf_basic.pftrace.gz",
        "perfetto/synthetic/perf_basic_compressed.pftrace",
        "perfetto/synthetic/multi_sequence.pftrace",
        "perfetto/synthetic/perf_incremental.pftrace",
        "perfetto/synthetic/streaming_chrome.pftrace",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} made no chunk: {converted:?}"
        );
    }
    // One chunk per process: multi_sequence has two processes with two samples each.
    let multi = converted
        .iter()
        .find(|(n, _)| n.ends_with("multi_sequence.pftrace"));
    assert_eq!(multi.map(|(_, n)| *n), Some(2));
}

#[test]
fn every_container_gives_identical_chunks() {
    let raw = sample_trace();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(raw.as_slice(), 3).unwrap();
    let expected: Vec<Vec<u8>> = chunks_of(&raw, "raw")
        .unwrap()
        .into_iter()
        .map(|c| c.json)
        .collect();
    assert_eq!(expected.len(), 4);
    for (what, bytes) in [("gzip", gz), ("zstd", zst)] {
        let got: Vec<Vec<u8>> = chunks_of(&bytes, what)
            .unwrap()
            .into_iter()
            .map(|c| c.json)
            .collect();
        assert!(
            got == expected,
            "{what} container changed the Sample v2 output"
        );
    }
}

#[test]
fn chunks_split_at_sixty_seconds_per_process() {
    let chunks = chunks_of(&sample_trace(), "sample").unwrap();
    let mut by_pid: std::collections::BTreeMap<Option<i64>, Vec<(i64, i64)>> = Default::default();
    for c in &chunks {
        by_pid
            .entry(c.pid)
            .or_default()
            .push((c.start_ns, c.end_ns));
    }
    assert_eq!(
        by_pid.keys().copied().collect::<Vec<_>>(),
        vec![Some(610), Some(4242)]
    );
    for windows in by_pid.values() {
        assert_eq!(windows.len(), 2);
        // The second window starts where the first 60 s window of the process ends.
        assert!(windows[1].0 - windows[0].0 >= MAX_CHUNK_DURATION_NS);
        assert!(windows[0].1 < windows[1].0);
    }
}

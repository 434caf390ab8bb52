//! Sample v2 output over every input we have: each chunk passes Relay's rules, and every
//! container of the same input gives byte-identical chunks. Perfetto traces go through the
//! writer directly; the other formats (OTLP, pprof, folded, Sentry) through `convert_upload`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::{
    convert_upload, formats::sentry::chunk::read_chunk, model::Profile, model::SeriesKind,
    model::Timestamps, writers::sample_v2::check_sample_v2, writers::sample_v2::write_chunk,
    writers::sample_v2::write_sample_v2, ConvertOptions, Converted, ErrorKind, Manifest,
    UploadMetadata,
};
use serde_json::Value;

use super::util::{
    decode_ok, first_output_start_ns, fixture, fixture_path, gzip, plain, repo_file, repo_path,
    zstd_compress,
};

/// Relay refuses a chunk that spans 60 s or more.
const MAX_CHUNK_DURATION_NS: i64 = 60_000_000_000;

/// Wall-clock anchor for traces that only have a trace clock (2023-11-14T22:13:20Z).
const ANCHOR_NS: i64 = 1_700_000_000_000_000_000;

fn sample_trace() -> Vec<u8> {
    repo_file("samples/perfetto/android_app.pftrace")
}

fn anchored(mut profile: Profile) -> Profile {
    if let Timestamps::TraceClock(_) = profile.timestamps {
        profile.anchor_first_sample_at(ANCHOR_NS);
    }
    profile
}

fn chunks_of(
    bytes: &[u8],
    what: &str,
) -> crate::Result<Vec<crate::writers::sample_v2::SampleV2Chunk>> {
    let profile = anchored(decode_ok(bytes, what).profile);
    write_sample_v2(&profile, &UploadMetadata::default(), "identity")
}

pub(crate) fn all_perfetto_fixtures() -> Vec<(String, Vec<u8>)> {
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
    let gz = gzip(&raw);
    let zst = zstd_compress(&raw);
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

// ---- every other format, through the whole pipeline ----------------------------------------

/// The upload metadata of these conversions: only a start time (2023-11-14T22:13:20Z), for
/// inputs whose times are on a trace clock or that record no time at all.
const UPLOAD_TIMESTAMP: f64 = 1_700_000_000.0;

/// Inputs that legitimately hold no CPU- or wall-time samples, so no chunk can be written:
/// - `google-pprof_go.nomappings.crash.pb.gz` is a Go heap profile; its four series
///   (`alloc_objects/count`, `alloc_space/bytes`, `inuse_objects/count`,
///   `inuse_space/bytes`) are all allocations (tests/fixtures/pprof/SOURCES.md).
const NO_CPU_OR_WALL_SERIES: [&str; 1] = ["pprof/google-pprof_go.nomappings.crash.pb.gz"];

/// Inputs that already are Sample v2 chunks: stored as sent, not rewritten.
const PASSED_THROUGH: [&str; 2] = ["sentry/vroomrs_sample_v2_valid_android.json", COCOA_CHUNK];

/// A Sample v2 chunk Relay accepts after rewriting it (upper-case debug id, zero-padded image
/// addresses, PAC bits on frame addresses): checked on its own by
/// `the_cocoa_sample_v2_chunk_passes_through_unchanged`.
const COCOA_CHUNK: &str = "sentry/vroomrs_sample_v2_valid_cocoa.json";

/// The files of a directory (not its subdirectories), sorted, that `keep` accepts.
fn files_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| keep(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    files.sort();
    files
}

/// An input by name: fixtures relative to `tests/fixtures`, samples (`samples/...`) relative
/// to the repository root; gunzipped when gzipped.
fn input(name: &str) -> Vec<u8> {
    let path = if name.starts_with("samples/") {
        repo_path(name)
    } else {
        fixture_path(name)
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    plain(bytes, name)
}

/// Every non-Perfetto input but [`COCOA_CHUNK`]: (name, plain bytes).
pub(crate) fn other_format_inputs() -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<String> = Vec::new();
    for dir in ["otlp", "pprof", "folded"] {
        // pprof/ also holds not_pprof/ (a folder, skipped) and SOURCES.md.
        let keep = |n: &str| match dir {
            "pprof" => n.ends_with(".pb.gz"),
            _ => n != "SOURCES.md",
        };
        for path in files_in(&fixture_path(dir), keep) {
            names.push(format!(
                "{dir}/{}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    for dir in ["otlp", "pprof", "folded", "sentry"] {
        let keep =
            |n: &str| n != "SOURCES.md" && !n.ends_with(".metadata.json") && !n.ends_with(".py");
        for path in files_in(&repo_path(&format!("samples/{dir}")), keep) {
            names.push(format!(
                "samples/{dir}/{}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    names.extend(
        PASSED_THROUGH
            .iter()
            .filter(|&&n| n != COCOA_CHUNK)
            .map(|&n| n.to_owned()),
    );
    // Guard against a directory listing that silently finds nothing.
    for expected in [
        "otlp/sig-profiling_k8s.v1_8.lenprefixed.otlp",
        "otlp/sig-profiling_profile.v1_10.json",
        "otlp/synthetic_edge_cases.v1_9.pb",
        "pprof/google-pprof_proftest_large.cpu.pb.gz",
        "pprof/google-pprof_go.nomappings.crash.pb.gz",
        "folded/crlf.folded",
        "folded/python_sampling.collapsed",
        "samples/otlp/sig-profiling_profile.v1_10.pb",
        "samples/pprof/google-pprof_report_sample.cpu.pb.gz",
        "samples/folded/pyspy.folded",
        "samples/sentry/android_perfetto.envelope",
        "sentry/vroomrs_sample_v2_valid_android.json",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not found: {names:?}"
        );
    }
    // 9 OTLP, 4 pprof, 5 folded fixtures, 4 samples, 1 Sample v2 chunk.
    assert!(names.len() >= 23, "{names:?}");
    names
        .into_iter()
        .map(|name| {
            let bytes = input(&name);
            (name, bytes)
        })
        .collect()
}

fn upload_options() -> ConvertOptions {
    ConvertOptions {
        metadata: UploadMetadata {
            timestamp: Some(UPLOAD_TIMESTAMP),
            ..UploadMetadata::default()
        },
        ..ConvertOptions::default()
    }
}

/// Converts as an upload named after the input; the key and etag depend on the name only, so
/// every container of one input gets the same keys.
pub(crate) fn convert_input(name: &str, bytes: &[u8]) -> crate::Result<Converted> {
    let file = name.rsplit('/').next().unwrap();
    convert_upload(
        &format!("uploads/{file}"),
        "\"0123456789abcdef0123456789abcdef\"",
        bytes,
        &upload_options(),
    )
}

/// Checks an input that has no CPU- or wall-time series: it converts to tables only, with
/// no chunk, and the manifest says why.
fn assert_no_cpu_or_wall_series(name: &str, c: &Converted) {
    assert!(c.sample_v2().is_empty(), "{name}: chunks written");
    assert_eq!(c.manifest.sample_v2.chunks, 0, "{name}");
    let why = c.manifest.sample_v2.why_none.as_deref().unwrap_or("");
    assert!(
        why.contains("no CPU-time or wall-time samples"),
        "{name}: {why}"
    );
    assert!(
        c.manifest.outputs.iter().any(|o| o.kind == "table:samples"),
        "{name}: no samples table"
    );
    for series in &c.manifest.series {
        assert_eq!(series.table_rows, series.observations, "{name}");
        assert_eq!(
            series.left_out.get("series_not_carried"),
            Some(&series.observations),
            "{name}"
        );
    }
}

/// One written sample: (timestamp in s, thread id).
fn chunk_samples(doc: &Value) -> Vec<(f64, String)> {
    doc["profile"]["samples"]
        .as_array()
        .expect("profile.samples is an array")
        .iter()
        .map(|s| {
            (
                s["timestamp"].as_f64().expect("numeric timestamp"),
                s["thread_id"]
                    .as_str()
                    .expect("string thread_id")
                    .to_owned(),
            )
        })
        .collect()
}

/// Converts one input and checks every object: Relay accepts it unchanged (passed-through
/// chunks: stored as sent, nothing Relay rejects), and it spans at most 60 s. Returns the
/// conversion, or `None` for an input without CPU- or wall-time samples (checked apart).
fn assert_converts_to_accepted_chunks(name: &str, bytes: &[u8]) -> Option<Converted> {
    let c = convert_input(name, bytes).unwrap_or_else(|e| panic!("{name} must convert: {e}"));
    if NO_CPU_OR_WALL_SERIES.contains(&name) {
        assert_no_cpu_or_wall_series(name, &c);
        return None;
    }
    assert!(!c.objects.is_empty(), "{name}: no object");
    assert_eq!(c.objects.len(), c.manifest.outputs.len(), "{name}");
    if PASSED_THROUGH.contains(&name) {
        assert_eq!(c.sample_v2().len(), 1, "{name}");
        assert!(c.sample_v2()[0].1 == bytes, "{name}: not stored unchanged");
        let rejected: Vec<_> = check_sample_v2(&c.sample_v2()[0].1)
            .into_iter()
            .filter(|v| v.rule.relay_rejects())
            .collect();
        assert!(rejected.is_empty(), "{name}: {rejected:?}");
    } else {
        for (key, json) in c.sample_v2() {
            let violations = check_sample_v2(json);
            assert!(violations.is_empty(), "{name}: {key}: {violations:?}");
        }
    }
    for ((key, json), output) in c.sample_v2().into_iter().zip(&c.manifest.outputs) {
        assert_eq!(key, &output.key, "{name}");
        let (start, end) = (output.start_ns.unwrap(), output.end_ns.unwrap());
        assert!(
            start <= end && end - start < MAX_CHUNK_DURATION_NS,
            "{name}: {key} spans {start}..{end}"
        );
        let doc: Value = serde_json::from_slice(json).unwrap();
        let times: Vec<f64> = chunk_samples(&doc).into_iter().map(|(t, _)| t).collect();
        assert_eq!(Some(times.len() as u64), output.samples, "{name}: {key}");
        let first = times.iter().copied().fold(f64::INFINITY, f64::min);
        let last = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(
            last - first <= 60.0,
            "{name}: {key} spans {first}..{last} s"
        );
    }
    Some(c)
}

/// Converts the plain bytes, their gzip and their zstd: the same objects under the same keys,
/// and manifests that differ only in `source.container` and `source.bytes`.
fn assert_every_container_gives_the_same_objects(name: &str, raw: Vec<u8>) {
    let gz = gzip(&raw);
    let zst = zstd_compress(&raw);
    let variants = [("plain", raw), ("gzip", gz), ("zstd", zst)];
    let results: Vec<_> = variants
        .iter()
        .map(|(_, bytes)| convert_input(name, bytes))
        .collect();
    let converted: Vec<Converted> = results
        .into_iter()
        .zip(&variants)
        .map(|(r, (container, _))| r.unwrap_or_else(|e| panic!("{name} ({container}): {e}")))
        .collect();
    for (c, (container, bytes)) in converted.iter().zip(&variants) {
        if NO_CPU_OR_WALL_SERIES.contains(&name) {
            assert_no_cpu_or_wall_series(name, c);
        }
        assert_eq!(c.manifest.source.container, *container, "{name}");
        assert_eq!(c.manifest.source.bytes, bytes.len() as u64, "{name}");
    }
    let normalized = |c: &Converted| -> Manifest {
        let mut m = c.manifest.clone();
        m.source.container.clear();
        m.source.bytes = 0;
        m
    };
    assert!(!converted[0].objects.is_empty(), "{name}");
    for (c, (container, _)) in converted.iter().zip(&variants).skip(1) {
        assert!(
            c.objects == converted[0].objects,
            "{name}: the {container} container changed the objects"
        );
        assert_eq!(
            normalized(c),
            normalized(&converted[0]),
            "{name}: the {container} container changed the manifest"
        );
        assert_eq!(c.manifest_key, converted[0].manifest_key, "{name}");
    }
}

#[test]
fn every_other_format_input_converts_to_chunks_relay_accepts() {
    let mut tables_only = Vec::new();
    for (name, bytes) in other_format_inputs() {
        if assert_converts_to_accepted_chunks(&name, &bytes).is_none() {
            tables_only.push(name);
        }
    }
    assert_eq!(tables_only, NO_CPU_OR_WALL_SERIES);
}

#[test]
fn every_other_format_input_gives_the_same_objects_in_every_container() {
    for (name, raw) in other_format_inputs() {
        assert_every_container_gives_the_same_objects(&name, raw);
    }
}

/// Relay accepts this chunk after rewriting it (`sample_v2/rules_tests.rs`,
/// `vroomrs_cocoa_fixture_breaks_only_strict_rules`), so it passes through as sent.
#[test]
fn the_cocoa_sample_v2_chunk_passes_through_unchanged() {
    let bytes = input(COCOA_CHUNK);
    let c = assert_converts_to_accepted_chunks(COCOA_CHUNK, &bytes).expect("converts");
    assert_eq!(c.manifest.source.format, "sample-v2");
    assert_every_container_gives_the_same_objects(COCOA_CHUNK, bytes);
}

/// The series kind Sample v2 takes from a profile: CPU time, else wall time.
fn chosen_kind(profile: &Profile) -> Option<SeriesKind> {
    let kinds: Vec<SeriesKind> = profile.all_series().map(|(_, s)| s.kind).collect();
    [SeriesKind::CpuTime, SeriesKind::WallTime]
        .into_iter()
        .find(|k| kinds.contains(k))
}

/// Whether the chosen series holds no recorded times at all (aggregated input).
fn is_aggregated(profile: &Profile) -> bool {
    let kind = chosen_kind(profile).expect("a CPU- or wall-time series");
    profile
        .samples()
        .iter()
        .filter(|s| profile.series(s.series).kind == kind)
        .all(|s| s.time.is_none())
}

/// Model samples of the chosen series with a stack and a positive weight, by (pid, thread id
/// as Sample v2 writes it).
fn stacked_samples_by_thread(profile: &Profile) -> BTreeMap<(Option<i64>, String), usize> {
    let kind = chosen_kind(profile).expect("a CPU- or wall-time series");
    let mut out = BTreeMap::new();
    for s in profile.samples() {
        if profile.series(s.series).kind == kind && s.stack.is_some() && s.weight > 0 {
            let thread = profile.thread(s.thread);
            let pid = profile.process(thread.process).pid;
            let tid = thread.tid.unwrap_or(0).to_string();
            *out.entry((pid, tid)).or_default() += 1;
        }
    }
    out
}

#[test]
fn aggregated_inputs_expand_into_evenly_spaced_samples() {
    let mut expanded = Vec::new();
    for (name, bytes) in other_format_inputs() {
        if NO_CPU_OR_WALL_SERIES.contains(&name.as_str()) || PASSED_THROUGH.contains(&name.as_str())
        {
            continue;
        }
        let c = convert_input(&name, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let profile = &c.decoded.profile;
        let aggregated = is_aggregated(profile);
        let format = c.manifest.source.format.as_str();
        if matches!(format, "pprof" | "folded") {
            assert!(aggregated, "{name}: {format} records no sample times");
        }
        let mut written: BTreeMap<(Option<i64>, String), usize> = BTreeMap::new();
        for ((key, json), output) in c.sample_v2().into_iter().zip(&c.manifest.outputs) {
            let doc: Value = serde_json::from_slice(json).unwrap();
            let samples = chunk_samples(&doc);
            for (_, thread) in &samples {
                *written.entry((output.pid, thread.clone())).or_default() += 1;
            }
            let synthetic = &doc["synthetic_timestamps"];
            if !aggregated {
                assert!(synthetic.is_null(), "{name}: {key}: times were recorded");
                continue;
            }
            let interval_ns = synthetic["interval_ns"]
                .as_i64()
                .unwrap_or_else(|| panic!("{name}: {key}: no synthetic_timestamps.interval_ns"));
            assert!(interval_ns > 0, "{name}: {key}: interval {interval_ns}");
            assert!(synthetic["rule"].is_string(), "{name}: {key}");
            // Timestamps are f64 seconds (~0.24 µs apart near 1.7e9 s): allow 1 µs.
            let interval = interval_ns as f64 / 1e9 - 1e-6;
            let mut last: BTreeMap<&str, f64> = BTreeMap::new();
            for (i, (t, thread)) in samples.iter().enumerate() {
                if let Some(prev) = last.insert(thread, *t) {
                    assert!(
                        t - prev >= interval,
                        "{name}: {key}: sample {i} of thread {thread} is {} s after the \
                         previous one, interval {interval_ns} ns",
                        t - prev
                    );
                }
            }
        }
        let total: usize = written.values().sum();
        assert_eq!(total as u64, c.manifest.profile.samples_written, "{name}");
        if !aggregated {
            continue;
        }
        // Each stacked sample with a positive weight expands into at least one written
        // sample, so a thread with two of them is never dropped, and a written thread holds
        // at least as many samples as the model gave it.
        let model = stacked_samples_by_thread(profile);
        for (thread, &n) in &model {
            let got = written.get(thread).copied().unwrap_or(0);
            assert!(
                n < 2 || got >= n,
                "{name}: thread {thread:?}: {n} stacked model samples, {got} written"
            );
            if got > 0 {
                assert!(got >= n, "{name}: thread {thread:?}: {n} vs {got}");
            }
        }
        for thread in written.keys() {
            assert!(
                model.contains_key(thread),
                "{name}: thread {thread:?} written but not in the model: {model:?}"
            );
        }
        expanded.push(name);
    }
    for expected in [
        "pprof/google-pprof_report_sample.cpu.pb.gz",
        "pprof/google-pprof_cppbench.cpu_no_samples_type.pb.gz",
        "folded/stackcollapse_perf.folded",
        "samples/folded/pyspy.folded",
        "samples/pprof/google-pprof_report_sample.cpu.pb.gz",
    ] {
        assert!(
            expanded.iter().any(|n| n == expected),
            "{expected} was not expanded: {expanded:?}"
        );
    }
}

/// Threads (ids as Sample v2 writes them), total samples, and `synthetic_timestamps.interval_ns`
/// of every chunk of a conversion.
fn written_threads_and_samples(c: &Converted) -> (BTreeSet<String>, usize, Vec<i64>) {
    let mut threads = BTreeSet::new();
    let mut total = 0;
    let mut intervals = Vec::new();
    for (_, json) in c.sample_v2() {
        let doc: Value = serde_json::from_slice(json).unwrap();
        let samples = chunk_samples(&doc);
        total += samples.len();
        threads.extend(samples.into_iter().map(|(_, t)| t));
        intervals.push(
            doc["synthetic_timestamps"]["interval_ns"]
                .as_i64()
                .expect("synthetic_timestamps.interval_ns"),
        );
    }
    (threads, total, intervals)
}

#[test]
fn the_pyspy_sample_writes_one_sample_per_count() {
    let name = "samples/folded/pyspy.folded";
    let c = convert_input(name, &input(name)).unwrap();
    // Both threads of the recording are written (main 18635, `sieve` 18687): none dropped.
    let model_threads: BTreeSet<String> = c
        .decoded
        .profile
        .threads()
        .map(|(_, t)| {
            t.tid
                .expect("py-spy --threads names every thread")
                .to_string()
        })
        .collect();
    let (threads, total, intervals) = written_threads_and_samples(&c);
    assert_eq!(
        model_threads,
        BTreeSet::from(["18635".into(), "18687".into()])
    );
    assert_eq!(threads, model_threads);
    // py-spy's `Samples: 202` (samples/folded/SOURCES.md): each count is one sample, at
    // 100 Hz (no rate in the file: proflake's default interval).
    assert_eq!(total, 202);
    assert_eq!(c.manifest.profile.samples_written, 202);
    assert!(intervals.iter().all(|&i| i == 10_000_000), "{intervals:?}");
}

#[test]
fn the_pprof_sample_writes_one_sample_per_period() {
    let name = "samples/pprof/google-pprof_report_sample.cpu.pb.gz";
    let c = convert_input(name, &input(name)).unwrap();
    // cpu/nanoseconds sums 1 760 000 000 at period 10 000 000 (samples/pprof/SOURCES.md).
    let (_, total, intervals) = written_threads_and_samples(&c);
    assert_eq!(total, 176);
    assert_eq!(c.manifest.profile.samples_written, 176);
    assert!(intervals.iter().all(|&i| i == 10_000_000), "{intervals:?}");
    // 176 samples 10 ms apart on one thread: 1.75 s, one chunk.
    assert_eq!(c.sample_v2().len(), 1);
    let output = &c.manifest.outputs[0];
    assert_eq!(
        output.end_ns.unwrap() - output.start_ns.unwrap(),
        175 * 10_000_000
    );
}

/// Aggregated inputs whose totals their SOURCES.md documents: (input, samples written).
/// Time series expand at one sample per period, count series at one sample per count; no
/// thread of these inputs has fewer than two samples, so nothing is dropped.
const DOCUMENTED_TOTALS: [(&str, usize); 11] = [
    // tests/fixtures/folded/SOURCES.md: the sums of the counts.
    ("folded/crlf.folded", 10),
    ("folded/pyspy_nothreads.folded", 38),
    ("folded/pyspy_subprocesses.folded", 15),
    ("folded/python_sampling.collapsed", 74),
    ("folded/stackcollapse_perf.folded", 69),
    // tests/fixtures/pprof/SOURCES.md: cpu/nanoseconds sums at a 10 ms period.
    ("pprof/google-pprof_report_sample.cpu.pb.gz", 176),
    ("pprof/google-pprof_cppbench.cpu_no_samples_type.pb.gz", 712),
    ("pprof/google-pprof_proftest_large.cpu.pb.gz", 24_029),
    // The values-only cpu/nanoseconds profile: 40 + 20 + 10 ms at a 10 ms period.
    ("otlp/synthetic_edge_cases.v1_10.pb", 7),
    ("otlp/synthetic_edge_cases.v1_10.json", 7),
    ("otlp/synthetic_edge_cases.v1_9.pb", 7),
];

#[test]
fn aggregated_fixtures_write_their_documented_totals() {
    for (name, expected) in DOCUMENTED_TOTALS {
        let c = convert_input(name, &input(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (_, total, intervals) = written_threads_and_samples(&c);
        assert_eq!(total, expected, "{name}");
        assert_eq!(
            c.manifest.profile.samples_written, expected as u64,
            "{name}"
        );
        assert!(
            intervals.iter().all(|&i| i == 10_000_000),
            "{name}: {intervals:?}"
        );
        // Chunks of 60 s at most: ceil(expected × 10 ms / 60 s) chunks per thread timeline.
        assert!(
            c.sample_v2().len()
                >= (expected as u64 * 10_000_000).div_ceil(MAX_CHUNK_DURATION_NS as u64) as usize,
            "{name}: {} chunks",
            c.sample_v2().len()
        );
        // Folded stacks record no time: they start at the upload's metadata timestamp.
        if name.starts_with("folded/") {
            let first = first_output_start_ns(&c.manifest);
            assert_eq!(first, 1_700_000_000_000_000_000, "{name}");
        }
    }
}

// ---- reading chunks back -------------------------------------------------------------------

/// Reads a chunk into the Sample v2 schema and writes it back.
fn rewrite(what: &str, json: &[u8]) -> Vec<u8> {
    let chunk = read_chunk(json).unwrap_or_else(|e| panic!("{what}: does not read: {e}"));
    write_chunk(&chunk)
}

#[test]
fn every_written_chunk_reads_and_writes_back_byte_for_byte() {
    let mut checked = 0;
    let mut check = |what: &str, json: &[u8]| {
        assert!(
            rewrite(what, json) == json,
            "{what}: reading and writing back changed the chunk"
        );
        checked += 1;
    };
    for (name, bytes) in all_perfetto_fixtures() {
        for chunk in chunks_of(&bytes, &name).unwrap_or_default() {
            check(&name, &chunk.json);
        }
    }
    // Passed-through chunks are stored as received; the fixture test below reads them.
    for (name, bytes) in other_format_inputs() {
        if PASSED_THROUGH.contains(&name.as_str()) {
            continue;
        }
        let Ok(c) = convert_input(&name, &bytes) else {
            continue;
        };
        for (key, json) in c.sample_v2() {
            check(&format!("{name}: {key}"), json);
        }
    }
    // What no input carries on its own: the SDK's debug images, measurements, content_type.
    let mut metadata: Value =
        serde_json::from_slice(&fixture("sentry/relay_perfetto_chunk_metadata.json")).unwrap();
    metadata["debug_meta"] = serde_json::json!({"images": [
        {"type": "proguard", "uuid": "32420279-25e2-34e6-8bc7-8a006a8f2425"},
        {"type": "sourcemap", "code_file": "app.js", "debug_id": "7f4a3eb0-885e-8d4c-a04b-05fa32cc4cbd"}
    ]});
    let options = ConvertOptions {
        metadata: UploadMetadata::from_json(&serde_json::to_vec(&metadata).unwrap()).unwrap(),
        ..ConvertOptions::default()
    };
    let c = convert_upload("uploads/sdk", "e", &sample_trace(), &options).unwrap();
    let mut measured = 0;
    for (key, json) in c.sample_v2() {
        let doc: Value = serde_json::from_slice(json).unwrap();
        assert_eq!(doc["debug_meta"]["images"][0]["type"], "proguard", "{key}");
        measured += usize::from(doc.get("measurements").is_some());
        check(key, json);
    }
    assert!(measured > 0, "no chunk holds measurements");
    assert!(checked > 40, "only {checked} chunks read back");
}

/// Every `.json` file of the Sentry fixtures, here and in the shared fixtures when they are
/// beside the repository.
fn sentry_fixture_files() -> Vec<PathBuf> {
    let mut files = files_in(&fixture_path("sentry"), |n| n.ends_with(".json"));
    let shared = repo_path("../shared/fixtures/sentry");
    if shared.is_dir() {
        files.extend(files_in(&shared, |n| n.ends_with(".json")));
    }
    files
}

#[test]
fn every_sample_v2_fixture_relay_accepts_reads_and_writes_back_as_the_same_json() {
    let mut accepted = Vec::new();
    for path in sentry_fixture_files() {
        let name = path.display().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let rejects: Vec<_> = check_sample_v2(&bytes)
            .into_iter()
            .filter(|v| v.rule.relay_rejects())
            .collect();
        if !rejects.is_empty() {
            continue;
        }
        let once = rewrite(&name, &bytes);
        let sent: Value = serde_json::from_slice(&bytes).unwrap();
        let written: Value = serde_json::from_slice(&once).unwrap();
        assert_eq!(written, sent, "{name}: reading and writing back changed it");
        assert!(
            rewrite(&name, &once) == once,
            "{name}: a rewrite is not stable"
        );
        accepted.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    for expected in [
        "vroomrs_sample_v2_valid_android.json",
        "vroomrs_sample_v2_valid_cocoa.json",
    ] {
        assert!(
            accepted.iter().any(|n| n == expected),
            "{expected} was not checked: {accepted:?}"
        );
    }
}

#[test]
fn a_metadata_debug_image_of_the_wrong_shape_is_invalid_metadata() {
    let metadata = br#"{"debug_meta": {"images": [{"type": "proguard", "uuid": 7}]}}"#;
    let options = ConvertOptions {
        metadata: UploadMetadata::from_json(metadata).unwrap(),
        ..ConvertOptions::default()
    };
    let err = convert_upload("uploads/bad", "e", &sample_trace(), &options).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidMetadata { what } if what.contains("debug_meta.images[0]")),
        "{err}"
    );
}

/// Every Sample v2 chunk among the samples' expected outputs (`samples/<format>/<name>.expected/`,
/// which the command line's tests compare its outputs with byte for byte) passes Relay's rules.
#[test]
fn the_samples_expected_chunks_pass_relay_rules() {
    let mut checked = Vec::new();
    let mut formats: Vec<PathBuf> = std::fs::read_dir(repo_path("samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    formats.sort();
    for format in formats {
        let mut expected_dirs: Vec<PathBuf> = std::fs::read_dir(&format)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() && p.to_string_lossy().ends_with(".expected"))
            .collect();
        expected_dirs.sort();
        for dir in expected_dirs {
            for file in files_in(&dir, |name| name != "manifest.json") {
                let bytes = std::fs::read(&file).unwrap();
                assert_eq!(check_sample_v2(&bytes), vec![], "{}", file.display());
                checked.push(file);
            }
        }
    }
    assert!(checked.len() >= 10, "{checked:?}");
}

/// A trace without a wall clock, placed at its arrival as `proflake convert` places a file at
/// its modification time, writes chunks that pass Relay's rules.
#[test]
fn a_trace_placed_at_its_arrival_writes_chunks_relay_accepts() {
    let bytes = repo_file("tests/fixtures/perfetto/synthetic/perf_basic.pftrace");
    let options = ConvertOptions {
        received_at_ns: Some(1_700_000_123_250_000_000),
        ..ConvertOptions::default()
    };
    let converted = convert_upload("uploads/perf_basic.pftrace", "etag", &bytes, &options).unwrap();
    let chunks = converted.sample_v2();
    assert!(!chunks.is_empty());
    for (key, json) in chunks {
        assert_eq!(check_sample_v2(json), vec![], "{key}");
    }
}

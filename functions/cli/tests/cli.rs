//! The `proflake` binary, run as a user runs it.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use proflake::{decode, InputFormat, Limits, Manifest};

mod common;

use common::{proflake, repo, text};

/// Every file under `root`, by path relative to it.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if root.exists() {
        walk(root, root, &mut out);
    }
    out
}

fn manifests(out: &Path) -> Vec<Manifest> {
    tree(out)
        .into_iter()
        .filter(|(k, _)| k.ends_with("manifest.json"))
        .map(|(_, v)| serde_json::from_slice(&v).unwrap())
        .collect()
}

const SAMPLE: &str = "samples/perfetto/android_app.pftrace";
const SAMPLE_METADATA: &str = "samples/perfetto/android_app.metadata.json";

fn convert_sample(out: &Path) -> Output {
    proflake(&[
        "convert",
        repo(SAMPLE).to_str().unwrap(),
        "--metadata",
        repo(SAMPLE_METADATA).to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// The raw upload is kept unchanged beside its outputs.
#[test]
fn sample_upload_is_kept_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let run = convert_sample(dir.path());
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(
        fs::read(dir.path().join("uploads/android_app.pftrace")).unwrap(),
        fs::read(repo(SAMPLE)).unwrap()
    );
}

/// Every sample input (`samples/<format>/<name>.<ext>` beside a `<name>.expected/`
/// directory, with `<name>.metadata.json` when it has one) converts to exactly its expected
/// objects. PROFLAKE_BLESS=1 rewrites them.
#[test]
fn every_sample_converts_to_its_expected_output() {
    let mut checked = Vec::new();
    let mut formats: Vec<PathBuf> = fs::read_dir(repo("samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    formats.sort();
    for dir in formats {
        let mut files: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for input in files {
            let name = input.file_name().unwrap().to_string_lossy().into_owned();
            let stem = name.split('.').next().unwrap().to_owned();
            let expected_dir = dir.join(format!("{stem}.expected"));
            if name.ends_with(".metadata.json") || !expected_dir.is_dir() {
                continue;
            }
            let out = tempfile::tempdir().unwrap();
            let mut args = vec![
                "convert".to_owned(),
                input.to_str().unwrap().to_owned(),
                "--out".to_owned(),
                out.path().to_str().unwrap().to_owned(),
            ];
            let metadata = dir.join(format!("{stem}.metadata.json"));
            if metadata.is_file() {
                args.push("--metadata".into());
                args.push(metadata.to_str().unwrap().into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = proflake(&args);
            assert!(run.status.success(), "{name}: {}", text(&run.stderr));
            let produced: BTreeMap<String, Vec<u8>> = tree(&out.path().join("converted"))
                .into_iter()
                // The per-key pointer is bookkeeping, checked by the pipeline's own tests.
                .filter(|(k, _)| !k.starts_with("by-key"))
                .map(|(k, v)| {
                    let file = Path::new(&k)
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    (file, v)
                })
                .collect();
            if std::env::var_os("PROFLAKE_BLESS").is_some() {
                let _ = fs::remove_dir_all(&expected_dir);
                fs::create_dir_all(&expected_dir).unwrap();
                for (file, bytes) in &produced {
                    fs::write(expected_dir.join(file), bytes).unwrap();
                }
            }
            let expected = tree(&expected_dir);
            assert_eq!(
                produced.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{name}: output objects differ from {}",
                expected_dir.display()
            );
            for (file, bytes) in &produced {
                assert!(
                    expected[file] == *bytes,
                    "{name}: {file} differs from its expected copy"
                );
                // Every expected chunk passes Relay's rules: the library's tests check them.
            }
            checked.push(name);
        }
    }
    // One sample per format.
    for format in [
        "perfetto",
        "otlp",
        "pprof",
        "folded",
        "sentry",
        "cpuprofile",
        "speedscope",
        "chrome",
        "firefox",
        "pprof-legacy",
        "perf-script",
        "perf-data",
        "jfr",
    ] {
        assert!(
            checked
                .iter()
                .any(|n| repo("samples").join(format).join(n).is_file()),
            "no checked sample under samples/{format}: {checked:?}"
        );
    }
}

/// What the sample must produce, checked from first principles rather than a snapshot.
#[test]
fn sample_chunks_follow_relay_rules_and_cover_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    assert!(convert_sample(dir.path()).status.success());
    let [manifest] = manifests(dir.path()).try_into().unwrap();
    let decoded = decode(&fs::read(repo(SAMPLE)).unwrap(), None, &Limits::default()).unwrap();
    let with_stack = decoded
        .profile
        .samples()
        .iter()
        .filter(|s| s.stack.is_some())
        .count();
    assert_eq!(manifest.profile.samples_written as usize, with_stack);
    assert_eq!(manifest.source.format, "perfetto");
    // Two processes, 75 s each: two 60 s windows per process, and five tables on one day.
    let (chunks, tables): (Vec<_>, Vec<_>) =
        manifest.outputs.iter().partition(|o| o.kind == "sample_v2");
    assert_eq!(chunks.len(), 4);
    let table_kinds: Vec<&str> = tables.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(
        table_kinds,
        [
            "table:profiles",
            "table:samples",
            "table:stacks",
            "table:frames",
            "table:function_rollup"
        ]
    );
    for output in chunks {
        let bytes = fs::read(dir.path().join(&output.key)).unwrap();
        assert_eq!(bytes.len() as u64, output.bytes);
        // The expected copy's chunks pass Relay's rules (the library's tests check them).
        let file = Path::new(&output.key).file_name().unwrap();
        let expected = repo("samples/perfetto/android_app.expected").join(file);
        assert!(
            fs::read(&expected).unwrap() == bytes,
            "{} differs from {}",
            output.key,
            expected.display()
        );
        let chunk: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(chunk["platform"], "android");
        assert_eq!(chunk["release"], "com.example.app@2.4.0+240");
        assert_eq!(chunk["profiler_id"], "6f3a0c1e9b2d4e7f8a5b1c2d3e4f5a6b");
        assert_eq!(chunk["client_sdk"]["name"], "sentry.java.android");
        let span = output.end_ns.unwrap() - output.start_ns.unwrap();
        assert!(span < 60_000_000_000, "{} spans {span} ns", output.key);
        // The app's Java frames carry class and method, never an address.
        let frames = chunk["profile"]["frames"].as_array().unwrap();
        let java = frames
            .iter()
            .filter(|f| f["platform"] == "java")
            .collect::<Vec<_>>();
        assert_eq!(!java.is_empty(), output.pid == Some(4242), "{}", output.key);
        assert!(java
            .iter()
            .all(|f| f["module"].is_string() && f.get("instruction_addr").is_none()));
    }
}

#[test]
fn converting_again_rewrites_identical_objects() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    assert!(convert_sample(a.path()).status.success());
    let first = tree(a.path());
    assert!(convert_sample(a.path()).status.success());
    assert!(convert_sample(b.path()).status.success());
    assert_eq!(
        tree(a.path()),
        first,
        "a redelivery must not add or change objects"
    );
    // The lake's files are named by delta-rs with random ids, and its log records commit
    // times: the converter's objects are what two machines must write alike.
    let converter = |t: BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        t.into_iter()
            .filter(|(k, _)| !k.starts_with("lake/"))
            .collect()
    };
    assert_eq!(
        converter(tree(b.path())),
        converter(first),
        "two machines must write the same objects"
    );
}

#[test]
fn one_bad_file_is_reported_and_the_others_convert() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    fs::write(&junk, b"definitely not a profile").unwrap();
    let truncated = dir.path().join("truncated.pftrace");
    let sample = fs::read(repo(SAMPLE)).unwrap();
    fs::write(&truncated, &sample[..sample.len() / 2]).unwrap();
    let out = dir.path().join("bucket");
    let run = proflake(&[
        "convert",
        junk.to_str().unwrap(),
        repo(SAMPLE).to_str().unwrap(),
        truncated.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        run.status.code(),
        Some(1),
        "any failure must show in the exit code"
    );
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("uploads/junk.bin: unsupported input format"),
        "{stderr}"
    );
    assert!(
        stderr.contains("uploads/truncated.pftrace: input is truncated"),
        "{stderr}"
    );
    assert!(stderr.contains("1 converted, 2 failed"), "{stderr}");
    let done = manifests(&out);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].source.key, "uploads/android_app.pftrace");
}

#[test]
fn refuses_to_replace_a_different_upload_with_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bucket");
    fs::create_dir_all(out.join("uploads")).unwrap();
    fs::write(out.join("uploads/android_app.pftrace"), b"older upload").unwrap();
    let run = proflake(&[
        "convert",
        repo(SAMPLE).to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1));
    assert!(text(&run.stderr).contains("already exists with different content"));
    assert_eq!(
        fs::read(out.join("uploads/android_app.pftrace")).unwrap(),
        b"older upload"
    );
}

/// The `clock_source` of every `profiles` row under `out`.
fn clock_sources(out: &Path) -> Vec<String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut sources = Vec::new();
    let days = fs::read_dir(out.join("tables/v2/profiles")).unwrap();
    for day in days {
        for file in fs::read_dir(day.unwrap().path()).unwrap() {
            let reader =
                SerializedFileReader::new(fs::File::open(file.unwrap().path()).unwrap()).unwrap();
            for row in reader.get_row_iter(None).unwrap() {
                let row = row.unwrap();
                let (_, value) = row
                    .get_column_iter()
                    .find(|(name, _)| *name == "clock_source")
                    .expect("a clock_source column");
                sources.push(value.to_string().trim_matches('"').to_owned());
            }
        }
    }
    sources
}

#[test]
fn trace_without_wall_clock_lands_at_its_arrival_unless_a_start_time_is_required() {
    let dir = tempfile::tempdir().unwrap();
    // The file's modification time is the upload's arrival.
    let trace = dir.path().join("perf_basic.pftrace");
    fs::copy(
        repo("tests/fixtures/perfetto/synthetic/perf_basic.pftrace"),
        &trace,
    )
    .unwrap();
    let arrival = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_123_250);
    fs::File::options()
        .write(true)
        .open(&trace)
        .unwrap()
        .set_modified(arrival)
        .unwrap();
    let out_dir = dir.path().join("out");
    let out = out_dir.to_str().unwrap();
    let trace = trace.to_str().unwrap();

    let run = proflake(&["convert", trace, "--out", out, "--require-start-time"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        text(&run.stderr).contains("--start-time"),
        "{}",
        text(&run.stderr)
    );

    let first_sample = |out_dir: &Path| {
        let [manifest] = manifests(out_dir).try_into().unwrap();
        let chunk: serde_json::Value =
            serde_json::from_slice(&fs::read(out_dir.join(&manifest.outputs[0].key)).unwrap())
                .unwrap();
        // Relay takes the chunk (the library's tests check every rule of such a chunk).
        let json = serde_json::to_vec(&chunk).unwrap();
        decode(&json, Some(InputFormat::SampleV2), &Limits::default()).unwrap();
        let timestamp = chunk["profile"]["samples"][0]["timestamp"].clone();
        (manifest.profile.clock_source, timestamp)
    };
    let run = proflake(&["convert", trace, "--out", out]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(
        first_sample(&out_dir),
        ("arrival".into(), 1700000123.25.into())
    );
    let sources = clock_sources(&out_dir);
    assert!(!sources.is_empty() && sources.iter().all(|s| s == "arrival"));

    let run = proflake(&[
        "convert",
        trace,
        "--out",
        out,
        "--start-time",
        "1700000000.5",
        "--require-start-time",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(
        first_sample(&out_dir),
        ("metadata".into(), 1700000000.5.into())
    );
}

#[test]
fn inspect_summarizes_the_sample() {
    let run = proflake(&["inspect", repo(SAMPLE).to_str().unwrap(), "--json"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let decoded = decode(&fs::read(repo(SAMPLE)).unwrap(), None, &Limits::default()).unwrap();
    assert_eq!(doc["format"], "perfetto");
    assert_eq!(doc["summary"]["samples"], decoded.profile.samples().len());
    assert_eq!(doc["summary"]["timestamps"], "unix");
    assert_eq!(doc["summary"]["processes"].as_array().unwrap().len(), 2);
    assert_eq!(doc["summary"]["processes"][0]["name"], "com.example.app");
    let images = doc["summary"]["images"].as_array().unwrap();
    assert!(images.iter().any(
        |i| i["path"] == "/apex/com.android.runtime/lib64/bionic/libc.so"
            && i["code_id"] == "a1c0ffee0000000000000000000000000badf00d"
    ));

    let human = proflake(&["inspect", repo(SAMPLE).to_str().unwrap()]);
    let out = text(&human.stdout);
    assert!(out.contains("time range  2025-11-22T08:26:41"), "{out}");
    assert!(
        out.contains("com.example.app.sync.SyncWorker.doWork"),
        "{out}"
    );

    let decode_only = proflake(&["inspect", repo(SAMPLE).to_str().unwrap(), "--decode-only"]);
    assert!(
        decode_only.status.success(),
        "{}",
        text(&decode_only.stderr)
    );
    let expected = format!(
        "perfetto (plain), {} samples",
        decoded.profile.samples().len()
    );
    assert!(
        text(&decode_only.stdout).trim_end().ends_with(&expected),
        "{}",
        text(&decode_only.stdout)
    );

    let bad = proflake(&["inspect", repo("README.md").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad.stderr).contains("unsupported input format"));
}

#[test]
fn limits_come_from_the_environment() {
    let inspect = |variable: &str, value: &str| {
        Command::new(env!("CARGO_BIN_EXE_proflake"))
            .args(["inspect", repo(SAMPLE).to_str().unwrap()])
            .env(variable, value)
            .output()
            .expect("proflake runs")
    };
    let tripped = inspect("PROFLAKE_LIMIT_MAX_SAMPLES", "10");
    assert_eq!(tripped.status.code(), Some(1));
    let stderr = text(&tripped.stderr);
    assert!(
        stderr
            .contains("the input exceeds the limit max_samples = 10 (PROFLAKE_LIMIT_MAX_SAMPLES)"),
        "{stderr}"
    );
    let bad = inspect("PROFLAKE_LIMIT_MAX_SAMPLES", "ten");
    assert_eq!(bad.status.code(), Some(2));
    let stderr = text(&bad.stderr);
    assert!(
        stderr.contains("PROFLAKE_LIMIT_MAX_SAMPLES=\"ten\" is invalid"),
        "{stderr}"
    );
    // `process --max-object-bytes` overrides the variable.
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("uploads")).unwrap();
    fs::write(dir.path().join("uploads/a.folded"), "main;work 1\n").unwrap();
    let process = Command::new(env!("CARGO_BIN_EXE_proflake"))
        .args([
            "process",
            dir.path().to_str().unwrap(),
            "--max-object-bytes",
            "4",
        ])
        .env("PROFLAKE_LIMIT_MAX_OBJECT_BYTES", "1000")
        .output()
        .expect("proflake runs");
    assert_eq!(process.status.code(), Some(1));
    let stderr = text(&process.stderr);
    assert!(stderr.contains("max_object_bytes = 4"), "{stderr}");
}

#[test]
fn inspect_reports_findings_of_a_passed_through_chunk() {
    let chunk = repo("tests/fixtures/sentry/vroomrs_sample_v2_valid_android.json");
    let run = proflake(&["inspect", chunk.to_str().unwrap(), "--json"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(doc["format"], "sample-v2");
    assert_eq!(doc["chunks_in_input"], 1);
    let findings = doc["summary"]["findings"]
        .as_array()
        .expect("summary.findings is an array");
    assert!(!findings.is_empty(), "{doc}");
    assert!(
        findings
            .iter()
            .any(|f| f.as_str().is_some_and(|f| f.contains("UnsortedSamples"))),
        "{findings:?}"
    );

    let human = proflake(&["inspect", chunk.to_str().unwrap()]);
    assert!(human.status.success(), "{}", text(&human.stderr));
    let out = text(&human.stdout);
    assert!(out.contains("\nfindings ("), "{out}");
    assert!(out.contains("UnsortedSamples"), "{out}");
}

#[test]
fn inspect_totals_the_folded_sample() {
    let run = proflake(&[
        "inspect",
        repo("samples/folded/pyspy.folded").to_str().unwrap(),
        "--json",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(doc["format"], "folded");
    let aggregated = doc["summary"]["aggregated_samples"]
        .as_u64()
        .expect("summary.aggregated_samples is a number");
    assert!(aggregated > 0, "{doc}");
    let series = doc["summary"]["series"].as_array().unwrap();
    assert!(!series.is_empty());
    let total: i64 = series
        .iter()
        .map(|s| {
            s["total_weight"]
                .as_i64()
                .expect("total_weight is an integer")
        })
        .sum();
    // py-spy printed `Samples: 202` for this recording (samples/folded/SOURCES.md).
    assert_eq!(total, 202);
}

// ---- output read by a pipe that closes early (`proflake inspect FILE | head -1`) -----------

/// A py-spy recording with so many threads that `inspect` prints far more than a pipe holds
/// (64 KiB on Linux), so the reader closes it while the command is still writing.
fn many_threads(dir: &std::path::Path) -> std::path::PathBuf {
    let mut folded = String::new();
    for tid in 1000..5000 {
        folded.push_str(&format!(
            "thread ({tid}): worker-{tid};run (app.py:{}) 1\n",
            tid % 90 + 1
        ));
    }
    let path = dir.join("threads.folded");
    std::fs::write(&path, folded).unwrap();
    path
}

/// Runs `proflake args`, reads one line of its output, closes the pipe and waits.
fn first_line_then_close(args: &[&str]) -> (String, std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_proflake"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("proflake runs");
    let mut first = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
        // Dropping the reader closes the pipe's read end.
    }
    let mut stderr = Vec::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    (first, status, text(&stderr))
}

#[test]
fn inspect_stops_quietly_when_the_reader_goes() {
    let dir = tempfile::tempdir().unwrap();
    let input = many_threads(dir.path());
    let input = input.to_str().unwrap();
    let full = proflake(&["inspect", input]);
    assert!(full.status.success(), "{}", text(&full.stderr));
    assert!(
        full.stdout.len() > 128 << 10,
        "the output ({} bytes) must outgrow the pipe",
        full.stdout.len()
    );
    for args in [vec!["inspect", input], vec!["inspect", input, "--json"]] {
        let (first, status, stderr) = first_line_then_close(&args);
        assert!(!first.is_empty(), "{args:?}: a first line was printed");
        assert!(status.success(), "{args:?}: {status}, stderr: {stderr}");
        assert_eq!(stderr, "", "{args:?}: nothing on stderr");
    }
}

/// `inspect` counts a trace's instants and counter values, as the events hold them.
#[test]
fn inspect_counts_the_chrome_samples_instants_and_counters() {
    let path = repo("samples/chrome/claude_code.json");
    let trace: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let instants = events.iter().filter(|e| e["ph"] == "i").count() as u64;
    let values: u64 = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| e["args"].as_object().unwrap().len() as u64)
        .sum();
    assert!(instants > 0 && values > 0);
    let run = proflake(&["inspect", path.to_str().unwrap(), "--json"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(doc["summary"]["instants"], instants);
    assert_eq!(doc["summary"]["counter_values"], values);
    let run = proflake(&["inspect", path.to_str().unwrap()]);
    let report = text(&run.stdout);
    assert!(
        report.contains(&format!("marks       {instants} instants, {values} values")),
        "{report}"
    );
}

#[test]
fn devtools_exports_and_the_older_cpuprofile_layout_convert_with_every_tick() {
    // Ticks counted from the JSON: chunk samples (in `args.data` or `args`), `samples` of the
    // older cpuprofile layout.
    let chrome = repo("tests/fixtures/chrome/proflake_devtools-chrome141.json");
    let trace: serde_json::Value = serde_json::from_slice(&fs::read(&chrome).unwrap()).unwrap();
    let chunk_ticks: u64 = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "ProfileChunk")
        .map(|e| {
            let data = e["args"].get("data").unwrap_or(&e["args"]);
            data["cpuProfile"]["samples"]
                .as_array()
                .map_or(0, |s| s.len() as u64)
        })
        .sum();
    let old = repo("tests/fixtures/cpuprofile/proflake_old-layout_timed.cpuprofile");
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(&old).unwrap()).unwrap();
    let old_ticks = doc["samples"].as_array().unwrap().len() as u64;
    // DevTools' `metadata.startTime` places the trace; the cpuprofile has no wall clock.
    for (path, ticks, clock) in [(chrome, chunk_ticks, "input"), (old, old_ticks, "arrival")] {
        let run = proflake(&["inspect", path.to_str().unwrap(), "--json"]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(summary["summary"]["samples"], ticks, "{}", path.display());
        // No start time given: converted all the same.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_str().unwrap();
        let run = proflake(&[
            "convert",
            path.to_str().unwrap(),
            "--out",
            out,
            "--no-publish",
        ]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        let [manifest] = manifests(dir.path()).try_into().unwrap();
        assert_eq!(manifest.profile.samples, ticks);
        assert_eq!(manifest.profile.clock_source, clock);
    }
}

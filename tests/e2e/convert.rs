//! Conversions through the handler: every input format, redelivery, quarantine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use arrow_array::StringArray;
use proflake::store::{content_etag, LocalDirStore, S3Store};
use proflake::tables::{read_tables, Table};
use proflake::{process_upload, Outcome, ProcessOptions};
use proflake_cli::flame::{fold, FlameFilter};
use proflake_tests::{error_report, gzip};

use crate::harness::{
    conversion_keys, error_report_key, failed_ids, is_test_event, manifest_of, mirror,
    notified_keys, pointer_of, repo_file, repo_path, sha256_hex, sidecar_key, Env, Upload,
    OUTPUT_BUCKET, UPLOADS_BUCKET,
};

/// One upload of the every-format test: the object, its sidecar (uploaded before it) if any,
/// and the format and container the converter must detect.
struct Case {
    upload: Upload,
    sidecar: Option<Vec<u8>>,
    format: &'static str,
    container: &'static str,
}

/// Deterministic bytes that are no profile.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn cases() -> Vec<Case> {
    let case = |key: &str, path: &str, format, container| Case {
        upload: Upload::new(key, repo_file(path)),
        sidecar: None,
        format,
        container,
    };
    let otlp_pb = repo_file("samples/otlp/sig-profiling_profile.v1_10.pb");
    vec![
        Case {
            sidecar: Some(repo_file("samples/perfetto/android_app.metadata.json")),
            ..case(
                "uploads/android/android_app.pftrace",
                "samples/perfetto/android_app.pftrace",
                "perfetto",
                "plain",
            )
        },
        Case {
            upload: Upload::new(
                "uploads/otlp/sig-profiling_profile.v1_10.pb",
                otlp_pb.clone(),
            )
            .with_meta("release", "otel-demo@1.10.0")
            .with_meta("environment", "staging")
            .with_meta("service", "checkout"),
            sidecar: None,
            format: "otlp",
            container: "plain",
        },
        Case {
            upload: Upload::new(
                "uploads/otlp/sig-profiling_profile.v1_10.pb.gz",
                gzip(&otlp_pb),
            ),
            sidecar: None,
            format: "otlp",
            container: "gzip",
        },
        case(
            "uploads/otlp/sig-profiling_profile.v1_10.json",
            "tests/fixtures/otlp/sig-profiling_profile.v1_10.json",
            "otlp-json",
            "plain",
        ),
        Case {
            sidecar: Some(repo_file(
                "samples/pprof/google-pprof_report_sample.metadata.json",
            )),
            ..case(
                "uploads/pprof/google-pprof_report_sample.cpu.pb.gz",
                "samples/pprof/google-pprof_report_sample.cpu.pb.gz",
                "pprof",
                "gzip",
            )
        },
        // A space and a '+' in the key: the notification carries it form-urlencoded.
        Case {
            sidecar: Some(repo_file("samples/folded/pyspy.metadata.json")),
            ..case(
                "uploads/py spy+1.folded",
                "samples/folded/pyspy.folded",
                "folded",
                "plain",
            )
        },
        // Aggregated, no start time: its timestamp comes from x-amz-meta-timestamp, so the
        // bucket run and the local run (sidecar) agree.
        Case {
            upload: Upload::new(
                "uploads/perf/stackcollapse perf+2.folded",
                repo_file("tests/fixtures/folded/stackcollapse_perf.folded"),
            )
            .with_meta("timestamp", "1700000000.5")
            .with_meta("release", "perf@2.0")
            .with_meta("environment", "prod")
            .with_meta("platform", "native"),
            sidecar: None,
            format: "folded",
            container: "plain",
        },
        case(
            "uploads/sentry/android_perfetto.envelope",
            "samples/sentry/android_perfetto.envelope",
            "sentry-envelope",
            "plain",
        ),
        Case {
            sidecar: Some(repo_file("samples/cpuprofile/node.metadata.json")),
            ..case(
                "uploads/node/node.cpuprofile",
                "samples/cpuprofile/node.cpuprofile",
                "cpuprofile",
                "plain",
            )
        },
        Case {
            sidecar: Some(repo_file("samples/chrome/claude_code.metadata.json")),
            ..case(
                "uploads/agents/trace-5f0c3a52.json",
                "samples/chrome/claude_code.json",
                "chrome-json",
                "plain",
            )
        },
        Case {
            sidecar: Some(repo_file("samples/speedscope/pyinstrument.metadata.json")),
            ..case(
                "uploads/python/pyinstrument.speedscope.json",
                "samples/speedscope/pyinstrument.speedscope.json",
                "speedscope",
                "plain",
            )
        },
        Case {
            sidecar: Some(repo_file("samples/firefox/ls.metadata.json")),
            ..case(
                "uploads/samply/ls.json",
                "samples/firefox/ls.json",
                "firefox",
                "plain",
            )
        },
        Case {
            sidecar: Some(repo_file("samples/pprof-legacy/gperftools.metadata.json")),
            ..case(
                "uploads/gperftools/gperftools.prof",
                "samples/pprof-legacy/gperftools.prof",
                "pprof-legacy",
                "plain",
            )
        },
        Case {
            sidecar: Some(repo_file(
                "samples/perf-script/simple-with-header.metadata.json",
            )),
            ..case(
                "uploads/perf/simple-with-header.perf.txt",
                "samples/perf-script/simple-with-header.perf.txt",
                "perf-script",
                "plain",
            )
        },
        case(
            "uploads/jvm/workload-jdk25.jfr.gz",
            "samples/jfr/workload-jdk25.jfr.gz",
            "jfr",
            "gzip",
        ),
        case(
            "uploads/sentry/vroomrs_sample_v2_valid_android.json",
            "tests/fixtures/sentry/vroomrs_sample_v2_valid_android.json",
            "sample-v2",
            "plain",
        ),
    ]
}

/// The sidecar JSON that says what `x-amz-meta-*` says (for the local run, which has no
/// object metadata).
fn meta_as_sidecar(meta: &[(String, String)]) -> Vec<u8> {
    let mut object = serde_json::Map::new();
    for (name, value) in meta {
        let value = if name == "timestamp" {
            serde_json::json!(value.parse::<f64>().unwrap())
        } else {
            serde_json::json!(value)
        };
        object.insert(name.clone(), value);
    }
    serde_json::to_vec(&object).unwrap()
}

/// The workspace's venv Python (DuckDB lives there).
pub fn venv_python() -> std::path::PathBuf {
    let python = repo_path(".venv/bin/python");
    assert!(
        python.is_file(),
        "{} not found: run scripts/test.sh, which creates .venv with duckdb and moto",
        python.display()
    );
    python
}

/// Every file under `root` not under `uploads/`, by key.
fn local_outputs(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let store = LocalDirStore::new(root);
    use proflake::store::ObjectStore;
    store
        .list("")
        .unwrap()
        .into_iter()
        .filter(|k| !k.starts_with("uploads/"))
        .map(|k| {
            let bytes = store.get(&k).unwrap().unwrap();
            (k, bytes)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_format_converts_through_the_handler() {
    let env = Env::start(30).await;
    let app = env.app(2);
    let cases = cases();

    // Sidecars first: each is notified, finds no upload yet, and writes nothing.
    for case in &cases {
        if let Some(sidecar) = &case.sidecar {
            env.put(&Upload::new(sidecar_key(&case.upload.key), sidecar.clone()))
                .await;
        }
    }
    let handled = env.drain_all(&app).await;
    assert!(
        handled.iter().any(is_test_event),
        "moto's s3:TestEvent was not received and handled: {:?}",
        crate::harness::bodies(&handled)
    );
    let sidecar_keys: BTreeSet<String> = cases
        .iter()
        .filter(|c| c.sidecar.is_some())
        .map(|c| sidecar_key(&c.upload.key))
        .collect();
    let notified: BTreeSet<String> = handled.iter().flat_map(notified_keys).collect();
    assert_eq!(notified, sidecar_keys);
    assert_eq!(
        env.keys(OUTPUT_BUCKET, "").await,
        Vec::<String>::new(),
        "a sidecar without its upload converted something"
    );

    for case in &cases {
        env.put(&case.upload).await;
    }
    let handled = env.drain_all(&app).await;
    let notified: BTreeSet<String> = handled.iter().flat_map(notified_keys).collect();
    let upload_keys: BTreeSet<String> = cases.iter().map(|c| c.upload.key.clone()).collect();
    assert_eq!(notified, upload_keys, "notified keys (decoded)");
    env.assert_queues_empty().await;

    let outputs = env.snapshot(OUTPUT_BUCKET).await;
    let mut listed = BTreeSet::new();
    for case in &cases {
        let key = &case.upload.key;
        let manifest = manifest_of(&outputs, key, &case.upload.bytes)
            .unwrap_or_else(|| panic!("{key}: no manifest in the output bucket"));
        assert_eq!(&manifest.source.key, key);
        assert_eq!(manifest.source.etag, content_etag(&case.upload.bytes));
        assert_eq!(manifest.source.format, case.format, "{key}");
        assert_eq!(manifest.source.container, case.container, "{key}");
        assert!(manifest.profile.samples_written > 0, "{key}: no samples");
        assert!(
            manifest.outputs.iter().any(|o| o.kind == "sample_v2")
                && manifest.outputs.iter().any(|o| o.kind == "table:samples"),
            "{key}: {:?}",
            manifest.outputs
        );
        for output in &manifest.outputs {
            let bytes = outputs
                .get(&output.key)
                .unwrap_or_else(|| panic!("{key}: listed output {} missing", output.key));
            assert_eq!(bytes.len() as u64, output.bytes, "{}", output.key);
            assert_eq!(sha256_hex(bytes), output.sha256, "{}", output.key);
        }
        // The metadata (sidecar or x-amz-meta-*) reached the chunks.
        let metadata: serde_json::Value = match (&case.sidecar, case.upload.meta.is_empty()) {
            (Some(sidecar), _) => serde_json::from_slice(sidecar).unwrap(),
            (None, false) => serde_json::from_slice(&meta_as_sidecar(&case.upload.meta)).unwrap(),
            (None, true) => serde_json::json!({}),
        };
        for output in manifest.outputs.iter().filter(|o| o.kind == "sample_v2") {
            let chunk: serde_json::Value = serde_json::from_slice(&outputs[&output.key]).unwrap();
            for field in ["release", "environment", "platform"] {
                if let Some(expected) = metadata.get(field) {
                    assert_eq!(&chunk[field], expected, "{key}: {field} of {}", output.key);
                }
            }
        }
        // The key's pointer to its current conversion names this one.
        let (pointer_key, pointer) = pointer_of(&outputs, key)
            .unwrap_or_else(|| panic!("{key}: no current-conversion pointer"));
        assert!(
            pointer["source_id"] == manifest.source.source_id.as_str(),
            "{key}: {pointer_key} does not name {}",
            manifest.source.source_id
        );
        listed.extend(conversion_keys(&outputs, &manifest));
    }
    // Nothing the manifests do not account for.
    let written: BTreeSet<String> = outputs.keys().cloned().collect();
    assert_eq!(written, listed, "outputs not listed by any manifest");
    let reports: Vec<String> = env
        .keys(UPLOADS_BUCKET, "uploads/")
        .await
        .into_iter()
        .filter(|k| k.ends_with(".error.json"))
        .collect();
    assert_eq!(
        reports,
        Vec::<String>::new(),
        "valid uploads were quarantined"
    );

    // DuckDB reads the tables as an analyst would and checks them against the manifests.
    let bucket_dir = tempfile::tempdir().unwrap();
    mirror(&outputs, bucket_dir.path());
    let run = Command::new(venv_python())
        .arg(repo_path("tests/duckdb/read_bucket.py"))
        .arg(bucket_dir.path())
        .output()
        .expect("run read_bucket.py");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "read_bucket.py failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("{} sources", cases.len())),
        "read_bucket.py did not check every source: {stdout}"
    );

    // The library reads the same tables straight from the bucket, through the store trait a
    // local directory implements too: every upload's rows, as its manifest's series count them.
    let s3 = S3Store::new(
        env.s3.clone(),
        OUTPUT_BUCKET,
        tokio::runtime::Handle::current(),
    );
    let bucket_tables =
        tokio::task::spawn_blocking(move || read_tables(&s3, &Table::ALL, None, None))
            .await
            .unwrap()
            .expect("the tables read from the bucket");
    let column = bucket_tables.samples.column_by_name("source_id").unwrap();
    let ids = column.as_any().downcast_ref::<StringArray>().unwrap();
    let mut rows: BTreeMap<&str, u64> = BTreeMap::new();
    for id in ids.iter() {
        *rows
            .entry(id.expect("source_id is never null"))
            .or_default() += 1;
    }
    for case in &cases {
        let manifest = manifest_of(&outputs, &case.upload.key, &case.upload.bytes).unwrap();
        let expected: u64 = manifest.series.iter().map(|s| s.table_rows).sum();
        assert!(expected > 0, "{}: no rows", case.upload.key);
        assert_eq!(
            rows.get(manifest.source.source_id.as_str()).copied(),
            Some(expected),
            "{}",
            case.upload.key
        );
    }
    assert_eq!(
        rows.len(),
        cases.len(),
        "rows of uploads that are not cases"
    );

    // The local path (the CLI's `process`) on the same uploads gives the same objects.
    let local = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(local.path());
    for case in &cases {
        let sidecar = match (&case.sidecar, case.upload.meta.is_empty()) {
            (Some(sidecar), _) => Some(sidecar.clone()),
            (None, false) => Some(meta_as_sidecar(&case.upload.meta)),
            (None, true) => None,
        };
        if let Some(sidecar) = sidecar {
            let path = local.path().join(sidecar_key(&case.upload.key));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, sidecar).unwrap();
        }
        let path = local.path().join(&case.upload.key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &case.upload.bytes).unwrap();
    }
    for case in &cases {
        let outcome = process_upload(&store, &store, &case.upload.key, &ProcessOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.upload.key));
        assert!(
            matches!(outcome, Outcome::Converted(_)),
            "{}: {outcome:?}",
            case.upload.key
        );
    }
    let local_outputs = local_outputs(local.path());
    assert_eq!(
        local_outputs.keys().collect::<Vec<_>>(),
        outputs.keys().collect::<Vec<_>>(),
        "the bucket and the local directory hold different output keys"
    );
    for (key, bytes) in &outputs {
        // Object metadata in the bucket is a sidecar locally: the local manifest names it.
        let same = if key.ends_with("/manifest.json") {
            let read = |bytes: &[u8]| {
                let mut manifest: serde_json::Value = serde_json::from_slice(bytes).unwrap();
                manifest["source"]
                    .as_object_mut()
                    .unwrap()
                    .remove("metadata_etag");
                manifest
            };
            read(&local_outputs[key]) == read(bytes)
        } else {
            local_outputs[key] == *bytes
        };
        assert!(
            same,
            "{key}: the bucket's bytes differ from the local run's"
        );
    }
    // The flame graph folds what the store trait reads, from the bucket or the directory alike.
    let local_tables = read_tables(&store, &Table::ALL, None, None).unwrap();
    let filter = FlameFilter::default();
    let from_bucket = fold(&bucket_tables, &filter).expect("a flame graph from the bucket");
    assert!(from_bucket.total() > 0 && !from_bucket.lines.is_empty());
    assert_eq!(from_bucket, fold(&local_tables, &filter).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redelivered_message_rewrites_identical_objects() {
    let env = Env::start(30).await;
    env.consume_test_event().await;
    let key = "uploads/redelivery/android_app.pftrace";
    let upload = Upload::new(key, repo_file("samples/perfetto/android_app.pftrace"));
    env.put(&Upload::new(
        sidecar_key(key),
        repo_file("samples/perfetto/android_app.metadata.json"),
    ))
    .await;
    let sidecar_only = env.drain_all(&env.app(2)).await;
    assert_eq!(sidecar_only.len(), 1);
    env.put(&upload).await;

    let messages = env.receive(10, 5).await;
    assert_eq!(messages.len(), 1, "{:?}", crate::harness::bodies(&messages));
    assert_eq!(notified_keys(&messages[0]), vec![key.to_owned()]);
    let event = env.event(&messages);

    let app = env.app(2);
    let first = proflake_convert::handle_batch(&app, event.clone()).await;
    assert_eq!(failed_ids(&first), Vec::<String>::new());
    let snapshot = env.snapshot(OUTPUT_BUCKET).await;
    let manifest = manifest_of(&snapshot, key, &upload.bytes).expect("manifest written");
    assert_eq!(
        snapshot.keys().cloned().collect::<BTreeSet<_>>(),
        conversion_keys(&snapshot, &manifest)
    );

    // The same delivery again, to the same instance.
    let again = proflake_convert::handle_batch(&app, event.clone()).await;
    assert_eq!(failed_ids(&again), Vec::<String>::new());
    assert!(
        env.snapshot(OUTPUT_BUCKET).await == snapshot,
        "a redelivery to the same instance changed the outputs"
    );

    // And to a fresh instance (another Lambda instance gets the redelivery).
    let other = proflake_convert::handle_batch(&env.app(2), event.clone()).await;
    assert_eq!(failed_ids(&other), Vec::<String>::new());
    assert!(
        env.snapshot(OUTPUT_BUCKET).await == snapshot,
        "a redelivery to a fresh instance changed the outputs"
    );

    // Once more on a fresh instance, after losing every output (as if the first run had
    // died before its manifest): the conversion really runs again and writes the same bytes.
    env.clear_outputs().await;
    let fresh = proflake_convert::handle_batch(&env.app(2), event).await;
    assert_eq!(failed_ids(&fresh), Vec::<String>::new());
    let rewritten = env.snapshot(OUTPUT_BUCKET).await;
    assert_eq!(
        rewritten.keys().collect::<Vec<_>>(),
        snapshot.keys().collect::<Vec<_>>()
    );
    for (key, bytes) in &snapshot {
        assert!(rewritten[key] == *bytes, "{key} rewritten with other bytes");
    }

    env.delete(&messages).await;
    env.assert_queues_empty().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn corrupt_object_is_quarantined_and_the_batch_succeeds() {
    let env = Env::start(30).await;
    env.consume_test_event().await;
    let pyspy = repo_file("samples/folded/pyspy.folded");
    let truncated = {
        let whole = gzip(&pyspy);
        whole[..whole.len() / 2].to_vec()
    };
    let corrupt = vec![
        Upload::new("uploads/corrupt/random.pftrace", noise(7, 4096)),
        Upload::new("uploads/corrupt/truncated.folded.gz", truncated),
    ];
    let good = vec![
        Upload::new(
            "uploads/good/google-pprof_report_sample.cpu.pb.gz",
            repo_file("samples/pprof/google-pprof_report_sample.cpu.pb.gz"),
        ),
        Upload::new("uploads/good/pyspy.folded", pyspy).with_meta("timestamp", "1763800000"),
    ];
    for upload in corrupt.iter().chain(&good) {
        env.put(upload).await;
    }
    // All four notifications, handled as one batch.
    let mut messages = Vec::new();
    while messages.len() < 4 {
        let got = env.receive(10, 5).await;
        assert!(
            !got.is_empty(),
            "only {} notifications arrived",
            messages.len()
        );
        messages.extend(got);
    }
    assert_eq!(messages.len(), 4);
    let response = env.handle_and_settle(&env.app(2), &messages).await;
    assert_eq!(failed_ids(&response), Vec::<String>::new());

    for upload in &corrupt {
        let report_key = error_report_key(&upload.key);
        let report = env
            .get(UPLOADS_BUCKET, &report_key)
            .await
            .unwrap_or_else(|| panic!("no error report {report_key}"));
        let report = error_report(&report);
        assert_eq!(report["key"], upload.key.as_str());
        assert_eq!(report["etag"], content_etag(&upload.bytes).as_str());
        assert_eq!(report["bytes"], upload.bytes.len() as u64);
        assert!(!report["reason"].as_str().unwrap().is_empty(), "{report}");
        assert!(
            report["error"].as_str().unwrap().contains(&upload.key),
            "{report}"
        );
    }
    let outputs = env.snapshot(OUTPUT_BUCKET).await;
    for upload in &corrupt {
        assert!(
            manifest_of(&outputs, &upload.key, &upload.bytes).is_none(),
            "{}: quarantined, yet converted",
            upload.key
        );
    }
    for upload in &good {
        let manifest = manifest_of(&outputs, &upload.key, &upload.bytes)
            .unwrap_or_else(|| panic!("{} not converted", upload.key));
        assert!(manifest.profile.samples_written > 0);
        assert_eq!(
            env.get(UPLOADS_BUCKET, &error_report_key(&upload.key))
                .await,
            None
        );
    }

    // The reports are uploads/ objects too: their notifications must be skipped, not
    // quarantined again.
    let handled = env.drain_all(&env.app(2)).await;
    let notified: BTreeSet<String> = handled.iter().flat_map(notified_keys).collect();
    let reports: BTreeSet<String> = corrupt.iter().map(|u| error_report_key(&u.key)).collect();
    assert_eq!(notified, reports);
    let uploads = env.keys(UPLOADS_BUCKET, "").await;
    assert!(
        !uploads
            .iter()
            .any(|k| k.ends_with(".error.json.error.json")),
        "an error report was quarantined: {uploads:?}"
    );
    assert_eq!(uploads.len(), corrupt.len() * 2 + good.len(), "{uploads:?}");
    assert!(
        env.snapshot(OUTPUT_BUCKET).await == outputs,
        "handling the reports' notifications wrote outputs"
    );
    env.assert_queues_empty().await;
}

/// A message that is no notification fails alone; after maxReceiveCount deliveries SQS moves
/// it to the dead-letter queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unparseable_message_fails_alone_and_lands_in_the_dlq() {
    let env = Env::start(1).await;
    env.consume_test_event().await;
    let garbage_id = env
        .sqs
        .send_message()
        .queue_url(&env.queue_url)
        .message_body("this is not an S3 notification {")
        .send()
        .await
        .expect("send")
        .message_id
        .unwrap();
    let upload = Upload::new(
        "uploads/pprof.pb.gz",
        repo_file("samples/pprof/google-pprof_report_sample.cpu.pb.gz"),
    );
    env.put(&upload).await;
    let mut messages = Vec::new();
    while messages.len() < 2 {
        let got = env.receive(10, 5).await;
        assert!(!got.is_empty(), "only {} messages arrived", messages.len());
        messages.extend(got);
    }
    let app = env.app(2);
    let response = env.handle_and_settle(&app, &messages).await;
    assert_eq!(failed_ids(&response), vec![garbage_id.clone()]);
    let outputs = env.snapshot(OUTPUT_BUCKET).await;
    assert!(manifest_of(&outputs, &upload.key, &upload.bytes).is_some());

    // Redelivered until maxReceiveCount, failing each time, then dead-lettered.
    let mut deliveries = 1;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (response, messages) = env.drain(&app, 2).await;
        if messages.is_empty() {
            if env.queue_depth(&env.queue_url).await == (0, 0) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never dead-lettered");
            continue;
        }
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].message_id(), Some(garbage_id.as_str()));
        assert_eq!(failed_ids(&response), vec![garbage_id.clone()]);
        deliveries += 1;
    }
    assert_eq!(deliveries, crate::harness::MAX_RECEIVE_COUNT);
    let dead = env
        .sqs
        .receive_message()
        .queue_url(&env.dlq_url)
        .max_number_of_messages(10)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].message_id(), Some(garbage_id.as_str()));
}

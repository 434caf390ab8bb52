//! Many uploads at once, drained in batches of ten by concurrent handler invocations.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proflake::{content_etag, error_report_key, manifest_key, source_id, Manifest};

use crate::convert::noise;
use crate::harness::{
    failed_ids, list_keys, put_upload, Env, Upload, OUTPUT_BUCKET, UPLOADS_BUCKET,
};
use proflake_tests::gzip;

const VALID: usize = 180;
const CORRUPT: usize = 20;
/// Concurrent handler invocations (Lambda instances).
const INSTANCES: usize = 3;
/// Concurrent uploads.
const UPLOADERS: usize = 16;

/// A small folded profile, different for each `i`, and the samples it expands into (its
/// counts summed).
fn folded(i: usize) -> (Vec<u8>, u64) {
    let mut text = String::new();
    let mut samples = 0;
    for j in 0..(1 + i % 5) {
        // At least 2: Relay wants two samples per thread.
        let count = 2 + ((i * 7 + j * 3) % 13) as u64;
        samples += count;
        text.push_str(&format!(
            "main;service_{};handler_{};leaf_{i}_{j} {count}\n",
            i % 3,
            (i + j) % 7
        ));
    }
    (text.into_bytes(), samples)
}

fn uploads() -> (Vec<Upload>, Vec<Upload>, u64) {
    let mut valid = Vec::new();
    let mut expected_samples = 0;
    for i in 0..VALID {
        let (bytes, samples) = folded(i);
        expected_samples += samples;
        let upload = Upload::new(format!("uploads/burst/valid {i:03}.folded"), bytes);
        // Half say when they were recorded; the others start at their arrival.
        let upload = if i % 2 == 0 {
            upload.with_meta("timestamp", &format!("{}", 1_763_800_000 + i * 60))
        } else {
            upload
        };
        valid.push(upload);
    }
    let corrupt = (0..CORRUPT)
        .map(|i| {
            if i % 2 == 0 {
                Upload::new(
                    format!("uploads/burst/corrupt+{i:02}.pftrace"),
                    noise(1000 + i as u64, 512 + i * 37),
                )
            } else {
                let whole = gzip(&folded(i).0);
                Upload::new(
                    format!("uploads/burst/corrupt+{i:02}.folded.gz"),
                    whole[..whole.len() - 8 - i % 4].to_vec(),
                )
            }
        })
        .collect();
    (valid, corrupt, expected_samples)
}

#[derive(Default)]
struct Timing {
    first_start: Option<Instant>,
    last_end: Option<Instant>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn burst_of_uploads_all_convert_or_quarantine() {
    let env = Arc::new(Env::start(60).await);
    env.consume_test_event().await;
    let (valid, corrupt, expected_samples) = uploads();
    let total = valid.len() + corrupt.len();
    assert!(total >= 200);
    let keys: BTreeSet<&str> = valid
        .iter()
        .chain(&corrupt)
        .map(|u| u.key.as_str())
        .collect();
    assert_eq!(keys.len(), total, "upload keys must be distinct");

    // Upload everything concurrently.
    let upload_start = Instant::now();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(UPLOADERS));
    let mut puts = tokio::task::JoinSet::new();
    for upload in valid.iter().chain(&corrupt) {
        let (s3, upload) = (env.s3.clone(), upload.clone());
        let permit = semaphore.clone().acquire_owned().await.unwrap();
        puts.spawn(async move {
            put_upload(&s3, &upload).await;
            drop(permit);
        });
    }
    while let Some(done) = puts.join_next().await {
        done.expect("upload task");
    }
    let upload_time = upload_start.elapsed();

    // Drain with several concurrent "instances", each taking batches of ten.
    let app = Arc::new(env.app(4));
    let timing = Arc::new(Mutex::new(Timing::default()));
    let done = Arc::new(AtomicBool::new(false));
    let batches = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let expected_reports = corrupt.len();
    let expected_manifests = valid.len();
    let deadline = Instant::now() + Duration::from_secs(150);
    let idle_since: Arc<Mutex<Option<Instant>>> = Arc::default();
    let mut instances = tokio::task::JoinSet::new();
    for _ in 0..INSTANCES {
        let idle_since = idle_since.clone();
        let (env, app, timing, done, batches, failures) = (
            env.clone(),
            app.clone(),
            timing.clone(),
            done.clone(),
            batches.clone(),
            failures.clone(),
        );
        instances.spawn(async move {
            while !done.load(Ordering::SeqCst) {
                assert!(Instant::now() < deadline, "burst not drained in time");
                let messages = env.receive(10, 1).await;
                if messages.is_empty() {
                    let manifests = list_keys(&env.s3, OUTPUT_BUCKET, "converted/")
                        .await
                        .into_iter()
                        .filter(|k| k.ends_with("/manifest.json"))
                        .count();
                    let reports = list_keys(&env.s3, UPLOADS_BUCKET, "uploads/")
                        .await
                        .into_iter()
                        .filter(|k| k.ends_with(".error.json"))
                        .count();
                    // Done when every upload has an outcome (which one is checked below), or
                    // when the queue has stayed empty for a while without that.
                    let empty = env.queue_depth(&env.queue_url).await == (0, 0);
                    let since = *idle_since.lock().unwrap().get_or_insert_with(Instant::now);
                    if empty
                        && (manifests + reports >= expected_manifests + expected_reports
                            || since.elapsed() > Duration::from_secs(10))
                    {
                        done.store(true, Ordering::SeqCst);
                    }
                    continue;
                }
                *idle_since.lock().unwrap() = None;
                let start = Instant::now();
                timing.lock().unwrap().first_start.get_or_insert(start);
                let response = env.handle_and_settle(&app, &messages).await;
                let end = Instant::now();
                let mut t = timing.lock().unwrap();
                t.last_end = Some(t.last_end.map_or(end, |e| e.max(end)));
                drop(t);
                batches.fetch_add(1, Ordering::SeqCst);
                failures.fetch_add(failed_ids(&response).len(), Ordering::SeqCst);
            }
        });
    }
    while let Some(done) = instances.join_next().await {
        done.expect("handler instance");
    }
    let handling = {
        let timing = timing.lock().unwrap();
        timing.last_end.unwrap() - timing.first_start.unwrap()
    };
    eprintln!(
        "burst: {total} uploads in {:.2} s = {:.1} objects/s ({} batches, {} batch item \
         failures retried; {INSTANCES} concurrent invocations, PROFLAKE_CONCURRENCY=4); \
         upload time {:.2} s",
        handling.as_secs_f64(),
        total as f64 / handling.as_secs_f64(),
        batches.load(Ordering::SeqCst),
        failures.load(Ordering::SeqCst),
        upload_time.as_secs_f64(),
    );

    // Every upload has exactly one of manifest and error report.
    let outputs = list_keys(&env.s3, OUTPUT_BUCKET, "").await;
    let outputs: BTreeSet<String> = outputs.into_iter().collect();
    let uploads_bucket: BTreeSet<String> = list_keys(&env.s3, UPLOADS_BUCKET, "")
        .await
        .into_iter()
        .collect();
    let manifest_of = |u: &Upload| manifest_key(&source_id(&u.key, &content_etag(&u.bytes)));
    let mut samples = 0;
    for upload in &valid {
        let key = manifest_of(upload);
        assert!(outputs.contains(&key), "{}: no manifest", upload.key);
        assert!(
            !uploads_bucket.contains(&error_report_key(&upload.key)),
            "{}: quarantined",
            upload.key
        );
        let manifest: Manifest =
            serde_json::from_slice(&env.get(OUTPUT_BUCKET, &key).await.unwrap()).unwrap();
        assert_eq!(manifest.source.key, upload.key);
        samples += manifest.profile.samples_written;
    }
    for upload in &corrupt {
        assert!(
            uploads_bucket.contains(&error_report_key(&upload.key)),
            "{}: no error report",
            upload.key
        );
        assert!(!outputs.contains(&manifest_of(upload)), "{}", upload.key);
    }
    let manifests = outputs
        .iter()
        .filter(|k| k.ends_with("/manifest.json"))
        .count();
    let reports = uploads_bucket
        .iter()
        .filter(|k| k.ends_with(".error.json"))
        .count();
    assert_eq!(manifests, valid.len());
    assert_eq!(reports, corrupt.len());
    assert_eq!(uploads_bucket.len(), total + corrupt.len());
    assert_eq!(samples, expected_samples, "sum of samples_written");
    env.assert_queues_empty().await;
}

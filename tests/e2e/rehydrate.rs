//! Re-symbolization through the rehydrate handler: profiles of a gcc-built library converted
//! without symbols, then its debug file uploaded to the output bucket, the real S3 → SQS
//! notification handled, and the bucket's chunks and tables compared with addr2line. Also the
//! refusals, redelivery, and a sweep longer than one invocation driven through the real queue.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use aws_sdk_sqs::types::Message;
use proflake::{store::LocalDirStore, store::S3Store};
use proflake::{symbols::add_debug_file, symbols::DebugFileOutcome, Manifest};
use proflake_rehydrate::{parse_request, BatchTally, Page, Request, Scope, Tally};
use proflake_tests::native::{build, NativeLib};
use proflake_tests::native_profiles::{
    addresses, assert_matches_addr2line, otlp_request, perfetto_trace, table_chains, Addresses,
    START_S,
};
use serde_json::json;

use crate::harness::{
    failed_ids, manifest_of, mirror, notified_keys, sqs_event, Env, Upload, OUTPUT_BUCKET,
    UPLOADS_BUCKET,
};

const TRACE_KEY: &str = "uploads/native/work.pftrace";
const OTLP_KEY: &str = "uploads/native/work.otlp.json";
const SWEEP: &str = r#"{"source":"proflake.schedule","action":"sweep"}"#;

/// Moto with both test events consumed, and the library with the addresses profiled.
async fn start() -> (Env, NativeLib, Addresses) {
    let env = Env::start(30).await;
    env.consume_test_event().await;
    env.consume_rehydrate_test_event().await;
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    (env, lib, a)
}

/// The trace (with its sidecar first, for its start time) and the OTLP request.
fn profiles(lib: &NativeLib, a: &Addresses, trace_key: &str) -> Vec<Upload> {
    let sidecar = json!({"timestamp": START_S, "platform": "android"});
    vec![
        Upload::new(
            format!("{trace_key}.metadata.json"),
            serde_json::to_vec(&sidecar).unwrap(),
        ),
        Upload::new(trace_key, perfetto_trace(lib, a)),
    ]
}

fn debug_key(lib: &NativeLib, name: &str) -> String {
    format!("debuginfo/{}/{name}", lib.build_id)
}

/// Uploads `uploads` and converts them through the convert handler.
async fn convert(env: &Env, uploads: &[Upload]) {
    for upload in uploads {
        env.put(upload).await;
    }
    let handled = env.drain_all(&env.app(2)).await;
    assert_eq!(handled.len(), uploads.len(), "one notification per object");
}

/// Every message of the rehydrate queue until it stays empty for one long poll.
async fn receive_all(env: &Env) -> Vec<Message> {
    let mut all = Vec::new();
    loop {
        let got = env.receive_rehydrate(10, 2).await;
        if got.is_empty() {
            return all;
        }
        all.extend(got);
    }
}

/// Handles every message left on the rehydrate queue (the notifications of what the function
/// wrote itself); every batch must succeed. Returns the summed counts.
async fn drain_rehydrate(env: &Env, app: &proflake_rehydrate::App) -> BatchTally {
    let mut total = BatchTally::default();
    loop {
        let messages = env.receive_rehydrate(10, 2).await;
        if messages.is_empty() {
            return total;
        }
        let (response, tally) = env.rehydrate_batch(app, &messages).await;
        assert_eq!(failed_ids(&response), Vec::<String>::new());
        total.merge(tally);
    }
}

/// The output bucket, copied into a directory to read its tables.
async fn outputs_dir(env: &Env) -> (tempfile::TempDir, LocalDirStore) {
    let dir = tempfile::tempdir().unwrap();
    mirror(&env.snapshot(OUTPUT_BUCKET).await, dir.path());
    let store = LocalDirStore::new(dir.path());
    (dir, store)
}

/// The objects under `converted/`, `tables/` and `index/`: the profiles' outputs.
fn profile_outputs(snapshot: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    snapshot
        .iter()
        .filter(|(k, _)| {
            ["converted/", "tables/", "index/"]
                .iter()
                .any(|p| k.starts_with(p))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The function names of every frame of every Sample v2 chunk of the upload.
fn chunk_functions(dir: &Path, manifest: &Manifest) -> (usize, Vec<Option<String>>) {
    let chunks: Vec<_> = manifest
        .outputs
        .iter()
        .filter(|o| o.key.contains("/sample-v2/"))
        .collect();
    let mut functions = Vec::new();
    for chunk in &chunks {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(&chunk.key)).unwrap()).unwrap();
        for frame in json["profile"]["frames"].as_array().expect("frames") {
            functions.push(frame["function"].as_str().map(str::to_owned));
        }
    }
    (chunks.len(), functions)
}

fn manifest(snapshot: &BTreeMap<String, Vec<u8>>, upload: &Upload) -> Manifest {
    manifest_of(snapshot, &upload.key, &upload.bytes).expect("converted")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_debug_file_uploaded_after_conversion_names_every_frame_as_addr2line_does() {
    let (env, lib, a) = start().await;
    let mut uploads = profiles(&lib, &a, TRACE_KEY);
    uploads.push(Upload::new(OTLP_KEY, otlp_request(&lib, &a)));
    convert(&env, &uploads).await;
    let profiled = [&uploads[1], &uploads[2]];

    // Converted without symbols: the frames have addresses and no names.
    let (dir, store) = outputs_dir(&env).await;
    let before = env.snapshot(OUTPUT_BUCKET).await;
    let chains = table_chains(&store);
    assert!(!chains.is_empty());
    assert!(chains.values().all(Vec::is_empty), "{chains:?}");
    for upload in profiled {
        let m = manifest(&before, upload);
        assert_eq!(m.symbols[0].build_id, lib.build_id);
        assert_eq!(
            (
                m.symbols[0].symbolicated,
                m.symbols[0].debug_file_key.as_deref()
            ),
            (0, None)
        );
        let (chunks, functions) = chunk_functions(dir.path(), &m);
        assert!(chunks > 0, "{}", upload.key);
        assert!(functions.iter().all(Option::is_none), "{functions:?}");
    }
    drop(dir);

    // The debug file arrives; its notification reaches the rehydrate queue.
    let key = debug_key(&lib, "libwork.so");
    env.put_output(&key, &lib.bytes()).await;
    let messages = env.receive_rehydrate(10, 5).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(notified_keys(&messages[0]), vec![key.clone()]);
    let app = env.rehydrate_app(&[]);
    let (response, tally) = env.rehydrate_batch(&app, &messages).await;
    assert_eq!(failed_ids(&response), Vec::<String>::new());
    let frames = a.leaves.len() as u64 + 1;
    assert_eq!(
        (tally.debug_files_stored, tally.pages, tally.reconverted),
        (1, 1, 2),
        "{tally:?}"
    );
    assert_eq!(tally.frames_symbolized, 2 * frames);
    assert_eq!(tally.continuations, 0);

    // What the function wrote under debuginfo/ notified the queue too: skipped, cheaply.
    let derived = drain_rehydrate(&env, &app).await;
    assert_eq!(
        (derived.skipped, derived.debug_files, derived.pages),
        (2, 0, 0)
    );

    let after = env.snapshot(OUTPUT_BUCKET).await;
    let meta: serde_json::Value =
        serde_json::from_slice(&after[&format!("debuginfo/{}/meta.json", lib.build_id)]).unwrap();
    assert_eq!(meta["debug_file_key"], key.as_str());
    let (dir, store) = outputs_dir(&env).await;
    assert_matches_addr2line(&lib, &a, &store);
    let names: BTreeSet<String> = lib
        .addr2line(&a.leaves)
        .into_iter()
        .flatten()
        .map(|level| level.function)
        .collect();
    assert!(
        names.contains("work") && names.contains("outer"),
        "{names:?}"
    );
    for upload in profiled {
        let m = manifest(&after, upload);
        assert_eq!(
            (m.symbols[0].symbolicated, m.symbols[0].frames),
            (frames, frames)
        );
        assert_eq!(m.symbols[0].debug_file_key.as_deref(), Some(key.as_str()));
        let (chunks, functions) = chunk_functions(dir.path(), &m);
        assert!(chunks > 0);
        let named: BTreeSet<String> = functions
            .iter()
            .map(|f| {
                f.clone()
                    .unwrap_or_else(|| panic!("an unnamed frame in {}", upload.key))
            })
            .collect();
        assert!(
            named.contains("work") && named.contains("outer"),
            "{named:?}"
        );
        assert!(named.is_subset(&names), "{named:?} ⊄ {names:?}");
    }
    assert_eq!(
        profile_outputs(&before).keys().collect::<Vec<_>>(),
        profile_outputs(&after).keys().collect::<Vec<_>>(),
        "rehydration rewrites the same keys"
    );
    env.assert_queues_empty().await;
    assert_eq!(env.queue_depth(&env.rehydrate_url).await, (0, 0));
    assert_eq!(env.queue_depth(&env.rehydrate_dlq_url).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_debug_file_message_twice_leaves_the_bucket_identical() {
    let (env, lib, a) = start().await;
    let uploads = profiles(&lib, &a, TRACE_KEY);
    convert(&env, &uploads).await;
    let key = debug_key(&lib, "libwork.so");
    env.put_output(&key, &lib.bytes()).await;
    let messages = env.receive_rehydrate(10, 5).await;
    assert_eq!(messages.len(), 1);
    let app = env.rehydrate_app(&[]);
    let (response, first) = env.rehydrate_batch(&app, &messages).await;
    assert!(failed_ids(&response).is_empty());
    assert_eq!((first.debug_files_stored, first.reconverted), (1, 1));
    drain_rehydrate(&env, &app).await;
    let outputs = env.snapshot(OUTPUT_BUCKET).await;
    let uploads_before = env.snapshot(UPLOADS_BUCKET).await;

    // The same message again, as SQS redelivers it.
    let (response, again) = env.rehydrate_batch(&app, &messages).await;
    assert!(failed_ids(&response).is_empty());
    assert_eq!(
        (
            again.debug_files_kept,
            again.pages,
            again.reconverted,
            again.up_to_date
        ),
        (1, 1, 0, 1),
        "{again:?}"
    );
    let outputs_again = env.snapshot(OUTPUT_BUCKET).await;
    assert_eq!(
        outputs.keys().collect::<Vec<_>>(),
        outputs_again.keys().collect::<Vec<_>>()
    );
    for (key, bytes) in &outputs {
        assert!(outputs_again[key] == *bytes, "{key} changed");
    }
    assert_eq!(env.snapshot(UPLOADS_BUCKET).await, uploads_before);
    assert!(
        receive_all(&env).await.is_empty(),
        "nothing was written under debuginfo/ the second time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_debug_files_are_refused_with_reports_and_no_profile_changes() {
    let (env, lib, a) = start().await;
    let other = build("libother.so", &["-DUNUSED=1", "-Wl,--build-id=md5"]);
    convert(&env, &profiles(&lib, &a, TRACE_KEY)).await;
    let before = profile_outputs(&env.snapshot(OUTPUT_BUCKET).await);
    let bytes = lib.bytes();
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let cases = [
        (
            debug_key(&lib, "other.so"),
            other.bytes(),
            "build_id_mismatch",
        ),
        (
            debug_key(&lib, "truncated.so"),
            bytes[..bytes.len() / 3].to_vec(),
            "bad_debug_file",
        ),
        (debug_key(&lib, "random.bin"), noise, "bad_debug_file"),
    ];
    for (key, content, _) in &cases {
        env.put_output(key, content).await;
    }
    let messages = receive_all(&env).await;
    let notified: BTreeSet<String> = messages.iter().flat_map(notified_keys).collect();
    assert_eq!(
        notified,
        cases
            .iter()
            .map(|c| c.0.clone())
            .collect::<BTreeSet<String>>()
    );
    let app = env.rehydrate_app(&[]);
    let (response, tally) = env.rehydrate_batch(&app, &messages).await;
    assert!(
        failed_ids(&response).is_empty(),
        "a bad file is not retried"
    );
    assert_eq!((tally.debug_files, tally.debug_files_refused), (3, 3));
    assert_eq!((tally.pages, tally.reconverted), (0, 0));
    let failures: Vec<_> = tally
        .failures
        .iter()
        .map(|(r, n)| (r.as_str(), *n))
        .collect();
    assert_eq!(failures, [("bad_debug_file", 2), ("build_id_mismatch", 1)]);
    for (key, _, reason) in &cases {
        let report = env
            .get(OUTPUT_BUCKET, &format!("{key}.error.json"))
            .await
            .unwrap_or_else(|| panic!("no report for {key}"));
        let report: serde_json::Value = serde_json::from_slice(&report).unwrap();
        assert_eq!(report["reason"], *reason, "{key}");
        assert_eq!(report["key"], key.as_str());
    }
    // The reports' own notifications are skipped.
    let derived = drain_rehydrate(&env, &app).await;
    assert_eq!((derived.skipped, derived.debug_files), (3, 0));
    let after = env.snapshot(OUTPUT_BUCKET).await;
    assert!(!after.contains_key(&format!("debuginfo/{}/meta.json", lib.build_id)));
    assert!(!after.keys().any(|k| k.ends_with(".symcache")));
    assert_eq!(profile_outputs(&after), before, "no profile changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sweep_longer_than_one_invocation_continues_through_the_queue() {
    const UPLOADS: usize = 5;
    const MAX_UPLOADS: usize = 2;
    let (env, lib, a) = start().await;
    let uploads: Vec<Upload> = (0..UPLOADS)
        .flat_map(|i| profiles(&lib, &a, &format!("uploads/sweep/{i}.pftrace")))
        .collect();
    convert(&env, &uploads).await;
    let traces: Vec<&Upload> = uploads
        .iter()
        .filter(|u| u.key.ends_with(".pftrace"))
        .collect();
    let index = env.keys(OUTPUT_BUCKET, "index/build-id/").await;
    assert_eq!(
        index.len(),
        UPLOADS,
        "one index entry per upload: {index:?}"
    );

    // The debug file's symbols stored directly, as if their notification had been lost: only
    // the sweep can find the uploads now.
    let key = debug_key(&lib, "libwork.so");
    env.put_output(&key, &lib.bytes()).await;
    let (s3, runtime, job_key) = (
        env.s3.clone(),
        tokio::runtime::Handle::current(),
        key.clone(),
    );
    let stored = tokio::task::spawn_blocking(move || {
        let store = S3Store::new(s3, OUTPUT_BUCKET, runtime);
        add_debug_file(&store, &job_key, u64::MAX).unwrap()
    })
    .await
    .unwrap();
    assert!(
        matches!(stored, DebugFileOutcome::Stored { .. }),
        "{stored:?}"
    );
    let lost = receive_all(&env).await;
    assert_eq!(lost.len(), 3, "the file, its cache and its meta");
    env.delete_rehydrate(&lost).await;

    // The schedule's message, as EventBridge puts the rule's Input on the queue.
    env.sqs
        .send_message()
        .queue_url(&env.rehydrate_url)
        .message_body(SWEEP)
        .send()
        .await
        .expect("send the sweep");
    let max = MAX_UPLOADS.to_string();
    let app = env.rehydrate_app(&[("PROFLAKE_REHYDRATE_MAX_UPLOADS", max.as_str())]);
    // One message per invocation (the function's event source has BatchSize 1).
    let mut invocations = 0;
    let mut total = BatchTally::default();
    let mut afters = Vec::new();
    loop {
        let messages = env.receive_rehydrate(1, 2).await;
        let Some(message) = messages.first() else {
            break;
        };
        match parse_request(message.body().unwrap()).unwrap() {
            Request::Page(Page {
                scope: Scope::Sweep,
                after,
            }) => afters.push(after),
            other => panic!("{other:?}"),
        }
        invocations += 1;
        let (response, tally) = env.rehydrate_batch(&app, &messages).await;
        assert!(failed_ids(&response).is_empty());
        assert!(tally.reconverted <= MAX_UPLOADS as u64, "{tally:?}");
        total.merge(tally);
        assert!(invocations <= 10, "the sweep does not end");
    }
    let pages = UPLOADS.div_ceil(MAX_UPLOADS);
    assert_eq!(invocations, pages);
    assert_eq!(afters.len(), pages);
    assert_eq!(afters[0], None, "the schedule starts from the beginning");
    assert_eq!(
        afters[1..]
            .iter()
            .map(|a| a.clone().unwrap())
            .collect::<Vec<_>>(),
        [index[1].clone(), index[3].clone()],
        "each continuation resumes after the last key its page looked at"
    );
    let frames = a.leaves.len() as u64 + 1;
    assert_eq!(
        (
            total.pages,
            total.reconverted,
            total.up_to_date,
            total.continuations
        ),
        (pages as u64, UPLOADS as u64, 0, pages as u64 - 1),
        "{total:?}"
    );
    assert_eq!(total.frames_symbolized, UPLOADS as u64 * frames);

    let after = env.snapshot(OUTPUT_BUCKET).await;
    for trace in &traces {
        let m = manifest(&after, trace);
        assert_eq!(
            (
                m.symbols[0].symbolicated,
                m.symbols[0].debug_file_key.as_deref()
            ),
            (frames, Some(key.as_str())),
            "{}",
            trace.key
        );
    }
    let (_dir, store) = outputs_dir(&env).await;
    let chains = table_chains(&store);
    let mut lookups = a.leaves.clone();
    lookups.push(a.ret - 1);
    for (va, want) in lookups.iter().zip(lib.addr2line(&lookups)) {
        assert_eq!(chains[&("image_relative".to_owned(), *va)], want, "{va:#x}");
    }

    // A second sweep finds everything up to date and writes nothing.
    let sweep = Message::builder().message_id("again").body(SWEEP).build();
    let event = sqs_event(&env.rehydrate_arn, &[sweep]);
    let (_, again) = proflake_rehydrate::handle_batch_tallied(&app, event).await;
    assert_eq!(
        (again.reconverted, again.up_to_date, again.continuations),
        (0, UPLOADS as u64, 0)
    );
    assert_eq!(env.snapshot(OUTPUT_BUCKET).await, after);
    assert_eq!(env.queue_depth(&env.rehydrate_url).await, (0, 0));
    assert_eq!(env.queue_depth(&env.rehydrate_dlq_url).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sweep_removes_what_a_late_job_of_replaced_content_left_in_the_bucket() {
    let env = Env::start(30).await;
    env.consume_test_event().await;
    env.consume_rehydrate_test_event().await;
    let pending = |keys: Vec<String>| -> Vec<String> {
        keys.into_iter()
            .filter(|k| k.contains("/pending/"))
            .collect()
    };
    // The key holds new content. A job of its earlier content, still running when the new
    // content settled, wrote its table files, then failed for good.
    let key = "uploads/late/p.folded";
    env.put(&Upload::new(key, b"main;then 1\n".to_vec())).await;
    env.cut_short(key, |k| k.ends_with("/manifest.json")).await;
    env.put(&Upload::new(key, b"main;now 1\n".to_vec())).await;
    let [record]: [String; 1] = pending(env.keys(OUTPUT_BUCKET, "converted/by-key/").await)
        .try_into()
        .expect("one pending record");
    let written: serde_json::Value =
        serde_json::from_slice(&env.get(OUTPUT_BUCKET, &record).await.unwrap()).unwrap();
    assert_eq!(written["source_key"], key);
    assert!(
        written["outputs"].as_array().is_some_and(|o| !o.is_empty()),
        "{written}"
    );
    // A job that failed for good on the content its key still holds, before it wrote
    // anything but its record: left to its retries.
    let failed_key = "uploads/late/q.folded";
    env.put(&Upload::new(failed_key, b"main;q 1\n".to_vec()))
        .await;
    env.cut_short(failed_key, |k| !k.contains("/pending/"))
        .await;
    let kept: Vec<String> = pending(env.keys(OUTPUT_BUCKET, "converted/by-key/").await)
        .into_iter()
        .filter(|k| *k != record)
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    // S3 keeps LastModified in whole seconds: past a grace of one second for certain.
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let app = env.rehydrate_app(&[("PROFLAKE_REHYDRATE_PENDING_GRACE_SECONDS", "1")]);
    let sweep = aws_sdk_sqs::types::Message::builder()
        .message_id("sweep")
        .body(SWEEP)
        .build();
    let event = sqs_event(&env.rehydrate_arn, &[sweep]);
    let (response, tally) = proflake_rehydrate::handle_batch_tallied(&app, event).await;
    assert!(failed_ids(&response).is_empty());
    assert_eq!((tally.pending_removed, tally.continuations), (1, 0));
    assert_eq!(env.keys(OUTPUT_BUCKET, "").await, kept);
}

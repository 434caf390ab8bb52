//! What the load tests share: generated uploads, several concurrent handler "instances" draining
//! the real queue in batches of ten the way Lambda's event source mapping does, and the check,
//! by listing both buckets, that every upload ended converted or quarantined exactly once.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use proflake::store::{content_etag, LocalDirStore, ObjectStore};
use proflake::{process_upload, Manifest, Outcome, ProcessOptions};
use proflake_convert::App;
use proflake_tests::{error_report, gzip};

use crate::convert::noise;
use crate::harness::{
    error_report_key, failed_ids, is_pointer_key, list_keys, put_upload, Env, Upload,
    OUTPUT_BUCKET, UPLOADS_BUCKET,
};

/// Concurrent handler invocations (Lambda instances).
pub const INSTANCES: usize = 3;
/// Concurrent uploads, and concurrent reads when checking the buckets.
pub const UPLOADERS: usize = 16;

/// A small folded profile, different for each `i`, and the samples it expands into (its
/// counts summed).
pub fn folded(i: usize) -> (Vec<u8>, u64) {
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

/// Bytes that cannot be converted, different for each `i`: alternately random bytes and a
/// gzip cut short. With the file name extension that makes them look like a profile.
pub fn corrupt(i: usize) -> (Vec<u8>, &'static str) {
    if i.is_multiple_of(2) {
        (noise(1000 + i as u64, 512 + i * 37), "pftrace")
    } else {
        let whole = gzip(&folded(i).0);
        (whole[..whole.len() - 8 - i % 4].to_vec(), "folded.gz")
    }
}

/// How an upload must end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Converted, `samples` written to Sample v2.
    Converted { samples: u64 },
    /// Quarantined with an error report naming `reason`.
    Quarantined { reason: String },
}

/// An upload as the bucket holds it at the end, and how it must have ended.
#[derive(Clone, Debug)]
pub struct Final {
    pub upload: Upload,
    pub fate: Fate,
}

impl Final {
    pub fn converted(upload: Upload, samples: u64) -> Final {
        Final {
            upload,
            fate: Fate::Converted { samples },
        }
    }

    /// An upload that must be quarantined, with the reason the library gives for it when it
    /// processes the same bytes from a local directory.
    pub fn quarantined(upload: Upload) -> Final {
        let reason = match local_outcome(&upload) {
            Outcome::Quarantined(q) => q.reason.to_owned(),
            other => panic!("{} is not corrupt: {other:?}", upload.key),
        };
        Final {
            upload,
            fate: Fate::Quarantined { reason },
        }
    }
}

/// What `proflake::process_upload` makes of `upload` in a local directory: the oracle the
/// bucket run is held to.
pub fn local_outcome(upload: &Upload) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    store.put(&upload.key, &upload.bytes).unwrap();
    process_upload(&store, &store, &upload.key, &ProcessOptions::default())
        .unwrap_or_else(|e| panic!("local run of {}: {e}", upload.key))
}

/// Samples the library writes for `upload`, from a local run.
pub fn local_samples(upload: &Upload) -> u64 {
    match local_outcome(upload) {
        Outcome::Converted(c) => c.samples,
        other => panic!("{} does not convert: {other:?}", upload.key),
    }
}

/// Uploads everything, [`UPLOADERS`] at a time.
pub async fn put_all<'a>(env: &Env, uploads: impl IntoIterator<Item = &'a Upload>) -> Duration {
    let start = Instant::now();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(UPLOADERS));
    let mut puts = tokio::task::JoinSet::new();
    for upload in uploads {
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
    start.elapsed()
}

/// Uploads `stages` one after the other while a drain runs, [`UPLOADERS`] at a time, each
/// upload waiting until fewer than `ahead` of those before it are still unhandled. A real queue
/// does not care how deep it is, but moto's ReceiveMessage recomputes every queue attribute,
/// each a pass over all messages, for every message it returns: a thousand waiting messages
/// would make moto, not the handler, the bottleneck. Holds `progress` busy until done.
pub fn feed(
    env: &Arc<Env>,
    stages: Vec<Vec<Upload>>,
    ahead: usize,
    progress: &Arc<Progress>,
) -> tokio::task::JoinHandle<Duration> {
    let busy = Busy::new(progress);
    let (env, progress) = (env.clone(), progress.clone());
    tokio::spawn(async move {
        let start = Instant::now();
        let mut put = 0;
        for stage in stages {
            let semaphore = Arc::new(tokio::sync::Semaphore::new(UPLOADERS));
            let mut puts = tokio::task::JoinSet::new();
            for upload in stage {
                while put >= progress.handled.load(Ordering::SeqCst) + ahead {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                put += 1;
                let s3 = env.s3.clone();
                let permit = semaphore.clone().acquire_owned().await.unwrap();
                puts.spawn(async move {
                    put_upload(&s3, &upload).await;
                    drop(permit);
                });
            }
            while let Some(done) = puts.join_next().await {
                done.expect("upload task");
            }
        }
        drop(busy);
        start.elapsed()
    })
}

/// What a misbehaving event source mapping or Lambda does to the messages it receives. Each
/// message suffers at most one of these, on its first receive only, so that together with the
/// S3 faults it stays within the queue's maxReceiveCount.
pub struct Interference {
    /// Every `n`th first receive: the invocation runs past the visibility timeout, so SQS
    /// hands the message to another instance while this one still holds it; it is handled
    /// (and deleted with the old receipt handle) after `stall`.
    pub stall_every: usize,
    pub stall: Duration,
    /// Every `n`th first receive: handled, but never deleted (the invocation died after the
    /// work), so SQS redelivers it after the visibility timeout.
    pub forget_every: usize,
    /// Every `n`th first receive: S3 delivers the notification twice; a copy of the body is
    /// sent to the queue at once, while the original is being handled.
    pub duplicate_every: usize,
    /// First receives after which nothing more is interfered with, so that the drain does
    /// not end waiting out a visibility timeout.
    pub until: usize,
    first_receives: AtomicUsize,
    copies: Mutex<HashSet<String>>,
    pub stalled: AtomicUsize,
    pub forgotten: AtomicUsize,
    pub duplicated: AtomicUsize,
}

impl Interference {
    pub fn new(
        stall_every: usize,
        stall: Duration,
        forget_every: usize,
        duplicate_every: usize,
        until: usize,
    ) -> Self {
        Interference {
            stall_every,
            stall,
            forget_every,
            duplicate_every,
            until,
            first_receives: AtomicUsize::new(0),
            copies: Mutex::default(),
            stalled: AtomicUsize::new(0),
            forgotten: AtomicUsize::new(0),
            duplicated: AtomicUsize::new(0),
        }
    }
}

/// Shared counters of a drain, read by whatever injects faults alongside it.
#[derive(Default)]
pub struct Progress {
    /// Messages handled successfully and deleted.
    pub handled: AtomicUsize,
    /// Work outside the queue that must finish before the drain may end (held messages,
    /// uploads still to come).
    pub busy: AtomicUsize,
    /// Deletes refused for a receipt handle SQS no longer knows.
    pub stale_deletes: AtomicUsize,
    /// The most times one message was received.
    pub max_receives: AtomicUsize,
    /// Taken around each delete: moto rebuilds a queue's message list on every delete without a
    /// lock, so of two deletes running at once the later one puts back what the earlier one
    /// removed and drops messages sent meanwhile (S3 notifications). One at a time, as SQS
    /// itself behaves.
    deleting: tokio::sync::Mutex<()>,
}

/// Holds [`Progress::busy`] up while alive.
pub struct Busy(Arc<Progress>);

impl Busy {
    pub fn new(progress: &Arc<Progress>) -> Busy {
        progress.busy.fetch_add(1, Ordering::SeqCst);
        Busy(progress.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a drain measured.
pub struct DrainStats {
    /// From the first handler call to the last one's end.
    pub handling: Duration,
    pub batches: usize,
    /// Messages the handler reported failed (each comes back after the visibility timeout).
    pub item_failures: usize,
    /// CPU time of this process (handler, proxy, test harness) over the drain.
    pub cpu: Duration,
    /// The longest handler call: it must stay under the visibility timeout, or SQS hands its
    /// messages to another instance while they are handled.
    pub slowest_batch: Duration,
}

#[derive(Default)]
struct Timing {
    first_start: Option<Instant>,
    last_end: Option<Instant>,
    slowest: Duration,
}

/// Drains the queue with [`INSTANCES`] concurrent instances, each taking batches of ten, until
/// the queues are empty, nothing is `busy`, and `expected_outcomes` manifests and error reports
/// exist (or the queue has stayed empty for 10 s without that, to fail on the outcomes rather
/// than time out). `limit` only guards against a hang: it is several times what a quiet
/// machine takes, since speed is measured by the benchmarks, not asserted here.
pub async fn drain(
    env: &Arc<Env>,
    app: &Arc<App>,
    expected_outcomes: usize,
    limit: Duration,
    interference: Option<Arc<Interference>>,
    progress: Arc<Progress>,
) -> DrainStats {
    let timing = Arc::new(Mutex::new(Timing::default()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let batches = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + limit;
    let idle_since: Arc<Mutex<Option<Instant>>> = Arc::default();
    let cpu_start = process_cpu();
    let mut instances = tokio::task::JoinSet::new();
    let held = Arc::new(Mutex::new(tokio::task::JoinSet::new()));
    for _ in 0..INSTANCES {
        let (env, app, timing, done, batches, failures, idle_since, held, progress) = (
            env.clone(),
            app.clone(),
            timing.clone(),
            done.clone(),
            batches.clone(),
            failures.clone(),
            idle_since.clone(),
            held.clone(),
            progress.clone(),
        );
        let interference = interference.clone();
        instances.spawn(async move {
            while !done.load(Ordering::SeqCst) {
                assert!(Instant::now() < deadline, "not drained within {limit:?}");
                let messages = env.receive(10, 1).await;
                for m in &messages {
                    progress
                        .max_receives
                        .fetch_max(receive_count(m) as usize, Ordering::SeqCst);
                }
                if messages.is_empty() {
                    let since = *idle_since.lock().unwrap().get_or_insert_with(Instant::now);
                    if progress.busy.load(Ordering::SeqCst) == 0
                        && env.queue_depth(&env.queue_url).await == (0, 0)
                        && (outcomes(&env).await >= expected_outcomes
                            || since.elapsed() > Duration::from_secs(10))
                    {
                        done.store(true, Ordering::SeqCst);
                    }
                    continue;
                }
                *idle_since.lock().unwrap() = None;
                let (now, forget) = match &interference {
                    Some(i) => interfere(&env, &app, i, &progress, &held, messages).await,
                    None => (messages, HashSet::new()),
                };
                let start = Instant::now();
                timing.lock().unwrap().first_start.get_or_insert(start);
                let response = proflake_convert::handle_batch(&app, env.event(&now)).await;
                let failed = failed_ids(&response);
                let settled: Vec<Message> = now
                    .into_iter()
                    .filter(|m| {
                        let id = m.message_id().unwrap_or_default();
                        !failed.iter().any(|f| f == id) && !forget.contains(id)
                    })
                    .collect();
                delete_handled(&env, &progress, &settled).await;
                let end = Instant::now();
                let mut t = timing.lock().unwrap();
                t.last_end = Some(t.last_end.map_or(end, |e| e.max(end)));
                t.slowest = t.slowest.max(end - start);
                drop(t);
                batches.fetch_add(1, Ordering::SeqCst);
                failures.fetch_add(failed.len(), Ordering::SeqCst);
                progress.handled.fetch_add(settled.len(), Ordering::SeqCst);
            }
        });
    }
    while let Some(done) = instances.join_next().await {
        done.expect("handler instance");
    }
    let mut held = std::mem::take(&mut *held.lock().unwrap());
    while let Some(done) = held.join_next().await {
        done.expect("held message");
    }
    let cpu = process_cpu() - cpu_start;
    let timing = timing.lock().unwrap();
    DrainStats {
        handling: timing.last_end.unwrap() - timing.first_start.unwrap(),
        batches: batches.load(Ordering::SeqCst),
        item_failures: failures.load(Ordering::SeqCst),
        cpu,
        slowest_batch: timing.slowest,
    }
}

/// Manifests and error reports in the buckets.
async fn outcomes(env: &Env) -> usize {
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
    manifests + reports
}

fn receive_count(message: &Message) -> u32 {
    message
        .attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
        .and_then(|n| n.parse().ok())
        .expect("ApproximateReceiveCount")
}

/// Applies `interference` to a received batch: sends the duplicates, sets the held messages
/// aside on tasks of their own, and returns the messages to handle now and the ids of those
/// not to delete.
async fn interfere(
    env: &Arc<Env>,
    app: &Arc<App>,
    interference: &Arc<Interference>,
    progress: &Arc<Progress>,
    held: &Mutex<tokio::task::JoinSet<()>>,
    messages: Vec<Message>,
) -> (Vec<Message>, HashSet<String>) {
    let mut now = Vec::new();
    let mut forget = HashSet::new();
    for message in messages {
        if receive_count(&message) != 1 {
            now.push(message);
            continue;
        }
        let n = interference.first_receives.fetch_add(1, Ordering::SeqCst) + 1;
        if n > interference.until {
            now.push(message);
            continue;
        }
        let id = message.message_id().unwrap_or_default().to_owned();
        // A copy is never copied again, so duplicates stay a fixed share of the messages.
        let is_copy = interference.copies.lock().unwrap().contains(&id);
        if n.is_multiple_of(interference.duplicate_every) && !is_copy {
            let sent = env
                .sqs
                .send_message()
                .queue_url(&env.queue_url)
                .message_body(message.body().unwrap_or_default())
                .send()
                .await
                .expect("send duplicate");
            let copy = sent.message_id().expect("message id").to_owned();
            interference.copies.lock().unwrap().insert(copy);
            interference.duplicated.fetch_add(1, Ordering::SeqCst);
        }
        if n.is_multiple_of(interference.stall_every) {
            interference.stalled.fetch_add(1, Ordering::SeqCst);
            let busy = Busy::new(progress);
            let (env, app, stall) = (env.clone(), app.clone(), interference.stall);
            let progress = progress.clone();
            held.lock().unwrap().spawn(async move {
                tokio::time::sleep(stall).await;
                let message = [message];
                let response = proflake_convert::handle_batch(&app, env.event(&message)).await;
                if failed_ids(&response).is_empty() {
                    delete_handled(&env, &progress, &message).await;
                }
                drop(busy);
            });
            continue;
        }
        if n.is_multiple_of(interference.forget_every) {
            interference.forgotten.fetch_add(1, Ordering::SeqCst);
            forget.insert(id);
        }
        now.push(message);
    }
    (now, forget)
}

/// Deletes messages the handler succeeded with, as the event source mapping does. A receipt
/// handle SQS no longer knows is counted, not fatal: the message went meanwhile, deleted by
/// another holder or dead-lettered (which the tests check at the end). moto also refuses the
/// handle a receive hands out while another holder deletes the same message with an older one,
/// a race of its own that SQS does not have.
async fn delete_handled(env: &Env, progress: &Progress, messages: &[Message]) {
    let _one_at_a_time = progress.deleting.lock().await;
    for batch in messages.chunks(10) {
        let entries = crate::harness::delete_entries(batch);
        if entries.is_empty() {
            continue;
        }
        let out = env
            .sqs
            .delete_message_batch()
            .queue_url(&env.queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .expect("delete messages");
        for failed in out.failed() {
            assert_eq!(
                failed.code(),
                "ReceiptHandleIsInvalid",
                "delete failed: {failed:?}"
            );
            progress.stale_deletes.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// User plus system CPU time of this process so far.
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// What the buckets held at the end.
pub struct Totals {
    pub manifests: usize,
    pub reports: usize,
    pub samples: u64,
    pub output_objects: usize,
}

/// Checks, by listing both buckets, that each of `finals` ended as its fate says and nothing
/// else is there: one manifest per converted upload (of its final content), one error report
/// per quarantined one (about its final content, naming the expected reason), and no output
/// that no manifest lists.
pub async fn assert_outcomes(env: &Env, finals: &[Final]) -> Totals {
    let keys: BTreeSet<&str> = finals.iter().map(|f| f.upload.key.as_str()).collect();
    assert_eq!(keys.len(), finals.len(), "upload keys must be distinct");
    let outputs: BTreeSet<String> = list_keys(&env.s3, OUTPUT_BUCKET, "")
        .await
        .into_iter()
        .collect();
    let uploads: BTreeSet<String> = list_keys(&env.s3, UPLOADS_BUCKET, "")
        .await
        .into_iter()
        .collect();

    let mut expected_uploads: BTreeSet<String> = BTreeSet::new();
    for f in finals {
        expected_uploads.insert(f.upload.key.clone());
        if matches!(f.fate, Fate::Quarantined { .. }) {
            expected_uploads.insert(error_report_key(&f.upload.key));
        }
    }
    assert_eq!(
        uploads.difference(&expected_uploads).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "unexpected objects in the uploads bucket (error reports of converted uploads?)"
    );
    assert_eq!(
        expected_uploads.difference(&uploads).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "missing from the uploads bucket (error reports of quarantined uploads?)"
    );

    // The pointers to the uploads' current conversions, by upload key, read UPLOADERS at a
    // time: each names its upload's content and manifest.
    let semaphore = Arc::new(tokio::sync::Semaphore::new(UPLOADERS));
    let mut reads = tokio::task::JoinSet::new();
    for pointer_key in outputs.iter().filter(|k| is_pointer_key(k)).cloned() {
        let s3 = env.s3.clone();
        let permit = semaphore.clone().acquire_owned().await.unwrap();
        reads.spawn(async move {
            let got = s3
                .get_object()
                .bucket(OUTPUT_BUCKET)
                .key(&pointer_key)
                .send()
                .await;
            let bytes = got.unwrap().body.collect().await.unwrap().into_bytes();
            drop(permit);
            let pointer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            (pointer_key, pointer)
        });
    }
    let mut pointers: BTreeMap<String, (String, serde_json::Value)> = BTreeMap::new();
    while let Some(done) = reads.join_next().await {
        let (pointer_key, pointer) = done.expect("read task");
        let key = pointer["key"]
            .as_str()
            .expect("a pointer names its key")
            .to_owned();
        pointers.insert(key, (pointer_key, pointer));
    }

    // Each upload's manifest (the one its pointer names) or report, read UPLOADERS at a time.
    let mut reads = tokio::task::JoinSet::new();
    for (i, f) in finals.iter().enumerate() {
        let (s3, f) = (env.s3.clone(), f.clone());
        let manifest_key = match f.fate {
            Fate::Converted { .. } => {
                let key = &f.upload.key;
                let (pointer_key, pointer) = pointers
                    .get(key)
                    .unwrap_or_else(|| panic!("{key}: no current conversion"));
                assert_eq!(
                    pointer["etag"],
                    content_etag(&f.upload.bytes).as_str(),
                    "{key}: {pointer_key} names other content"
                );
                pointer["manifest_key"].as_str().unwrap().to_owned()
            }
            Fate::Quarantined { .. } => String::new(),
        };
        let permit = semaphore.clone().acquire_owned().await.unwrap();
        reads.spawn(async move {
            let (bucket, key) = match f.fate {
                Fate::Converted { .. } => (OUTPUT_BUCKET, manifest_key),
                Fate::Quarantined { .. } => (UPLOADS_BUCKET, error_report_key(&f.upload.key)),
            };
            let got = s3.get_object().bucket(bucket).key(&key).send().await;
            let bytes = match got {
                Ok(o) => Some(o.body.collect().await.unwrap().into_bytes().to_vec()),
                Err(e) => {
                    let e = e.into_service_error();
                    assert!(e.is_no_such_key(), "get {bucket}/{key}: {e:?}");
                    None
                }
            };
            drop(permit);
            (i, key, bytes)
        });
    }
    let mut read: BTreeMap<usize, (String, Option<Vec<u8>>)> = BTreeMap::new();
    while let Some(done) = reads.join_next().await {
        let (i, key, bytes) = done.expect("read task");
        read.insert(i, (key, bytes));
    }

    let mut listed: BTreeSet<String> = BTreeSet::new();
    let mut totals = Totals {
        manifests: 0,
        reports: 0,
        samples: 0,
        output_objects: outputs.len(),
    };
    for (i, f) in finals.iter().enumerate() {
        let key = &f.upload.key;
        let (object_key, bytes) = &read[&i];
        let etag = content_etag(&f.upload.bytes);
        match &f.fate {
            Fate::Converted { samples } => {
                let bytes = bytes
                    .as_ref()
                    .unwrap_or_else(|| panic!("{key}: no manifest {object_key}"));
                let manifest: Manifest = serde_json::from_slice(bytes).unwrap();
                assert_eq!(&manifest.source.key, key);
                assert_eq!(manifest.profile.samples_written, *samples, "{key}");
                totals.manifests += 1;
                totals.samples += manifest.profile.samples_written;
                // What the conversion wrote: the outputs its manifest lists, the manifest, and
                // the key's pointer to it.
                listed.extend(manifest.outputs.iter().map(|o| o.key.clone()));
                listed.insert(object_key.clone());
                listed.insert(pointers[key].0.clone());
            }
            Fate::Quarantined { reason } => {
                let bytes = bytes
                    .as_ref()
                    .unwrap_or_else(|| panic!("{key}: no error report"));
                let report = error_report(bytes);
                assert_eq!(report["key"], key.as_str());
                assert_eq!(
                    report["etag"],
                    etag.as_str(),
                    "{key}: the report is about other content"
                );
                assert_eq!(
                    report["reason"],
                    reason.as_str(),
                    "{key}: {}",
                    report["error"]
                );
                assert!(
                    !pointers.contains_key(key),
                    "{key}: quarantined, yet a conversion is current"
                );
                totals.reports += 1;
            }
        }
    }
    // Every output belongs to a final conversion (none of replaced content, none written
    // twice under other names), and everything a manifest lists exists.
    assert_eq!(
        outputs.difference(&listed).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "orphan outputs"
    );
    assert_eq!(
        listed.difference(&outputs).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "outputs a manifest lists are missing"
    );
    let expected_samples: u64 = finals
        .iter()
        .map(|f| match f.fate {
            Fate::Converted { samples } => samples,
            Fate::Quarantined { .. } => 0,
        })
        .sum();
    assert_eq!(totals.samples, expected_samples, "sum of samples_written");
    totals
}

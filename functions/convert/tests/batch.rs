//! The convert handler end to end on local directories standing in for buckets, with SQS
//! events shaped as moto delivers S3 notifications.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Context, LambdaEvent};
use proflake::{
    convert_upload, store::content_etag, store::LocalDirStore, store::ObjectInfo,
    store::ObjectStore, ConvertOptions, Error, ErrorKind, Result,
};
use proflake_convert::{function_handler, handle_batch, App, Config};
use serde_json::json;

const UPLOADS: &str = "uploads-bkt";

fn sample(path: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples");
    std::fs::read(root.join(path)).unwrap()
}

fn default_config() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

/// Buckets as directories under one temporary root.
struct Buckets {
    dir: tempfile::TempDir,
}

impl Buckets {
    fn new() -> Self {
        Buckets {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().to_owned()
    }

    fn store(&self, bucket: &str) -> LocalDirStore {
        LocalDirStore::new(self.dir.path().join(bucket))
    }

    fn app(&self, config: Config) -> App {
        let root = self.root();
        App::with_stores(config, move |bucket| {
            Arc::new(LocalDirStore::new(root.join(bucket))) as Arc<dyn ObjectStore>
        })
    }

    /// Puts an object with a fixed mtime, so runs in different roots see the same object.
    fn put(&self, bucket: &str, key: &str, bytes: &[u8]) {
        let store = self.store(bucket);
        store.put(key, bytes).unwrap();
        let file = std::fs::File::options()
            .write(true)
            .open(store.path(key).unwrap())
            .unwrap();
        file.set_modified(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
            .unwrap();
    }

    /// The py-spy recording under `key`, with its metadata sidecar.
    fn put_pyspy(&self, key: &str) -> Vec<u8> {
        let bytes = sample("folded/pyspy.folded");
        self.put(UPLOADS, key, &bytes);
        let sidecar = format!("{key}.metadata.json");
        self.put(UPLOADS, &sidecar, &sample("folded/pyspy.metadata.json"));
        bytes
    }

    /// Every object of `bucket`, by key.
    fn files(&self, bucket: &str) -> BTreeMap<String, Vec<u8>> {
        let store = self.store(bucket);
        let keys = store.list("").unwrap();
        keys.into_iter()
            .map(|k| {
                let bytes = store.get(&k).unwrap().unwrap();
                (k, bytes)
            })
            .collect()
    }

    fn keys(&self, bucket: &str) -> Vec<String> {
        self.files(bucket).into_keys().collect()
    }
}

/// Form-urlencodes a key the way S3 notifications carry it (`/` as `%2F`, space as `+`).
fn encode_key(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b' ' => "+".to_owned(),
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An S3 notification body naming `(event name, bucket, key)` records.
fn s3_body(records: &[(&str, &str, &str)]) -> String {
    let records: Vec<_> = records
        .iter()
        .map(|(event_name, bucket, key)| {
            json!({
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": "2026-11-20T10:00:00.000Z",
                "eventName": event_name,
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "proflake",
                    "bucket": {"name": bucket, "arn": format!("arn:aws:s3:::{bucket}")},
                    "object": {"key": encode_key(key), "size": 1, "eTag": "0123", "sequencer": "0A"},
                },
            })
        })
        .collect();
    json!({ "Records": records }).to_string()
}

fn created(bucket: &str, key: &str) -> String {
    s3_body(&[("ObjectCreated:Put", bucket, key)])
}

const TEST_EVENT: &str = r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-11-20T10:00:00.000Z","Bucket":"uploads-bkt","RequestId":"R","HostId":"H"}"#;

/// An SQS event of `(message id, body)` messages; a `None` id leaves `messageId` out.
fn sqs_event(messages: &[(Option<&str>, &str)]) -> SqsEvent {
    let records: Vec<_> = messages
        .iter()
        .map(|(id, body)| {
            let mut record = json!({
                "receiptHandle": "handle",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:uploads",
                "awsRegion": "us-east-1",
            });
            if let Some(id) = id {
                record["messageId"] = json!(id);
            }
            record
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

fn failed_ids(response: &SqsBatchResponse) -> Vec<&str> {
    let mut ids: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    ids.sort();
    ids
}

/// Where the manifest of `bytes` uploaded at `key` goes: its key depends on the key and the
/// content alone, so a conversion in memory names it as the job does.
fn manifest_of(key: &str, bytes: &[u8]) -> String {
    // Placed anywhere: the time changes no key.
    let options = ConvertOptions {
        received_at_ns: Some(0),
        ..ConvertOptions::default()
    };
    convert_upload(key, &content_etag(bytes), bytes, &options)
        .unwrap()
        .manifest_key
}

/// Not a profile in any format: gzip magic followed by junk.
const CORRUPT: &[u8] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03this is not deflate data";

#[tokio::test]
async fn test_event_succeeds_and_writes_nothing() {
    let buckets = Buckets::new();
    let app = buckets.app(default_config());
    let response = handle_batch(&app, sqs_event(&[(Some("m1"), TEST_EVENT)])).await;
    assert_eq!(failed_ids(&response), Vec::<&str>::new());
    let entries = std::fs::read_dir(buckets.root()).unwrap().count();
    assert_eq!(entries, 0, "no bucket was touched");
}

#[tokio::test]
async fn invalid_body_fails_only_that_message() {
    let buckets = Buckets::new();
    let bytes = buckets.put_pyspy("uploads/good.folded");
    let app = buckets.app(default_config());
    let event = sqs_event(&[
        (Some("bad-json"), "{not json"),
        (Some("test"), TEST_EVENT),
        (Some("good"), &created(UPLOADS, "uploads/good.folded")),
        (Some("no-records"), r#"{"Hello":"world"}"#),
    ]);
    let response = handle_batch(&app, event).await;
    assert_eq!(failed_ids(&response), ["bad-json", "no-records"]);
    let manifest = manifest_of("uploads/good.folded", &bytes);
    assert!(buckets.store(UPLOADS).exists(&manifest).unwrap());
}

#[tokio::test]
async fn corrupt_object_is_quarantined_while_good_one_converts() {
    let buckets = Buckets::new();
    let good = buckets.put_pyspy("uploads/a b.folded");
    buckets.put(UPLOADS, "uploads/corrupt.pb.gz", CORRUPT);
    let app = buckets.app(default_config());
    let event = sqs_event(&[
        (Some("m-good"), &created(UPLOADS, "uploads/a b.folded")),
        (Some("m-bad"), &created(UPLOADS, "uploads/corrupt.pb.gz")),
    ]);
    let response = handle_batch(&app, event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");

    let store = buckets.store(UPLOADS);
    let report = store
        .get("uploads/corrupt.pb.gz.error.json")
        .unwrap()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report).unwrap();
    assert_eq!(report["key"], "uploads/corrupt.pb.gz");
    assert_eq!(report["reason"], "decompression");
    assert_eq!(report["etag"], content_etag(CORRUPT).as_str());

    let manifest = manifest_of("uploads/a b.folded", &good);
    let manifest: serde_json::Value =
        serde_json::from_slice(&store.get(&manifest).unwrap().unwrap()).unwrap();
    assert_eq!(manifest["source"]["key"], "uploads/a b.folded");
    assert!(
        store.list("tables/").unwrap().len() > 1,
        "stack tables written"
    );
    assert!(!store.exists("uploads/a b.folded.error.json").unwrap());
}

#[tokio::test]
async fn same_batch_twice_gives_identical_outputs() {
    let run = |buckets: &Buckets| {
        buckets.put_pyspy("uploads/a b.folded");
        buckets.put(UPLOADS, "uploads/corrupt.pb.gz", CORRUPT);
        let pprof = "pprof/google-pprof_report_sample.cpu.pb.gz";
        buckets.put(UPLOADS, "uploads/cpu.pb.gz", &sample(pprof));
        let body = s3_body(&[
            ("ObjectCreated:Put", UPLOADS, "uploads/a b.folded"),
            (
                "ObjectCreated:CompleteMultipartUpload",
                UPLOADS,
                "uploads/cpu.pb.gz",
            ),
            ("ObjectCreated:Put", UPLOADS, "uploads/corrupt.pb.gz"),
        ]);
        (
            buckets.app(default_config()),
            sqs_event(&[(Some("m1"), &body)]),
        )
    };

    let first = Buckets::new();
    let (app, event) = run(&first);
    let response = handle_batch(&app, event.clone()).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let once = first.files(UPLOADS);
    let pprof = sample("pprof/google-pprof_report_sample.cpu.pb.gz");
    assert!(once.contains_key(&manifest_of("uploads/cpu.pb.gz", &pprof)));
    let pyspy = sample("folded/pyspy.folded");
    assert!(once.contains_key(&manifest_of("uploads/a b.folded", &pyspy)));
    assert!(once.contains_key("uploads/corrupt.pb.gz.error.json"));

    let response = handle_batch(&app, event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(first.files(UPLOADS), once, "redelivery changes nothing");

    // A fresh bucket with the same objects: the same keys and the same bytes.
    let second = Buckets::new();
    let (app, event) = run(&second);
    handle_batch(&app, event).await;
    let again = second.files(UPLOADS);
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        once.keys().collect::<Vec<_>>()
    );
    for (key, bytes) in &once {
        assert!(again[key] == *bytes, "{key} differs between runs");
    }
}

#[tokio::test]
async fn output_prefix_and_bucket_apply() {
    let buckets = Buckets::new();
    let bytes = buckets.put_pyspy("uploads/a.folded");
    let config = Config::from_lookup(|name| match name {
        "PROFLAKE_OUTPUT_BUCKET" => Some("out-bkt".into()),
        "PROFLAKE_OUTPUT_PREFIX" => Some("env/test/".into()),
        _ => None,
    })
    .unwrap();
    let app = buckets.app(config);
    let event = sqs_event(&[(Some("m1"), &created(UPLOADS, "uploads/a.folded"))]);
    let response = handle_batch(&app, event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");

    let manifest = manifest_of("uploads/a.folded", &bytes);
    let out = buckets.keys("out-bkt");
    assert!(out.contains(&format!("env/test/{manifest}")), "{out:?}");
    assert!(out.iter().all(|k| k.starts_with("env/test/")), "{out:?}");
    assert!(out.iter().any(|k| k.starts_with("env/test/tables/v2/")));
    let uploads = buckets.keys(UPLOADS);
    assert_eq!(
        uploads,
        ["uploads/a.folded", "uploads/a.folded.metadata.json"],
        "nothing written next to the uploads"
    );
}

#[tokio::test]
async fn events_other_than_created_are_skipped() {
    let buckets = Buckets::new();
    buckets.put_pyspy("uploads/a.folded");
    let before = buckets.files(UPLOADS);
    let app = buckets.app(default_config());
    let body = s3_body(&[
        ("ObjectRemoved:Delete", UPLOADS, "uploads/a.folded"),
        ("ObjectRestore:Completed", UPLOADS, "uploads/a.folded"),
    ]);
    let response = handle_batch(&app, sqs_event(&[(Some("m1"), &body)])).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(buckets.files(UPLOADS), before);
}

/// A store whose every call fails the way an unreachable bucket does.
struct FailingStore;

fn unavailable(key: &str) -> Error {
    Error::new(ErrorKind::Storage {
        key: format!("s3://broken/{key}"),
    })
    .with_source(std::io::Error::other("service unavailable"))
}

impl ObjectStore for FailingStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Err(unavailable(key))
    }
    fn get_object(&self, key: &str, _: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        Err(unavailable(key))
    }
    fn exists(&self, key: &str) -> Result<bool> {
        Err(unavailable(key))
    }
    fn put(&self, key: &str, _: &[u8]) -> Result<()> {
        Err(unavailable(key))
    }
    fn delete(&self, key: &str) -> Result<()> {
        Err(unavailable(key))
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Err(unavailable(prefix))
    }
}

/// A store whose reads panic, like a bug deep in a decoder would.
struct PanickingStore;

impl ObjectStore for PanickingStore {
    fn get(&self, _: &str) -> Result<Option<Vec<u8>>> {
        panic!("bug in get")
    }
    fn get_object(&self, _: &str, _: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        panic!("bug in get_object")
    }
    fn exists(&self, _: &str) -> Result<bool> {
        panic!("bug in exists")
    }
    fn put(&self, _: &str, _: &[u8]) -> Result<()> {
        panic!("bug in put")
    }
    fn delete(&self, _: &str) -> Result<()> {
        panic!("bug in delete")
    }
    fn list(&self, _: &str) -> Result<Vec<String>> {
        panic!("bug in list")
    }
}

/// Local buckets, except `broken` (fails) and `buggy` (panics).
fn app_with_bad_buckets(buckets: &Buckets, config: Config) -> App {
    let root = buckets.root();
    App::with_stores(config, move |bucket| -> Arc<dyn ObjectStore> {
        match bucket {
            "broken" => Arc::new(FailingStore),
            "buggy" => Arc::new(PanickingStore),
            _ => Arc::new(LocalDirStore::new(root.join(bucket))),
        }
    })
}

#[tokio::test]
async fn failing_store_fails_the_message() {
    let buckets = Buckets::new();
    let bytes = buckets.put_pyspy("uploads/a.folded");
    let app = app_with_bad_buckets(&buckets, default_config());
    let event = sqs_event(&[
        (Some("m-broken"), &created("broken", "uploads/x.folded")),
        (Some("m-good"), &created(UPLOADS, "uploads/a.folded")),
    ]);
    let response = handle_batch(&app, event).await;
    assert_eq!(failed_ids(&response), ["m-broken"]);
    let manifest = manifest_of("uploads/a.folded", &bytes);
    assert!(buckets.store(UPLOADS).exists(&manifest).unwrap());
}

#[tokio::test]
async fn failing_output_store_fails_the_message() {
    let buckets = Buckets::new();
    buckets.put_pyspy("uploads/a.folded");
    let config =
        Config::from_lookup(|name| (name == "PROFLAKE_OUTPUT_BUCKET").then(|| "broken".to_owned()))
            .unwrap();
    let app = app_with_bad_buckets(&buckets, config);
    let event = sqs_event(&[(Some("m1"), &created(UPLOADS, "uploads/a.folded"))]);
    let response = handle_batch(&app, event).await;
    assert_eq!(failed_ids(&response), ["m1"]);
    assert!(
        !buckets
            .keys(UPLOADS)
            .iter()
            .any(|k| k.ends_with(".error.json")),
        "a transient failure is retried, not quarantined"
    );
}

#[tokio::test]
async fn one_failed_record_fails_its_message_after_the_others_ran() {
    let buckets = Buckets::new();
    let bytes = buckets.put_pyspy("uploads/a.folded");
    let app = app_with_bad_buckets(&buckets, default_config());
    let body = s3_body(&[
        ("ObjectCreated:Put", "broken", "uploads/x.folded"),
        ("ObjectCreated:Put", UPLOADS, "uploads/a.folded"),
    ]);
    let response = handle_batch(&app, sqs_event(&[(Some("m1"), &body)])).await;
    assert_eq!(failed_ids(&response), ["m1"]);
    let manifest = manifest_of("uploads/a.folded", &bytes);
    assert!(buckets.store(UPLOADS).exists(&manifest).unwrap());
}

#[tokio::test]
async fn panic_fails_only_its_message() {
    let buckets = Buckets::new();
    buckets.put_pyspy("uploads/a.folded");
    let app = app_with_bad_buckets(&buckets, default_config());
    let event = sqs_event(&[
        (Some("m-buggy"), &created("buggy", "uploads/x.folded")),
        (Some("m-good"), &created(UPLOADS, "uploads/a.folded")),
    ]);
    let response = handle_batch(&app, event).await;
    assert_eq!(failed_ids(&response), ["m-buggy"]);
}

#[tokio::test]
async fn message_without_id_is_reported_with_an_empty_identifier() {
    let buckets = Buckets::new();
    let app = buckets.app(default_config());
    let event = sqs_event(&[(None, "garbage"), (Some("m-test"), TEST_EVENT)]);
    let response = handle_batch(&app, event).await;
    assert_eq!(failed_ids(&response), [""]);
}

/// Counts how many `get_object` calls are in flight at once.
struct CountingStore {
    inner: LocalDirStore,
    now: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
}

impl ObjectStore for CountingStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn get_object(&self, key: &str, max: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        self.now.fetch_sub(1, Ordering::SeqCst);
        self.inner.get_object(key, max)
    }
    fn exists(&self, key: &str) -> Result<bool> {
        self.inner.exists(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.inner.put(key, bytes)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_run_at_most_concurrency_at_once() {
    let buckets = Buckets::new();
    let max = Arc::new(AtomicUsize::new(0));
    let (root, now, seen) = (buckets.root(), Arc::new(AtomicUsize::new(0)), max.clone());
    let config = Config::from_lookup(|name| (name == "PROFLAKE_CONCURRENCY").then(|| "3".into()));
    let app = App::with_stores(config.unwrap(), move |bucket| -> Arc<dyn ObjectStore> {
        Arc::new(CountingStore {
            inner: LocalDirStore::new(root.join(bucket)),
            now: now.clone(),
            max: seen.clone(),
        })
    });
    let bodies: Vec<_> = (0..8)
        .map(|i| created(UPLOADS, &format!("uploads/missing-{i}")))
        .collect();
    let ids: Vec<_> = (0..8).map(|i| format!("m{i}")).collect();
    let messages: Vec<_> = ids
        .iter()
        .zip(&bodies)
        .map(|(id, body)| (Some(id.as_str()), body.as_str()))
        .collect();
    let response = handle_batch(&app, sqs_event(&messages)).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(max.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn function_handler_answers_with_the_batch_response() {
    let buckets = Buckets::new();
    let app = buckets.app(default_config());
    let event = sqs_event(&[(Some("m1"), "nope"), (Some("m2"), TEST_EVENT)]);
    let response = function_handler(&app, LambdaEvent::new(event, Context::default()))
        .await
        .unwrap();
    assert_eq!(failed_ids(&response), ["m1"]);
    let json = serde_json::to_value(&response).unwrap();
    assert_eq!(
        json,
        json!({"batchItemFailures": [{"itemIdentifier": "m1"}]})
    );
}

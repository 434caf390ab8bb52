//! The rehydrate handler on local directories standing in for buckets, continuations to a
//! queue in memory: message kinds, failures, skips and the continuation of a long scope. (The
//! whole flow with a real debug file is tests/e2e/rehydrate.rs, against moto.)

use std::collections::BTreeMap;
use std::sync::Arc;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use proflake::store::{LocalDirStore, ObjectInfo, ObjectStore};
use proflake::{process_upload, ErrorKind, ProcessOptions, Result};
use proflake_rehydrate::{
    handle_batch_tallied, parse_request, App, BatchTally, Config, ContinuationQueue, Page, Request,
    Scope,
};
use serde_json::json;

const UPLOADS: &str = "up";
const OUTPUTS: &str = "out";

struct Buckets {
    dir: tempfile::TempDir,
}

impl Buckets {
    fn new() -> Self {
        Buckets {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn store(&self, bucket: &str) -> LocalDirStore {
        LocalDirStore::new(self.dir.path().join(bucket))
    }

    fn app(&self, extra: &[(&str, &str)], queue: ContinuationQueue) -> App {
        let mut vars: BTreeMap<String, String> = [
            ("PROFLAKE_OUTPUT_BUCKET", OUTPUTS),
            ("PROFLAKE_UPLOAD_BUCKET", UPLOADS),
            ("PROFLAKE_REHYDRATE_QUEUE_URL", "memory"),
            ("PROFLAKE_LOG", "warn"),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        vars.retain(|_, v| !v.is_empty());
        let config = Config::from_lookup(|name| vars.get(name).cloned()).unwrap();
        let root = self.dir.path().to_owned();
        App::with_stores(
            config,
            move |bucket| Arc::new(LocalDirStore::new(root.join(bucket))) as Arc<dyn ObjectStore>,
            queue,
        )
    }

    fn files(&self, bucket: &str) -> BTreeMap<String, Vec<u8>> {
        let store = self.store(bucket);
        store
            .list("")
            .unwrap()
            .into_iter()
            .map(|k| {
                let v = store.get(&k).unwrap().unwrap();
                (k, v)
            })
            .collect()
    }
}

fn event(bodies: &[(&str, String)]) -> SqsEvent {
    let mut event = SqsEvent::default();
    event.records = bodies
        .iter()
        .map(|(id, body)| {
            let mut m = SqsMessage::default();
            m.message_id = Some((*id).to_owned());
            m.body = Some(body.clone());
            m
        })
        .collect();
    event
}

fn created(bucket: &str, key: &str) -> String {
    json!({"Records": [{"eventName": "ObjectCreated:Put",
        "s3": {"bucket": {"name": bucket}, "object": {"key": key, "size": 1}}}]})
    .to_string()
}

fn failed(response: &aws_lambda_events::event::sqs::SqsBatchResponse) -> Vec<&str> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect()
}

const SWEEP: &str = r#"{"source":"proflake.schedule","action":"sweep"}"#;

#[tokio::test]
async fn unknown_bodies_fail_alone_and_test_events_and_other_keys_are_skipped() {
    let b = Buckets::new();
    let app = b.app(&[], ContinuationQueue::memory());
    let (response, tally) = handle_batch_tallied(
        &app,
        event(&[
            ("bad", "{\"hello\":1}".into()),
            ("bad-id", r#"{"source":"proflake.rehydrate","action":"continue","scope":"build_id","build_id":"../x"}"#.into()),
            ("test", r#"{"Event":"s3:TestEvent","Bucket":"out"}"#.into()),
            ("derived", created(OUTPUTS, "debuginfo/ab12cd34/meta.json")),
            ("other-bucket", created("elsewhere", "debuginfo/ab12cd34/lib.so")),
            ("missing", created(OUTPUTS, "debuginfo/ab12cd34/gone.so")),
            ("removed", json!({"Records": [{"eventName": "ObjectRemoved:Delete",
                "s3": {"bucket": {"name": OUTPUTS}, "object": {"key": "debuginfo/ab12cd34/x.so"}}}]}).to_string()),
        ]),
    )
    .await;
    assert_eq!(failed(&response), ["bad", "bad-id"]);
    assert_eq!(tally.failures.get("invalid_event"), Some(&2));
    assert_eq!((tally.skipped, tally.debug_files, tally.pages), (4, 0, 0));
    assert!(b.files(OUTPUTS).is_empty(), "nothing written");
}

#[tokio::test]
async fn a_bad_debug_file_is_refused_with_a_report_and_the_message_succeeds() {
    let b = Buckets::new();
    let key = "debuginfo/ab12cd34ef/libx.so";
    b.store(OUTPUTS).put(key, b"not an object file").unwrap();
    let app = b.app(&[], ContinuationQueue::memory());
    let (response, tally) =
        handle_batch_tallied(&app, event(&[("m", created(OUTPUTS, key))])).await;
    assert!(failed(&response).is_empty());
    assert_eq!((tally.debug_files, tally.debug_files_refused), (1, 1));
    assert_eq!(tally.failures.get("bad_debug_file"), Some(&1));
    let report: serde_json::Value = serde_json::from_slice(
        &b.store(OUTPUTS)
            .get(&format!("{key}.error.json"))
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(report["reason"], "bad_debug_file");
    assert_eq!(tally.pages, 0, "no rehydration for a refused file");
}

#[tokio::test]
async fn the_output_prefix_is_stripped_from_notified_keys() {
    let b = Buckets::new();
    let key = "env/a/debuginfo/ab12cd34ef/libx.so";
    b.store(OUTPUTS).put(key, b"junk").unwrap();
    b.store(OUTPUTS)
        .put("debuginfo/ab12cd34ef/libx.so", b"junk")
        .unwrap();
    let app = b.app(
        &[("PROFLAKE_OUTPUT_PREFIX", "env/a/")],
        ContinuationQueue::memory(),
    );
    let (_, tally) = handle_batch_tallied(
        &app,
        event(&[
            ("in", created(OUTPUTS, key)),
            ("out", created(OUTPUTS, "debuginfo/ab12cd34ef/libx.so")),
        ]),
    )
    .await;
    assert_eq!((tally.debug_files_refused, tally.skipped), (1, 1));
    assert!(b
        .store(OUTPUTS)
        .exists("env/a/debuginfo/ab12cd34ef/libx.so.error.json")
        .unwrap());
    assert!(!b
        .store(OUTPUTS)
        .exists("debuginfo/ab12cd34ef/libx.so.error.json")
        .unwrap());
}

/// An index entry for an upload that needs nothing (no symbols are stored for its image).
fn entry(build_id: &str, n: usize) -> (String, Vec<u8>) {
    let source_id = format!("{n:032x}");
    // As docs/outputs.md lays an entry out.
    let entry = json!({
        "index_version": 1,
        "build_id": build_id,
        "code_id": build_id,
        "debug_id": null,
        "source_key": format!("uploads/{n}.pftrace"),
        "source_id": source_id,
        "manifest_key": format!("converted/{source_id}/manifest.json"),
        "frames": 1,
        "symbolized": 0,
        "symbolized_with": null,
        "mappings": [],
    });
    (
        format!("index/build-id/{build_id}/{source_id}.json"),
        serde_json::to_vec(&entry).unwrap(),
    )
}

/// An output bucket whose puts of manifests fail as the bucket failing would: a conversion
/// writes its chunks and table files, then is cut short, and leaves its pending record.
struct NoManifests<'a>(&'a dyn ObjectStore);

impl ObjectStore for NoManifests<'_> {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.0.get(key)
    }
    fn get_object(&self, key: &str, max_bytes: u64) -> Result<Option<(Vec<u8>, ObjectInfo)>> {
        self.0.get_object(key, max_bytes)
    }
    fn exists(&self, key: &str) -> Result<bool> {
        self.0.exists(key)
    }
    fn head(&self, key: &str) -> Result<Option<ObjectInfo>> {
        self.0.head(key)
    }
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        if key.ends_with("/manifest.json") {
            return Err(ErrorKind::Storage { key: key.into() }.into());
        }
        self.0.put(key, bytes)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.0.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.0.list(prefix)
    }
}

#[tokio::test]
async fn a_sweep_longer_than_a_page_continues_through_the_queue_until_done() {
    let b = Buckets::new();
    let outputs = b.store(OUTPUTS);
    let mut keys = Vec::new();
    for (id, n) in [("aa11aa11", 1), ("aa11aa11", 2), ("bb22bb22", 3)] {
        let (key, bytes) = entry(id, n);
        outputs.put(&key, &bytes).unwrap();
        keys.push(key);
    }
    keys.sort();
    let queue = ContinuationQueue::memory();
    let app = b.app(&[("PROFLAKE_REHYDRATE_MAX_ENTRIES", "2")], queue.clone());
    let (response, tally) = handle_batch_tallied(&app, event(&[("s", SWEEP.into())])).await;
    assert!(failed(&response).is_empty());
    assert_eq!(
        (tally.pages, tally.up_to_date, tally.continuations),
        (1, 2, 1)
    );
    let sent = queue.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        parse_request(&sent[0]).unwrap(),
        Request::Page(Page {
            scope: Scope::Sweep,
            after: Some(keys[1].clone())
        })
    );
    // Past the index, the sweep goes on over the upload keys' pending records, in what is left
    // of the page: one of content its key no longer holds, written two hours ago, goes with
    // what it names.
    let upload = "uploads/replaced.folded";
    b.store(UPLOADS).put(upload, b"main;then 1\n").unwrap();
    let cut_short = process_upload(
        &b.store(UPLOADS),
        &NoManifests(&outputs),
        upload,
        &ProcessOptions::default(),
    );
    assert!(cut_short.is_err(), "{cut_short:?}");
    b.store(UPLOADS).put(upload, b"main;now 1\n").unwrap();
    let [record]: [String; 1] = outputs
        .list("converted/by-key/")
        .unwrap()
        .try_into()
        .expect("one pending record");
    assert!(record.contains("/pending/"), "{record}");
    let written: serde_json::Value =
        serde_json::from_slice(&outputs.get(&record).unwrap().unwrap()).unwrap();
    let old = written["source_id"].as_str().unwrap().to_owned();
    let tables: Vec<String> = written["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    assert!(!tables.is_empty() && tables.iter().all(|t| outputs.exists(t).unwrap()));
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7_200);
    outputs.set_modified(&record, two_hours_ago).unwrap();
    let (response, tally): (_, BatchTally) =
        handle_batch_tallied(&app, event(&[("c", sent[0].clone())])).await;
    assert!(failed(&response).is_empty());
    // One index entry and one record fill the page of two: it continues after the record.
    assert_eq!(
        (
            tally.pages,
            tally.up_to_date,
            tally.pending_removed,
            tally.continuations
        ),
        (1, 1, 1, 1)
    );
    assert!(!outputs.exists(&record).unwrap());
    assert!(
        tables.iter().all(|t| !outputs.exists(t).unwrap()),
        "{tables:?}"
    );
    assert!(outputs
        .list(&format!("converted/{old}/"))
        .unwrap()
        .is_empty());
    let sent = queue.sent();
    assert_eq!(
        parse_request(&sent[1]).unwrap(),
        Request::Page(Page {
            scope: Scope::Sweep,
            after: Some(record.clone())
        })
    );
    let (response, tally): (_, BatchTally) =
        handle_batch_tallied(&app, event(&[("p", sent[1].clone())])).await;
    assert!(failed(&response).is_empty());
    assert_eq!((tally.pages, tally.continuations), (1, 0));
    assert_eq!(queue.sent().len(), 2, "done: no further continuation");

    // A build ID's scope only lists its own entries.
    let body = r#"{"source":"proflake.rehydrate","action":"continue","scope":"build_id","build_id":"BB22BB22"}"#;
    let (_, tally) = handle_batch_tallied(&app, event(&[("b", body.into())])).await;
    assert_eq!((tally.pages, tally.up_to_date), (1, 1));
}
